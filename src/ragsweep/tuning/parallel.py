"""Trials side by side (``--executor ray``): Optuna's ask and tell, one trial per Ray worker at a time.

A batch of trials is asked, their configurations are evaluated together as one sweep of them
(:func:`ragsweep.tuning.trial.run_batch`: each index's work is submitted to the cluster before any is gathered),
then each trial is told its values. A configuration's numbers are those it has evaluated alone, in one process:
the same sweep code scores the lists the workers served. Batches are not larger than the trials left, so a
study stops at its ``--trials`` as one run one at a time does; a killed run leaves its batch running in the
study, marked failed when it is resumed. Pruned trials run one at a time: each is compared step by step with
the best trial so far.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from ragsweep.execution.base import CONFIG_FAILURES, Executor
from ragsweep.tuning.space import Space
from ragsweep.tuning.study import PARAMS_ATTR, Enough, sample
from ragsweep.tuning.trial import Outcome, TrialFailed, Trials, run_batch

if TYPE_CHECKING:
    import optuna

Record = Callable[["optuna.Trial", "Outcome | Exception"], list[float]]


def parallel_trials(executor: Executor, prune: bool) -> int:
    """How many trials run side by side: one per worker of an executor that has workers (Ray's), else one."""
    workers = getattr(executor, "workers", None)
    return int(workers()) if callable(workers) and not prune else 1


def optimize_in_batches(
    study: optuna.Study,
    trials: Trials,
    space: Space,
    size: int,
    enough: Enough,
    passed: Callable[[], bool],
    record: Record,
) -> None:
    """The study run in batches of up to ``size`` trials until ``enough`` is reached or the budget ``passed``;
    ``record`` turns a trial's outcome into its values (raising TrialFailed for a failed one)."""
    while (left := enough.left(study)) > 0 and not passed():
        asked = [study.ask() for _ in range(min(size, left))]
        batch = [sample(trial, space) for trial in asked]
        for trial, params in zip(asked, batch):
            trial.set_user_attr(PARAMS_ATTR, json.dumps(params, sort_keys=True))
        try:
            outcomes: list[Outcome | TrialFailed] = run_batch(trials, batch)
        except CONFIG_FAILURES as err:  # the batch could not be built: each of its trials fails with the reason
            outcomes = [TrialFailed(str(err))] * len(asked)
        for trial, outcome in zip(asked, outcomes):
            try:
                values: list[float] | None = record(trial, outcome)
            except TrialFailed:
                values = None
            _tell(study, trial, values)


def _tell(study: optuna.Study, trial: optuna.Trial, values: list[float] | None) -> None:
    """The trial told its values (None: failed). Optuna's grid sampler asks the study to stop once its grid is
    done, which outside ``optimize()`` Optuna raises after storing the trial: ``Enough`` ends the loop instead."""
    from optuna.trial import TrialState

    try:
        if values is None:
            study.tell(trial, state=TrialState.FAIL)
        else:
            study.tell(trial, values)
    except RuntimeError as err:
        if "Study.stop" not in str(err):
            raise
