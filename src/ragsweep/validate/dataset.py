"""A dataset's own checks: its files, cases and document ids, collecting ALL problems (never stopping at the first).

Each :class:`~ragsweep.datasets.loader.Problem` names the file, line and field, e.g.
``cases.jsonl:12: relevant_ids[0]: case 'q7': relevant id 'x.pdf' is not among the dataset's
documents (docs/)``.

Checks: empty file, malformed JSON, non-object lines, field errors (pydantic), duplicate ids,
an answerable case without relevance information (no ``relevant_ids`` and no ``evidence``;
allowed for a case carrying a pre-computed ``response``), an unanswerable case with relevance
information, ids in ``relevant_ids`` / ``doc_scope`` / ``evidence[].doc_id`` missing from
``docs/`` (after resolving unique file stems; a stem of several documents is named with
them), evidence or relevant documents outside the case's ``doc_scope``, a ``doc_scope`` id
Pathway's metadata filter cannot express (a backtick or ``"``: the eval skips the case), a
question with nothing left to search once cleaned for the query parser (``?!``, emoji only),
rule-specific needs (``relevance: doc_id`` needs relevant_ids or evidence doc ids),
``dataset.yaml`` errors, missing ``docs/`` or ``README.md``. Problems about one case name its id.

The checks that need the documents parsed (evidence offsets against the parsed text, ``--parse``) are
:mod:`ragsweep.validate.parsed`; ``ragsweep validate`` is :mod:`ragsweep.validate.command`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence

from ragsweep.datasets.loader import (
    Problem,
)
from ragsweep.datasets.pathway_limits import clean_query, unscopable_reason
from ragsweep.datasets.schema import Case, CaseLimits, Evidence
from ragsweep.datasets.textnorm import normalize, normalize_map

__all__ = [
    "Problem",
    "validate_cases",
    "oversized",
    "unsafe_characters",
    "validate_offsets",
    "closest_passage",
]

QUOTE_SHOWN = 80  # characters of a quote or of the text at its offsets shown in a problem


def validate_cases(
    cases: Sequence[Case],
    file: str,
    doc_ids: set[str] | None = None,
    rule: str | None = None,
    limits: CaseLimits | None = None,
) -> list[Problem]:
    """Case-level checks on already-parsed cases (``doc_ids`` = ids in docs/, None to skip; ``limits``:
    dataset.yaml's, else the defaults)."""
    limits = limits or CaseLimits()
    problems: list[Problem] = []
    first_line: dict[str, int | None] = {}
    for case in cases:
        line = case._line
        if case.id in first_line:
            problems.append(
                Problem(file, line, "id", f"duplicate id {case.id!r} (first on line {first_line[case.id]})")
            )
        else:
            first_line[case.id] = line
        problems += _relevance_problems(case, file, rule)
        problems += _query_problems(case, file)
        problems += _text_problems(case, file, limits)
        if doc_ids is not None:
            problems += _missing_doc_problems(case, file, doc_ids)
        if case.doc_scope:
            problems += _scope_problems(case, file)
    return problems


def _relevance_problems(case: Case, file: str, rule: str | None) -> list[Problem]:
    """Relevance information present where it must not be, or missing where it is needed."""
    problems: list[Problem] = []
    line = case._line
    if case.unanswerable and case.has_relevance:
        what = " and ".join(n for n, v in (("relevant_ids", case.relevant_ids), ("evidence", case.evidence)) if v)
        problems.append(Problem(file, line, "unanswerable", f"an unanswerable case must not have {what}"))
    # a case with a pre-computed response is scored on its answer as given: retrieval
    # relevance is optional for it (retrieval metrics count it as missing)
    if not case.unanswerable and not case.has_relevance and case.response is None:
        problems.append(
            Problem(
                file,
                line,
                "relevant_ids",
                "answerable case without relevance information (no relevant_ids and no evidence)",
            )
        )
    if rule == "doc_id" and not case.unanswerable and not case.relevant_ids and case.evidence:
        if not any(e.doc_id for e in case.evidence):
            problems.append(
                Problem(file, line, "relevant_ids", "relevance rule doc_id needs relevant_ids or evidence with doc_id")
            )
    return problems


def _query_problems(case: Case, file: str) -> list[Problem]:
    """A question the query parser gets nothing from, and doc_scope ids Pathway's filter cannot express."""
    problems: list[Problem] = []
    line = case._line
    if not clean_query(case.question):
        problems.append(
            Problem(
                file,
                line,
                "question",
                f"case {case.id!r}: question empty after cleaning (nothing but punctuation, symbols or "
                "emoji is left for the query parser): there is nothing to search for",
            )
        )
    for i, d in enumerate(case.doc_scope or []):
        reason = unscopable_reason(d)
        if reason:
            problems.append(Problem(file, line, f"doc_scope[{i}]", f"case {case.id!r}: {d!r}: {reason}"))
    return problems


# bidirectional marks and embeddings: they reorder what a reader sees without changing the text
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_LINE_BREAKS = frozenset("\t\n\r")  # in a question or a quote, not in an id


def unsafe_characters(text: str, line_breaks_allowed: bool) -> str | None:
    """The first control character or bidirectional mark of ``text``, named by its code point."""
    for i, ch in enumerate(text):
        control = unicodedata.category(ch) == "Cc" and not (line_breaks_allowed and ch in _LINE_BREAKS)
        if control or ch in _BIDI:
            kind = "control character" if control else "bidirectional mark"
            return f"{kind} U+{ord(ch):04X} ({unicodedata.name(ch, 'unnamed')}) at character {i}"
    return None


def _case_texts(case: Case) -> Iterable[tuple[str, str, bool]]:
    """``(field, text, line breaks allowed)`` of every text of a case a report shows."""
    yield "id", case.id, False
    yield "question", case.question, True
    for i, r in enumerate(case.relevant_ids):
        yield f"relevant_ids[{i}]", r.id, False
    for i, d in enumerate(case.doc_scope or []):
        yield f"doc_scope[{i}]", d, False
    for i, e in enumerate(case.evidence):
        yield f"evidence[{i}].text", e.text, True
        if e.doc_id is not None:
            yield f"evidence[{i}].doc_id", e.doc_id, False


def oversized(case: Case, limits: CaseLimits) -> list[tuple[str, str]]:
    """``(field, why)`` of each question or evidence span longer than ``limits`` allow."""
    found = []
    if len(case.question) > limits.question_max_chars:
        found.append(("question", f"{len(case.question)} characters, over question_max_chars "
                      f"{limits.question_max_chars} (dataset.yaml)"))  # fmt: skip
    for i, e in enumerate(case.evidence):
        if len(e.text) > limits.evidence_max_chars:
            found.append((f"evidence[{i}]", f"{len(e.text)} characters, over evidence_max_chars "
                          f"{limits.evidence_max_chars} (dataset.yaml)"))  # fmt: skip
    return found


def _text_problems(case: Case, file: str, limits: CaseLimits) -> list[Problem]:
    """Control characters and bidirectional marks, evidence too short to point at one passage, and
    texts over the length limits."""
    line, problems = case._line, []
    for name, text, breaks in _case_texts(case):
        if (why := unsafe_characters(text, breaks)) is not None:
            problems.append(Problem(file, line, name, f"case {case.id!r}: {why}"))
    for i, e in enumerate(case.evidence):
        if len("".join(e.text.split())) < limits.evidence_min_chars:
            problems.append(Problem(file, line, f"evidence[{i}]", (
                f"case {case.id!r}: evidence {shown(e.text)} is shorter than evidence_min_chars "
                f"{limits.evidence_min_chars} (dataset.yaml): it matches almost any chunk"
            )))  # fmt: skip
    problems += [Problem(file, line, name, f"case {case.id!r}: {why}") for name, why in oversized(case, limits)]
    return problems


def _missing_doc_problems(case: Case, file: str, doc_ids: set[str]) -> list[Problem]:
    """Ids in relevant_ids, doc_scope and evidence[].doc_id that are not among ``doc_ids``."""
    problems: list[Problem] = []
    line = case._line
    missing = "is not among the dataset's documents (docs/)"
    for i, r in enumerate(case.relevant_ids):
        if r.id not in doc_ids:
            problems.append(
                Problem(file, line, f"relevant_ids[{i}]", f"case {case.id!r}: relevant id {r.id!r} {missing}")
            )
    for i, d in enumerate(case.doc_scope or []):
        if d not in doc_ids:
            problems.append(Problem(file, line, f"doc_scope[{i}]", f"case {case.id!r}: {d!r} {missing}"))
    for i, e in enumerate(case.evidence):
        if e.doc_id is not None and e.doc_id not in doc_ids:
            problems.append(Problem(file, line, f"evidence[{i}].doc_id", f"case {case.id!r}: {e.doc_id!r} {missing}"))
    return problems


def _scope_problems(case: Case, file: str) -> list[Problem]:
    """Relevant documents and evidence outside the case's doc_scope."""
    problems: list[Problem] = []
    line = case._line
    scope = set(case.doc_scope or [])
    for i, r in enumerate(case.relevant_ids):
        if r.grade >= 1 and r.id not in scope:
            problems.append(
                Problem(file, line, f"relevant_ids[{i}]", f"case {case.id!r}: {r.id!r} is outside doc_scope")
            )
    for i, e in enumerate(case.evidence):
        if e.doc_id is not None and e.doc_id not in scope:
            problems.append(
                Problem(file, line, f"evidence[{i}].doc_id", f"case {case.id!r}: {e.doc_id!r} is outside doc_scope")
            )
    return problems


def shown(text: str) -> str:
    return repr(text if len(text) <= QUOTE_SHOWN else text[:QUOTE_SHOWN] + "...")


def offset_mismatch(evidence: Evidence, parsed_text: str) -> str | None:
    """Why ``evidence``'s offsets do not point at its quote in ``parsed_text`` (None: they do)."""
    start, end = evidence.start, evidence.end
    if start is None or end is None:
        return None
    if end > len(parsed_text):
        return (
            f"offsets [{start}, {end}) run past the end of the parsed text of {evidence.doc_id!r} "
            f"({len(parsed_text)} characters)"
        )
    found = parsed_text[start:end]
    if normalize(found) != normalize(evidence.text):
        return (
            f"the parsed text of {evidence.doc_id!r} at [{start}, {end}) is {shown(found)}, not the quote "
            f"{shown(evidence.text)} (compared after normalising quotes, dashes, Unicode forms, case and "
            "whitespace)"
        )
    return None


def validate_offsets(
    cases: Sequence[Case], file: str, texts: Mapping[str, str], unparsed: Mapping[str, str] | None = None
) -> list[Problem]:
    """Evidence offsets checked against the parsed texts (``{doc_id: text}``); ``unparsed``:
    ``{doc_id: reason}`` of documents the parse skipped. A document in neither is not checked
    here (an id missing from docs/ is its own problem)."""
    unparsed = unparsed or {}
    problems: list[Problem] = []
    for case in cases:
        for i, ev in enumerate(case.evidence):
            if not ev.has_offsets:
                continue
            doc_id = ev.doc_id
            why: str | None
            if doc_id is None:
                why = None
            elif doc_id in unparsed:
                why = (
                    f"offsets [{ev.start}, {ev.end}) cannot be checked: {doc_id!r} could not be parsed "
                    f"({unparsed[doc_id]})"
                )
            elif doc_id in texts:
                why = offset_mismatch(ev, texts[doc_id])
            else:
                why = None
            if why:
                problems.append(Problem(file, case._line, f"evidence[{i}]", f"case {case.id!r}: {why}"))
    return problems


def closest_passage(text: str, span: str) -> tuple[float, str] | None:
    """The passage of ``text`` most like ``span`` (rapidfuzz ``partial_ratio_alignment`` on the
    normalised texts), cut from the original text and widened to whole words, and how alike the
    two are (``fuzz.ratio`` of span and passage, normalised, 0-100)."""
    from rapidfuzz import fuzz

    nspan = normalize(span)
    ntext, starts, ends = normalize_map(text)
    if not nspan or not ntext:
        return None
    found = fuzz.partial_ratio_alignment(nspan, ntext)
    if found is None or found.dest_end <= found.dest_start:
        return None
    s, e = starts[found.dest_start], ends[found.dest_end - 1]
    low, high = s - 20, e + 20
    while s > max(0, low) and not text[s - 1].isspace():
        s -= 1
    while e < min(len(text), high) and not text[e].isspace():
        e += 1
    passage = " ".join(text[s:e].split())
    return fuzz.ratio(nspan, normalize(passage)), passage
