"""report.html of a tune run, from its TuneReport, opened in headless Chromium over the DevTools protocol.

The page must show every section (study, best trial with dev, test, CI and paired test, the trace against
trials and against cases evaluated, each knob's effect, the Pareto front of two objectives, the trials),
lay out every chart, and log no error; its numbers are the report's (best so far, cases evaluated, saving).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsweep.report.tune_html import best_so_far, write_tune_html
from ragsweep.tuning.records import PairedVerdict, TrialRecord, TuneBest, TuneReport
from support import MINI, PIPELINE
from test_report_html import chromium  # noqa: F401 - pytest fixture

OBJ, SECOND = "recall@5", "mrr@5"
DEV = 82
# (state, recall@5, mrr@5, cases evaluated, chunk max_tokens, retriever mode)
TRIALS = [
    ("complete", 0.61, 0.40, DEV, 200, "bm25"),
    ("complete", 0.72, 0.45, DEV, 600, "hybrid"),
    ("pruned", 0.30, 0.20, 20, 100, "knn"),
    ("complete", 0.70, 0.52, DEV, 400, "hybrid"),
    ("failed", None, None, 0, 1000, "bm25"),
    ("complete", 0.78, 0.50, DEV, 600, "knn"),
    ("pruned", 0.41, 0.30, 40, 150, "bm25"),
    ("complete", 0.66, 0.55, DEV, 300, "knn"),
]


def _report() -> TuneReport:
    trials = [
        TrialRecord(
            number=i,
            config_id=f"cfg{i}",
            params={"max_tokens": size, "retriever_mode": mode},
            state=state,  # type: ignore[arg-type]
            values={} if recall is None else {OBJ: recall, SECOND: mrr},
            cases_evaluated=cases,
            seconds=1.5 + i,
            reason={"pruned": "pruned at step 1", "failed": "engine error"}.get(state),
        )
        for i, (state, recall, mrr, cases, size, mode) in enumerate(TRIALS)
    ]
    best = TuneBest(
        trial=5,
        config_id="cfg5",
        params={"max_tokens": 600, "retriever_mode": "knn"},
        dev={OBJ: 0.78, SECOND: 0.50},
        test={OBJ: 0.71, SECOND: 0.47},
        test_intervals={OBJ: (0.62, 0.80), SECOND: (0.40, 0.55)},
        baseline={OBJ: 0.66, SECOND: 0.44},
        paired=PairedVerdict(metric=OBJ, difference=0.05, p_value=0.031, significant=True),
        trials_tried=8,
    )
    return TuneReport(
        dataset="cuad-mini",
        space={"max_tokens": {"low": 100, "high": 1000, "step": 50}, "retriever_mode": ["bm25", "knn", "hybrid"]},
        objectives=[OBJ, SECOND],
        directions={OBJ: "higher", SECOND: "higher"},
        sampler="nsga2",
        seed=3,
        prune=True,
        n_trials=8,
        space_size=57,
        dev_cases=DEV,
        cases_evaluated=sum(t.cases_evaluated for t in trials),
        cases_possible=8 * DEV,
        best=best,
        pareto=[5, 7, 3],
        trials=trials,
        importance={"max_tokens": 0.7, "retriever_mode": 0.3},
    )


def test_best_so_far_counts_complete_trials_and_every_case_spent():
    trace = best_so_far(_report())
    assert [b for _, _, b in trace] == [0.61, 0.72, 0.72, 0.72, 0.72, 0.78, 0.78, 0.78]  # pruned 0.30 never counts
    assert [spent for _, spent, _ in trace] == [82, 164, 184, 266, 266, 348, 388, 470]
    lower = _report().model_copy(update={"directions": {OBJ: "lower", SECOND: "higher"}})
    assert [b for _, _, b in best_so_far(lower)][-1] == 0.61


PAGE_STATE = """JSON.stringify({
  sections: [...document.querySelectorAll("main > section")].map(s => s.id),
  plots: document.querySelectorAll("svg.plot").length,
  drawn: Number(document.body.dataset.plotsDrawn),
  traceBest: document.querySelectorAll("#trace-trials circle[r='5']").length,
  costTicks: [...document.querySelectorAll("#trace-cost text")].map(t => t.textContent),
  knobs: [...document.querySelectorAll(".knob")].map(k => k.dataset.knob),
  importanceBars: document.querySelectorAll("#importance rect.bar").length,
  paretoPoints: document.querySelectorAll("#pareto-front circle[r='5']").length,
  rows: [...document.querySelectorAll("table.trials tbody tr")].map(r => r.dataset.state),
  pruned: [...document.querySelectorAll("table.trials tr[data-state='pruned'] td:nth-child(3)")].map(c => c.innerText),
  best: [...document.querySelectorAll("table.best tr[data-metric]")].map(r => r.innerText),
  paired: document.querySelector("p.paired").innerText,
  study: document.querySelector("#study dl").innerText,
})"""


def _page_state(chromium, page: Path, profile: Path) -> dict:
    """What the page drew (PAGE_STATE), opened in headless Chromium; no console error."""
    from test_watch_live import DevTools  # deferred: it imports the report tests' module

    browser = DevTools(chromium, profile)
    try:
        browser.open(page.as_uri())
        state = json.loads(str(browser.evaluate(PAGE_STATE)))
        assert not browser.errors()
    finally:
        browser.close()
    return state


def test_tune_page_in_a_browser(chromium, tmp_path: Path) -> None:
    page = write_tune_html(_report(), tmp_path)
    assert page == tmp_path / "report.html"
    state = _page_state(chromium, page, tmp_path / "profile")
    assert state["sections"] == ["study", "best", "trace", "knobs", "pareto", "trials"]
    assert state["plots"] == state["drawn"] == 6  # 2 trace charts, importance, 2 knobs, the Pareto front
    assert state["traceBest"] == 8  # the best so far after each trial, pruned and failed ones too
    assert state["knobs"] == ["max_tokens", "retriever_mode"] and state["importanceBars"] == 2
    assert state["paretoPoints"] == 3
    assert state["rows"] == [s for s, *_ in TRIALS]
    assert state["pruned"] == ["–", "–"]  # what Optuna keeps of a pruned trial is no value over the dev cases
    assert state["best"][0].split("\t")[:2] == [OBJ, "0.780"] and "0.710 [0.620, 0.800]" in state["best"][0]
    assert "+0.050" in state["paired"] and "p = 0.0310" in state["paired"] and "significant" in state["paired"]
    assert "470 cases evaluated of 656 possible (pruning saved 28%)" in state["study"]
    assert "8 distinct configurations of 8 asked, in 8 trials: 5 complete, 1 failed, 2 pruned" in state["study"]


def test_one_objective_no_front_and_no_completed_trial(tmp_path: Path) -> None:
    single = _report().model_copy(update={"objectives": [OBJ], "pareto": []})
    text = write_tune_html(single, tmp_path / "one.html").read_text()
    assert 'id="pareto"' not in text and 'id="trace"' in text
    failed = [t.model_copy(update={"state": "failed", "values": {}}) for t in single.trials]
    empty = single.model_copy(update={"trials": failed, "best": None, "importance": {}})
    text = write_tune_html(empty, tmp_path / "none.html").read_text()
    assert "No trial completed" in text and "<svg" not in text


@pytest.mark.parametrize("hostile", ["<script>alert(1)</script>", "\u202eevil"])
def test_parameters_are_escaped(tmp_path: Path, hostile: str) -> None:
    report = _report()
    report.trials[0].params["retriever_mode"] = hostile
    text = write_tune_html(report, tmp_path / "r.html").read_text()
    assert hostile not in text


REAL_SPACE = """grid:
  chunking:
    - {min_tokens: 100, max_tokens: 200}
    - {min_tokens: 250, max_tokens: 600}
  retriever_mode: [bm25]
  chunk_header: [none, title]
  top_k: [5]
