"""log_to_mlflow into a temporary file store, read back through MLflow's own client; no network."""

import json
import shutil
import socket
from pathlib import Path

import pytest

from ragsweep.report.mlflow_log import log_to_mlflow, mlflow_key
from support import ROOT, RUNS


@pytest.fixture
def no_network(monkeypatch):
    """Record (and refuse) every attempt to open an IP connection."""
    attempts = []
    real_connect = socket.socket.connect

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError(f"network disabled in tests: {address}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / "runs" / name
    shutil.copytree(RUNS / name, dst)
    return dst


def _artifacts(client, run_id: str, path: str | None = None) -> set[str]:
    out = set()
    for f in client.list_artifacts(run_id, path):
        out |= _artifacts(client, run_id, f.path) if f.is_dir else {f.path}
    return out


def test_mlflow_key():
    assert mlflow_key("hit_rate@5") == "hit_rate_at_5"
    assert mlflow_key("ragas_faithfulness") == "ragas_faithfulness"
    assert mlflow_key("type/Cap On Liability (%)") == "type/Cap On Liability ___"


def test_eval_run_round_trip(tmp_path, no_network):
    from mlflow.tracking import MlflowClient

    run_dir = _copy("eval", tmp_path)
    uri = (tmp_path / "store").as_uri()
    run_id = log_to_mlflow(
        run_dir, tracking_uri=uri, experiment="ragsweep-test", pipeline_path=ROOT / "pipelines" / "default.yaml"
    )
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    report = json.loads((run_dir / "report.json").read_text())
    assert run.info.status == "FINISHED"
    assert client.get_experiment(run.info.experiment_id).name == "ragsweep-test"
    metrics = run.data.metrics
    for name, value in report["metrics"].items():
        if value is None:  # no case has a value: nothing is logged
            assert mlflow_key(name) not in metrics, name
        else:
            assert metrics[mlflow_key(name)] == pytest.approx(value), name
    assert metrics["hit_rate_at_5.ci_low"] == pytest.approx(report["intervals"]["hit_rate@5"][0])
    assert metrics["seconds.answer"] == pytest.approx(70.5)
    params = run.data.params
    assert params["max_tokens"] == "400" and params["retriever_mode"] == "hybrid"
    assert params["pipeline.hash"] == "sha256:3f1c9a0b7e2d" and params["top_k"] == str(report["top_k"]) == "10"
    assert params["dataset.name"] == "cuad_small" and params["relevance_rule"] == "evidence_offsets"
    assert run.data.tags["ragsweep.kind"] == "eval"
    assert run.data.tags["mlflow.source.git.commit"] == "3827698"
    assert {"run/report.json", "run/cases.jsonl", "pipeline/default.yaml"} <= _artifacts(client, run_id)
    # the metric history is readable too
    history = client.get_metric_history(run_id, "judge_correct")
    assert history[0].value == pytest.approx(report["metrics"]["judge_correct"])
    assert no_network == []


def test_default_store_is_beside_the_run(tmp_path, no_network):
    from mlflow.tracking import MlflowClient

    run_dir = _copy("tiny_a", tmp_path)
    run_id = log_to_mlflow(run_dir)
    store = tmp_path / "runs" / "mlruns"
    assert store.is_dir()
    run = MlflowClient(tracking_uri=store.as_uri()).get_run(run_id)
    assert run.data.metrics["hit_rate_at_5"] == pytest.approx(0.8)
    assert no_network == []


def test_sweep_parent_and_children(tmp_path, no_network):
    from mlflow.tracking import MlflowClient

    run_dir = _copy("sweep", tmp_path)
    uri = (tmp_path / "store").as_uri()
    parent_id = log_to_mlflow(run_dir, tracking_uri=uri)
    client = MlflowClient(tracking_uri=uri)
    parent = client.get_run(parent_id)
    sweep = json.loads((run_dir / "sweep.json").read_text())
    assert parent.data.params["baseline"] == sweep["baseline"]
    assert parent.data.params["best.recall_at_k"] == sweep["best"]["recall@k"]
    assert parent.data.metrics["best.recall_at_k"] == pytest.approx(
        max(c["metrics"]["recall@k"] for c in sweep["configs"])
    )
    assert {"run/sweep.json", "run/sweep.csv"} <= _artifacts(client, parent_id)
    children = client.search_runs([parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'")
    assert len(children) == len(sweep["configs"]) == 8
    by_id = {c.data.tags["ragsweep.config_id"]: c for c in children}
    for cfg in sweep["configs"]:
        child = by_id[cfg["id"]]
        assert child.data.params["top_k"] == str(cfg["params"]["top_k"])
        assert child.data.params["max_tokens"] == str(cfg["params"]["max_tokens"])
        assert child.data.params["min_tokens"] == str(cfg["params"]["min_tokens"])
        assert child.data.metrics["recall_at_k"] == pytest.approx(cfg["metrics"]["recall@k"])
        if cfg["top_k"] >= 5:
            assert child.data.metrics["hit_rate_at_5"] == pytest.approx(cfg["metrics"]["hit_rate@5"])
        else:  # a depth the configuration does not serve is missing, not logged
            assert cfg["metrics"]["hit_rate@5"] is None and "hit_rate_at_5" not in child.data.metrics
        assert child.data.metrics["latency_ms_per_query"] == pytest.approx(cfg["latency_ms_per_query"])
        for m, sig in cfg["significant"].items():
            assert child.data.metrics[f"significant.{mlflow_key(m)}"] == float(sig)
    assert by_id[sweep["baseline"]].data.tags["ragsweep.is_baseline"] == "true"
    first = by_id[sweep["configs"][0]["id"]]
    assert first.data.metrics["p_adjusted.recall_at_k"] == pytest.approx(0.012)
    assert first.data.tags["ragsweep.is_baseline"] == "false"
    assert "run/cases.jsonl" in _artifacts(client, first.info.run_id)
    assert no_network == []


def test_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError):
        log_to_mlflow(tmp_path / "nope", tracking_uri=(tmp_path / "store").as_uri())
