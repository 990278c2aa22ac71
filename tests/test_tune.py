"""`ragsweep tune` over datasets/cuad-mini: the issue's 18-configuration space (3 chunkings x bm25/knn/hybrid x
chunk header none/title, top_k 5) searched in 6 trials, beside the full grid swept once in the same module.

One tune run and one sweep are shared by the tests: the search reaches the grid's best, a trial has a
sweep's numbers for the same configuration (the grid sampler: configuration for configuration), the chosen
file evaluates to its trial's numbers, a resumed study keeps its trials (a new process, a killed one too).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ragsweep
from ragsweep.evaluation.records import SweepResult
from ragsweep.tune.records import TuneReport
from support import MINI, PIPELINE

RECALL5 = "recall@5"
SPACE18 = f"""
grid:
  chunking:
    - {{min_tokens: 100, max_tokens: 200}}
    - {{min_tokens: 200, max_tokens: 400}}
    - {{min_tokens: 250, max_tokens: 600}}
  retriever_mode: [bm25, knn, hybrid]
  chunk_header: [none, title]
  top_k: [5]
baseline: {{min_tokens: 250, max_tokens: 600, retriever_mode: hybrid, chunk_header: none, top_k: 5}}
objectives: [{RECALL5}]
ks: [5]
"""
RAGSWEEP = str(Path(sys.executable).parent / "ragsweep")


@pytest.fixture(scope="module")
def space(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("space") / "space.yaml"
    path.write_text(SPACE18)
    return path


@pytest.fixture(scope="module")
def grid(space: Path, tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    """The full grid, swept once: what the search is measured against."""
    return ragsweep.sweep(PIPELINE, MINI, space, out=tmp_path_factory.mktemp("grid"))


@pytest.fixture(scope="module")
def tuned(space: Path, grid: SweepResult, tmp_path_factory: pytest.TempPathFactory) -> tuple[TuneReport, Path]:
    out = tmp_path_factory.mktemp("tune")
    best = out / "best.yaml"
    report = ragsweep.tune(PIPELINE, MINI, space, trials=6, seed=0, out=out, name="t", write_best=str(best))
    return report, out / "t"


def _config(grid: SweepResult, cid: str):
    return next(c for c in grid.configs if c.id == cid)


def test_six_trials_reach_the_grid_best(tuned: tuple[TuneReport, Path], grid: SweepResult) -> None:
    report, folder = tuned
    # six configurations tried (one TPE proposes again is answered from the folder, not counted)
    assert len({t.config_id for t in report.trials}) == 6 and report.space_size == 18 and report.best is not None
    best_grid = _config(grid, grid.best_on(RECALL5) or "")
    found = report.best.dev[RECALL5]
    assert found is not None
    # the grid's best and the chosen trial are within each other's 95% intervals on dev: the search reached it
    # the grid's best lies within the chosen trial's 95% interval on dev: the two are not told apart there
    low, high = _config(grid, report.best.config_id).interval(RECALL5)
    assert low is not None and high is not None and low <= (best_grid.metric(RECALL5) or 0.0) <= high
    # honest: the number of trials, dev next to test, a paired test against the baseline on test
    assert report.best.trials_tried == len(report.trials) and report.best.test and report.best.baseline
    assert report.best.paired is not None
    # a paired test against the baseline unless the baseline itself was chosen
    assert (report.best.paired.p_value is not None) == (report.best.config_id != grid.baseline)
    assert (folder / "study.db").is_file() and TuneReport.model_validate_json((folder / "tune.json").read_text())


def test_a_trial_has_the_sweeps_numbers(tuned: tuple[TuneReport, Path], grid: SweepResult) -> None:
    report, folder = tuned
    complete = [t for t in report.trials if t.state == "complete"]
    assert complete
    for trial in complete:
        assert trial.values[RECALL5] == _config(grid, trial.config_id).metric(RECALL5), trial.config_id
        assert (folder / "configs" / trial.config_id / "result.json").is_file()
    # a configuration proposed again is answered from the folder: it queries no case
    assert report.cases_evaluated == 6 * report.dev_cases
    assert report.cases_possible == len(report.trials) * report.dev_cases
    seen: set[str] = set()
    for trial in report.trials:  # a configuration proposed again is answered from the folder: no case asked
        assert trial.cases_evaluated == (0 if trial.config_id in seen else report.dev_cases)
        seen.add(trial.config_id)


def test_write_best_evaluates_to_its_trial(tuned: tuple[TuneReport, Path]) -> None:
    report, folder = tuned
    assert report.best is not None
    written = folder.parent / "best.yaml"
    run = ragsweep.evaluate(written, MINI, split="dev")
    assert run.metric(RECALL5) == report.best.dev[RECALL5]


def _study_states(folder: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(folder / "study.db") as db:
        return list(db.execute("SELECT number, state FROM trials ORDER BY number"))


def test_resumed_in_new_processes_even_killed_it_keeps_its_trials(tuned: tuple[TuneReport, Path], space: Path) -> None:
    report, folder = tuned
    first = [(t.number, t.params, t.values) for t in report.trials]
    args = [RAGSWEEP, "tune", "--dataset", str(MINI), "--space", str(space), "--out", str(folder.parent)]
    args += ["--resume", str(folder), "--seed", "0", "--trials", "9"]
    killed = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(s == "RUNNING" for _, s in _study_states(folder)):
        time.sleep(0.2)
    os.kill(killed.pid, signal.SIGKILL)  # mid-trial: its trial is in the study, running
    killed.wait()
    assert any(s == "RUNNING" for _, s in _study_states(folder))
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    resumed = TuneReport.model_validate_json((folder / "tune.json").read_text())
    assert [(t.number, t.params, t.values) for t in resumed.trials[: len(first)]] == first
    interrupted = [t for t in resumed.trials if t.reason and "interrupted" in t.reason]
    assert len(interrupted) == 1 and interrupted[0].state == "failed"
    assert len({t.config_id for t in resumed.trials if t not in interrupted}) == 9
    assert all(s in ("COMPLETE", "PRUNED", "FAIL") for _, s in _study_states(folder))


def test_the_grid_sampler_equals_sweep(grid: SweepResult, tmp_path: Path) -> None:
    sub = tmp_path / "sub.yaml"
    sub.write_text(
        "grid:\n  chunking: [{min_tokens: 200, max_tokens: 400}]\n  retriever_mode: [bm25, knn]\n"
        "  chunk_header: [none]\n  top_k: [5]\n"
        "baseline: {min_tokens: 200, max_tokens: 400, retriever_mode: bm25, chunk_header: none, top_k: 5}\n"
        f"objectives: [{RECALL5}]\nks: [5]\n"
    )
    report = ragsweep.tune(PIPELINE, MINI, sub, trials=5, sampler="grid", out=tmp_path, name="g")
    assert report.n_trials == 2  # the grid is enumerated, then the study ends
    for trial in report.trials:
        row = _config(grid, trial.config_id)
        assert trial.values[RECALL5] == row.metric(RECALL5)
        stored = json.loads((tmp_path / "g" / "configs" / trial.config_id / "result.json").read_text())
        assert stored["metrics"] == row.metrics and stored["intervals"] == row.intervals
