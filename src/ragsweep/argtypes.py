"""Range-checked argparse types: ``type=bounded(int, low=1, name="a whole number of threads")``.

The one factory behind every numeric option of ``ragsweep`` and ``ragsweep generate``: the
value must parse as ``kind`` and lie in ``[low, high]`` (either end may be open), else argparse
reports ``argument --opt: must be <name> <range>, got '<text>'`` and exits with code 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

Number = TypeVar("Number", int, float)


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
