"""Which funnel stages gained and lost cases between two runs, paired on case id: each case's stage at
its run's top_k in A and in B (ragsweep.funnel), and the cases that moved from one stage to another."""

from __future__ import annotations

import textwrap
from collections import Counter, defaultdict
from collections.abc import Mapping

from pydantic import BaseModel, Field

from ragsweep.evaluation.records import CaseResult
from ragsweep.funnel.stages import FOUND, STAGES

OUTSIDE = "outside"  # a case outside the funnel of its run (unanswerable, no relevance information, ...)
ORDER = (*STAGES, FOUND, OUTSIDE)


class StageShift(BaseModel):
    stage: str
    a: int = Field(description="paired cases at this stage in A")
    b: int = Field(description="paired cases at this stage in B")
    gained: int = Field(description="cases at this stage in B, elsewhere in A")
    lost: int = Field(description="cases at this stage in A, elsewhere in B")


class StageMove(BaseModel):
    from_stage: str
    to_stage: str
    n: int
    ids: list[str]


class StageComparison(BaseModel):
    """The paired cases in the funnel of at least one run, their stages in A and B, and each move."""

    n: int
    top_k_a: list[int]
    top_k_b: list[int]
    stages: list[StageShift]
    moves: list[StageMove]  # the most cases first
    # the runs ("A", "B") whose case lines carry no funnel (written before ragsweep attributed losses):
    # then nothing is compared, and the report says so
    without_funnel: list[str] = Field(default_factory=list)


def stage_of(case: CaseResult) -> str:
    """A case's stage at its top_k: where it was lost, ``found``, or outside the funnel."""
    if not case.lost_at_k:
        return OUTSIDE
    return case.lost_at or FOUND


def stage_moves(
    common: list[str], cases_a: Mapping[str, CaseResult], cases_b: Mapping[str, CaseResult]
) -> StageComparison | None:
    """The funnel compared over the ``common`` case ids; None: neither run has a funnel."""
    without = [side for side, cases in (("A", cases_a), ("B", cases_b)) if not any(cases[i].lost_at_k for i in common)]
    if len(without) == 2:
        return None
    if without:  # every case of one run would seem to leave (or enter) the funnel
        return StageComparison(n=0, top_k_a=[], top_k_b=[], stages=[], moves=[], without_funnel=without)
    pairs = [(i, stage_of(cases_a[i]), stage_of(cases_b[i])) for i in common]
    pairs = [(i, a, b) for i, a, b in pairs if OUTSIDE not in (a, b) or a != b]
    if not pairs:
        return None
    moved: dict[tuple[str, str], list[str]] = defaultdict(list)
    for i, a, b in pairs:
        if a != b:
            moved[(a, b)].append(i)
    in_a, in_b = Counter(a for _, a, _ in pairs), Counter(b for _, _, b in pairs)
    gained, lost = Counter[str](), Counter[str]()
    for (a, b), ids in moved.items():
        gained[b] += len(ids)
        lost[a] += len(ids)
    present = [s for s in ORDER if in_a[s] or in_b[s]]
    return StageComparison(
        n=len(pairs),
        top_k_a=sorted({cases_a[i].top_k for i, _, _ in pairs}),
        top_k_b=sorted({cases_b[i].top_k for i, _, _ in pairs}),
        stages=[StageShift(stage=s, a=in_a[s], b=in_b[s], gained=gained[s], lost=lost[s]) for s in present],
        moves=sorted(
            (StageMove(from_stage=a, to_stage=b, n=len(ids), ids=ids) for (a, b), ids in moved.items()),
            key=lambda m: (-m.n, ORDER.index(m.from_stage), ORDER.index(m.to_stage)),
        ),
    )


def _ks(ks: list[int]) -> str:
    return "/".join(str(k) for k in ks) or "?"


def _not_compared(c: StageComparison) -> str:
    return (
        f"where cases were lost: not compared, run {' and '.join(c.without_funnel)} has no funnel (its case lines "
        "carry no stage of loss: a run written before ragsweep attributed losses; evaluate it again)"
    )


def stage_lines(c: StageComparison, max_ids: int = 10) -> list[str]:
    """The terminal's lines: each stage's cases in A and B with what moved in and out, then each move."""
    if c.without_funnel:
        return [_not_compared(c)]
    width = max(len("stage"), *(len(s.stage) for s in c.stages))
    out = [
        f"where cases were lost (each at its run's top_k: A {_ks(c.top_k_a)}, B {_ks(c.top_k_b)}; "
        f"{c.n} paired cases in a funnel):",
        f"  {'stage':<{width}} {'A':>5} {'B':>5} {'Δ':>5} {'in':>5} {'out':>5}",
    ]
    out += [f"  {s.stage:<{width}} {s.a:>5} {s.b:>5} {s.b - s.a:>+5} {s.gained:>5} {s.lost:>5}" for s in c.stages]
    out.append("moved (A → B):" if c.moves else "moved (A → B): none")
    for m in c.moves:
        ids = ", ".join(m.ids[:max_ids]) + (f", … ({m.n - max_ids} more)" if m.n > max_ids else "")
        out.append(f"  {m.from_stage} → {m.to_stage}: {m.n}")
        out += textwrap.wrap(
            ids, 120, initial_indent="    ", subsequent_indent="    ", break_long_words=False, break_on_hyphens=False
        )
    return out


def stage_markdown(c: StageComparison, code: Mapping[str, str], max_ids: int = 20) -> list[str]:
    """The Markdown of the stage table and the moves; ``code``: each case id as inline code."""
    if c.without_funnel:
        return [_not_compared(c)]
    out = [
        f"#### Where cases were lost (each at its run's top_k: A {_ks(c.top_k_a)}, B {_ks(c.top_k_b)}; "
        f"{c.n} paired cases)",
        "",
        "| stage | A | B | Δ | moved in | moved out |",
        "|:---|---:|---:|---:|---:|---:|",
    ]
    out += [f"| {s.stage} | {s.a} | {s.b} | {s.b - s.a:+d} | {s.gained} | {s.lost} |" for s in c.stages]
    out.append("")
    for m in c.moves:
        ids = ", ".join(code[i] for i in m.ids[:max_ids]) + (f", … {m.n - max_ids} more" if m.n > max_ids else "")
        out.append(f"- {m.from_stage} → {m.to_stage}: {m.n} ({ids})")
    if not c.moves:
        out.append("No case moved between stages.")
    return out


__all__ = ["OUTSIDE", "StageComparison", "StageMove", "StageShift", "stage_lines", "stage_markdown", "stage_moves"]
