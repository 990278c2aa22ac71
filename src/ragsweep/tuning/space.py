"""A search space: a grid file (:class:`~ragsweep.evaluation.sweep.SweepGrid`) whose values may also be ranges.

Each axis is one of:

- a list: a choice (its values scalars, or mappings that set several knobs together, as a grid's
  ``chunking`` group does);
- ``{low, high, step}``: an integer range (a float one where a bound or the step is a float), ``step``
  dividing ``high - low``;
- ``{low, high, log: true}``: a log-uniform range (``low > 0``, no step).

An axis names a declared knob (:data:`ragsweep.pipeline.knobs.KNOBS`), a ``$variable`` of the pipeline,
``parser`` or ``<component>.<argument>``: the names ``--set`` and ``--write-best`` take. A knob's own domain
bounds its axis (a range on a knob whose values are choices is refused). A stage switched off removes the
knobs only it reads (:data:`OFF_WHEN`): a trial without a reranker samples no ``rerank_candidates``.

Every grid file is a valid space: its lists are choices. Every problem is one :class:`ConfigError` line naming
the file and the axis, raised before any work.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ragsweep.core.errors import ConfigError
from ragsweep.core.knob import Knob
from ragsweep.evaluation.sweep import SweepGrid, file_value, read_yaml
from ragsweep.pipeline.component_overrides import check_variable_override, is_argument_override
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.knobs import KNOBS
from ragsweep.pipeline.scalars import Overrides, Scalar

# a knob only a stage reads -> (the knob that switches the stage, the values that switch it off), as declared
OFF_WHEN: dict[str, tuple[str, tuple[Scalar, ...]]] = {k.name: k.off_when for k in KNOBS if k.off_when is not None}
RANGE_KEYS = {"low", "high", "step", "log"}
# names ragsweep reads although no file declares them (PipelineConfig.with_overrides)
READ_BY_RAGSWEEP = ("top_k", "route_docs", "parser")

Choice = Scalar | dict[str, Scalar]


class Range(BaseModel):
    """``{low, high[, step][, log]}`` of one axis."""

    low: float | int
    high: float | int
    step: float | int | None = None
    log: bool = False

    @property
    def integer(self) -> bool:
        return all(isinstance(v, int) and not isinstance(v, bool) for v in (self.low, self.high, self.step or 1))

    def size(self) -> int | None:
        """How many values it holds; None: continuous."""
        if self.integer:
            return (int(self.high) - int(self.low)) // int(self.step or 1) + 1
        return None if self.step is None else round((self.high - self.low) / self.step) + 1

    def values(self) -> list[Scalar]:
        """Every value of a discrete range, in order (the grid sampler enumerates them)."""
        n = self.size()
        assert n is not None, "a continuous range has no list of values"
        step = self.step or 1
        return [self.low + i * step if self.integer else round(self.low + i * step, 12) for i in range(n)]


class Space(BaseModel):
    """A loaded space: its choices and ranges by axis, and the grid's baseline, objectives, ks and budgets."""

    path: str
    choices: dict[str, list[Choice]]
    ranges: dict[str, Range]
    grid: SweepGrid  # the file as a grid (its ranges left out): baseline, objectives, ks, budgets

    def size(self) -> int | None:
        """The distinct configurations in the space (a knob whose stage is off counts once: no ``rrf_k`` without
        fusion); None where a range is continuous."""
        sizes = {a: len(v) for a, v in self.choices.items()} | {a: r.size() for a, r in self.ranges.items()}
        if any(s is None for s in sizes.values()):
            return None
        counts = {a: s for a, s in sizes.items() if s is not None}
        dependents = [a for a in counts if a in OFF_WHEN]
        switching = [a for a in self.choices if a not in OFF_WHEN and self._sets_a_switch(a)]
        rest = math.prod(n for a, n in counts.items() if a not in dependents and a not in switching)
        picks = itertools.product(*(self.choices[a] for a in switching))
        return rest * sum(self._dependent_size(dict(zip(switching, pick)), dependents, counts) for pick in picks)

    def _sets_a_switch(self, axis: str) -> bool:
        switches = {switch for switch, _ in OFF_WHEN.values()}
        return axis in switches or any(isinstance(c, dict) and switches & set(c) for c in self.choices[axis])

    @staticmethod
    def _dependent_size(picked: dict[str, Choice], dependents: list[str], counts: dict[str, int]) -> int:
        params: Overrides = {}
        for axis, value in picked.items():
            params.update(value if isinstance(value, dict) else {axis: value})
        return math.prod(1 if switched_off(a, params) else counts[a] for a in dependents)

    def shown(self) -> dict[str, object]:
        """The space as data (tune.json's ``space``)."""
        return {**self.choices, **{k: r.model_dump(exclude_defaults=True) for k, r in self.ranges.items()}}


