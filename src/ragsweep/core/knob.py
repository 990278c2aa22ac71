"""A knob's declaration: a ``$variable`` ragsweep reads, with its type, its domain, its message and the stage
it changes.

Each stage declares its own knobs next to its code (``ragsweep.pipeline.chunking_knobs``...);
:mod:`ragsweep.pipeline.knobs` composes them into the model that checks a configuration. The domain is
data (``choices``, or ``low``/``high`` with ``integer``), so a search can read what it may try.
Standard library and pydantic only: a Pathway-free spec reads the declarations.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, SecretStr, StrictBool, StrictFloat, StrictInt, StrictStr
from pydantic.fields import FieldInfo

# what a knob's value changes: parse -> chunks -> index -> query -> answer, in the order a run goes (a change
# of one changes every later one too); "cost": only the costs shown; "run": how a run goes, not what it
# scores (batch sizes, concurrency, timeouts)
Stage = Literal["parse", "chunks", "index", "query", "answer", "cost", "run"]
STAGES: tuple[Stage, ...] = get_args(Stage)

Kind = Literal["int", "float", "str", "bool"]
_STRICT: dict[str, object] = {"int": StrictInt, "float": StrictFloat, "str": StrictStr, "bool": StrictBool}
_KINDS: dict[object, Kind] = {int: "int", float: "float", str: "str", bool: "bool", SecretStr: "str"}


class Knob(BaseModel):
    """One ``$variable``: what it holds (``kind``, ``choices`` or ``low``/``high``), the line a bad value
    gets (``message``), and what it changes (``affects``).

    ``nullable``: an explicit ``null`` is allowed (ragsweep has a fallback); an absent knob is never
    checked. ``low_open``: the bound is ``> low`` (a number that must be positive). ``applied_by``:
    ``"component"`` when a component takes it as an argument (``$chunk_header``: the splitter's; a key
    over that component's definition holds it already), ``"ragsweep"`` when ragsweep applies it itself
    (``$route_docs``; a key of the stage it affects must add its value). ``check``: a further rule (a
    pydantic field validator's body: ``(value, info) -> value``, a ``ValueError`` is the message).
    ``off_when``: (the knob that switches its stage, the values that switch it off): the knob then changes
    nothing (``$rrf_k`` without fusion), so a search does not try it.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    kind: Kind
    message: str
    affects: Stage
    default: object = None  # what the stage uses when the knob is absent (None: its component decides)
    choices: tuple[str, ...] = ()
    low: int | float | None = None
    high: int | float | None = None
    low_open: bool = False
    min_length: int | None = None
    pattern: str | None = None
    nullable: bool = False
    applied_by: Literal["component", "ragsweep"] = "component"
    checked_when_absent: bool = False  # its check runs on an absent knob too (one another knob requires)
    off_when: tuple[str, tuple[str | None, ...]] | None = None
    check: Callable[..., Any] | None = Field(default=None, exclude=True, repr=False)

    def annotation(self) -> Any:
        """The pydantic type of the value: strict (``"3"`` is not an integer), finite, within the domain."""
        if self.choices:
            base: Any = Literal[self.choices]
        else:
            base = Annotated[_STRICT[self.kind], Field(**self._bounds())]
        return base | None if self.nullable else base

    def _bounds(self) -> dict[str, Any]:
        bounds: dict[str, Any] = {"gt" if self.low_open else "ge": self.low, "le": self.high}
        bounds |= {"min_length": self.min_length, "pattern": self.pattern}
        if self.kind == "float":
            bounds["allow_inf_nan"] = False
        return {k: v for k, v in bounds.items() if v is not None}

    def domain(self) -> dict[str, object]:
        """The values allowed, as data: ``{"choices": [...]}`` or ``{"low", "high", "integer"}`` (absent: no
        bound), ``{}`` for a free string or a boolean."""
        if self.choices:
            return {"choices": list(self.choices)}
        if self.kind in ("int", "float"):
            bounds = {"low": self.low, "high": self.high, "low_open": self.low_open or None}
            return {"integer": self.kind == "int"} | {k: v for k, v in bounds.items() if v is not None}
        return {}


def knobs_of_model(
    model: type[BaseModel],
    prefix: str,
    messages: Mapping[str, str],
    affects: Mapping[str, Stage],
    **overrides: Mapping[str, object],
) -> tuple[Knob, ...]:
    """One knob per field of ``model`` (``prefix`` + its name), the type, bounds and default read from the
    field itself: the model stays the one declaration of them. Each knob may be null (the model's own
    default applies). Every field needs its ``messages`` entry and its ``affects`` stage; ``overrides``
    adds knob fields per field name (``check``, ``default``...)."""
    extra: dict[str, Mapping[str, object]] = {name: {} for name in model.model_fields} | overrides
    return tuple(
        Knob(
            **_field_spec(field), name=prefix + name, message=messages[name], affects=affects[name], nullable=True
        ).model_copy(update=extra[name])
        for name, field in model.model_fields.items()
    )


def _field_spec(field: FieldInfo) -> dict[str, Any]:
    """A field's type, bounds and default as a knob's fields."""
    annotation = field.annotation
    if get_origin(annotation) in (Union, types.UnionType):  # an optional field: its other type
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    spec: dict[str, Any] = {"kind": "str", "choices": get_args(annotation)}
    if get_origin(annotation) is not Literal:
        spec = {"kind": _KINDS[annotation]}
    for rule in field.metadata:
        spec |= _bound(rule)
    if field.default_factory is None:  # a computed default (a folder under the cache) is the model's to say
        spec["default"] = field.get_default()
    return spec


def _bound(rule: object) -> dict[str, object]:
    """A field constraint (``Field(ge=...)`` is kept as ``annotated_types.Ge``...) as the knob's fields."""
    if isinstance(rule, annotated_types.Ge):
        return {"low": rule.ge}
    if isinstance(rule, annotated_types.Gt):
        return {"low": rule.gt, "low_open": True}
    if isinstance(rule, annotated_types.Le):
        return {"high": rule.le}
    if isinstance(rule, annotated_types.MinLen):
        return {"min_length": rule.min_length}
    raise TypeError(f"a knob cannot take the field constraint {rule!r}")
