"""The funnel as every report reads it (ragsweep.funnel's :class:`Diagnosis`): its counts at a depth, the
depths and stages it names, and a line of text."""

from __future__ import annotations

from ragsweep.funnel.records import Diagnosis, DiagnosisCounts
from ragsweep.funnel.stages import STAGES


def counts_at(diagnosis: Diagnosis, k: int) -> DiagnosisCounts:
    """The funnel's counts at depth ``k`` (the headline's at its own k)."""
    return diagnosis.headline() if k == diagnosis.k else diagnosis.by_k[k]


def depths(diagnosis: Diagnosis) -> list[int]:
    """Every depth the funnel counts, the served one first."""
    return [diagnosis.k, *sorted(k for k in diagnosis.by_k if k != diagnosis.k)]


def shown_stages(diagnosis: Diagnosis) -> list[str]:
    """The stages the funnel names, in pipeline order: those it tested (a stage it counts at some depth)."""
    counted = set(diagnosis.lost).union(*(c.lost for c in diagnosis.by_k.values()))
    return [s for s in STAGES if s in counted]


def lost_text(counts: DiagnosisCounts) -> str:
    """``chunking 3 · retrieval 12 of 40 (found 25)``, as eval's line under its table says it (a stage that
    lost no case is left out)."""
    lost = " · ".join(f"{s} {n}" for s in STAGES if (n := counts.lost.get(s, 0))) or "nothing"
    return f"{lost} of {counts.total} (found {counts.found})"


__all__ = ["counts_at", "depths", "lost_text", "shown_stages"]
