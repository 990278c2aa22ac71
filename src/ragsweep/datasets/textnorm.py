"""The text normalisation evidence quotes are compared with (step 1 of "How a span is matched" in
:mod:`ragsweep.metrics.relevance`).

Quotes and dashes straightened, soft hyphens and zero-width characters dropped, NFKC, casefold,
runs of whitespace collapsed to one space; :func:`normalize_map` also gives, for each normalised
character, the ``[start, end)`` of the original characters it came from. The dataset checks
(:mod:`ragsweep.validate.parsed`: do a case's offsets point at its quote?), the relevance rule
and the generator all compare texts through this one function.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from functools import lru_cache

__all__ = ["normalize", "normalize_map"]

_CHAR_MAP = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "`": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u2033": '"',
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2212": "-",
    "\u00ad": "",
    "\u200b": "",
    "\ufeff": "",
}


_CHAR_TABLE = str.maketrans(_CHAR_MAP)


def _joins_previous(ch: str) -> bool:
    """A combining mark (or a Hangul vowel/final jamo) belongs to the character before it."""
    return unicodedata.category(ch)[0] == "M" or 0x1160 <= ord(ch) <= 0x11FF


def _fold(chars: str) -> str:
    """Quotes/dashes mapped, NFKC, casefold, NFKC (one character and its combining marks)."""
    s = chars.translate(_CHAR_TABLE)
    if not s:
        return s
    s = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", s).casefold())
    s = s.translate(_CHAR_TABLE)
    if any(c.isspace() for c in s):  # e.g. NFKC("¨") = " \u0308"
        s = "".join(c for c in s if not c.isspace())
    return s


def _build_map(text: str) -> tuple[str, array, array]:
    """Normalised text and, for each of its characters, the ``[start, end)`` of the original
    characters it came from (a character and its combining marks form one unit)."""
    if text.isascii() and "`" not in text:
        return _build_map_ascii(text)
    return _build_map_chars(text)


def _build_map_chars(text: str) -> tuple[str, array, array]:
    """:func:`_build_map`, a character (and its combining marks) at a time."""
    out: list[str] = []
    starts = array("l")
    ends = array("l")
    n = len(text)
    pending = -1  # start of a whitespace run after some output
    i = 0
    while i < n:
        ch = text[i]
        if ch.isspace():
            if pending < 0 and out:
                pending = i
            i += 1
            continue
        j = i + 1
        if ch < "\x80" and ch != "`" and (j == n or text[j] < "\x80"):
            rep = ch.lower()
        else:
            while j < n and _joins_previous(text[j]):
                j += 1
            rep = _fold(text[i:j])
        if rep:
            if pending >= 0:
                out.append(" ")
                starts.append(pending)
                ends.append(i)
                pending = -1
            out.append(rep)
            k = len(rep)
            if k == 1:
                starts.append(i)
                ends.append(j)
            else:
                starts.extend([i] * k)
                ends.extend([j] * k)
        i = j
    return "".join(out), starts, ends


_NON_SPACE = re.compile(r"\S+")


def _build_map_ascii(text: str) -> tuple[str, array, array]:
    """:func:`_build_map` of an ASCII text without backticks, a word at a time: each
    character is lower-cased, each whitespace run between words becomes one space
    (most contracts; the character loop took most of the scoring time)."""
    out: list[str] = []
    starts = array("l")
    ends = array("l")
    previous_end = -1
    for match in _NON_SPACE.finditer(text):
        i, j = match.span()
        if previous_end >= 0:
            out.append(" ")
            starts.append(previous_end)
            ends.append(i)
        out.append(match.group().lower())
        starts.extend(range(i, j))
        ends.extend(range(i + 1, j + 1))
        previous_end = j
    return "".join(out), starts, ends


@lru_cache(maxsize=256)
def normalize_map(text: str) -> tuple[str, array, array]:
    """:func:`_build_map` of a document (cached: a document is searched for many spans)."""
    return _build_map(text)


@lru_cache(maxsize=8192)
def _normalize_small(text: str) -> str:
    return _build_map(text)[0]


def normalize(text: str) -> str:
    """Quotes/dashes straightened, NFKC, casefold, whitespace runs collapsed to one space."""
    return _normalize_small(text)