def load_space(path: str | Path, base: PipelineConfig) -> Space:
    """The space file, checked against ``base`` (every axis's name and domain); a problem is one
    :class:`ConfigError` line naming the file and the axis."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"space file {str(p)!r} does not exist")
    data = read_yaml(p)
    if not isinstance(data, dict) or not isinstance(data.get("grid", data.get("space")), dict):
        raise ConfigError(f"{p}: needs a top-level 'space' (or 'grid') mapping of knob -> values or range")
    axes: dict[str, Any] = data.get("grid") or data["space"]
    choices: dict[str, list[Choice]] = {}
    ranges: dict[str, Range] = {}
    for axis, value in axes.items():
        if isinstance(value, dict):
            ranges[axis] = _range(p, axis, value)
        elif isinstance(value, list):
            choices[axis] = [file_value(p, axis, v) for v in _choices(p, axis, value)]
        else:
            choices[axis] = [file_value(p, axis, value)]
    for axis in [*choices, *ranges]:
        _check_names(p, axis, choices.get(axis), ranges.get(axis), base)
    rest = {k: v for k, v in data.items() if k not in ("grid", "space")}
    # the grid part: the choices, and each range's low as a placeholder axis (baseline and objectives are checked)
    as_grid = {**choices, **{k: [r.low] for k, r in ranges.items()}}
    try:
        grid = SweepGrid(grid=as_grid, **rest)
    except ValueError as err:
        raise ConfigError(f"{p}: {' '.join(str(err).split())[:300]}") from err
    return Space(path=str(p), choices=choices, ranges=ranges, grid=grid)


def _choices(path: Path, axis: str, values: list[Any]) -> list[Choice]:
    if not values:
        raise ConfigError(f"{path}: {axis}: an empty choice: give it at least one value, or remove it")
    for v in values:
        if isinstance(v, dict):
            bad = [k for k, x in v.items() if not _is_scalar(x)]
        else:
            bad = [] if _is_scalar(v) else [axis]
        if bad:
            raise ConfigError(f"{path}: {axis}: {v!r}: a choice is a scalar, or a mapping of knob -> scalar")
    return values


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _range(path: Path, axis: str, spec: dict[str, Any]) -> Range:
    where = f"{path}: {axis}"
    if not {"low", "high"} <= set(spec) or set(spec) - RANGE_KEYS:
        raise ConfigError(f"{where}: a range is {{low, high[, step][, log: true]}}; a choice is a list")
    try:
        rng = Range(**spec)
    except ValueError as err:
        raise ConfigError(f"{where}: low, high and step are numbers, log true or false ({spec})") from err
    if rng.low > rng.high:
        raise ConfigError(f"{where}: low {rng.low} > high {rng.high}")
    if rng.low == rng.high:
        raise ConfigError(f"{where}: an empty range (low = high = {rng.low}): a single value is a list [{rng.low}]")
    if rng.log and (rng.step is not None or rng.low <= 0):
        raise ConfigError(f"{where}: a log range takes no step and needs low > 0")
    if rng.step is not None:
        if rng.step <= 0:
            raise ConfigError(f"{where}: step {rng.step} must be > 0")
        n = (rng.high - rng.low) / rng.step
        if abs(n - round(n)) > 1e-9:
            raise ConfigError(f"{where}: step {rng.step} does not divide high - low = {rng.high - rng.low}")
    return rng


def _check_names(path: Path, axis: str, choices: list[Choice] | None, rng: Range | None, base: PipelineConfig) -> None:
    """The axis's knobs exist for ``base`` and its values lie within their domains."""
    values = choices if choices is not None else [rng.low, rng.high] if rng is not None else []
    names = sorted({k for v in values if isinstance(v, dict) for k in v} or {axis})
    for name in names:
        _check_name(path, axis, name, base)
    knob = _knob(axis)
    if rng is not None and knob is not None:
        _check_range(path, axis, rng, knob)
    for v in values:
        for name, value in v.items() if isinstance(v, dict) else [(axis, v)]:
            if (knob := _knob(name)) is not None and (why := _outside(knob, value)) is not None:
                raise ConfigError(f"{path}: {axis}: {name} = {value!r} {why}")


def _check_name(path: Path, axis: str, name: str, base: PipelineConfig) -> None:
    if name in READ_BY_RAGSWEEP or _knob(name) is not None:
        return
    try:
        if is_argument_override(name):
            base.with_overrides({name: base.spec.scalars().get(name)})
        else:
            check_variable_override(base.symbols, path.name, name)
    except ConfigError as err:
        shown = str(err).split(": ", 1)[-1]
        raise ConfigError(f"{path}: {axis}: unknown knob {name!r}: {shown}") from err


def _knob(name: str) -> Knob | None:
    return next((k for k in KNOBS if k.name == name), None)


def _check_range(path: Path, axis: str, rng: Range, knob: Knob) -> None:
    if knob.choices or knob.kind in ("str", "bool"):
        shown = (
            f"one of {list(knob.choices)}" if knob.choices else {"str": "a name", "bool": "true or false"}[knob.kind]
        )
        raise ConfigError(f"{path}: {axis}: a range on a knob whose values are choices ({shown}): give a list")
    if knob.kind == "int" and not rng.integer:
        raise ConfigError(f"{path}: {axis}: an integer knob: low, high and step must be integers")
    for bound in (rng.low, rng.high):
        if (why := _outside(knob, bound)) is not None:
            raise ConfigError(f"{path}: {axis}: {bound} {why}")


def _outside(knob: Knob, value: Scalar) -> str | None:
    """Why ``value`` lies outside the knob's domain (its message), or None."""
    if value is None:
        return None  # null: the stage's own default, or the stage off (the knob's own check says where not)
    if knob.choices:
        return None if value in knob.choices else f"is not one of {list(knob.choices)}"
    if knob.kind in ("int", "float") and isinstance(value, (int, float)) and not isinstance(value, bool):
        low_bad = knob.low is not None and (value <= knob.low if knob.low_open else value < knob.low)
        high_bad = knob.high is not None and value > knob.high
        return f"is outside the knob's domain: ${knob.name} {knob.message}" if low_bad or high_bad else None
    return None


def label(choice: Choice) -> Scalar:
    """A choice as Optuna stores it: a scalar as it is, a group as its JSON text."""
    return json.dumps(choice, sort_keys=True) if isinstance(choice, dict) else choice


def switched_off(name: str, params: Overrides) -> bool:
    """The stage that reads ``name`` is off in ``params`` (the knob is not sampled)."""
    if name not in OFF_WHEN:
        return False
    switch, off = OFF_WHEN[name]
    return switch in params and params[switch] in off
