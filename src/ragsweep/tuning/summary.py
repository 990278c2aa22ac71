"""A finished study as :class:`~ragsweep.tuning.records.TuneReport`: every trial, the Pareto front, each knob's
importance, and the best trial chosen on dev and scored on test as a sweep scores its choice."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from ragsweep.evaluation.records import Aggregate
from ragsweep.evaluation.sweep import Sweep, config_id, finish_sweep, score_on_holdout
from ragsweep.pipeline.scalars import Overrides
from ragsweep.tuning.records import PairedVerdict, TrialRecord, TuneBest, TuneReport, TuneSettings
from ragsweep.tuning.study import TrialAttrs, trial_overrides
from ragsweep.tuning.trial import Trials

if TYPE_CHECKING:
    import optuna


_STATES = {"COMPLETE": "complete", "PRUNED": "pruned", "FAIL": "failed"}


def tune_report(study: optuna.Study, trials: Trials, space_shown: dict[str, object], tune: TuneSettings,
                space_size: int | None) -> TuneReport:  # fmt: skip
    plan = trials.sweep.plan
    records = [_record(t, plan.objectives) for t in study.trials if t.state.name in _STATES]
    counted = [r for r in records if r.state != "failed"]
    dev = len(trials.sweep.cases)
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    report = TuneReport(
        dataset=trials.sweep.dataset.name, space=space_shown, objectives=plan.objectives,
        directions={m: ("lower" if d.name == "MINIMIZE" else "higher") for m, d in zip(plan.objectives, study.directions)},
        sampler=tune.sampler, seed=tune.seed, prune=tune.prune, n_trials=len(records), space_size=space_size,
        dev_cases=dev, cases_evaluated=sum(r.cases_evaluated for r in records), cases_possible=len(counted) * dev,
        trials=records, pareto=[t.number for t in study.best_trials] if complete else [],
        importance=_importance(study, complete),
    )  # fmt: skip
    if complete:
        report.best = _best(trials, {t.number: trial_overrides(t) for t in complete}, len(counted))
    return report


def _record(trial: optuna.trial.FrozenTrial, objectives: list[str]) -> TrialRecord:
    params = trial_overrides(trial)
    values = trial.values if trial.values is not None else [None] * len(objectives)
    attrs = TrialAttrs.of(trial)
    return TrialRecord(
        number=trial.number, config_id=config_id(params), params=params, state=_STATES[trial.state.name],  # type: ignore[arg-type]
        values=dict(zip(objectives, values)), cases_evaluated=attrs.cases_evaluated, seconds=attrs.seconds,
        cost=attrs.cost, reason=attrs.reason,
    )  # fmt: skip


def _importance(study: optuna.Study, complete: list[optuna.trial.FrozenTrial]) -> dict[str, float]:
    """Each knob's share of the first objective's variance (Optuna's fANOVA) over the knobs the complete trials
    varied (a knob with one value explains nothing), where two trials and two such knobs are."""
    import optuna

    names = sorted({p for t in complete for p in t.params})
    varied = [p for p in names if len({repr(t.params.get(p)) for t in complete}) > 1]
    if len(complete) < 2 or len(varied) < 2:
        return {}
    try:
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=0)  # the same shares for the same study
        found = optuna.importance.get_param_importances(
            study, evaluator=evaluator, params=varied, target=lambda t: t.values[0]
        )
    except (ValueError, RuntimeError) as err:  # e.g. a knob sampled by only some trials (a stage switched off)
        print(f"tune: no importance: {err}", file=sys.stderr)
        return {}
    return {k: round(float(v), 6) for k, v in found.items()}


def _best(trials: Trials, tried: dict[int, Overrides], trials_tried: int) -> TuneBest:
    """The best complete trial on the main objective, as sweep chooses among the configurations it scored,
    then scored on the held-out cases against the baseline (paired, at equal depth)."""
    sweep = trials.sweep
    by_cid = {config_id(p): n for n, p in sorted(tried.items(), reverse=True)}  # the first trial of each
    plan: Sweep = sweep.plan.model_copy(update={"configs": {c: sweep.plan.configs[c] for c in by_cid}})
    plan.configs.setdefault(plan.baseline_id, sweep.plan.configs[plan.baseline_id])
    results = {c: trials.results[c] for c in by_cid}
    scored = finish_sweep(sweep.folder, plan, results)
    scored.sweep_dir = str(sweep.folder.path)
    scored.choice_split = "dev" if sweep.holdout else sweep.settings.selection.split
    trials.scored = scored
    main = plan.objectives[0]
    chosen = scored.best_on(main) or next(iter(by_cid))
    best = TuneBest(
        trial=by_cid[chosen], config_id=chosen, params=plan.configs[chosen][0],
        dev={m: results[chosen].metric(m) for m in plan.objectives}, trials_tried=trials_tried,
        dev_intervals=_intervals(results[chosen], plan.objectives),
    )  # fmt: skip
    if not sweep.holdout:
        return best
    verdict = score_on_holdout(scored, replace(sweep, plan=plan), trials.corpora)
    scored.verdict = verdict
    test = verdict.configs.get(chosen)
    base = verdict.configs.get(plan.baseline_id)
    if test is not None:
        best.test = {m: test.metric(m) for m in plan.objectives}
        best.test_intervals = _intervals(test, plan.objectives)
    if base is not None:
        best.baseline = {m: base.metric(m) for m in plan.objectives}
    best.paired = PairedVerdict(
        metric=main, difference=verdict.difference, p_value=verdict.p_value, significant=verdict.significant
    )
    return best


def _intervals(scored: Aggregate, metrics: list[str]) -> dict[str, tuple[float, float]]:
    """Each metric's 95% bootstrap CI where it has one."""
    out: dict[str, tuple[float, float]] = {}
    for metric in metrics:
        low, high = scored.interval(metric)
        if low is not None and high is not None:
            out[metric] = (low, high)
    return out
