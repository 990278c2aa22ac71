"""Pruning on paired cases (``--prune``): a trial is evaluated on the dev cases in steps and stopped when
Optuna's Wilcoxon pruner finds it worse than the best trial on the same cases; a case never reached is
never asked of the store."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

import ragsweep
from ragsweep.commands.inputs import load_config
from ragsweep.evaluation import loop
from ragsweep.tuning.space import load_space
from ragsweep.tuning.study import grid_space, sample
from ragsweep.tuning.trial import STEPS
from support import MINI, PIPELINE

# the same pipeline serving 5 chunks or 1: recall at its own depth is far lower at 1
SPACE = """
grid:
  chunking: [{min_tokens: 250, max_tokens: 600}]
  retriever_mode: [hybrid]
  chunk_header: [title]
  top_k: [5, 1]
baseline: {min_tokens: 250, max_tokens: 600, retriever_mode: hybrid, chunk_header: title, top_k: 5}
objectives: [recall@k]
ks: [1, 5]
"""


def _seed_with_top_k_5_first(path: Path) -> int:
    """A seed whose grid order proposes top_k 5 first (the grid sampler's order is the seed's)."""
    space = load_space(path, load_config(str(PIPELINE), None))
    for seed in range(50):
        study = optuna.create_study(sampler=optuna.samplers.GridSampler(grid_space(space), seed=seed))
        if sample(study.ask(), space)["top_k"] == 5:
            return seed
    raise AssertionError("no seed proposes top_k 5 first")


def test_a_worse_trial_is_stopped_after_its_first_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(SPACE)
    asked: list[int] = []
    serve = loop._serve

    def counting(config, corpus, cases, *args, **kwargs):  # every question the store is asked, per call
        asked.append(len(cases))
        return serve(config, corpus, cases, *args, **kwargs)

    monkeypatch.setattr(loop, "_serve", counting)
    seed = _seed_with_top_k_5_first(path)
    report = ragsweep.tune(
        PIPELINE, MINI, path, trials=2, sampler="grid", prune=True, seed=seed, out=tmp_path, name="p"
    )
    better, worse = report.trials
    assert better.params["top_k"] == 5 and better.state == "complete"
    assert better.cases_evaluated == report.dev_cases
    assert worse.params["top_k"] == 1 and worse.state == "pruned"
    first_step = -(-report.dev_cases // STEPS)
    assert worse.cases_evaluated == first_step and "pruned after" in (worse.reason or "")
    # a pruned trial has no value over the dev cases (Optuna keeps its last reported case as its value)
    assert worse.values == {"recall@k": None} and better.values["recall@k"] is not None
    assert report.cases_evaluated == report.dev_cases + first_step
    assert report.cases_possible == 2 * report.dev_cases
    # the store was asked the better trial's steps, the worse trial's first step, then the test cases of the
    # choice and of the baseline: never the worse trial's later cases
    dev_asks = asked[: STEPS + 1]
    assert sum(dev_asks) == report.cases_evaluated and dev_asks[-1] == first_step
    lines = (tmp_path / "p" / "configs" / worse.config_id / "cases.jsonl").read_text().splitlines()
    assert len(lines) == first_step
    assert not (tmp_path / "p" / "configs" / worse.config_id / "result.json").exists()
