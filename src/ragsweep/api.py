"""What ``import ragsweep`` offers: ``evaluate``, ``sweep``, ``tune``, ``watch``, ``compare`` and typed results.

>>> import ragsweep
>>> from ragsweep.metrics.registry import HIT_FAMILY
>>> report = ragsweep.evaluate("pipelines/default.yaml", "datasets/cuad-mini")
>>> hit = f"{HIT_FAMILY}@{report.top_k}"  # the hit rate at the depth the pipeline serves
>>> report.metric(hit), report.interval(hit), report.chance(hit)
>>> judged = ragsweep.evaluate("pipelines/default.yaml", "datasets/cuad-mini", llm=True, judge=True,
...                            judge_replicates=3, max_failure_rate=0.05)
>>> judged.self_agreement().krippendorff_alpha, judged.judge.warnings  # of the judge's verdicts

The same run as ``ragsweep eval`` (:func:`ragsweep.evaluation.run.evaluate`: parse -> retrieve -> answer ->
score), with the same options (:class:`~ragsweep.commands.eval.EvalOptions`) turned into the same objects; the
caller's own cases and :class:`PipelineConfig` are used as they are. A run folder is written only when ``out``
is given.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from ragsweep.commands.eval import (
    PATHWAY_RUN_LOCK,
    EvalOptions,
    evaluate_into,
    executor_of,
    run_name,
    run_settings,
    where_of,
)
from ragsweep.commands.inputs import cases_dataset, cases_hash, dataset_hash, load_config, load_folder, selection_of
from ragsweep.commands.options import RunInputs
from ragsweep.commands.sweep import Plan, SweepOptions, check_best, sweep_into, sweep_name, sweep_settings
from ragsweep.commands.tune import TuneOptions, tune_name, tune_settings, write_chosen
from ragsweep.commands.watch import WatchOptions, run_watch
from ragsweep.core.errors import RunError
from ragsweep.datasets.loader import DatasetError, load_cases
from ragsweep.datasets.schema import Case, Dataset
from ragsweep.evaluation.context import Where, run_state
from ragsweep.evaluation.loop import scored_ks
from ragsweep.evaluation.records import RunResult, SweepResult
from ragsweep.evaluation.run import check_floor_names
from ragsweep.evaluation.runfolder import file_hash
from ragsweep.evaluation.selection import select_cases
from ragsweep.execution.registry import check_executor
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.tuning.records import TuneReport
from ragsweep.tuning.search import tune_into

if TYPE_CHECKING:
    from ragsweep.report.compare import Comparison

Report = RunResult  # what evaluate() returns: report.json's content with its cases
OptionsT = TypeVar("OptionsT", bound=BaseModel)

API_DEFAULTS = {"progress": False, "ragas_nonllm": False}  # quiet, and no ragas import (seconds) in a smoke test
PYTHON_CASES = "(cases given in Python)"  # what the state and manifest name as the dataset of such a run


def _options(model: type[OptionsT], pipeline: str | Path | PipelineConfig, options: dict[str, Any]) -> OptionsT:
    """``model`` (EvalOptions, SweepOptions) from the API's keywords: the option fields by name or
    API alias (``llm``, ``validate``, ``ragas``, ``min``); an unknown keyword is an error naming it."""
    shown = pipeline.path if isinstance(pipeline, PipelineConfig) else str(pipeline)
    field_of = {f.alias: name for name, f in model.model_fields.items() if f.alias}  # llm -> use_llm ...
    given = {field_of.get(k, k): v for k, v in options.items()}
    try:
        return model(pipeline=shown, **{**API_DEFAULTS, **given})
    except ValidationError as err:
        raise ValueError(f"ragsweep: bad option: {err}") from None


def _dataset(
    dataset: str | Path | Sequence[Case], docs: str | Path | None, options: RunInputs
) -> tuple[Dataset, list[Case], str]:
    """The dataset, its selected cases and the cases' hash: a dataset folder loaded here, a cases file
    read here, or the caller's own cases used as they are (over ``docs``)."""
    if isinstance(dataset, (str, Path)) and not Path(dataset).is_file():
        loaded = load_folder(dataset, options.split, validate=options.validate_dataset, unlocated=options.unlocated)
        return loaded, select_cases(loaded.cases, selection_of(options)), dataset_hash(loaded)
    if docs is None:
        what = f"{dataset} is a cases file" if isinstance(dataset, (str, Path)) else "cases built in Python need docs="
        raise ValueError(f"{what}: give docs= (the documents folder) too")
    if isinstance(dataset, (str, Path)):
        try:
            given = load_cases(Path(dataset))
        except DatasetError as err:
            raise RunError(str(err)) from err
        digest = file_hash(Path(dataset))
    else:
        given, digest = list(dataset), cases_hash(dataset)
    built = cases_dataset(given, docs, options.split, validate=options.validate_dataset, unlocated=options.unlocated)
    return built, select_cases(built.cases, selection_of(options)), digest


