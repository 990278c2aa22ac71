"""log_tune_to_mlflow into a temporary file store, read back through MLflow's own client; no network.

A tune run folder (tune.json, report.html) -> a parent run for the study and one child run per trial,
whose status says what became of the trial.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsweep.report.mlflow_log import mlflow_key
from ragsweep.report.tune_html import write_tune_html
from ragsweep.report.tune_mlflow import log_tune_to_mlflow
from test_mlflow import _artifacts, no_network  # noqa: F401 - no_network: pytest fixture
from test_tune_report import OBJ, SECOND, _report


def test_study_parent_and_one_child_per_trial(tmp_path: Path, no_network) -> None:
    from mlflow.tracking import MlflowClient

    report = _report()
    run_dir = tmp_path / "runs" / "tune-cuad-mini"
    run_dir.mkdir(parents=True)
    (run_dir / "tune.json").write_text(report.model_dump_json(indent=2))
    write_tune_html(report, run_dir)
    uri = (tmp_path / "store").as_uri()
    parent_id = log_tune_to_mlflow(run_dir, tracking_uri=uri, experiment="ragsweep-tune-test")
    client = MlflowClient(tracking_uri=uri)
    parent = client.get_run(parent_id)
    assert parent.info.status == "FINISHED" and parent.data.tags["ragsweep.kind"] == "tune"
    params, metrics = parent.data.params, parent.data.metrics
    assert params["sampler"] == "nsga2" and params["seed"] == "3" and params["prune"] == "True"
    assert params["objectives"] == f"{OBJ},{SECOND}" and params["best.trial"] == "5"
    assert params["best.max_tokens"] == "600" and params["space.retriever_mode"] == '["bm25", "knn", "hybrid"]'
    assert metrics["best.dev.recall_at_5"] == pytest.approx(0.78)
    assert metrics["best.test.recall_at_5"] == pytest.approx(0.71)
    assert (metrics["best.test.recall_at_5.ci_low"], metrics["best.test.recall_at_5.ci_high"]) == (0.62, 0.80)
    assert metrics["baseline.test.recall_at_5"] == pytest.approx(0.66)
    assert metrics["paired.recall_at_5.p_value"] == pytest.approx(0.031)
    assert metrics["paired.recall_at_5.significant"] == 1.0
    assert metrics["cases_evaluated"] == 470 and metrics["cases_possible"] == 656
    assert metrics["importance.max_tokens"] == pytest.approx(0.7)
    assert {"run/tune.json", "run/report.html"} <= _artifacts(client, parent_id)

    children = client.search_runs([parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'")
    by_trial = {int(c.data.tags["ragsweep.trial"]): c for c in children}
    assert sorted(by_trial) == [t.number for t in report.trials]
    status = {"complete": "FINISHED", "pruned": "KILLED", "failed": "FAILED"}
    for trial in report.trials:
        child = by_trial[trial.number]
        assert child.info.status == status[trial.state] and child.data.tags["ragsweep.state"] == trial.state
        assert child.data.params["max_tokens"] == str(trial.params["max_tokens"])
        assert child.data.params["config_id"] == trial.config_id
        assert child.data.metrics["cases_evaluated"] == trial.cases_evaluated
        if trial.state == "complete":
            for objective, value in trial.values.items():
                assert child.data.metrics[mlflow_key(objective)] == pytest.approx(value)
        else:  # a failed trial has no value, a pruned one none over the dev cases: none is logged
            assert mlflow_key(OBJ) not in child.data.metrics
        assert "cost" not in child.data.metrics  # no price known: no cost logged, not a zero
    assert by_trial[5].data.tags["ragsweep.best"] == "true" and by_trial[0].data.tags["ragsweep.best"] == "false"
    assert by_trial[7].data.tags["ragsweep.pareto"] == "true"
    assert by_trial[2].data.tags["ragsweep.reason"] == "pruned at step 1"
    assert no_network == []


def test_not_a_tune_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="tune.json"):
        log_tune_to_mlflow(tmp_path)
