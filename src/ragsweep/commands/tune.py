"""`ragsweep tune`: its options turned into objects at this edge -> :func:`ragsweep.tuning.search.tune_into` in one
run folder -> the terminal table of the best trials (and ``--write-best``, as sweep writes it)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ragsweep.commands.eval import executor_of, where_of
from ragsweep.commands.inputs import load_inputs
from ragsweep.commands.options import AnswerOptions, RunInputs
from ragsweep.commands.sweep import SweepOptions, checked_inputs, sweep_settings
from ragsweep.core.errors import ConfigError, RunError
from ragsweep.dry_run.sweep import SweepEstimate, estimate_sweep
from ragsweep.evaluation.records import SweepResult
from ragsweep.evaluation.run import parse_corpus
from ragsweep.evaluation.settings import SweepSettings, option
from ragsweep.evaluation.sweep import choice_and_holdout
from ragsweep.execution.base import ExecutorError
from ragsweep.execution.local import LOCAL
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.report.best_pipeline import write_best
from ragsweep.tuning.records import TuneReport, TuneSettings
from ragsweep.tuning.search import load_plan, tune_into
from ragsweep.tuning.study import SAMPLERS, draw
from ragsweep.tuning.table import tune_table


class TuneOptions(AnswerOptions, RunInputs):
    """Everything `ragsweep tune` and ``ragsweep.tune()`` take (the command line is built from it)."""

    space: str = option(..., "the space file: a grid file whose values may also be ranges {low, high, step|log}")
    trials: int = option(20, "trials in the study (a resumed study: in all, those done counted)", ge=1, metavar="N")
    objectives: list[str] | None = option(
        None, "metric to optimise (repeatable: a Pareto front; latency_ms_per_query and cost_usd_per_1k_questions "
        "too; default: the space file's)", flag="--objective", parse="append",
    )  # fmt: skip
    sampler: str = option("tpe", "Optuna's sampler (grid: every configuration of a discrete space)", choices=SAMPLERS)
    prune: bool = option(
        False, "evaluate each trial on the dev cases in steps and stop it when it is worse than the best trial on "
        "the same cases (Optuna's Wilcoxon pruner; one objective)",
    )  # fmt: skip
    answers: bool = option(False, "answer (and score the answers) as eval does; retrieval only otherwise")
    write_best: str | None = option(
        None, "write the pipeline file with the chosen trial's values set, as sweep --write-best does", metavar="FILE"
    )
    force: bool = option(False, "let --write-best write over the input pipeline file")
    max_cost: float | None = option(None, "stop before the study's answer calls could cost more (dollars)", ge=0)
    max_calls: int | None = option(None, "stop before the study's LLM calls could pass N", ge=0, metavar="N")
    dry_run: bool = option(False, "check the space and print its size and the study's plan, then stop")


def tune_settings(options: TuneOptions) -> tuple[SweepSettings, TuneSettings]:
    """The sweep settings the trials run with (the space file stands where a sweep's grid does), and the tune's."""
    fields = {k: v for k, v in options.model_dump().items() if k in SweepOptions.model_fields}
    sweep = sweep_settings(SweepOptions.model_validate({**fields, "grid": options.space, "objectives": None}))
    tune = TuneSettings(
        space=options.space, trials=options.trials, objectives=options.objectives, sampler=options.sampler,
        seed=options.seed, prune=options.prune, max_cost=options.max_cost, max_calls=options.max_calls,
    )  # fmt: skip
    return sweep, tune


def tune_name(dataset_name: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-tune-{dataset_name}"


def run_tune(options: TuneOptions) -> tuple[Path, TuneReport, SweepResult | None]:
    """The tune the options describe, in its folder; the chosen configuration written with ``--write-best``."""
    base_config, dataset, cases = checked_inputs(options, options.write_best, options.force)
    settings, tune = tune_settings(options)
    where = where_of(options, tune_name(dataset.name))
    folder, report, scored = tune_into(base_config, dataset, cases, settings, tune, where, executor_of(options))
    write_chosen(options, scored, base_config)
    # deferred: the page's modules build the report readers; --help must not
    from ragsweep.report.tune_html import write_tune_html

    write_tune_html(report, folder)
    return folder, report, scored


def write_chosen(options: TuneOptions, scored: SweepResult | None, base_config: PipelineConfig) -> None:
    """``--write-best``: the chosen trial's values set in the user's file, as sweep writes its choice."""
    if options.write_best and scored is not None:
        try:
            write_best(options.write_best, scored, base_config)
        except ConfigError as err:
            raise RunError(str(err)) from err


def dry_run_tune(options: TuneOptions) -> SweepEstimate:
    """The space checked and the calls, tokens and price of ``--trials`` configurations drawn from it (Optuna's
    random sampler, ``--seed``), predicted as ``sweep --dry-run`` predicts a grid's: nothing evaluated, no folder."""
    base_config, dataset, cases = load_inputs(options)
    settings, tune = tune_settings(options)
    space, _ = load_plan(base_config, tune)
    size = space.size()
    print(f"tune: {f'{size:,}' if size is not None else 'a continuous space of'} configurations", file=sys.stderr)
    chosen_on, holdout = choice_and_holdout(cases, settings.selection.split)
    drawn = draw(space, base_config, tune.trials, tune.seed)
    corpus = parse_corpus(dataset, settings.parse, settings.progress, LOCAL, base_config)
    return estimate_sweep(drawn, corpus, chosen_on, holdout, settings)


def run_tune_cli(options: TuneOptions, args: argparse.Namespace) -> int:
    try:
        if options.dry_run:
            print(dry_run_tune(options).model_dump_json(indent=2))
            return 0
        folder, report, _ = run_tune(options)
    except (RunError, ExecutorError) as err:
        print(f"ragsweep: error: {err}", file=sys.stderr)
        return 2
    print(tune_table(report, folder))
    if args.mlflow:
        # deferred: the MLflow logger is imported only when asked for
        from ragsweep.report.tune_mlflow import log_tune_to_mlflow

        print(f"MLflow run: {log_tune_to_mlflow(folder, tracking_uri=args.mlflow_uri)}")
    if options.write_best and report.best is not None:
        print(f"best pipeline ({report.objectives[0]}): {options.write_best}")
    print(f"\ntune: {folder / 'tune.json'}  study: {folder / 'study.db'}")
    print(f"report written: {folder / 'report.html'}")
    return 0
