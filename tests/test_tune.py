"""`ragsweep tune` over datasets/cuad-mini: an 18-configuration space (3 chunkings x bm25/knn/hybrid x
chunk header none/title, top_k 5) searched in 6 trials, beside the full grid computed once in the same module.

The grid is ``tune --sampler grid`` over the whole space: it asks Pathway for every configuration and fills the
served-list and scored-case caches (on in this module), so the 6-trial search, its resumption and the chosen
file are answered from the caches, as a configuration seen before is. A ``sweep`` of part of the space, asking
Pathway again, has the grid's numbers configuration for configuration.

The objective is ndcg@5: on cuad-mini's dev cases recall@5 reaches its ceiling (1.0, a CI of [1, 1]), so a test
"within the grid best's CI" on it would compare against a degenerate interval.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragsweep
from ragsweep.commands.inputs import load_config
from ragsweep.evaluation.records import ConfigResult
from ragsweep.tuning.records import TuneReport
from ragsweep.tuning.replay import replay
from ragsweep.tuning.space import load_space
from ragsweep.tuning.table import best_trials
from support import MINI, PIPELINE

NDCG5, RECALL5 = "ndcg@5", "recall@5"
BASELINE = {"min_tokens": 250, "max_tokens": 600, "retriever_mode": "hybrid", "chunk_header": "none", "top_k": 5}
SPACE18 = f"""
grid:
  chunking:
    - {{min_tokens: 100, max_tokens: 200}}
    - {{min_tokens: 200, max_tokens: 400}}
    - {{min_tokens: 250, max_tokens: 600}}
  retriever_mode: [bm25, knn, hybrid]
  chunk_header: [none, title]
  top_k: [5]
baseline: {json.dumps(BASELINE)}
objectives: [{NDCG5}]
ks: [5]
"""
RAGSWEEP = str(Path(sys.executable).parent / "ragsweep")
# seeds replayed on the grid's numbers (no evaluation): how often 6 TPE trials reach the grid best's CI. Measured:
# 30 of 30 (the exact grid best in 19 of 30). The CI on the 26 dev cases with evidence is wide: 9 of the 18
# configurations lie in it, so 6 drawn at random reach it with probability 1 - C(9,6)/C(18,6) = 99.5% as well.
SEEDS = 30
REACHED_AT_LEAST = 27


@pytest.fixture(scope="module", autouse=True)
def caches() -> Iterator[None]:
    """The served-list and scored-case caches on for this module (the suite turns them off): what the grid asked
    Pathway answers every later evaluation of the same configuration."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAGSWEEP_SERVED_CACHE", "1")
        env.setenv("RAGSWEEP_SCORED_CACHE", "1")
        yield


