"""A space file: every grid file is one, ranges map to Optuna's distributions, and a bad space is one line
naming the file and the knob (rc 2 from the command, before any work)."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from ragsweep.cli import main
from ragsweep.commands.inputs import load_config
from ragsweep.core.errors import ConfigError
from ragsweep.tuning.space import load_space
from ragsweep.tuning.study import grid_space, sample
from support import MINI, PIPELINE

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def base():
    return load_config(str(PIPELINE), None)


@pytest.mark.parametrize("grid", sorted((ROOT / "pipelines").glob("sweep*.yaml")), ids=lambda p: p.name)
def test_every_grid_file_is_a_space(grid: Path, base) -> None:
    from ragsweep.evaluation.sweep import SweepGrid

    space = load_space(grid, base)
    assert space.size() == len(SweepGrid.load(grid).configurations())
    assert sum(1 for _ in optuna.samplers.GridSampler(grid_space(space))._all_grids) == space.size()


def test_ranges_and_conditional_knobs(tmp_path: Path, base) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(
        "space:\n  max_tokens: {low: 300, high: 1000, step: 100}\n  rrf_k: {low: 1.0, high: 200.0, log: true}\n"
        "  retriever_mode: [bm25, hybrid]\n  reranker: [null, encoder]\n  rerank_candidates: {low: 5, high: 20, step: 5}\n"
    )
    space = load_space(path, base)
    assert space.size() is None  # a log range is continuous
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    seen = []
    for _ in range(24):
        trial = study.ask()
        params = sample(trial, space)
        seen.append(params)
        study.tell(trial, 0.0)
        assert params["max_tokens"] in range(300, 1001, 100)
        # a stage switched off removes its knobs: no candidates without a reranker, no rrf_k without fusion
        assert ("rerank_candidates" in params) == (params["reranker"] is not None)
        assert ("rrf_k" in params) == (params["retriever_mode"] == "hybrid")
        base.with_overrides(params)  # every sampled configuration is a valid pipeline
    assert {p["reranker"] for p in seen} == {None, "encoder"}


def test_the_size_counts_distinct_configurations(tmp_path: Path, base) -> None:
    """A knob whose stage is off adds no configuration: bm25 and knn once each, hybrid once per rrf_k; no
    reranker once, the encoder once per candidate count (4 x 3, not the product's 3 x 2 x 2 x 2 x 2)."""
    path = tmp_path / "space.yaml"
    path.write_text(
        "space:\n  retriever_mode: [bm25, knn, hybrid]\n  rrf_k: [10, 60]\n  reranker: [null, encoder]\n"
        "  rerank_candidates: [5, 10]\n  chunk_header: [none, title]\n"
    )
    space = load_space(path, base)
    assert space.size() == 4 * 3 * 2
    distinct: set[tuple] = set()

    def objective(trial: optuna.Trial) -> float:
        distinct.add(tuple(sorted(sample(trial, space).items())))
        return 0.0

    study = optuna.create_study(sampler=optuna.samplers.GridSampler(grid_space(space)))
    study.optimize(objective, n_trials=3 * 2 * 2 * 2 * 2)  # the grid of every axis's values: each config reached
    assert len(distinct) == space.size()


BAD = {
    "unknown knob": ("  max_tokenz: [100, 200]\n", "max_tokenz"),
    "empty choice": ("  max_tokens: []\n", "max_tokens"),
    "empty range": ("  max_tokens: {low: 200, high: 200, step: 10}\n", "max_tokens"),
    "low > high": ("  max_tokens: {low: 900, high: 100, step: 100}\n", "max_tokens"),
    "range on a choice knob": ("  retriever_mode: {low: 1, high: 3, step: 1}\n", "retriever_mode"),
    "step does not divide": ("  max_tokens: {low: 100, high: 1000, step: 400}\n", "max_tokens"),
    "outside the domain": ("  top_k: {low: 0, high: 10, step: 1}\n", "top_k"),
    "value not a choice": ("  chunk_header: [none, subtitle]\n", "chunk_header"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_space_is_one_line_naming_the_knob(case: str, tmp_path: Path, base, capsys) -> None:
    text, knob = BAD[case]
    path = tmp_path / "bad.yaml"
    path.write_text("grid:\n" + text)
    with pytest.raises(ConfigError) as err:
        load_space(path, base)
    assert str(path) in str(err.value) and knob in str(err.value) and "\n" not in str(err.value)
    out = tmp_path / "runs"
    rc = main(["tune", "--dataset", str(MINI), "--space", str(path), "--trials", "2", "--out", str(out)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and knob in lines[0], lines
    assert not out.exists() or not any(out.iterdir())  # refused before any work: no run folder


def test_a_budget_stops_the_study_before_the_next_trial_could_pass_it() -> None:
    from types import SimpleNamespace

    from ragsweep.cost.records import ConfigCost
    from ragsweep.tuning.records import TuneSettings
    from ragsweep.tuning.search import Budget

    stopped: list[bool] = []
    study = SimpleNamespace(stop=lambda: stopped.append(True))
    results: dict[str, SimpleNamespace] = {}
    budget = Budget(TuneSettings(space="s.yaml", trials=9, max_calls=100), SimpleNamespace(results=results))
    for n in range(3):
        results[f"c{n}"] = SimpleNamespace(cost=ConfigCost(calls=40, usd=0.5))
        budget(study, None)  # 40 spent + 40 for the next: 80 <= 100, then 80 + 40 > 100
        assert stopped == ([] if n == 0 else [True] * n)


def test_a_cost_budget_stops_when_the_calls_have_no_price(capsys) -> None:
    from types import SimpleNamespace

    from ragsweep.cost.records import ConfigCost
    from ragsweep.tuning.records import TuneSettings
    from ragsweep.tuning.search import Budget

    stopped: list[bool] = []
    study = SimpleNamespace(stop=lambda: stopped.append(True))
    results = {"c0": SimpleNamespace(cost=ConfigCost(calls=40, usd=None))}
    Budget(TuneSettings(space="s.yaml", trials=9, max_cost=1.0), SimpleNamespace(results=results))(study, None)
    assert stopped == [True] and "no price" in capsys.readouterr().err  # never counted as free


def test_ragsweep_tune_is_the_api_function_whatever_was_imported_first() -> None:
    import ragsweep
    import ragsweep.api
    import ragsweep.tuning.records  # noqa: F401 - the search's package, imported before the name is asked

    assert ragsweep.tune is ragsweep.api.tune


def test_the_api_refuses_a_write_best_it_could_not_write_before_any_trial(tmp_path: Path) -> None:
    import ragsweep
    from ragsweep.core.errors import RunError

    space = tmp_path / "space.yaml"
    space.write_text("space:\n  retriever_mode: [bm25, knn]\n")
    with pytest.raises(RunError, match="is a folder"):
        ragsweep.tune(PIPELINE, MINI, space, trials=2, out=tmp_path / "runs", write_best=str(tmp_path))
    assert not (tmp_path / "runs").exists()  # no study begun: the study of hours must not end on it


def test_a_dry_run_draws_what_the_study_would_try(tmp_path: Path, base) -> None:
    from ragsweep.tuning.study import draw

    path = tmp_path / "space.yaml"
    path.write_text("space:\n  retriever_mode: [bm25, knn, hybrid]\n  rrf_k: [10, 60]\n  top_k: [3, 5]\n")
    space = load_space(path, base)
    assert space.size() == 8  # rrf_k only with fusion: 2 x 2 + 2 x 2
    assert len(draw(space, base, 3, 0)) == 3  # distinct configurations, as --trials counts them
    assert len(draw(space, base, 20, 0)) == 8  # never more than the space holds
    assert list(draw(space, base, 5, 1)) == list(draw(space, base, 5, 1))  # the seed fixes them
