"""``log_to_mlflow(run_dir)``: an eval run -> one MLflow run; a sweep -> a parent run with one
nested child run per configuration.

Logged: params (pipeline variables, pipeline path/hash/overrides, dataset and corpus
fields, relevance rule, answerer), metrics (aggregate means, CI bounds as ``<name>.ci_low`` /
``<name>.ci_high``, stage seconds; for sweep configurations also p-values, Holm-adjusted
p-values, significance flags, seconds, latency, peak RSS), tags, the pipeline YAML and the
run folder's files as artifacts (a sweep configuration's child run also gets the rows of the
sweep's chunk table its cases refer to, as ``run/chunks.jsonl``).

MLflow metric and param names may not contain ``@``: ``hit_rate@5`` is logged as
``hit_rate_at_5`` (see :func:`mlflow_key`).

The default tracking URI is a local file store beside the run folder
(``<run_dir>/../mlruns``); nothing here talks to a network unless ``tracking_uri`` is a
server you name. MLflow's telemetry is switched off before it is imported. MLflow 3.x refuses a file store
unless ``MLFLOW_ALLOW_FILE_STORE=true``, which is set here for file URIs (set it too for
``mlflow ui --backend-store-uri file:...``); any other URI, e.g. ``sqlite:///mlflow.db``, works
as MLflow documents it.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from ragsweep.core import starter
from ragsweep.core.hits import chunk_id
from ragsweep.evaluation.records import ConfigResult, RunResult, SweepResult
from ragsweep.report.runs import (
    Manifest,
    RunFolderError,
    num,
    read_chunk_rows,
    read_lines,
    read_run,
    read_sweep,
    run_kind,
)
from ragsweep.report.values import mean_of

_BAD_KEY = re.compile(r"[^/\w.\- :]")
_MAX_PARAM_VALUE = 6000
_BATCH_PARAMS = 100
_BATCH_METRICS = 1000


@contextmanager
def terminated(client, run_id: str, status: str = "FINISHED") -> Iterator[None]:
    """The MLflow run ends with ``status`` when the block ends, FAILED when it raises (the error goes on)."""
    try:
        yield
    except BaseException:
        client.set_terminated(run_id, status="FAILED")
        raise
    client.set_terminated(run_id, status=status)


def _offline_env() -> None:
    os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    os.environ.setdefault("MLFLOW_TRACKING_INSECURE_TLS", "false")
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")


def mlflow_key(name: str) -> str:
    """A metric/param name MLflow accepts: ``@`` -> ``_at_``, other bad characters -> ``_``."""
    key = _BAD_KEY.sub("_", name.replace("@", "_at_"))
    key = re.sub(r"/+", "/", key).strip("/") or "_"
    return key[:250]


def default_tracking_uri(run_dir: Path) -> str:
    return (Path(run_dir).resolve().parent / "mlruns").as_uri()


def _flatten(prefix: str, value: object, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
        return
    if isinstance(value, (list, tuple)):
        text = json.dumps(value, default=str)
    elif value is None:
        text = "null"
    else:
        text = str(value)
    out[mlflow_key(prefix)] = text[:_MAX_PARAM_VALUE]


def _manifest_params(manifest: Manifest) -> dict[str, str]:
    pipe = manifest.pipeline
    params: dict[str, str] = {}
    for k, v in pipe.variables.items():
        _flatten(str(k), v, params)
    if pipe.path is not None:
        _flatten("pipeline.path", pipe.path, params)
    if pipe.hash is not None:
        _flatten("pipeline.hash", pipe.hash, params)
    if pipe.overrides:
        _flatten("pipeline.overrides", json.dumps(pipe.overrides, sort_keys=True, default=str), params)
    for section, val in (("dataset", manifest.dataset), ("corpus", manifest.corpus)):
        if isinstance(val, Mapping):
            for k, v in val.items():
                if isinstance(v, (str, int, float, bool)) or v is None:
                    _flatten(f"{section}.{k}", v, params)
        elif val is not None:
            _flatten(section, val, params)
    return params


def _eval_params(run: RunResult) -> dict[str, str]:
    params = _manifest_params(Manifest.of(run.manifest))
    _flatten("relevance_rule", run.relevance_rule, params)
    _flatten("answerer", run.answerer, params)
    _flatten("no_llm", run.no_llm, params)
    _flatten("top_k", run.top_k, params)  # the depth the pipeline served (its variables may not name it)
    if run.ks:
        _flatten("ks", ",".join(str(k) for k in run.ks), params)
    return params


def _metric_dict(
    metrics: Mapping[str, object], intervals: Mapping[str, Sequence[float | None]] | None = None, prefix: str = ""
) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in metrics.items():
        v = num(value)
        if v is not None and math.isfinite(v):
            out[mlflow_key(prefix + name)] = v
    for name, iv in (intervals or {}).items():
        if isinstance(iv, (list, tuple)) and len(iv) == 2:
            lo, hi = num(iv[0]), num(iv[1])
            if lo is not None and hi is not None:
                out[mlflow_key(f"{prefix}{name}.ci_low")] = lo
                out[mlflow_key(f"{prefix}{name}.ci_high")] = hi
    return out


def _eval_metrics(run: RunResult) -> dict[str, float]:
    out = _metric_dict(run.metrics, run.intervals)
    out.update(_metric_dict(Manifest.of(run.manifest).stage_seconds, prefix="seconds."))
    return out


def _tags(manifest: Manifest, kind: str, run_dir: Path, answerer: str | None = None) -> dict[str, str]:
    tags = {"ragsweep.kind": kind, "ragsweep.run_dir": str(run_dir.resolve()), "mlflow.source.name": "ragsweep"}
    if manifest.git_commit:
        tags["mlflow.source.git.commit"] = str(manifest.git_commit)
    if answerer:
        tags["ragsweep.answerer"] = str(answerer)
    return tags


def _log_batch(
    client,
    run_id: str,
    params: dict[str, str] | None = None,
    metrics: dict[str, float] | None = None,
    tags: dict[str, str] | None = None,
) -> None:
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.utils.time import get_current_time_millis

    now = get_current_time_millis()
    plist = [Param(k, v) for k, v in (params or {}).items()]
    mlist = [Metric(k, v, now, 0) for k, v in (metrics or {}).items()]
    tlist = [RunTag(k, v) for k, v in (tags or {}).items()]
    for i in range(0, len(plist), _BATCH_PARAMS):
        client.log_batch(run_id, params=plist[i : i + _BATCH_PARAMS])
    for i in range(0, len(mlist), _BATCH_METRICS):
        client.log_batch(run_id, metrics=mlist[i : i + _BATCH_METRICS])
    if tlist:
        client.log_batch(run_id, tags=tlist)


def _pipeline_file(pipeline_path: str | Path | None, manifest: Manifest, run_dir: Path) -> Path | None:
    if pipeline_path is not None:
        p = starter.pipeline_path(pipeline_path)  # the default name: the packaged default in a fresh project
        if not p.is_file():
            raise RunFolderError(f"{p}: no such pipeline file")
        return p
    recorded = manifest.pipeline.path
    if not recorded:
        return None
    for candidate in (Path(recorded), run_dir / recorded, run_dir / Path(recorded).name):
        if candidate.is_file():
            return candidate
    return None


def _log_files(client, run_id: str, run_dir: Path, files: Iterable[Path], artifact_path: str | None = None) -> None:
    for f in files:
        rel = f.relative_to(run_dir).parent.as_posix()
        dest = "/".join(p for p in (artifact_path, None if rel == "." else rel) if p) or None
        client.log_artifact(run_id, str(f), artifact_path=dest)


def _experiment_id(client, name: str) -> str:
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        if exp.lifecycle_stage == "deleted":
            client.restore_experiment(exp.experiment_id)
        return exp.experiment_id
    return client.create_experiment(name)


def log_to_mlflow(
    run_dir: str | Path,
    tracking_uri: str | None = None,
    experiment: str = "ragsweep",
    pipeline_path: str | Path | None = None,
) -> str:
    """Log an eval or sweep run folder to MLflow; return the (parent) MLflow run id."""
    run_dir = Path(run_dir)
    kind = run_kind(run_dir)
    _offline_env()
    from mlflow.tracking import MlflowClient

    uri = tracking_uri or default_tracking_uri(run_dir)
    if uri.startswith("file:") or "://" not in uri:
        # MLflow 3.x keeps the file store in maintenance mode behind this switch; view it with
        # `MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri <uri>`
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=uri)
    exp_id = _experiment_id(client, experiment)
    if kind == "eval":
        return _log_eval(client, exp_id, run_dir, pipeline_path)
    return _log_sweep(client, exp_id, run_dir, pipeline_path)


def _log_eval(client, exp_id: str, run_dir: Path, pipeline_path) -> str:
    run = read_run(run_dir)
    manifest = Manifest.of(run.manifest)
    run_id = client.create_run(
        exp_id, run_name=run_dir.name, tags=_tags(manifest, "eval", run_dir, run.answerer)
    ).info.run_id
    with terminated(client, run_id):
        _log_batch(client, run_id, params=_eval_params(run), metrics=_eval_metrics(run))
        pipe = _pipeline_file(pipeline_path, manifest, run_dir)
        if pipe is not None:
            client.log_artifact(run_id, str(pipe), artifact_path="pipeline")
        files = [f for f in sorted(run_dir.rglob("*")) if f.is_file() and "mlruns" not in f.relative_to(run_dir).parts]
        _log_files(client, run_id, run_dir, files, artifact_path="run")
    return run_id


def _config_metrics(cfg: ConfigResult) -> dict[str, float]:
    out = _metric_dict(cfg.metrics, cfg.intervals)
    out.update(_metric_dict(cfg.p_values, prefix="p_value."))
    out.update(_metric_dict(cfg.p_adjusted, prefix="p_adjusted."))
    out.update(_metric_dict({k: float(bool(v)) for k, v in cfg.significant.items()}, prefix="significant."))
    out.update(
        _metric_dict(
            {"seconds": cfg.seconds, "peak_rss_mb": cfg.peak_rss_mb, "latency_ms_per_query": cfg.latency_ms_per_query}
        )
    )
    return out


def _log_config_chunks(client, run_id: str, cdir: Path, tables: dict[Path, dict[str, dict]]) -> None:
    """A sweep configuration's own ``run/chunks.jsonl``: the rows of the sweep's chunk table its
    case lines refer to (sweep layout 4), so the child's ``run/`` artifacts read like an eval run
    folder (``ragsweep compare`` takes them as they are). Lines with their texts (a sweep of layout
    3 or earlier) need none. ``tables``: the chunk tables read so far (each is read once per sweep)."""
    import tempfile

    cases = cdir / "cases.jsonl"
    wanted: dict[str, None] = {}
    if cases.is_file():
        for line in read_lines(cases):  # the stored lines: which hits refer to the table
            try:
                hits = line["hits"] if "hits" in line else []
                wanted.update((chunk_id(h["doc_id"], h["start"], h["end"]), None) for h in hits if "text" not in h)
            except (KeyError, TypeError):
                continue
    if not wanted:
        return
    if cdir.parent.parent not in tables:
        tables[cdir.parent.parent] = read_chunk_rows(cdir)
    table = tables[cdir.parent.parent]
    with tempfile.TemporaryDirectory(prefix="ragsweep-mlflow-") as tmp:
        path = Path(tmp) / "chunks.jsonl"
        path.write_text(
            "".join(json.dumps(table[key], ensure_ascii=False) + "\n" for key in wanted if key in table),
            encoding="utf-8",
        )
        client.log_artifact(run_id, str(path), artifact_path="run")


def _sweep_params(sweep: SweepResult, base_params: dict[str, str]) -> dict[str, str]:
    """The parent run's params: the manifest's, the grid, baseline, objectives, best configurations, Pareto front."""
    params = dict(base_params)
    params.update(
        {mlflow_key(f"grid.{k}"): json.dumps(v, default=str)[:_MAX_PARAM_VALUE] for k, v in sweep.grid.items()}
    )
    params["baseline"] = sweep.baseline
    params["objectives"] = ",".join(sweep.objectives)
    params["configs"] = str(len(sweep.configs))
    for obj, cid in sweep.best.items():
        params[mlflow_key(f"best.{obj}")] = str(cid)
    params["pareto"] = ",".join(str(p) for p in sweep.pareto)[:_MAX_PARAM_VALUE]
    return params


def _sweep_best_metrics(sweep: SweepResult) -> dict[str, float]:
    """The parent run's metrics: each objective's best value."""
    metrics = {}
    for obj, cid in sweep.best.items():
        cfg = next((c for c in sweep.configs if c.id == cid), None)
        v = mean_of(cfg, obj) if cfg is not None else None
        if v is not None:
            metrics[mlflow_key(f"best.{obj}")] = v
    return metrics


def _config_tags(sweep: SweepResult, cid: str, pid: str) -> dict[str, str]:
    """A configuration's child run tags: its parent, id, whether it is the baseline, on the Pareto
    front, best by an objective."""
    tags = {
        "mlflow.parentRunId": pid,
        "ragsweep.kind": "sweep-config",
        "ragsweep.config_id": cid,
        "ragsweep.is_baseline": str(cid == sweep.baseline).lower(),
        "ragsweep.pareto": str(cid in set(sweep.pareto)).lower(),
    }
    for obj, bid in sweep.best.items():
        if str(bid) == cid:
            tags[mlflow_key(f"ragsweep.best.{obj}")] = "true"
    return tags


def _log_config(
    client,
    exp_id: str,
    run_dir: Path,
    sweep: SweepResult,
    cfg: ConfigResult,
    pid: str,
    base_params: dict[str, str],
    chunk_tables: dict[Path, dict[str, dict]],
) -> None:
    """One configuration's nested child run of the sweep's parent run ``pid``: its params,
    metrics and folder (with the chunk rows its cases refer to)."""
    cid = cfg.id
    tags = _config_tags(sweep, cid, pid)
    cid_run = client.create_run(exp_id, run_name=f"{run_dir.name}/{cid}", tags=tags).info.run_id
    with terminated(client, cid_run):
        cparams = dict(base_params)
        for k, v in cfg.params.items():
            _flatten(str(k), v, cparams)
        cparams["config_id"] = cid
        _log_batch(client, cid_run, params=cparams, metrics=_config_metrics(cfg))
        cdir = run_dir / "configs" / cid
        if cdir.is_dir():
            files = [f for f in sorted(cdir.rglob("*")) if f.is_file()]
            _log_files(client, cid_run, cdir, files, artifact_path="run")
            _log_config_chunks(client, cid_run, cdir, chunk_tables)


def _log_sweep(client, exp_id: str, run_dir: Path, pipeline_path) -> str:
    sweep = read_sweep(run_dir)
    manifest = Manifest.of(sweep.manifest)
    base_params = _manifest_params(manifest)
    parent_tags = _tags(manifest, "sweep", run_dir) | {"ragsweep.baseline": sweep.baseline}
    pid = client.create_run(exp_id, run_name=run_dir.name, tags=parent_tags).info.run_id
    with terminated(client, pid):
        _log_batch(client, pid, params=_sweep_params(sweep, base_params), metrics=_sweep_best_metrics(sweep))
        pipe = _pipeline_file(pipeline_path, manifest, run_dir)
        if pipe is not None:
            client.log_artifact(pid, str(pipe), artifact_path="pipeline")
        top = [f for f in sorted(run_dir.iterdir()) if f.is_file()]
        _log_files(client, pid, run_dir, top, artifact_path="run")
        chunk_tables: dict[Path, dict[str, dict]] = {}
        for cfg in sweep.configs:
            _log_config(client, exp_id, run_dir, sweep, cfg, pid, base_params, chunk_tables)
    return pid


__all__ = ["log_to_mlflow", "mlflow_key", "default_tracking_uri"]