def evaluate(
    pipeline: str | Path | PipelineConfig,
    dataset: str | Path | Sequence[Case],
    *,
    docs: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    out: str | Path | None = None,
    **options: Any,
) -> Report:
    """Evaluate a pipeline on a dataset, as ``ragsweep eval`` does, and return a :class:`Report`.

    ``pipeline``: a pipeline YAML (ragsweep's or an existing Pathway app.yaml) or a
    :class:`PipelineConfig` (used as it is, with ``overrides`` applied on top). ``dataset``: a dataset
    folder, a cases file (with ``docs=``), or a list of :class:`Case` (with ``docs=``), evaluated as
    they are. ``out``: write a run folder there (nothing is written without it). ``options``: every
    option of ``ragsweep eval``, by its name in :class:`~ragsweep.commands.eval.EvalOptions` (``ks``,
    ``split``, ``limit``, ``sample``, ``seed``, ``workers``, ``fresh_retrieval``, ``judge``, ``ragas_llm``,
    ``judge_replicates``, ``judge_temperature``, ``judge_probe``, ``max_failure_rate``...) or its short
    name (``llm``, ``validate``, ``ragas``). Unlike the command, ``ragas`` (ragas' string similarity,
    BLEU and ROUGE; importing ragas costs seconds) and ``progress`` are off unless asked for.

    Thread-safe: Pathway keeps one graph per process and its run is not thread-safe, so calls from several
    threads (this, :func:`sweep`, :func:`watch`) run their evaluations one at a time.
    """
    started = time.perf_counter()
    label = str(dataset) if isinstance(dataset, (str, Path)) else PYTHON_CASES
    opts = _options(EvalOptions, pipeline, {**options, "dataset": label, "out": str(out or "runs")})
    if opts.dry_run:
        raise ValueError("ragsweep: bad option: dry_run is the command's (`ragsweep eval --dry-run`)")
    config = load_config(pipeline, overrides)
    ds, cases, digest = _dataset(dataset, docs, opts)
    settings = run_settings(opts, config)
    check_floor_names(settings.floors, scored_ks(settings.ks, config.top_k), settings.budgets)
    where = where_of(opts, run_name(ds.name, config)) if out is not None else Where()
    result = evaluate_into(config, ds, cases, settings, run_state(config, digest, settings, cases), where,
                           executor_of(opts))  # fmt: skip
    result.seconds = time.perf_counter() - started
    return result


def sweep(
    pipeline: str | Path | PipelineConfig,
    dataset: str | Path,
    grid: str | Path,
    *,
    overrides: dict[str, Any] | None = None,
    out: str | Path | None = None,
    **options: Any,
) -> SweepResult:
    """Run a sweep as ``ragsweep sweep`` does; returns its :class:`SweepResult` (``sweep.json``).
    ``options``: every option of ``ragsweep sweep`` (:class:`~ragsweep.commands.sweep.SweepOptions`);
    a :class:`PipelineConfig` is used as it is.

    A configuration whose run failed (an engine error, vectors its index cannot take, an app component
    that could not do its work) is in ``.failed`` with its one-line reason, not in ``.configs``: it is
    never best nor compared with (the command exits 2 for it); check ``.failed`` before using ``.best``.

    A sweep keeps per-configuration results on disk to be resumable: without ``out`` it
    writes them to a temporary folder that is removed afterwards.
    """
    tmp = tempfile.TemporaryDirectory(prefix="ragsweep-sweep-") if out is None else None
    out_dir = tmp.name if tmp is not None else str(out)
    try:
        opts = _options(SweepOptions, pipeline, {**options, "dataset": str(dataset), "grid": str(grid), "out": out_dir})
        if opts.dry_run:
            raise ValueError("ragsweep: bad option: dry_run is the command's (`ragsweep sweep --dry-run`)")
        check_executor(opts.executor_settings)
        config = load_config(pipeline, overrides)
        ds, cases, _ = _dataset(dataset, None, opts)
        plan = Plan(objectives=opts.objectives, ks=opts.ks, budgets=opts.budgets, yes=opts.yes)
        where = where_of(opts, sweep_name(ds.name))
        with PATHWAY_RUN_LOCK:  # Pathway's graph is one per process: see evaluate()
            _, report = sweep_into(config, ds, cases, sweep_settings(opts), plan, where, executor_of(opts))
        report.sweep_dir = report.sweep_dir if out is not None else None
        return report
    finally:
        if tmp is not None:
            tmp.cleanup()


