"""Range-checked argparse types: ``type=bounded(int, low=1, name="a whole number of threads")``.

The one factory behind every numeric option of ``ragsweep`` and ``ragsweep generate``: the
value must parse as ``kind`` and lie in ``[low, high]`` (either end may be open), else argparse
reports ``argument --opt: must be <name> <range>, got '<text>'`` and exits with code 2.
"""

from __future__ import annotations

import argparse
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from ragsweep.evaluation.scoring import parse_floors
from ragsweep.pipeline.config import parse_overrides

Number = TypeVar("Number", int, float)
Options = TypeVar("Options", bound=BaseModel)


def _range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"from {low} to {high}"
    if low is not None:
        return f">= {low}"
    if high is not None:
        return f"<= {high}"
    return ""


def bounded(
    kind: type[Number], low: Number | None = None, high: Number | None = None, name: str | None = None
) -> Callable[[str], Number]:
    """An argparse ``type=`` callable: ``kind(text)`` when it lies in ``[low, high]``.

    ``name`` says what the value is ("a whole number of threads", "a share"); the default is
    "a whole number" for ``int`` and "a number" for ``float``. A value that does not parse, and one
    out of range (NaN included), raise :class:`argparse.ArgumentTypeError` with the same message,
    which quotes the text as given.
    """
    if kind not in (int, float):
        raise TypeError(f"bounded: kind must be int or float, not {kind!r}")
    if low is not None and high is not None and low > high:
        raise ValueError(f"bounded: low {low} > high {high}")
    what = name or ("a whole number" if kind is int else "a number")
    message = " ".join(part for part in ("must be", what, _range(low, high)) if part)

    def parse(text: str) -> Number:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{message}, got {text!r}") from None
        if value != value or (low is not None and not value >= low) or (high is not None and not value <= high):
            raise argparse.ArgumentTypeError(f"{message}, got {text!r}")
        return value

    parse.__name__ = f"bounded_{kind.__name__}"
    return parse


# ------------------------------------------------------------------ options from their one definition


def depths(text: str) -> list[int]:
    """``--ks 1,3,5``: whole numbers >= 1, sorted, each once."""
    return _whole_numbers(text, "--ks", "1,3,5", "depth")


def budgets(text: str) -> list[int]:
    """``--budgets 500,1500``: context budgets in tokens, whole numbers >= 1, sorted, each once."""
    return _whole_numbers(text, "--budgets", "500,1500", "budget")


def _whole_numbers(text: str, flag: str, example: str, what: str) -> list[int]:
    try:
        numbers = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{flag} {text!r}: expected whole numbers separated by commas, e.g. {example}"
        ) from None
    if not numbers or min(numbers) < 1:
        raise argparse.ArgumentTypeError(f"{flag} {text!r}: every {what} must be >= 1")
    return sorted(set(numbers))


class CliHints(BaseModel):
    """How the command line spells a field (the ``cli`` keywords of :func:`ragsweep.evaluation.settings.option`)."""

    flag: str | None = None
    metavar: str | None = None
    what: str | None = None  # what a number is, for the range message
    choices: list[str] | None = None
    const: str | None = None
    parse: Literal["depths", "budgets", "append", "assignments", "floors"] | None = None

    @classmethod
    def of(cls, field: FieldInfo) -> CliHints:
        return cls.model_validate(field.json_schema_extra or {})


def _bounds(field: FieldInfo) -> tuple[float | None, float | None]:
    low = next((m.ge for m in field.metadata if hasattr(m, "ge")), None)
    high = next((m.le for m in field.metadata if hasattr(m, "le")), None)
    return low, high


def _number_kind(annotation: object) -> type[int] | type[float] | None:
    kinds = {a for a in typing.get_args(annotation) or (annotation,) if a in (int, float)}
    return float if float in kinds else int if int in kinds else None


def add_options(parser: argparse.ArgumentParser, model: type[BaseModel]) -> None:
    """One command-line option per field of ``model`` that has a help text (its description):
    the flag, type, range and default come from the field (:func:`ragsweep.evaluation.settings.option`)."""
    for name, field in model.model_fields.items():
        if not field.description:
            continue
        cli = CliHints.of(field)
        parse = cli.parse
        kwargs: dict[str, Any] = {"dest": name, "help": field.description, "default": None}  # argparse's keywords
        if cli.metavar is not None:
            kwargs["metavar"] = cli.metavar
        if field.is_required():
            kwargs["required"] = True
        if field.annotation is bool:
            kwargs["action"] = "store_false" if field.default is True else "store_true"
        elif parse == "depths":
            kwargs["type"] = depths
        elif parse == "budgets":
            kwargs["type"] = budgets
        elif parse in ("append", "assignments", "floors"):
            kwargs["action"] = "append"
        elif (kind := _number_kind(field.annotation)) is not None:
            low, high = _bounds(field)
            kwargs["type"] = bounded(kind, low, high, name=cli.what)  # type: ignore[arg-type]
        if cli.choices is not None:
            kwargs["choices"] = cli.choices
        if cli.const is not None:
            kwargs.update(nargs="?", const=cli.const)
        if field.default not in (None, PydanticUndefined) and field.annotation is not bool and not parse:
            kwargs["help"] += f" (default {field.default})"
        parser.add_argument(cli.flag or "--" + name.replace("_", "-"), **kwargs)


def options_from(model: type[Options], args: argparse.Namespace) -> Options:
    """The options ``args`` gives (an option not given keeps the model's default). A ``NAME=VALUE``
    list becomes its mapping; a bad one raises ValueError naming the option."""
    values: dict[str, object] = {}  # validated by the model
    for name, field in model.model_fields.items():
        value = getattr(args, name, None)
        if not field.description or value is None:
            continue
        parse = CliHints.of(field).parse
        values[name] = (
            parse_overrides(value) if parse == "assignments" else parse_floors(value) if parse == "floors" else value
        )
    return model.model_validate(values)
