"""Name a CUAD contract the way a user would, from its ``Document Name-Answer`` and
``Parties-Answer`` cells, so that a question can be asked without a scope.

* title: the Document Name cell, white space collapsed, a leading "the" and trailing
  ``(``/``-``/``,`` dropped, words written in capitals put in title case ("CO-BRANDING
  AGREEMENT" -> "Co-Branding Agreement"; "of", "and", ... in lower case); an empty cell gives
  the file's name without its extension.
* parties: the Parties cell split on ``;``; each piece's name is its text before the first
  double quote less the parentheses that end it (its defined aliases: ``Geno Auriemma
  (Auriemma)``; a parenthesis inside a name stays: ``Fonterra (USA) Inc.``). A piece is left out when its name has no
  letter or digit (``[*]``, a redaction), speaks of the parties collectively ("collectively",
  "individually", "each", "referred", "Party"), is made only of aliases of earlier pieces
  ("NVOS and HGF"), or repeats an earlier name. A piece that names a group
  (``(collectively, the "ValueAct Group" ...)``) is called by that group name.
* the phrase: "the <title> between A, B and C" (one party: "with A"; none: the title alone;
  a title that already says "between" keeps only the title; more than four parties: the first
  three "and others").
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

MAX_NAMED_PARTIES = 4
_SMALL_WORDS = frozenset(
    {"a", "an", "and", "as", "at", "between", "by", "for", "in", "of", "on", "or", "the", "to", "with"}
)
_QUOTED = re.compile(r"[\"“”]([^\"“”]+)[\"“”]")
_PARENS = re.compile(r"\(([^()]*)\)")
_COLLECTIVE = re.compile(r"\b(collectively|individually|each|referred|part(y|ies))\b", re.IGNORECASE)
_GROUP = re.compile(r"collectively,?\s+(?:as\s+)?(?:the\s+)?[\"“]([^\"“”]+)[\"”]", re.IGNORECASE)


def _recase(word: str, first: bool) -> str:
    if any(ch.islower() for ch in word) or sum(ch.isalpha() for ch in word) < 2:
        return word
    lower = word.lower()
    if not first and lower in _SMALL_WORDS:
        return lower
    return "-".join(part[:1].upper() + part[1:] for part in lower.split("-"))


def contract_title(document_name: str, filename: str) -> str:
    """The contract's title as a user would write it (see the module docstring)."""
    title = re.sub(r"\s+", " ", document_name).strip()
    title = re.sub(r"\s*-\s*", "-", title).rstrip(" (-,;:").strip()
    title = re.sub(r"^the\s+", "", title, flags=re.IGNORECASE)
    if not title:
        return PurePosixPath(filename.strip()).stem
    words = title.split(" ")
    return " ".join(_recase(w, i == 0) for i, w in enumerate(words))


def _aliases(piece: str) -> set[str]:
    found = {m.group(1) for m in _QUOTED.finditer(piece)} | {m.group(1) for m in _PARENS.finditer(piece)}
    return {re.sub(r"^the\s+", "", a.strip(" \"“”'"), flags=re.IGNORECASE).lower() for a in found}


def _only_aliases(name: str, aliases: set[str]) -> bool:
    parts = [p.strip().lower() for p in re.split(r",|\band\b|&", name) if p.strip()]
    return bool(parts) and all(p in aliases for p in parts)


def _name_of(piece: str) -> str:
    """The text before the first double quote, less its trailing parentheses (the aliases)."""
    name = re.split(r"[\"“”]", piece, maxsplit=1)[0]
    name = re.sub(r"\s*\([^()]*$", "", name)
    while True:
        shorter = re.sub(r"\s*\([^()]*\)\s*$", "", name)
        if shorter == name:
            return name.strip(" ,(")
        name = shorter


def contract_parties(parties_answer: str) -> list[str]:
    """The parties' names as a user would write them (see the module docstring)."""
    names: list[str] = []
    aliases: set[str] = set()
    for piece in parties_answer.split(";"):
        piece = re.sub(r"\s+", " ", piece).strip()
        name = _name_of(piece)
        keep = (
            any(ch.isalnum() for ch in name)
            and not _COLLECTIVE.search(name)
            and not _only_aliases(name, aliases)
            and name.lower() not in (n.lower() for n in names)
        )
        aliases |= _aliases(piece) | {name.lower()}
        if not keep:
            continue
        group = _GROUP.search(piece)
        names.append(f"the {group.group(1).strip()}" if group and not _COLLECTIVE.fullmatch(group.group(1)) else name)
    return names


def _join(names: list[str]) -> str:
    if len(names) > MAX_NAMED_PARTIES:  # nobody lists 50 signatories to name a contract
        names = [*names[: MAX_NAMED_PARTIES - 1], "others"]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def contract_phrase(title: str, parties: list[str]) -> str:
    """``the <title> between A and B`` (see the module docstring)."""
    if not parties or re.search(r"\bbetween\b", title, re.IGNORECASE):
        return f"the {title}"
    if len(parties) == 1:
        return f"the {title} with {parties[0]}"
    return f"the {title} between {_join(parties)}"


def contract_question(question: str, category: str, title: str, parties: list[str]) -> str:
    """``In <phrase>, <question with its first letter in lower case>``.

    The questions that ask for the title or the parties name the contract by what they do not
    ask for: Document Name by its parties, Parties by its title and first party (each falls
    back to the whole phrase when that would name nothing)."""
    phrase = contract_phrase(title, parties)
    if category == "document name" and parties:
        phrase = contract_phrase("contract", parties)
    elif category == "parties":
        phrase = contract_phrase(title, parties[:1])
    return f"In {phrase}, {question[:1].lower()}{question[1:]}"
