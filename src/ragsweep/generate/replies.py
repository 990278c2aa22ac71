"""Reading the JSON object a generation or verification prompt asked for, from any model's reply.

Small models wrap JSON in code fences, prefix it with prose or add a trailing comment;
the first JSON object of the reply (inside a fence first) is taken. Keys are matched
case-insensitively. Nothing here guesses: a reply without the object is a failure the
caller records as a drop.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_TRUE = {"true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0"}


def first_object(text: str) -> dict[str, Any] | None:
    """The first JSON object of a reply (fenced blocks first), keys lower-cased; None if there is none."""
    decoder = json.JSONDecoder()
    for chunk in [m.group(1) for m in _FENCE.finditer(text or "")] + [text or ""]:
        for i, ch in enumerate(chunk):
            if ch != "{":
                continue
            try:
                obj, _ = decoder.raw_decode(chunk[i:])
            except ValueError:
                continue
            if isinstance(obj, dict):
                return {str(k).strip().lower(): v for k, v in obj.items()}
    return None


def as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().strip(".").lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    return None


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return ""


def as_strings(value: Any) -> list[str]:
    """A list of non-empty strings from a string or a list (other items ignored)."""
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
