"""A study replayed on known numbers: the configurations a tune would try, when each configuration's objective
value is already known (a grid computed it), without evaluating anything.

The replay runs the tune's own loop: the same sampler (:func:`~ragsweep.tuning.study.make_sampler`), the same
sampling of the space (:func:`~ragsweep.tuning.study.sample`) and the same stop rule (:class:`~ragsweep.tuning.study.Enough`), so a
seed gives the trials :func:`ragsweep.tuning.search.tune_into` gives on those numbers. It measures how often a
search of ``trials`` configurations reaches the grid's best, over many seeds, at no evaluation cost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragsweep.evaluation.sweep import config_id
from ragsweep.tuning.space import Space
from ragsweep.tuning.study import PARAMS_ATTR, Enough, make_sampler, sample

if TYPE_CHECKING:
    import optuna


def replay(
    space: Space, values: Mapping[str, float], sampler: str, seed: int | None, trials: int, direction: str
) -> list[str]:
    """The configuration ids a study of ``trials`` configurations tries, in trial order (a repeat included),
    when configuration ``id`` scores ``values[id]`` on the one objective (``direction``: higher|lower)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        sampler=make_sampler(sampler, space, seed, trials),
        direction="minimize" if direction == "lower" else "maximize",
    )
    tried: list[str] = []

    def objective(trial: optuna.Trial) -> float:
        params = sample(trial, space)
        trial.set_user_attr(PARAMS_ATTR, json.dumps(params, sort_keys=True))
        tried.append(config_id(params))
        return values[tried[-1]]

    study.optimize(objective, callbacks=[Enough(trials, space.size())])
    return tried
