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


def evaluate(
    pipeline: "str | Path | PipelineConfig",
    dataset: "str | Path | Sequence[Case]",
    *,
    docs: "str | Path | None" = None,
    overrides: dict[str, Any] | None = None,
    ks: Sequence[int] | None = None,
    split: str | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    llm: bool = False,
    out: "str | Path | None" = None,
    validate: bool = True,
    ragas: bool = False,
    progress: bool = False,
    judge: bool = False,
    ragas_llm: bool = False,
    judge_replicates: int = 1,
    judge_temperature: float | None = None,
    judge_probe: int = 3,
    max_failure_rate: float | None = None,
    workers: int | None = None,
    fresh_retrieval: bool = False,
) -> Report:
    """Evaluate a pipeline on a dataset, as ``ragsweep eval`` does, and return a :class:`Report`.

    ``pipeline``: a pipeline YAML (ragsweep's or an existing Pathway app.yaml) or a
    :class:`PipelineConfig`. ``dataset``: a dataset folder, a cases file (with ``docs=``),
    or a list of :class:`Case` (with ``docs=``). ``out``: write a run folder there
    (nothing is written without it). ``ragas=True`` adds ragas' string similarity, BLEU and
    ROUGE on the answers (``ragsweep eval`` computes them; importing ragas costs seconds, so a
    smoke test leaves them out by default).

    The LLM metrics, as ``ragsweep eval``'s options of the same names: ``llm`` (``--llm``),
    ``judge`` (``--judge``), ``ragas_llm`` (``--ragas-llm``), ``judge_replicates``
    (``--judge-replicates``, for the judge and the ragas LLM metrics), ``judge_temperature``,
    ``judge_probe`` (probes before the run when judging; 0: none) and ``max_failure_rate``
    (the failure share above which :attr:`Report.judge` warns; :func:`ragsweep.testing.assert_quality`
    fails on it as the command's gate does). Their statistics are in :attr:`Report.judge`.

    ``workers``: Docling processes for the documents the parse cache lacks (``--workers``; None:
    one per core). ``fresh_retrieval=True`` asks Pathway every query instead of taking lists it
    served before from the served-list cache (``--fresh-retrieval``; the cache's key covers the
    corpus, the index definition, ragsweep's serving code and the package versions).
    """
    from ragsweep.commands.eval import DEFAULT_KS, EvalOptions, dataset_file_hash, evaluate_run, run_eval
    from ragsweep.evaluation.inputs import load_inputs
    from ragsweep.evaluation.runfolder import RunFolder, now

    started = time.perf_counter()
    path, keep_alive = _dataset_folder(dataset, docs)
    pipeline_path, merged = _pipeline_path(pipeline, overrides)
    try:
        options = EvalOptions(
            pipeline=pipeline_path,
            overrides=merged,
            dataset=path,
            split=split,
            limit=limit,
            sample=sample,
            seed=seed,
            ks=list(ks or DEFAULT_KS),
            use_llm=llm,
            validate_dataset=validate,
            out=str(out or "runs"),
            progress=progress,
            ragas_nonllm=ragas,
            judge=judge,
            ragas_llm=ragas_llm,
            judge_replicates=judge_replicates,
            judge_temperature=judge_temperature,
            judge_probe=judge_probe,
            max_failure_rate=max_failure_rate,
            workers=workers,
            fresh_retrieval=fresh_retrieval,
        )
        if out is not None:
            _, result = run_eval(options)
        else:
            config, ds, cases = load_inputs(options)
            result = evaluate_run(
                options, config, ds, cases, dataset_file_hash(ds), RunFolder.none({"started_at": now()})
            )
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
    split: str | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    out: "str | Path | None" = None,
    progress: bool = False,
) -> SweepResult:
    """Run a sweep as ``ragsweep sweep`` does; returns its :class:`SweepResult` (``sweep.json``).

    A sweep keeps per-configuration results on disk to be resumable: without ``out`` it
    writes them to a temporary folder that is removed afterwards.
    """
    from ragsweep.commands.sweep import SweepOptions, run_sweep

    pipeline_path, merged = _pipeline_path(pipeline, overrides)
    tmp = tempfile.TemporaryDirectory(prefix="ragsweep-sweep-") if out is None else None
    out_dir = tmp.name if tmp is not None else str(out)
    try:
        options = SweepOptions(
            pipeline=pipeline_path,
            overrides=merged,
            dataset=str(dataset),
            grid=str(grid),
            split=split,
            limit=limit,
            sample=sample,
            seed=seed,
            out=out_dir,
            progress=progress,
        )
        _, report = run_sweep(options)
        report.sweep_dir = report.sweep_dir if out is not None else None
        return report
    finally:
        if tmp is not None:
            tmp.cleanup()


def compare(a: "RunResult | str | Path", b: "RunResult | str | Path", alpha: float = 0.05) -> Any:
    """Paired comparison of two evaluations (results from :func:`evaluate`, in memory, or run folders)."""
    from ragsweep.report.compare import compare_runs

    return compare_runs(a, b, alpha=alpha)