def tune(
    pipeline: str | Path | PipelineConfig,
    dataset: str | Path,
    space: str | Path,
    *,
    trials: int = 20,
    overrides: dict[str, Any] | None = None,
    out: str | Path | None = None,
    **options: Any,
) -> TuneReport:
    """Search ``space`` as ``ragsweep tune`` does; returns its :class:`TuneReport` (``tune.json``).
    ``options``: every option of ``ragsweep tune`` (:class:`~ragsweep.commands.tune.TuneOptions`: ``objectives``,
    ``sampler``, ``prune``, ``seed``, ``resume``, ``write_best``...). Without ``out`` the study and its
    configurations go to a temporary folder that is removed afterwards."""
    tmp = tempfile.TemporaryDirectory(prefix="ragsweep-tune-") if out is None else None
    out_dir = tmp.name if tmp is not None else str(out)
    try:
        given = {**options, "dataset": str(dataset), "space": str(space), "trials": trials, "out": out_dir}
        opts = _options(TuneOptions, pipeline, given)
        if opts.dry_run:
            raise ValueError("ragsweep: bad option: dry_run is the command's (`ragsweep tune --dry-run`)")
        check_executor(opts.executor_settings)
        config = load_config(pipeline, overrides)
        check_best(opts.write_best, config, opts.force)
        ds, cases, _ = _dataset(dataset, None, opts)
        settings, tune_opts = tune_settings(opts)
        with PATHWAY_RUN_LOCK:  # Pathway's graph is one per process: see evaluate()
            _, report, scored = tune_into(
                config, ds, cases, settings, tune_opts, where_of(opts, tune_name(ds.name)), executor_of(opts)
            )
        write_chosen(opts, scored, config)
        return report
    finally:
        if tmp is not None:
            tmp.cleanup()


def watch(pipeline: str | Path, dataset: str | Path, *, out: str | Path = "runs", **options: Any) -> int:
    """Follow a dataset's documents folder as ``ragsweep watch`` does: evaluate, then again at each settled
    change, into ``<out>/<name>/`` (its ``current`` link, its ``history.jsonl``), until interrupted or
    ``max_updates``. ``options``: every option of ``ragsweep watch`` by its name in
    :class:`~ragsweep.commands.watch.WatchOptions` (``name``, ``poll``, ``max_updates``, ``exit_on_fail``,
    ``serve``, ``min``, ``limit``...), with :func:`evaluate`'s defaults (no progress bars, no ragas string
    metrics unless ``ragas=True``). Returns the command's exit status: 0 after ``max_updates`` or a Ctrl-C
    while the watch waits for a change (the SIGINT of the main thread: it is how a watch is meant to end,
    ``current`` holding the last evaluation), 1 when ``exit_on_fail`` and an evaluation is below a floor, 2 on
    bad inputs. A Ctrl-C during an evaluation still raises KeyboardInterrupt."""
    return run_watch(_options(WatchOptions, pipeline, {**options, "dataset": str(dataset), "out": str(out)}))


def compare(a: RunResult | str | Path, b: RunResult | str | Path, alpha: float = 0.05) -> Comparison:
    """Paired comparison of two evaluations (results from :func:`evaluate`, in memory, or run folders)."""
    # deferred: the paired tests import scipy (~0.3 s); evaluate() and sweep() must not
    from ragsweep.report.compare import compare_runs

    return compare_runs(a, b, alpha=alpha)
