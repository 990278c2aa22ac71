"""The space as Optuna sees it: its distributions, a trial's configuration sampled from them, the samplers by
name, and the study kept in the run folder (Optuna's SQLite storage, ``study.db``)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ragsweep.core.errors import RunError
from ragsweep.evaluation.sweep import config_id
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.scalars import Overrides
from ragsweep.tuning.space import OFF_WHEN, Choice, Space, label, switched_off

if TYPE_CHECKING:
    import optuna

SAMPLERS = ("tpe", "nsga2", "random", "grid")
STUDY_FILE = "study.db"
STUDY_NAME = "ragsweep-tune"
# user attributes of a trial (Optuna's storage keeps them: a resumed study reads them back)
PARAMS_ATTR = "overrides"  # the trial's configuration, as the pipeline's overrides
REASON_ATTR = "reason"  # why it failed, or where it was pruned
CASES_ATTR = "cases_evaluated"
SECONDS_ATTR = "seconds"
COST_ATTR = "cost"
INTERRUPTED = "interrupted: its process ended before the trial did"


class TrialAttrs(BaseModel):
    """A trial's user attributes as ragsweep sets them (each field is named as its ``*_ATTR``); a trial cut
    short before one was set has its default."""

    overrides: str | None = None  # JSON of the pipeline's overrides
    reason: str | None = None
    cases_evaluated: int = 0
    seconds: float = 0.0
    cost: float | None = None  # None: no price known

    @classmethod
    def of(cls, trial: optuna.trial.FrozenTrial) -> TrialAttrs:
        return cls.model_validate(trial.user_attrs)


class Enough:
    """Stops the study once ``trials`` distinct configurations were tried (a configuration proposed again is
    answered from the folder and not counted), the whole space was, or ten times ``trials`` trials ran."""

    def __init__(self, trials: int, space_size: int | None) -> None:
        self.trials, self.space_size = trials, space_size

    def reached(self, study: optuna.Study) -> bool:
        return self.left(study) == 0

    def left(self, study: optuna.Study) -> int:
        """How many more distinct configurations the study may try (0: it is done)."""
        finished = [t for t in study.get_trials(deepcopy=False) if t.state.is_finished()]
        if len(finished) >= 10 * self.trials:
            return 0
        attrs = [TrialAttrs.of(t) for t in finished]
        tried = len({a.overrides for a in attrs if a.reason != INTERRUPTED})
        return max(0, min(self.trials, self.space_size or self.trials) - tried)

    def __call__(self, study: optuna.Study, _: optuna.trial.FrozenTrial) -> None:
        if self.reached(study):
            study.stop()


def ordered_axes(space: Space) -> list[str]:
    """The axes in sampling order: a knob that switches a stage before the knobs that stage alone reads."""
    dependents = set(OFF_WHEN)
    axes = [*space.choices, *space.ranges]
    return [a for a in axes if a not in dependents] + [a for a in axes if a in dependents]


def sample(trial: optuna.Trial, space: Space) -> Overrides:
    """The configuration ``trial`` asks for: each axis suggested in turn, a group's knobs set together,
    a knob whose stage is off left out."""
    params: Overrides = {}
    for axis in ordered_axes(space):
        if switched_off(axis, params):
            continue
        if axis in space.choices:
            choices = space.choices[axis]
            picked = trial.suggest_categorical(axis, [label(c) for c in choices])
            value: Choice = next(c for c in choices if label(c) == picked)
            params.update(value if isinstance(value, dict) else {axis: value})
        else:
            rng = space.ranges[axis]
            if rng.integer:
                params[axis] = trial.suggest_int(axis, int(rng.low), int(rng.high), step=int(rng.step or 1))
            else:
                params[axis] = trial.suggest_float(axis, rng.low, rng.high, step=rng.step, log=rng.log)
    return params


def grid_space(space: Space) -> dict[str, list[object]]:
    """Every axis's values, for Optuna's GridSampler; a continuous range cannot be enumerated."""
    out: dict[str, list[object]] = {axis: [label(c) for c in values] for axis, values in space.choices.items()}
    for axis, rng in space.ranges.items():
        if rng.size() is None:
            raise RunError(f"{space.path}: {axis}: --sampler grid needs a step on a float range (it is continuous)")
        out[axis] = list(rng.values())
    return out


def make_sampler(name: str, space: Space, seed: int | None, trials: int) -> optuna.samplers.BaseSampler:
    """The sampler by its name: TPE (multi-objective TPE with several objectives), NSGA-II, random, or the
    grid (every configuration of a discrete space, in an order the seed shuffles)."""
    import optuna

    if name == "tpe":
        # Optuna's 10 random start-up trials would be the whole of a small study: a third of it, 2 to 10; the
        # knobs modelled jointly (multivariate), a stage's own knobs apart from the rest (group: conditional ones)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        startup = min(10, max(2, trials // 3))
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup, multivariate=True, group=True)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid":
        return optuna.samplers.GridSampler(grid_space(space), seed=seed)  # type: ignore[arg-type]
    raise RunError(f"--sampler {name}: one of {', '.join(SAMPLERS)}")


def open_study(folder: Path, sampler: optuna.samplers.BaseSampler, directions: list[str], prune: bool) -> optuna.Study:
    """The study in ``folder/study.db``: created, or loaded to go on (a run resumed in a new process)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # Wilcoxon, multivariate TPE
    storage = optuna.storages.RDBStorage(f"sqlite:///{folder / STUDY_FILE}")
    pruner = optuna.pruners.WilcoxonPruner(p_threshold=0.1, n_startup_steps=5) if prune else optuna.pruners.NopPruner()
    study = optuna.create_study(
        storage=storage,
        study_name=STUDY_NAME,
        sampler=sampler,
        pruner=pruner,
        directions=["minimize" if d == "lower" else "maximize" for d in directions],
        load_if_exists=True,
    )
    if [d.name.lower()[:3] for d in study.directions] != [("min" if d == "lower" else "max") for d in directions]:
        raise RunError(f"{folder}: the study there has other objectives ({len(study.directions)}): resume it with them")
    return study


def fail_interrupted(study: optuna.Study) -> int:
    """Trials a killed process left running, marked failed (their configuration was not finished); their count."""
    from optuna.trial import TrialState

    storage = study._storage  # the study's own storage: the public API has no call to end a stale trial
    stale = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    for trial in stale:
        storage.set_trial_user_attr(trial._trial_id, REASON_ATTR, INTERRUPTED)
        storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    return len(stale)


def trial_overrides(trial: optuna.trial.FrozenTrial) -> Overrides:
    """A finished trial's configuration, as it was evaluated."""
    stored = TrialAttrs.of(trial).overrides
    return json.loads(stored) if stored is not None else {}


def draw(space: Space, base: PipelineConfig, n: int, seed: int | None) -> dict[str, PipelineConfig]:
    """Up to ``n`` distinct configurations of the space, drawn as a random sampler draws trials (a dry run's)."""
    import optuna

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    enough = Enough(n, space.size())  # the tune's own stop rule: the configurations it would go on to
    drawn: dict[str, PipelineConfig] = {}
    while not enough.reached(study):
        trial = study.ask()
        params = sample(trial, space)
        trial.set_user_attr(PARAMS_ATTR, json.dumps(params, sort_keys=True))
        study.tell(trial, 0.0)
        drawn.setdefault(config_id(params), base.with_overrides(params))
    return drawn
