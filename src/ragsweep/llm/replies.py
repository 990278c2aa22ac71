"""Reading the JSON object a prompt asked for out of any model's reply: the one parser of ragsweep.

Used by the judge (:mod:`ragsweep.judge.metric`) and by ``ragsweep generate``
(:mod:`ragsweep.generate.propose`, :mod:`ragsweep.generate.verify`).

Small models wrap JSON in code fences, prefix it with prose or add a trailing comment:
:func:`json_objects` yields every JSON object of a reply, those inside a fence first, with its
keys stripped and lower-cased; :func:`first_object` is the first of them. Field readers turn a
value into what the caller wants, or None when it is not that: :func:`as_bool` (``true``/``yes``/``1``
and ``false``/``no``/``0``), :func:`as_verdict` (a boolean, or ``"correct"``, ``"incorrect"``,
``"not correct"``: whole words, so "incorrect" is never read as "correct"), :func:`as_text`,
:func:`as_strings`. Nothing here guesses: a reply without the object is a failure the caller names.

A prompt's reply object is described by a pydantic model whose fields are of the types
:data:`Text`, :data:`Strings` and :data:`Flag` (each read by its reader, never an error; a missing
key is the field's default); :func:`read_object` reads the first object of a reply into it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Annotated, TypeVar

from pydantic import BaseModel, JsonValue, PlainValidator

__all__ = [
    "Flag",
    "Strings",
    "Text",
    "as_bool",
    "as_strings",
    "as_text",
    "as_verdict",
    "first_object",
    "json_objects",
    "read_object",
]

Model = TypeVar("Model", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_OBJECT_START = re.compile(r"\{(?=\s*[\"}])")  # a JSON object opens with a key or closes at once
MAX_PARSED_CHARS = 100_000
_TRUE = frozenset({"true", "yes", "y", "1"})
_FALSE = frozenset({"false", "no", "n", "0"})
_CORRECT = frozenset({"correct", "right"})
_INCORRECT = frozenset({"incorrect", "wrong"})


def json_objects(text: str | None) -> Iterator[dict[str, JsonValue]]:
    """Every JSON object of a reply (those in code fences first, then the whole text), keys lower-cased.

    An object nested in another is yielded after it; a ``{`` that starts no valid JSON is skipped,
    so is one nested deeper than the parser goes. Only the first :data:`MAX_PARSED_CHARS` of a
    reply are read: more than any reply within its ``max_tokens`` holds, and each failed ``{``
    costs the parser a pass over what came before it.
    """
    text = (text or "")[:MAX_PARSED_CHARS]
    decoder = json.JSONDecoder()
    for chunk in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        for start in _OBJECT_START.finditer(chunk):
            try:
                obj, _ = decoder.raw_decode(chunk, start.start())
            except (ValueError, RecursionError):
                continue
            if isinstance(obj, dict):
                yield {str(k).strip().lower(): v for k, v in obj.items()}


def first_object(text: str | None) -> dict[str, JsonValue] | None:
    """The first JSON object of a reply (fenced blocks first), keys lower-cased; None if there is none."""
    return next(json_objects(text), None)


def _words(value: str) -> str:
    return " ".join(value.strip().strip(".!").lower().split())


def as_bool(value: object) -> bool | None:
    """``True``/``False`` for a JSON boolean, 0/1, or ``"true"``/``"yes"``/``"y"``/``"1"`` and their
    opposites (any case, a trailing period allowed); None for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = _words(value)
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    return None


def as_verdict(value: object) -> bool | None:
    """A correctness verdict: what :func:`as_bool` reads, or the words ``correct``/``right`` (True),
    ``incorrect``/``wrong`` (False) and their negation with ``not`` ("not correct": False).

    Whole words only: "incorrect" is False, never True for containing "correct"; "not incorrect",
    "partially correct" and other phrases are None (no verdict).
    """
    verdict = as_bool(value)
    if verdict is not None or not isinstance(value, str):
        return verdict
    v = _words(value)
    negated = v.startswith("not ")
    if negated:
        v = v[4:].strip()
    if v in _CORRECT or v in _TRUE:
        return not negated
    if v in _INCORRECT and not negated:
        return False
    return None


def as_text(value: object) -> str:
    """A string with its whitespace collapsed (a number as its text); ``""`` for anything else."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return ""


def as_strings(value: object) -> list[str]:
    """A list of distinct non-empty strings from a string or a list (``{"quote"|"text": ...}`` items
    read; other items ignored)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        if isinstance(item, dict):  # {"quote": "..."} / {"text": "..."}
            item = item.get("quote") or item.get("text") or ""
        text = item.strip() if isinstance(item, str) else ""
        if text and text not in out:
            out.append(text)
    return out


Text = Annotated[str, PlainValidator(as_text)]
Strings = Annotated[list[str], PlainValidator(as_strings)]
Flag = Annotated[bool | None, PlainValidator(as_bool)]


def read_object(text: str | None, model: type[Model]) -> Model | None:
    """The first JSON object of a reply (:func:`first_object`) as ``model``; None if there is none."""
    obj = first_object(text)
    return None if obj is None else model.model_validate(obj)
