"""The funnel's line under eval's terminal table."""

from __future__ import annotations

from ragsweep.funnel.records import Diagnosis
from ragsweep.funnel.stages import STAGES


def funnel_lines(diagnosis: Diagnosis | None) -> list[str]:
    """``lost at k=5: parse 3 · chunking 11 · retrieval 42 · answer 17 of 240``, then what that count
    leaves out and what judged the answers; nothing when no case is in the funnel."""
    if diagnosis is None:
        return []
    lost = " · ".join(f"{s} {n}" for s in STAGES if (n := diagnosis.lost.get(s))) or "nothing"
    line = f"lost at k={diagnosis.k}: {lost} of {diagnosis.cases} (found {diagnosis.found})"
    if diagnosis.excluded:
        line += "; not in the funnel: " + ", ".join(f"{n} {why}" for why, n in diagnosis.excluded.items())
    if diagnosis.answer_rule:
        kinds = ", ".join(f"{n} {kind}" for kind, n in diagnosis.answer_kinds.items())
        line += f"; answers judged by {diagnosis.answer_rule}" + (f" ({kinds})" if kinds else "")
    if diagnosis.correct_without_context:
        line += f"; {diagnosis.correct_without_context} answered correctly without relevant context (not a loss)"
    return [line]
