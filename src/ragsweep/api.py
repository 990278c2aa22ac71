"""What ``import ragsweep`` offers: ``evaluate``, ``sweep``, ``compare`` and typed results.

>>> import ragsweep
>>> report = ragsweep.evaluate("pipelines/default.yaml", "datasets/cuad-mini")
>>> report.metrics["recall@5"], report.interval("recall@5"), report.baselines["recall@5"]["chance"]
>>> judged = ragsweep.evaluate("pipelines/default.yaml", "datasets/cuad-mini", llm=True, judge=True,
...                            judge_replicates=3, max_failure_rate=0.05)
>>> judged.self_agreement("judge_correct")["krippendorff_alpha"], judged.judge["warnings"]

The same stages as ``ragsweep eval`` (parse -> retrieve -> answer -> score, see
:mod:`ragsweep.evaluation.loop`), from the same :class:`~ragsweep.commands.eval.EvalOptions`; a run folder is
written only when ``out`` is given.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragsweep.datasets.schema import Case
from ragsweep.evaluation.records import RunResult, SweepResult
from ragsweep.pipeline.config import PipelineConfig

Report = RunResult  # what evaluate() returns: report.json's content with its cases


def _dataset_folder(dataset: "str | Path | Sequence[Case] | tuple", docs: "str | Path | None") -> tuple[str, Any]:
    """A dataset folder path for the loader, writing cases built in Python to a temp folder."""
    if isinstance(dataset, (str, Path)):
        path = Path(dataset)
        if path.is_file():  # a cases file plus a docs folder
            if docs is None:
                raise ValueError(f"{path} is a cases file: give docs= (the documents folder) too")
            return _temp_dataset(path.read_text(encoding="utf-8"), Path(docs), path.suffix or ".jsonl")
        return str(path), None
    cases = list(dataset)
    if docs is None:
        raise ValueError("cases built in Python need docs= (the documents folder)")
    import json

    from ragsweep.datasets.loader import case_to_json

    text = "".join(json.dumps(case_to_json(c), ensure_ascii=False) + "\n" for c in cases)
    return _temp_dataset(text, Path(docs), ".jsonl")


def _temp_dataset(cases_text: str, docs: Path, suffix: str) -> tuple[str, Any]:
    tmp = tempfile.TemporaryDirectory(prefix="ragsweep-dataset-")
    root = Path(tmp.name)
    (root / f"cases{suffix}").write_text(cases_text, encoding="utf-8")
    (root / "docs").symlink_to(Path(docs).resolve(), target_is_directory=True)
    (root / "README.md").write_text("cases given to ragsweep.evaluate()\n")
    return str(root), tmp


def _pipeline_path(pipeline: "str | Path | PipelineConfig", overrides: dict[str, Any] | None):
    if isinstance(pipeline, PipelineConfig):
        return pipeline.path, {**pipeline.overrides, **(overrides or {})}
    return str(pipeline), dict(overrides or {})


API_DEFAULTS = {"progress": False, "ragas_nonllm": False}  # quiet, and no ragas import (seconds) in a smoke test


def _options(model: Any, pipeline: Any, overrides: dict[str, Any] | None, options: dict[str, Any]) -> Any:
    """``model`` (EvalOptions, SweepOptions) from the API's keywords: the option fields by name or
    API alias (``llm``, ``validate``, ``ragas``, ``min``); an unknown keyword is an error naming it."""
    from pydantic import ValidationError

    pipeline_path, merged = _pipeline_path(pipeline, overrides)
    field_of = {f.alias: name for name, f in model.model_fields.items() if f.alias}  # llm -> use_llm ...
    given = {field_of.get(k, k): v for k, v in options.items()}
    try:
        return model(pipeline=pipeline_path, overrides=merged, **{**API_DEFAULTS, **given})
    except ValidationError as err:
        raise ValueError(f"ragsweep: bad option: {err}") from None


def evaluate(
    pipeline: "str | Path | PipelineConfig",
    dataset: "str | Path | Sequence[Case]",
    *,
    docs: "str | Path | None" = None,
    overrides: dict[str, Any] | None = None,
    out: "str | Path | None" = None,
    **options: Any,
) -> Report:
    """Evaluate a pipeline on a dataset, as ``ragsweep eval`` does, and return a :class:`Report`.

    ``pipeline``: a pipeline YAML (ragsweep's or an existing Pathway app.yaml) or a
    :class:`PipelineConfig`. ``dataset``: a dataset folder, a cases file (with ``docs=``), or a
    list of :class:`Case` (with ``docs=``). ``out``: write a run folder there (nothing is written
    without it). ``options``: every option of ``ragsweep eval``, by its name in
    :class:`~ragsweep.commands.eval.EvalOptions` (``ks``, ``split``, ``limit``, ``sample``, ``seed``,
    ``workers``, ``fresh_retrieval``, ``judge``, ``ragas_llm``, ``judge_replicates``,
    ``judge_temperature``, ``judge_probe``, ``max_failure_rate``...) or its short name (``llm``,
    ``validate``, ``ragas``). Unlike the command, ``ragas`` (ragas' string similarity, BLEU and
    ROUGE; importing ragas costs seconds) and ``progress`` are off unless asked for.
    """
    from ragsweep.commands.eval import EvalOptions, dataset_file_hash, evaluate_run, run_eval
    from ragsweep.evaluation.inputs import load_inputs
    from ragsweep.evaluation.runfolder import RunFolder, now

    started = time.perf_counter()
    path, keep_alive = _dataset_folder(dataset, docs)
    try:
        opts = _options(EvalOptions, pipeline, overrides, {**options, "dataset": path, "out": str(out or "runs")})
        if out is not None:
            _, result = run_eval(opts)
        else:
            config, ds, cases = load_inputs(opts)
            result = evaluate_run(opts, config, ds, cases, dataset_file_hash(ds), RunFolder.none({"started_at": now()}))
    finally:
        if keep_alive is not None:
            keep_alive.cleanup()
    assert isinstance(result, RunResult)
    result.seconds = time.perf_counter() - started
    return result


def sweep(
    pipeline: "str | Path | PipelineConfig",
    dataset: "str | Path",
    grid: "str | Path",
    *,
    overrides: dict[str, Any] | None = None,
    out: "str | Path | None" = None,
    **options: Any,
) -> SweepResult:
    """Run a sweep as ``ragsweep sweep`` does; returns its :class:`SweepResult` (``sweep.json``).
    ``options``: every option of ``ragsweep sweep`` (:class:`~ragsweep.commands.sweep.SweepOptions`).

    A sweep keeps per-configuration results on disk to be resumable: without ``out`` it
    writes them to a temporary folder that is removed afterwards.
    """
    from ragsweep.commands.sweep import SweepOptions, run_sweep

    tmp = tempfile.TemporaryDirectory(prefix="ragsweep-sweep-") if out is None else None
    out_dir = tmp.name if tmp is not None else str(out)
    try:
        opts = _options(
            SweepOptions, pipeline, overrides, {**options, "dataset": str(dataset), "grid": str(grid), "out": out_dir}
        )
        _, report = run_sweep(opts)
        report.sweep_dir = report.sweep_dir if out is not None else None
        return report
    finally:
        if tmp is not None:
            tmp.cleanup()


def compare(a: "RunResult | str | Path", b: "RunResult | str | Path", alpha: float = 0.05) -> Any:
    """Paired comparison of two evaluations (results from :func:`evaluate`, in memory, or run folders)."""
    from ragsweep.report.compare import compare_runs

    return compare_runs(a, b, alpha=alpha)