baseline: {min_tokens: 250, max_tokens: 600, retriever_mode: bm25, chunk_header: none, top_k: 5}
objectives: [recall@5, mrr@5]
ks: [1, 5]
"""


@pytest.fixture(scope="module")
def real_tune(tmp_path_factory) -> Path:
    """One real `ragsweep tune` over cuad-mini: 4 trials of a 4-configuration bm25 space, two objectives."""
    from ragsweep.cli import main

    work = tmp_path_factory.mktemp("tune")
    space = work / "space.yaml"
    space.write_text(REAL_SPACE)
    args = ["--dataset", str(MINI), "--space", str(space), "--trials", "4", "--seed", "0", "--out", str(work / "runs")]
    mlflow = ["--mlflow", "--mlflow-uri", (work / "mlruns").as_uri()]
    assert main(["tune", "--pipeline", str(PIPELINE), *args, *mlflow]) == 0
    (folder,) = (work / "runs").iterdir()
    return folder


def test_the_command_writes_the_page_and_logs_each_trial_to_mlflow(real_tune: Path) -> None:
    from mlflow.tracking import MlflowClient

    report = TuneReport.model_validate_json((real_tune / "tune.json").read_text())
    page = (real_tune / "report.html").read_text()
    assert f"ragsweep tune · {report.dataset}" in page and page.count('<tr data-state="') == len(report.trials)
    client = MlflowClient(tracking_uri=(real_tune.parent.parent / "mlruns").as_uri())
    experiments = [e.experiment_id for e in client.search_experiments()]
    (parent,) = client.search_runs(experiments, filter_string="tags.`ragsweep.kind` = 'tune'")
    children = client.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert sorted(int(c.data.tags["ragsweep.trial"]) for c in children) == [t.number for t in report.trials]


def test_a_real_tune_run_in_a_browser(chromium, real_tune: Path, tmp_path: Path) -> None:
    report = TuneReport.model_validate_json((real_tune / "tune.json").read_text())
    page = write_tune_html(report, tmp_path / "tune.html")
    state = _page_state(chromium, page, tmp_path / "profile")
    assert state["sections"] == ["study", "best", "trace", "knobs", "pareto", "trials"]
    assert state["plots"] == state["drawn"] >= 4  # 2 trace charts, a knob's effect, the Pareto front
    assert state["rows"] == [t.state for t in report.trials] and len(report.trials) >= 4  # repeats are extra
    assert state["traceBest"] == len(report.trials) and state["paretoPoints"] == len(report.pareto)
    assert f"{report.cases_evaluated} cases evaluated of {report.cases_possible} possible" in state["study"]
    complete = [t.values[OBJ] for t in report.trials if t.state == "complete"]
    assert best_so_far(report)[-1][2] == max(complete) == report.best.dev[OBJ]  # type: ignore[union-attr]
    dev_low, dev_high = report.best.dev_intervals[OBJ]  # type: ignore[union-attr]
    dev_shown = f"{report.best.dev[OBJ]:.3f} [{dev_low:.3f}, {dev_high:.3f}]"  # type: ignore[union-attr]
    assert state["best"][0].split("\t")[:2] == [OBJ, dev_shown]  # the chosen trial's dev value with its CI
    # a group axis (chunking) charted by its knobs' values; a knob every trial set alike (top_k) has no chart
    assert "top_k" not in state["knobs"] and "retriever_mode" not in state["knobs"]
    assert set(state["knobs"]) <= {"chunking", "chunk_header"} and state["knobs"]
    if "chunking" in state["knobs"]:  # both chunkings were tried: a bar each, named by its knobs
        text = page.read_text()
        assert "min_tokens=100, max_tokens=200" in text and "min_tokens=250, max_tokens=600" in text