@pytest.fixture(scope="module")
def space(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("space") / "space.yaml"
    path.write_text(SPACE18)
    return path


@pytest.fixture(scope="module")
def grid(space: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[TuneReport, Path]:
    """The full grid, evaluated once (the grid sampler: every configuration): what the search is measured against."""
    out = tmp_path_factory.mktemp("grid")
    return ragsweep.tune(PIPELINE, MINI, space, trials=20, sampler="grid", out=out, name="g"), out / "g"


@pytest.fixture(scope="module")
def tuned(
    space: Path, grid: tuple[TuneReport, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[TuneReport, Path]:
    out = tmp_path_factory.mktemp("tune")
    best = out / "best.yaml"
    report = ragsweep.tune(PIPELINE, MINI, space, trials=6, seed=0, out=out, name="t", write_best=str(best))
    return report, out / "t"


def _result(grid: tuple[TuneReport, Path], cid: str) -> ConfigResult:
    """The grid's record of a configuration (``configs/<id>/result.json``, as a sweep writes it)."""
    return ConfigResult.model_validate_json((grid[1] / "configs" / cid / "result.json").read_text())


def _grid_values(grid: tuple[TuneReport, Path]) -> dict[str, float]:
    values = {t.config_id: t.values[NDCG5] for t in grid[0].trials if t.state == "complete"}
    return {cid: v for cid, v in values.items() if v is not None}


def _grid_best(grid: tuple[TuneReport, Path]) -> ConfigResult:
    values = _grid_values(grid)
    return _result(grid, max(values, key=lambda cid: values[cid]))


def test_the_grid_is_the_whole_space(grid: tuple[TuneReport, Path]) -> None:
    report, _ = grid
    assert report.n_trials == 18 == report.space_size  # the grid is enumerated, then the study ends
    assert len(_grid_values(grid)) == 18
    low, high = _grid_best(grid).interval(NDCG5)
    # ndcg@5 is below its ceiling on cuad-mini: the best's CI is an interval, not a point
    assert low is not None and high is not None and low < high < 1.0


def test_six_trials_reach_the_grid_best(tuned: tuple[TuneReport, Path], grid: tuple[TuneReport, Path]) -> None:
    report, folder = tuned
    # six configurations tried (one TPE proposes again is answered from the folder, not counted)
    assert len({t.config_id for t in report.trials}) == 6 and report.space_size == 18 and report.best is not None
    best_grid = _grid_best(grid)
    found = report.best.dev[NDCG5]
    assert found is not None
    # the criterion: the search's best dev value lies within the grid best's 95% interval on dev
    grid_low, grid_high = best_grid.interval(NDCG5)
    assert grid_low is not None and grid_high is not None and grid_low <= found <= grid_high
    # and the grid's best lies within the chosen trial's 95% interval on dev: the two are not told apart there
    low, high = _result(grid, report.best.config_id).interval(NDCG5)
    assert low is not None and high is not None and low <= (best_grid.metric(NDCG5) or 0.0) <= high
    assert report.best.dev_intervals[NDCG5] == (low, high)  # tune.json carries the chosen trial's dev CI
    # honest: the number of trials, dev next to test, a paired test against the baseline on test
    assert report.best.trials_tried == len(report.trials) and report.best.test and report.best.baseline
    assert report.best.paired is not None
    # a paired test against the baseline unless the baseline itself was chosen
    assert (report.best.paired.p_value is not None) == (report.best.params != BASELINE)
    assert (folder / "study.db").is_file() and TuneReport.model_validate_json((folder / "tune.json").read_text())


def test_how_often_six_trials_reach_the_grid_best(
    tuned: tuple[TuneReport, Path], grid: tuple[TuneReport, Path], space: Path
) -> None:
    """The grid's numbers replayed through the tune's own sampler and stop rule: seed 0 tries what the real
    study tried, and over many seeds 6 trials reach the grid best's CI (the rate the docs give)."""
    report, _ = tuned
    values = _grid_values(grid)
    loaded = load_space(space, load_config(str(PIPELINE), None))
    assert replay(loaded, values, "tpe", 0, 6, "higher") == [t.config_id for t in report.trials]
    low, _ = _grid_best(grid).interval(NDCG5)
    assert low is not None
    reached = sum(
        max(values[c] for c in replay(loaded, values, "tpe", seed, 6, "higher")) >= low for seed in range(SEEDS)
    )
    assert reached >= REACHED_AT_LEAST, f"{reached} of {SEEDS} seeds reach the grid best's CI"


def test_a_trial_has_the_grids_numbers(tuned: tuple[TuneReport, Path], grid: tuple[TuneReport, Path]) -> None:
    report, folder = tuned
    complete = [t for t in report.trials if t.state == "complete"]
    assert complete
    for trial in complete:
        assert trial.values[NDCG5] == _result(grid, trial.config_id).metric(NDCG5), trial.config_id
        assert (folder / "configs" / trial.config_id / "result.json").is_file()
    # a configuration proposed again is answered from the folder: it queries no case
    assert report.cases_evaluated == 6 * report.dev_cases
    assert report.cases_possible == len(report.trials) * report.dev_cases
    seen: set[str] = set()
    for trial in report.trials:  # a configuration proposed again is answered from the folder: no case asked
        assert trial.cases_evaluated == (0 if trial.config_id in seen else report.dev_cases)
        seen.add(trial.config_id)


def test_write_best_evaluates_to_its_trial(tuned: tuple[TuneReport, Path], grid: tuple[TuneReport, Path]) -> None:
    report, folder = tuned
    assert report.best is not None
    written = folder.parent / "best.yaml"
    run = ragsweep.evaluate(written, MINI, split="dev")
    assert run.metric(NDCG5) == report.best.dev[NDCG5]
    assert run.metric(RECALL5) == _result(grid, report.best.config_id).metric(RECALL5)


def _study_states(folder: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(folder / "study.db") as db:
        return list(db.execute("SELECT number, state FROM trials ORDER BY number"))


def test_resumed_in_new_processes_even_killed_it_keeps_its_trials(tuned: tuple[TuneReport, Path], space: Path) -> None:
    report, folder = tuned
    first = [(t.number, t.params, t.values) for t in report.trials]
    args = [RAGSWEEP, "tune", "--dataset", str(MINI), "--space", str(space), "--out", str(folder.parent)]
    args += ["--resume", str(folder), "--seed", "0", "--trials", "9"]
    # asking Pathway (not the caches) keeps a trial running long enough to be killed in it
    uncached = {**os.environ, "RAGSWEEP_SERVED_CACHE": "0", "RAGSWEEP_SCORED_CACHE": "0"}
    killed = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=uncached)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(s == "RUNNING" for _, s in _study_states(folder)):
        time.sleep(0.2)
    os.kill(killed.pid, signal.SIGKILL)  # mid-trial: its trial is in the study, running
    killed.wait()
    assert any(s == "RUNNING" for _, s in _study_states(folder))
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    resumed = TuneReport.model_validate_json((folder / "tune.json").read_text())
    # the terminal table: a lost@k line for each trial it shows, as sweep's shows one per configuration
    shown = best_trials(resumed)
    assert shown and "lost@k: where each trial's cases were lost" in done.stdout
    lost = {line.split("@5:")[0].strip(): line for line in done.stdout.splitlines() if " @5: " in line}
    assert all(" (found " in lost[str(t.number)] for t in shown), done.stdout
    assert [(t.number, t.params, t.values) for t in resumed.trials[: len(first)]] == first
    interrupted = [t for t in resumed.trials if t.reason and "interrupted" in t.reason]
    assert len(interrupted) == 1 and interrupted[0].state == "failed"
    assert len({t.config_id for t in resumed.trials if t not in interrupted}) == 9
    assert all(s in ("COMPLETE", "PRUNED", "FAIL") for _, s in _study_states(folder))


def test_the_grid_sampler_equals_sweep(
    grid: tuple[TuneReport, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGSWEEP_SCORED_CACHE", "0")  # the sweep asks Pathway and scores every case itself
    sub = tmp_path / "sub.yaml"
    sub.write_text(
        "grid:\n  chunking: [{min_tokens: 200, max_tokens: 400}]\n  retriever_mode: [bm25, knn]\n"
        "  chunk_header: [none]\n  top_k: [5]\n"
        "baseline: {min_tokens: 200, max_tokens: 400, retriever_mode: bm25, chunk_header: none, top_k: 5}\n"
        f"objectives: [{NDCG5}]\nks: [5]\n"
    )
    swept = ragsweep.sweep(PIPELINE, MINI, sub, out=tmp_path, fresh_retrieval=True)
    assert len(swept.configs) == 2 and not swept.failed
    for row in swept.configs:  # configuration for configuration, the grid sampler's trial is the sweep's
        trial = next(t for t in grid[0].trials if t.config_id == row.id)
        assert trial.values[NDCG5] == row.metric(NDCG5)
        stored = json.loads((grid[1] / "configs" / row.id / "result.json").read_text())
        assert stored["metrics"] == row.metrics and stored["intervals"] == row.intervals


def test_trials_side_by_side_have_the_numbers_each_has_alone(
    grid: tuple[TuneReport, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trials evaluated in batches, as ``--executor ray`` runs one per worker (here two at a time on the local
    executor, asking Pathway): each has the numbers the grid gave it alone; no batch is larger than the trials left."""
    from ragsweep.tuning import parallel, search

    monkeypatch.setenv("RAGSWEEP_SERVED_CACHE", "0")
    monkeypatch.setenv("RAGSWEEP_SCORED_CACHE", "0")
    monkeypatch.setattr(search, "parallel_trials", lambda executor, prune: 2)
    batches: list[int] = []
    run_batch = parallel.run_batch

    def counted(trials, batch):
        batches.append(len(batch))
        return run_batch(trials, batch)

    monkeypatch.setattr(parallel, "run_batch", counted)
    sub = tmp_path / "sub.yaml"
    sub.write_text(
        "grid:\n  chunking: [{min_tokens: 100, max_tokens: 200}]\n  retriever_mode: [bm25, knn, hybrid]\n"
        "  chunk_header: [title]\n  top_k: [5]\n"
        "baseline: {min_tokens: 100, max_tokens: 200, retriever_mode: bm25, chunk_header: title, top_k: 5}\n"
        f"objectives: [{NDCG5}]\nks: [5]\n"
    )
    report = ragsweep.tune(PIPELINE, MINI, sub, trials=3, sampler="grid", out=tmp_path, name="b")
    assert batches == [2, 1] and [t.state for t in report.trials] == ["complete"] * 3
    for trial in report.trials:
        assert trial.values[NDCG5] == _result(grid, trial.config_id).metric(NDCG5), trial.config_id
        stored = json.loads((tmp_path / "b" / "configs" / trial.config_id / "result.json").read_text())
        assert stored["metrics"] == _result(grid, trial.config_id).metrics
    assert report.cases_evaluated == 3 * report.dev_cases
