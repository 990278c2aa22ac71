"""A tune: Optuna proposes configurations of a space, each trial is evaluated as sweep evaluates a configuration
(:mod:`ragsweep.tuning.trial`), and the best is chosen on dev and reported on test as sweep reports its choice
(:func:`ragsweep.evaluation.sweep.finish_sweep`, :func:`ragsweep.evaluation.sweep.score_on_holdout`).

The run folder is a sweep's (``configs/<id>/``, ``sweep-state.json``) plus ``study.db`` (the Optuna study) and
``tune.json`` (:class:`~ragsweep.tuning.records.TuneReport`). Resumed, the study goes on from its stored trials: a
trial the killed process left running is marked failed, and ``trials`` counts the study's finished trials.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from ragsweep.core.errors import ConfigError, RunError
from ragsweep.datasets.schema import Case, Dataset
from ragsweep.evaluation.context import Where, open_run, sweep_state
from ragsweep.evaluation.records import ConfigResult, SweepResult
from ragsweep.evaluation.settings import SweepSettings
from ragsweep.evaluation.sweep import (
    DEFAULT_KS,
    Sweep,
    SweepRun,
    choice_and_holdout,
    config_id,
    finished_configs,
    parse_corpora,
)
from ragsweep.execution.base import CONFIG_FAILURES, Executor
from ragsweep.metrics.registry import asked_budgets, lower_is_better, unknown_name
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.tuning.parallel import optimize_in_batches, parallel_trials
from ragsweep.tuning.records import TuneReport, TuneSettings
from ragsweep.tuning.space import Space, load_space
from ragsweep.tuning.study import (
    CASES_ATTR,
    COST_ATTR,
    PARAMS_ATTR,
    REASON_ATTR,
    SECONDS_ATTR,
    Enough,
    fail_interrupted,
    make_sampler,
    open_study,
    sample,
    trial_overrides,
)
from ragsweep.tuning.summary import tune_report
from ragsweep.tuning.trial import Outcome, TrialFailed, Trials, run_trial

if TYPE_CHECKING:
    import optuna

# objectives besides the registry's metrics: a configuration's query latency and its answers' price
LATENCY = "latency_ms_per_query"
COST = "cost_usd_per_1k_questions"


def load_plan(base: PipelineConfig, tune: TuneSettings) -> tuple[Space, Sweep]:
    """The space and the sweep its trials run in (the baseline its only configuration yet); every problem
    one line, before any work."""
    try:
        space = load_space(tune.space, base)
        baseline = base.with_overrides(space.grid.baseline)
    except ConfigError as err:
        raise RunError(str(err)) from err
    objectives = list(tune.objectives or space.grid.objectives)
    if tune.prune and len(objectives) > 1:
        raise RunError("--prune: pruning compares one objective; give one --objective, or leave out --prune")
    ks = sorted(set(space.grid.ks if "ks" in space.grid.model_fields_set else DEFAULT_KS))
    budgets = sorted(set(space.grid.budgets) | set(asked_budgets(objectives)))
    depths = set(ks) | {baseline.top_k} | {int(v) for v in space.choices.get("top_k", []) if isinstance(v, int)}
    for m in objectives:
        if m not in (LATENCY, COST) and not m.endswith("@k") and (why := unknown_name(m, depths, budgets)):
            raise RunError(f"{tune.space}: objective {why}")
    bid = config_id(space.grid.baseline)
    plan = Sweep(
        grid=space.grid, objectives=objectives, ks=ks, budgets=budgets,
        configs={bid: (space.grid.baseline, baseline)}, baseline_id=bid,
    )  # fmt: skip
    return space, plan


def objective_value(result: ConfigResult, name: str) -> float | None:
    if name == LATENCY:
        return result.latency_ms_per_query
    if name == COST:
        return result.cost.usd_per_1k_questions if result.cost is not None else None
    return result.metric(name)


def direction(name: str) -> str:
    return "lower" if lower_is_better(name) else "higher"


def tune_into(
    base: PipelineConfig,
    dataset: Dataset,
    cases: Sequence[Case],
    settings: SweepSettings,
    tune: TuneSettings,
    where: Where,
    executor: AbstractContextManager[Executor],
) -> tuple[Path, TuneReport, SweepResult | None]:
    """The study over ``base`` in its run folder (created, or resumed), then tune.json."""
    space, plan = load_plan(base, tune)
    sampler = make_sampler(tune.sampler, space, tune.seed, tune.trials)
    chosen_on, holdout = choice_and_holdout(cases, settings.selection.split)
    state = sweep_state(base, settings, plan.ks, plan.budgets, chosen_on)
    with open_run(state, where, executor) as run:
        assert run.path is not None  # a tune keeps its study and configurations on disk
        print(f"tune folder: {run.path}  (space: {space.size() or 'continuous'} configurations)", file=sys.stderr)
        sweep = SweepRun(plan, base, dataset, chosen_on, holdout, settings, run)
        study = open_study(run.path, sampler, [direction(m) for m in plan.objectives], tune.prune)
        if stale := fail_interrupted(study):
            print(f"resuming: {stale} trial(s) in flight when the run stopped, marked failed", file=sys.stderr)
        trials = Trials(sweep, parse_corpora(sweep), prune=tune.prune)
        restore(study, trials)
        enough, budget = Enough(tune.trials, space.size()), Budget(tune, trials)
        if (side_by_side := parallel_trials(run.executor, tune.prune)) > 1:
            optimize_in_batches(
                study, trials, space, side_by_side, enough, budget.passed,
                lambda trial, outcome: trial_values(trial, outcome, plan.objectives),
            )  # fmt: skip
        elif not enough.reached(study):
            study.optimize(
                lambda trial: _objective(trial, trials, space), catch=(TrialFailed,), callbacks=[enough, budget]
            )
        report = tune_report(study, trials, space.shown(), tune, space.size())
        run.folder.write_json("tune.json", report.model_dump(mode="json"))
    return run.path, report, trials.scored


def restore(study: optuna.Study, trials: Trials) -> None:
    """The configurations a resumed study's trials evaluated, and their results on disk (an invalid one, a
    failed trial's, has none)."""
    plan, base = trials.sweep.plan, trials.sweep.base_config
    for trial in study.trials:
        if (params := trial_overrides(trial)) and config_id(params) not in plan.configs:
            try:
                plan.configs[config_id(params)] = (params, base.with_overrides(params))
            except ConfigError:
                continue
    trials.results.update(finished_configs(trials.sweep.folder, plan))


