"""`ragsweep eval`: its options turned into objects at this edge -> :func:`ragsweep.evaluation.run.evaluate`
in one :class:`~ragsweep.evaluation.context.RunContext` -> report.html -> the terminal summary -> the gate.

The run folder's files are :mod:`ragsweep.evaluation.run`'s; ``--resume`` reopens a folder (locked
against a second process) and computes only what is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ragsweep.commands.inputs import answer_settings, dataset_hash, load_inputs, parse_settings, selection_of
from ragsweep.commands.options import AnswerOptions, RunInputs
from ragsweep.core.errors import RunError
from ragsweep.datasets.schema import Case, Dataset
from ragsweep.dry_run.run import dry_run_report
from ragsweep.evaluation.context import RunState, Where, open_run, run_state
from ragsweep.evaluation.endpoints import check_answering
from ragsweep.evaluation.loop import scored_ks
from ragsweep.evaluation.parse_failures import parser_failure_gate
from ragsweep.evaluation.records import RunResult
from ragsweep.evaluation.run import check_floor_names, evaluate, parse_corpus
from ragsweep.evaluation.scoring import floors_at_chance, quality_failures
from ragsweep.evaluation.settings import RunSettings, option
from ragsweep.execution.base import Executor, ExecutorError
from ragsweep.execution.registry import ExecutorSettings, check_executor, open_executor
from ragsweep.judge.report import failure_gate
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.report import write_html
from ragsweep.report.terminal import gate_passed_line, no_answer_succeeded, summary_table

DEFAULT_KS = (1, 3, 5, 10)

# Pathway builds every run in one process-wide graph (``G``) and pw.run is not thread-safe: evaluations
# started from several threads (``ragsweep.evaluate``, ``sweep``, a watch) take turns, one at a time.
PATHWAY_RUN_LOCK = threading.RLock()


class EvalOptions(AnswerOptions, RunInputs):
    """Everything `ragsweep eval` and ``ragsweep.evaluate()`` take (the command line is built from it)."""

    floors: dict[str, float] = option(
        help="CI gate: fail when a metric is below its floor", flag="--min", metavar="METRIC=FLOOR", parse="floors",
        alias="min", default_factory=dict,
    )  # fmt: skip
    ks: list[int] = option(
        help="depths to score besides the pipeline's top_k, e.g. 1,3,6,8 (each asked of the store as its own query)",
        parse="depths", default_factory=lambda: list(DEFAULT_KS),
    )  # fmt: skip
    dry_run: bool = option(False, "print the LLM calls and tokens a run would make, then stop")


def run_settings(options: EvalOptions, config: PipelineConfig | None = None) -> RunSettings:
    """What the run needs of ``options``, as the evaluation's own settings (an adaptive answerer's own
    depths when ``--ks`` is not given: :meth:`PipelineConfig.report_depths`)."""
    ks = list(options.ks) if config is None else config.report_depths(options.ks, "ks" in options.model_fields_set)
    return RunSettings(
        selection=selection_of(options), answer=answer_settings(options), parse=parse_settings(options),
        ks=ks, budgets=list(options.budgets), unlocated=options.unlocated, floors=dict(options.floors),
        progress=options.progress, fresh_retrieval=options.fresh_retrieval, resume=bool(options.resume),
    )  # fmt: skip


def where_of(options: RunInputs, default_name: str, create: bool = True) -> Where:
    return Where(
        out=Path(options.out), default_name=default_name, name=options.name, resume=options.resume, create=create
    )


def executor_of(options: RunInputs) -> AbstractContextManager[Executor]:
    """The executor the options ask for, opened when the run starts."""
    return open_executor(options.executor_settings)


def run_name(dataset_name: str, config: PipelineConfig) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{dataset_name}-{config.hash[:8]}"


def run_eval(
    options: EvalOptions, html: bool = True, say_language: bool = True
) -> tuple[Path | None, RunResult | dict[str, Any]]:
    """Evaluate; return the run folder and the result (or, for a dry run, the LLM estimate). ``html``
    False leaves report.html to the caller (a watch writes it once its history holds the run);
    ``say_language`` False: the language warning was given already (a watch's later evaluations)."""
    config, dataset, cases = load_inputs(options)
    settings = run_settings(options, config)
    check_floor_names(settings.floors, scored_ks(settings.ks, config.top_k), settings.budgets)  # before a folder
    check_executor(options.executor_settings)
    if not options.dry_run:
        check_answering(config, settings.answer)  # before a folder, an executor or a parse
    state = run_state(config, dataset_hash(dataset), settings, cases)
    where = where_of(options, run_name(dataset.name, config), create=not options.dry_run)
    if options.dry_run:
        return None, dry_run(config, dataset, cases, settings, state, where)
    result = evaluate_into(config, dataset, cases, settings, state, where, executor_of(options), html, say_language)
    return (Path(result.run_dir) if result.run_dir is not None else None), result


def evaluate_into(
    config: PipelineConfig,
    dataset: Dataset,
    cases: Sequence[Case],
    settings: RunSettings,
    state: RunState,
    where: Where,
    executor: AbstractContextManager[Executor],
    html: bool = True,
    say_language: bool = True,
) -> RunResult:
    """The evaluation in its run context (a folder only when ``where.out`` is set), then report.html;
    one at a time in a process (:data:`PATHWAY_RUN_LOCK`)."""
    with PATHWAY_RUN_LOCK, open_run(state, where, executor) as run:
        if run.path is not None and not settings.resume:
            print(f"run folder: {run.path}", file=sys.stderr)
        result = evaluate(config, dataset, cases, settings, run, say_language)
    if run.path is not None and html:
        write_html(run.path)
    return result


def dry_run(
    config: PipelineConfig,
    dataset: Dataset,
    cases: Sequence[Case],
    settings: RunSettings,
    state: RunState,
    where: Where,
) -> dict[str, Any]:
    """What the run would cost, parsed here (no executor), leaving no folder behind."""
    with open_run(state, where, open_executor(ExecutorSettings())) as run:
        corpus = parse_corpus(dataset, settings.parse, settings.progress, run.executor, config)
        return dry_run_report(settings, config, corpus, cases)


def run_eval_cli(options: EvalOptions, args: argparse.Namespace) -> int:
    """The command: run, print the summary, log to MLflow when asked, then the gate's exit code."""
    try:
        run_dir, result = run_eval(options)
    except (RunError, ExecutorError) as err:
        print(f"ragsweep: error: {err}", file=sys.stderr)
        return 2
    if not isinstance(result, RunResult):  # a dry run's estimate
        print(json.dumps(result, indent=2))
        return 0
    assert run_dir is not None
    print(summary_table(result))
    if args.mlflow:
        # deferred: the MLflow logger builds the run-folder readers (~12 ms); --help must not
        from ragsweep.report.mlflow_log import log_to_mlflow

        print(f"MLflow run: {log_to_mlflow(run_dir, tracking_uri=args.mlflow_uri, pipeline_path=options.pipeline)}")
    html = run_dir / "report.html"
    print(f"\nreport: {run_dir / 'report.json'}" + (f"\n        {html}" if html.exists() else ""))
    return gate(result, options.floors, options.max_failure_rate)


def gate(result: RunResult, floors: dict[str, float], max_failure_rate: float | None) -> int:
    """The CI gate: 1 when no answer succeeded, a metric is below its floor, an LLM metric failed too often
    or the app's parser raised on too many documents."""
    if no_answer_succeeded(result):
        print("ragsweep: error: no answer succeeded (every case has an answer_error); see cases.jsonl", file=sys.stderr)
        return 1
    for line in floors_at_chance(result, floors):
        print(f"ragsweep: warning: {line}", file=sys.stderr)
    failures = quality_failures(result, floors) + failure_gate(result.judge, max_failure_rate)
    failures += parser_failure_gate(result.manifest.corpus, max_failure_rate)  # one rule for documents too
    if failures:
        print("gate FAILED:\n" + "\n".join(failures), file=sys.stderr)
        return 1
    if (passed := gate_passed_line(floors, max_failure_rate)) is not None:
        print(passed)
    return 0
