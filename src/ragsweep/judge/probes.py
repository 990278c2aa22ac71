"""Sanity probes of the judge: answers whose verdict is known before a run, asked of it (``--judge-probe``).

For a few answerable cases: the reference answer and the reference inside a sentence (right), another
case's unrelated reference and "I don't know." (wrong); for one unanswerable case: "I don't know." (right)
and a confident answer (wrong). :func:`probe_judge` says which verdicts the judge got right, and which of
them the model decided (the others are the "I don't know" rule in code).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypedDict

from ragsweep.judge.metric import JudgeItem, LLMJudge


class ProbeCase(Protocol):
    """What a probe reads of a case (:class:`~ragsweep.datasets.schema.Case` has it)."""

    @property
    def id(self) -> str: ...
    @property
    def question(self) -> str: ...
    @property
    def reference_answer(self) -> str | None: ...
    @property
    def unanswerable(self) -> bool: ...
    @property
    def type(self) -> str | None: ...


_IDK = "I don't know."


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", (text or "").lower()) if len(w) > 2}


def _probe_cases(answerable: Sequence[ProbeCase], n_cases: int) -> list[ProbeCase]:
    """Up to ``n_cases`` of the answerable cases: one per question type first, then the rest in order."""
    chosen: list[ProbeCase] = []
    types: set[str] = set()
    for c in answerable:
        if len(chosen) < n_cases and (c.type or "") not in types:
            chosen.append(c)
            types.add(c.type or "")
    for c in answerable:
        if len(chosen) >= n_cases:
            break
        if c not in chosen:
            chosen.append(c)
    return chosen


def _wrong_for(case: ProbeCase, answerable: Sequence[ProbeCase]) -> str | None:
    """Another case's reference answer sharing no word with ``case``'s (None when there is none)."""
    mine = _words(case.reference_answer or "")
    for other in answerable:
        ref = (other.reference_answer or "").strip()
        if other.id != case.id and ref and _words(ref) and not (_words(ref) & mine):
            return ref
    return None


def _answerable_probes(c: ProbeCase, answerable: Sequence[ProbeCase]) -> list[tuple[str, str, JudgeItem, bool]]:
    """An answerable case's probes: its reference (correct), inside a sentence (correct), another
    case's unrelated reference (wrong), "I don't know." (wrong)."""
    ref = (c.reference_answer or "").strip()
    base = dict(question=c.question, reference=ref, expected_facts=list(getattr(c, "expected_facts", []) or []))
    out = [
        (c.id, "correct", JudgeItem(answer=ref, **base), True),
        (
            c.id,
            "correct_in_sentence",
            JudgeItem(answer=f"According to the agreement, the answer is: {ref}.", **base),
            True,
        ),
    ]
    wrong = _wrong_for(c, answerable)
    if wrong is not None:
        out.append((c.id, "wrong", JudgeItem(answer=wrong, **base), False))
    out.append((c.id, "i_dont_know", JudgeItem(answer=_IDK, **base), False))
    return out


def probe_items(cases: Sequence[ProbeCase], n_cases: int = 3) -> list[tuple[str, str, JudgeItem, bool]]:
    """``(case id, probe, item, expected verdict)`` for a few cases whose right verdict is known.

    For up to ``n_cases`` answerable cases with a reference answer (distinct question types
    first): the reference itself (correct), the reference inside a sentence (correct), another
    case's reference sharing no word with it (wrong), and "I don't know." (wrong: the case is
    answerable). For one unanswerable case: "I don't know." (correct) and another case's
    reference (wrong). Works on :class:`~ragsweep.datasets.schema.Case` or anything with
    ``id``, ``question``, ``reference_answer``, ``unanswerable``, ``type``.
    """
    answerable = [c for c in cases if not c.unanswerable and (c.reference_answer or "").strip()]
    chosen = _probe_cases(answerable, n_cases)
    out = [probe for c in chosen for probe in _answerable_probes(c, answerable)]
    unanswerable = next((c for c in cases if c.unanswerable), None)
    if unanswerable is not None and chosen:
        base = dict(question=unanswerable.question, reference="", unanswerable=True)
        out.append((unanswerable.id, "i_dont_know_unanswerable", JudgeItem(answer=_IDK, **base), True))
        out.append(
            (
                unanswerable.id,
                "confident_unanswerable",
                JudgeItem(answer=(chosen[0].reference_answer or "").strip(), **base),
                False,
            )
        )
    return out


class ProbeRow(TypedDict):
    """One probe: the answer asked about, the verdict it should get and the one it got."""

    case: str
    probe: str  # correct, correct_in_sentence, wrong, i_dont_know, ...
    answer: str
    expected: bool
    got: bool | None
    method: str
    ok: bool
    reason: str
    error: str | None


class ProbeReport(TypedDict):
    """:func:`probe_judge`'s result (``llm_``: the probes the model decided, not the code's rules)."""

    total: int
    passed: int
    llm_total: int
    llm_passed: int
    failed: list[ProbeRow]
    probes: list[ProbeRow]


def probe_judge(judge: "LLMJudge", cases: Sequence[ProbeCase], n_cases: int = 3) -> ProbeReport:
    """Ask the judge (one replicate) about answers whose verdict is known; say which it got right.

    ``llm`` counts only probes the model decided (the others are decided by the
    "I don't know" rule in code, and check that rule).
    """
    probes = probe_items(cases, n_cases)
    single = LLMJudge(judge.settings, judge.client, replicates=1, temperature=judge.temperature, repair=judge.repair)
    verdicts = single.judge_items([item for _, _, item, _ in probes]) if probes else []
    rows: list[ProbeRow] = []
    for (case_id, probe, item, expected), v in zip(probes, verdicts):
        rows.append(
            {
                "case": case_id,
                "probe": probe,
                "answer": item.answer[:200],
                "expected": expected,
                "got": v.is_correct,
                "method": v.method,
                "ok": v.is_correct is expected,
                "reason": v.reason[:200],
                "error": v.error,
            }
        )
    llm_rows = [r for r in rows if r["method"] == "llm"]
    return {
        "total": len(rows),
        "passed": sum(r["ok"] for r in rows),
        "llm_total": len(llm_rows),
        "llm_passed": sum(r["ok"] for r in llm_rows),
        "failed": [r for r in rows if not r["ok"]],
        "probes": rows,
    }
