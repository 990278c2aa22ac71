"""``log_tune_to_mlflow(run_dir)``: a tune run folder -> a parent MLflow run for the study and one nested
child run per trial.

The parent holds the study (dataset, sampler, seed, pruning, objectives, the space), the best trial's
params and its dev, test and baseline values with the test's 95% CI, the evaluation cost (cases
evaluated of cases possible) and each knob's importance, with the run folder's files (``tune.json``,
``study.db``, ``report.html``) as artifacts. A trial's child run holds its parameters, its objective values
on the dev cases (a complete trial's only), the dev cases it evaluated, its seconds and cost; its status says
what became of it (complete: FINISHED, pruned: KILLED, failed: FAILED). Names and the local file store follow
report/mlflow_log.py (``recall@5`` is logged as ``recall_at_5``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ragsweep.report.mlflow_log import (
    _experiment_id,
    _flatten,
    _log_batch,
    _log_files,
    _metric_dict,
    _offline_env,
    default_tracking_uri,
    mlflow_key,
    terminated,
)
from ragsweep.tuning.records import TrialRecord, TuneReport

TUNE_FILE = "tune.json"
_STATUS = {"complete": "FINISHED", "pruned": "KILLED", "failed": "FAILED"}


def read_tune(run_dir: Path) -> TuneReport:
    """The run folder's ``tune.json``; a missing one raises FileNotFoundError naming it."""
    path = Path(run_dir) / TUNE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (not a tune run folder?)")
    return TuneReport.model_validate_json(path.read_text(encoding="utf-8"))


def log_tune_to_mlflow(run_dir: str | Path, tracking_uri: str | None = None, experiment: str = "ragsweep") -> str:
    """Log a tune run folder to MLflow: the study as a parent run, each trial as a child; return the parent's id."""
    run_dir = Path(run_dir)
    report = read_tune(run_dir)
    _offline_env()
    # deferred: MLflow is imported only when a run is logged (its import takes seconds)
    from mlflow.tracking import MlflowClient

    uri = tracking_uri or default_tracking_uri(run_dir)
    if uri.startswith("file:") or "://" not in uri:
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # as report/mlflow_log.py says why
    client = MlflowClient(tracking_uri=uri)
    exp_id = _experiment_id(client, experiment)
    tags = {"ragsweep.kind": "tune", "ragsweep.run_dir": str(run_dir.resolve()), "mlflow.source.name": "ragsweep"}
    pid = client.create_run(exp_id, run_name=run_dir.name, tags=tags).info.run_id
    with terminated(client, pid):
        _log_batch(client, pid, params=_study_params(report), metrics=_study_metrics(report))
        _log_files(client, pid, run_dir, [f for f in sorted(run_dir.iterdir()) if f.is_file()], artifact_path="run")
        for trial in sorted(report.trials, key=lambda t: t.number):
            _log_trial(client, exp_id, run_dir.name, report, trial, pid)
    return pid


def _study_params(report: TuneReport) -> dict[str, str]:
    params: dict[str, str] = {}
    for name in ("dataset", "sampler", "seed", "prune", "n_trials", "space_size", "dev_cases"):
        _flatten(name, getattr(report, name), params)
    params["objectives"] = ",".join(report.objectives)
    for objective, direction in report.directions.items():
        params[mlflow_key(f"direction.{objective}")] = direction
    for knob, domain in report.space.items():
        params[mlflow_key(f"space.{knob}")] = json.dumps(domain, default=str)
    if report.best is not None:
        for knob, value in report.best.params.items():
            _flatten(f"best.{knob}", value, params)
        params["best.trial"] = str(report.best.trial)
        params["best.config_id"] = report.best.config_id
    params["pareto"] = ",".join(str(n) for n in report.pareto)
    return params


def _study_metrics(report: TuneReport) -> dict[str, float]:
    out = _metric_dict({"cases_evaluated": report.cases_evaluated, "cases_possible": report.cases_possible})
    out.update(_metric_dict(report.importance, prefix="importance."))
    best = report.best
    if best is not None:
        out.update(_metric_dict(best.dev, prefix="best.dev."))
        intervals = {name: list(iv) for name, iv in best.test_intervals.items()}
        out.update(_metric_dict(best.test, intervals, prefix="best.test."))
        out.update(_metric_dict(best.baseline, prefix="baseline.test."))
        out.update(_metric_dict({"trials_tried": best.trials_tried}, prefix="best."))
        if best.paired is not None:
            paired: dict[str, Any] = {"difference": best.paired.difference, "p_value": best.paired.p_value}
            if best.paired.significant is not None:
                paired["significant"] = float(best.paired.significant)
            out.update(_metric_dict(paired, prefix=f"paired.{best.paired.metric}."))
    return out


def _trial_tags(report: TuneReport, trial: TrialRecord, pid: str) -> dict[str, str]:
    tags = {
        "mlflow.parentRunId": pid,
        "ragsweep.kind": "tune-trial",
        "ragsweep.trial": str(trial.number),
        "ragsweep.config_id": trial.config_id,
        "ragsweep.state": trial.state,
        "ragsweep.pareto": str(trial.number in set(report.pareto)).lower(),
        "ragsweep.best": str(report.best is not None and report.best.trial == trial.number).lower(),
    }
    if trial.reason:
        tags["ragsweep.reason"] = trial.reason[:5000]
    return tags


def _log_trial(client: Any, exp_id: str, name: str, report: TuneReport, trial: TrialRecord, pid: str) -> None:
    """One trial's child run of the study's parent run ``pid``."""
    run_id = client.create_run(
        exp_id, run_name=f"{name}/trial-{trial.number}", tags=_trial_tags(report, trial, pid)
    ).info.run_id
    with terminated(client, run_id, _STATUS[trial.state]):
        params: dict[str, str] = {"config_id": trial.config_id, "state": trial.state}
        for knob, value in trial.params.items():
            _flatten(knob, value, params)
        figures = {"cases_evaluated": trial.cases_evaluated, "seconds": trial.seconds, "cost": trial.cost}
        metrics = _metric_dict(trial.values) | _metric_dict(figures)  # a trial not complete has no value
        _log_batch(client, run_id, params=params, metrics=metrics)


__all__ = ["log_tune_to_mlflow", "read_tune"]
