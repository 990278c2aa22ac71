"""One trial: a configuration evaluated on the dev cases by sweep's own code, so a trial and the same
configuration in a sweep have the same case lines, aggregate and record files (``configs/<id>/``).

Without pruning a trial is a one-configuration sweep (:func:`ragsweep.evaluation.sweep.run_groups`). With
pruning the dev cases are taken in a fixed order stratified by question type (:func:`case_order`), in steps:
after each step every case's value of the main objective is reported to Optuna at the case's place in that
order (the step of :class:`optuna.pruners.WilcoxonPruner`, which pairs trials on it), and the trial stops
when the pruner says it is worse than the best one on the same cases. A case never reached is never asked.
A configuration whose ``result.json`` is in the folder (an earlier trial, or run) is answered from it.
"""

from __future__ import annotations

import math
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ragsweep.datasets.schema import Case
from ragsweep.evaluation.loop import evaluate_configuration
from ragsweep.evaluation.records import CaseResult, ConfigResult, SweepResult, case_metric
from ragsweep.evaluation.sweep import (
    Corpora,
    Failures,
    SweepRun,
    config_id,
    config_result,
    parse_for,
    run_groups,
    sweep_answering,
)
from ragsweep.pipeline.scalars import Overrides

if TYPE_CHECKING:
    import optuna

STEPS = 4  # a pruned trial's steps: the first is the fewest cases a trial is judged on


@dataclass
class Trials:
    """A tune's open state: the sweep it runs trials in, its parsed corpora, the finished configurations."""

    sweep: SweepRun
    corpora: Corpora
    results: dict[str, ConfigResult] = field(default_factory=dict)
    prune: bool = False
    asked: int = 0  # dev cases queried in this process (a cached trial asks none)
    scored: SweepResult | None = None  # the complete trials as a sweep of them: the choice --write-best writes


@dataclass
class Outcome:
    """What one trial gave: its configuration's result (None: pruned) and the dev cases it queried."""

    cid: str
    result: ConfigResult | None
    cases_evaluated: int
    seconds: float
    pruned_at: int | None = None  # cases evaluated when it was pruned


def case_order(cases: Sequence[Case]) -> list[Case]:
    """The dev cases in a fixed order stratified by type: one of each type in turn (types and cases sorted),
    so every step holds every type in proportion."""
    by_type: dict[str, list[Case]] = defaultdict(list)
    for case in sorted(cases, key=lambda c: c.id):
        by_type[case.type or ""].append(case)
    queues = [by_type[t] for t in sorted(by_type)]
    order: list[Case] = []
    for i in range(max((len(q) for q in queues), default=0)):
        order.extend(q[i] for q in queues if i < len(q))
    return order


def run_trial(trials: Trials, params: Overrides, trial: optuna.Trial | None, metric: str) -> Outcome:
    """``params`` evaluated on the dev cases (pruned on ``metric`` when the tune prunes and ``trial`` is given)."""
    if trials.prune and trial is not None and config_id(params) not in trials.results:
        sweep = trials.sweep
        cid = _planned(sweep, params)
        started = time.perf_counter()
        parse_for(sweep, trials.corpora, sweep.plan.configs[cid][1])
        return _stepped(trials, cid, trial, metric, started)
    outcome = run_batch(trials, [params])[0]
    if isinstance(outcome, TrialFailed):
        raise outcome
    return outcome


def run_batch(trials: Trials, batch: Sequence[Overrides]) -> list[Outcome | TrialFailed]:
    """Configurations evaluated together on the dev cases, as one sweep of them: each index's work is submitted
    before any is gathered (on Ray they run side by side), and each has the numbers it has alone. One outcome per
    entry: a configuration already finished, or twice in the batch, is answered from the first (no case asked)."""
    sweep = trials.sweep
    cids = [_planned(sweep, params) for params in batch]
    todo = list(dict.fromkeys(cid for cid in cids if cid not in trials.results))
    started = time.perf_counter()
    for cid in todo:
        parse_for(sweep, trials.corpora, sweep.plan.configs[cid][1])
    failures = Failures(scored=True)  # a failure is its configuration's own, never "the rest not run"
    some = SweepRun(
        sweep.plan.model_copy(update={"configs": {cid: sweep.plan.configs[cid] for cid in todo}}), sweep.base_config,
        sweep.dataset, sweep.cases, sweep.holdout, sweep.settings, sweep.run,
    )  # fmt: skip
    if todo:
        run_groups(some, trials.corpora, trials.results, failures)
    seconds = time.perf_counter() - started  # trials evaluated side by side share the batch's time
    outcomes: list[Outcome | TrialFailed] = []
    first = set(todo)
    for cid in cids:
        if cid in failures.reasons:
            outcomes.append(TrialFailed(failures.reasons[cid]))
        elif cid in first:
            first.discard(cid)
            trials.asked += len(sweep.cases)
            outcomes.append(Outcome(cid, trials.results[cid], len(sweep.cases), seconds))
        else:
            outcomes.append(Outcome(cid, trials.results[cid], 0, 0.0))
    return outcomes


def _planned(sweep: SweepRun, params: Overrides) -> str:
    """The configuration's id, its pipeline added to the sweep's plan."""
    cid = config_id(params)
    if cid not in sweep.plan.configs:
        sweep.plan.configs[cid] = (params, sweep.base_config.with_overrides(params))
    return cid


class TrialFailed(Exception):
    """A trial's configuration failed (its one-line reason): the study records it and goes on."""


def _stepped(trials: Trials, cid: str, trial: optuna.Trial, metric: str, started: float) -> Outcome:
    """The configuration evaluated step by step on the ordered dev cases, reported to the pruner after each."""
    sweep = trials.sweep
    params, cfg = sweep.plan.configs[cid]
    order = case_order(sweep.cases)
    size = math.ceil(len(order) / STEPS)
    answering = sweep_answering(cfg, sweep.settings, order)
    corpus = trials.corpora[cfg.parser_spec().identity]
    done: list[CaseResult] = []
    sink = sweep.folder.case_file("configs", cid, "cases.jsonl", chunks=True)
    sink.reset()
    try:
        for start in range(0, len(order), size):
            step = order[start : start + size]
            evaluated = evaluate_configuration(
                cfg, step, corpus=corpus, ks=sweep.plan.ks, relevance=sweep.dataset.relevance, answering=answering,
                sink=sink, progress=sweep.settings.progress, budgets=sweep.plan.budgets, executor=sweep.executor,
            )  # fmt: skip
            trials.asked += len(step)
            done.extend(evaluated.results)
            for place, case in enumerate(evaluated.results, start=start):
                if (value := case_metric(case.metrics, metric, case.top_k)) is not None:
                    trial.report(value, step=place)
            if len(done) < len(order) and trial.should_prune():
                print(f"{cid}: pruned after {len(done)} of {len(order)} dev case(s)", file=sys.stderr)
                return Outcome(cid, None, len(done), time.perf_counter() - started, pruned_at=len(done))
    finally:
        sink.close()
    by_id = {r.id: r for r in done}
    in_order = [by_id[c.id] for c in sweep.cases]  # the sweep's order: the same aggregate
    result = config_result(cid, params, cfg, in_order, sweep.plan, interval_metrics=sweep.plan.objectives)
    result.seconds = round(time.perf_counter() - started, 3)
    sweep.folder.write_json(f"configs/{cid}/result.json", result.model_dump(mode="python"))
    trials.results[cid] = result
    return Outcome(cid, result, len(done), time.perf_counter() - started)
