"""`ragsweep sweep`: its options turned into objects at this edge -> :func:`ragsweep.evaluation.sweep.run_sweep`
in one :class:`~ragsweep.evaluation.context.RunContext` -> report.html -> the terminal table."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from pydantic import BaseModel, Field

from ragsweep.commands.eval import executor_of, where_of
from ragsweep.commands.inputs import answer_settings, load_inputs, parse_settings, selection_of
from ragsweep.commands.options import AnswerOptions, RunInputs
from ragsweep.core.errors import ConfigError, RunError
from ragsweep.datasets.schema import Case, Dataset
from ragsweep.dry_run.sweep import SweepEstimate, estimate_sweep
from ragsweep.evaluation.context import Where, open_run, sweep_state
from ragsweep.evaluation.grid_size import MAX_CONFIGURATIONS, MAX_INDEX_GROUPS
from ragsweep.evaluation.records import SweepResult
from ragsweep.evaluation.run import parse_corpus
from ragsweep.evaluation.settings import SweepSettings, option
from ragsweep.evaluation.sweep import SweepRun, choice_and_holdout, load_grid, load_sweep
from ragsweep.evaluation.sweep import run_sweep as sweep_core
from ragsweep.execution.base import Executor, ExecutorError
from ragsweep.execution.registry import ExecutorSettings, check_executor, open_executor
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.report import write_html
from ragsweep.report.best_pipeline import check_best_target, write_best
from ragsweep.report.terminal import sweep_cost_lines, sweep_table, sweep_unlocated_lines


class SweepOptions(AnswerOptions, RunInputs):
    """Everything `ragsweep sweep` and ``ragsweep.sweep()`` take (the command line is built from it)."""

    grid: str = option(..., "the grid file (axes, baseline, objectives, ks)")
    objectives: list[str] | None = option(
        None, "metric to pick the best configuration by (repeatable; default: the grid's)", flag="--objective",
        parse="append",
    )  # fmt: skip
    ks: list[int] | None = option(
        None, "depths to report (deeper than a configuration's top_k, or an adaptive answerer's deepest ask: "
        "missing; default: the grid's ks, else an adaptive answerer's own depths)", parse="depths",
    )  # fmt: skip
    answers: bool = option(False, "answer (and score the answers) as eval does; retrieval only otherwise")
    dry_run: bool = option(
        False, "print the LLM calls, tokens and price each configuration's answers would take, then stop"
    )
    write_best: str | None = option(
        None, "write the pipeline file with the best configuration's values (on the first objective) set, every "
        "other line as it is, to FILE", metavar="FILE",
    )  # fmt: skip
    force: bool = option(False, "let --write-best write over the input pipeline file")
    yes: bool = option(
        False, f"run a grid over {MAX_CONFIGURATIONS:,} configurations or {MAX_INDEX_GROUPS:,} index groups "
        "(its size and time are printed first; without it such a grid is refused; --dry-run only counts one)",
    )  # fmt: skip


def sweep_settings(options: SweepOptions) -> SweepSettings:
    return SweepSettings(
        selection=selection_of(options), grid=str(options.grid), answer=answer_settings(options),
        parse=parse_settings(options), answers=options.answers, unlocated=options.unlocated,
        progress=options.progress, fresh_retrieval=options.fresh_retrieval,
    )  # fmt: skip


def checked_inputs(
    options: RunInputs, write_best: str | None, force: bool
) -> tuple[PipelineConfig, Dataset, list[Case]]:
    """The executor, the inputs and the file ``--write-best`` will write, each checked before any work."""
    check_executor(options.executor_settings)
    base_config, dataset, cases = load_inputs(options)
    check_best(write_best, base_config, force)
    return base_config, dataset, cases


def check_best(write_best: str | None, base_config: PipelineConfig, force: bool) -> None:
    """The file ``--write-best`` will write, refused before any work when it could not be written."""
    if write_best:
        try:
            check_best_target(write_best, base_config, force)
        except ConfigError as err:
            raise RunError(str(err)) from err


def run_sweep(options: SweepOptions) -> tuple[Path, SweepResult]:
    """The sweep the options describe, in its folder (report.html written too)."""
    base_config, dataset, cases = checked_inputs(options, options.write_best, options.force)
    where = where_of(options, sweep_name(dataset.name))
    plan = Plan(objectives=options.objectives, ks=options.ks, budgets=options.budgets, yes=options.yes)
    sweep_dir, result = sweep_into(
        base_config, dataset, cases, sweep_settings(options), plan, where, executor_of(options)
    )
    if options.write_best and not result.failed:  # a best of the configurations that ran is not the grid's
        try:
            write_best(options.write_best, result, base_config)
        except ConfigError as err:
            raise RunError(str(err)) from err
    return sweep_dir, result


def dry_run_sweep(options: SweepOptions) -> SweepEstimate:
    """What the sweep's answers would cost, the documents parsed here (no executor), no folder left behind;
    a grid over the size limits is counted alone (never expanded)."""
    base_config, dataset, cases = load_inputs(options)
    settings = sweep_settings(options)
    chosen_on, holdout = choice_and_holdout(cases, settings.selection.split)
    _, size = load_grid(settings.grid, base_config)
    print(f"sweep: {size.line()}", file=sys.stderr)
    if (why := size.over_limit()) is not None:  # counted only, --yes or not: a dry run never expands such a grid
        note = f"{why}: counted, not expanded (a dry run estimates each configuration of a grid within the limits)"
        return SweepEstimate(configurations=size.configurations, cases=len(chosen_on), size=size, notes=[note])
    grid = load_sweep(settings.grid, base_config, options.objectives, options.ks, options.budgets, allow_large=True)
    state = sweep_state(base_config, settings, grid.ks, grid.budgets, chosen_on)
    where = where_of(options, sweep_name(dataset.name), create=False)
    with open_run(state, where, open_executor(ExecutorSettings())) as run:
        corpus = parse_corpus(dataset, settings.parse, settings.progress, run.executor, base_config)
    configs = {cid: cfg for cid, (_, cfg) in grid.configs.items()}
    return estimate_sweep(configs, corpus, chosen_on, holdout, settings).model_copy(update={"size": size})


def sweep_name(dataset_name: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-sweep-{dataset_name}"


class Plan(BaseModel):
    """What the command line asks of the grid's own objectives, depths and budgets (None/empty: the grid's)."""

    objectives: list[str] | None = None
    ks: list[int] | None = None
    budgets: list[int] = Field(default_factory=list)
    yes: bool = False  # a grid over the size limits runs


def sweep_into(
    base_config: PipelineConfig,
    dataset: Dataset,
    cases: Sequence[Case],
    settings: SweepSettings,
    plan: Plan,
    where: Where,
    executor: AbstractContextManager[Executor],
) -> tuple[Path, SweepResult]:
    """The grid over ``base_config`` in its run context, then report.html."""
    _, size = load_grid(settings.grid, base_config)
    if size.over_limit() is None or plan.yes:  # before the grid is expanded (a refused one: the error says it)
        print(f"sweep: {size.line()}", file=sys.stderr)
    grid = load_sweep(settings.grid, base_config, plan.objectives, plan.ks, plan.budgets, allow_large=plan.yes)
    chosen_on, holdout = choice_and_holdout(cases, settings.selection.split)
    state = sweep_state(base_config, settings, grid.ks, grid.budgets, chosen_on)
    with open_run(state, where, executor) as run:
        print(f"sweep folder: {run.path}  ({len(grid.configs)} configurations)", file=sys.stderr)
        result = sweep_core(SweepRun(grid, base_config, dataset, chosen_on, holdout, settings, run))
    assert run.path is not None  # a sweep keeps its configurations on disk
    write_html(run.path)
    return run.path, result


def run_sweep_cli(options: SweepOptions, args: argparse.Namespace) -> int:
    try:
        if options.dry_run:
            print(dry_run_sweep(options).model_dump_json(indent=2))
            return 0
        sweep_dir, report = run_sweep(options)
    except (RunError, ExecutorError) as err:
        print(f"ragsweep: error: {err}", file=sys.stderr)
        return 2
    print(sweep_table(report))
    for line in [*sweep_unlocated_lines(report), *sweep_cost_lines(report)]:
        print(line)
    if args.mlflow:
        # deferred: the MLflow logger builds the run-folder readers (~12 ms); --help must not
        from ragsweep.report.mlflow_log import log_to_mlflow

        print(f"MLflow run: {log_to_mlflow(sweep_dir, tracking_uri=args.mlflow_uri, pipeline_path=options.pipeline)}")
    if options.write_best and not report.failed:
        print(f"best pipeline ({report.objectives[0]}): {options.write_best}")
    print(f"\nsweep: {sweep_dir / 'sweep.json'}  {sweep_dir / 'sweep.csv'}")
    print(f"report written: {sweep_dir / 'report.html'}")
    if report.failed:
        print(f"ragsweep: error: {failed_line(report, options.write_best)}", file=sys.stderr)
        return 2
    return 0


def failed_line(report: SweepResult, write_best: str | None) -> str:
    """The one line a sweep with failed configurations ends on (its reports are written)."""
    first = report.failed[0]
    total = len(report.configs) + len(report.failed)
    unwritten = f"; {write_best} not written" if write_best else ""
    return (
        f"{len(report.failed)} of {total} configurations failed, not ranked (the first, {first.id}: "
        f"{first.reason}){unwritten}; --resume runs the failed ones again"
    )