def _objective(trial: optuna.Trial, trials: Trials, space: Space) -> list[float]:
    params = sample(trial, space)
    trial.set_user_attr(PARAMS_ATTR, json.dumps(params, sort_keys=True))
    try:
        outcome: Outcome | Exception = run_trial(trials, params, trial, trials.sweep.plan.objectives[0])
    except (TrialFailed, *CONFIG_FAILURES) as err:
        outcome = err
    return trial_values(trial, outcome, trials.sweep.plan.objectives)


def trial_values(trial: optuna.Trial, outcome: Outcome | Exception, objectives: list[str]) -> list[float]:
    """The trial's objective values, what it cost kept as its user attributes; TrialFailed (its reason kept)
    when it failed or has no value of an objective, TrialPruned when pruning stopped it."""
    import optuna

    if isinstance(outcome, Exception):
        trial.set_user_attr(REASON_ATTR, " ".join(str(outcome).split()))
        raise TrialFailed(str(outcome)) from outcome
    trial.set_user_attr(CASES_ATTR, outcome.cases_evaluated)
    trial.set_user_attr(SECONDS_ATTR, round(outcome.seconds, 3))
    if outcome.result is None:
        trial.set_user_attr(REASON_ATTR, f"pruned after {outcome.pruned_at} dev case(s)")
        raise optuna.TrialPruned()
    if outcome.result.cost is not None:
        trial.set_user_attr(COST_ATTR, outcome.result.cost.usd)
    values = [objective_value(outcome.result, m) for m in objectives]
    if any(v is None for v in values):
        missing = [m for m, v in zip(objectives, values) if v is None]
        trial.set_user_attr(REASON_ATTR, f"no value of {', '.join(missing)}")
        raise TrialFailed(f"no value of {', '.join(missing)}")
    return [float(v) for v in values if v is not None]


class Budget:
    """Stops the study before the next trial could take it past ``--max-cost`` / ``--max-calls``: the
    dearest trial so far stands for the next one."""

    def __init__(self, tune: TuneSettings, trials: Trials) -> None:
        self.tune, self.trials = tune, trials

    def __call__(self, study: optuna.Study, _: optuna.trial.FrozenTrial) -> None:
        if self.passed():
            study.stop()

    def passed(self) -> bool:
        """Whether the next trial could pass the budget (said on stderr)."""
        costs = [r.cost for r in self.trials.results.values() if r.cost is not None]
        if self.tune.max_cost is not None and any(c.usd is None and c.calls for c in costs):
            # an unpriced call cannot be counted against a dollar budget: never as free
            print(
                "tune: stopped: --max-cost cannot be kept, the answer calls have no price ($llm_price_*)",
                file=sys.stderr,
            )
            return True
        for limit, spent in (
            (self.tune.max_calls, [c.calls for c in costs]),
            (self.tune.max_cost, [c.usd for c in costs if c.usd is not None]),
        ):
            if limit is not None and spent and sum(spent) + max(spent) > limit:
                print(
                    f"tune: stopped: the next trial could pass the budget ({sum(spent):g} of {limit:g})",
                    file=sys.stderr,
                )
                return True
        return False
