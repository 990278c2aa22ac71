"""ranx-style ``qrels`` and ``run`` dicts scored on the path an eval run takes.

Each query becomes a :class:`~ragsweep.datasets.Case` (its ``relevant_ids`` with their grades) and
a ranked list of :class:`~ragsweep.core.hits.Hit` (the run sorted by score, descending; ties
keep the run's order, which ranx leaves undefined), judged by
:func:`ragsweep.metrics.relevance.mark_hits` (rule ``doc_id``) and scored by
:func:`ragsweep.metrics.retrieval.per_case_value`, as
:func:`ragsweep.evaluation.case_scoring.build_case_result` does. A mean is taken over the cases that
have a value, as the run's aggregate does (a case without a relevant document has none).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from ragsweep.core.hits import Hit
from ragsweep.datasets import Case
from ragsweep.metrics.relevance import mark_hits
from ragsweep.metrics.retrieval import Judgement, per_case_value

Qrels = Mapping[str, Mapping[str, float]]
Run = Mapping[str, Mapping[str, float]]


def ranked_hits(scores: Mapping[str, float]) -> list[Hit]:
    """One query's run as the store would serve it: rank 1 = the highest score (a stable sort)."""
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    return [Hit(rank=pos, score=s, text="", doc_id=d, start=0, end=0) for pos, (d, s) in enumerate(ranked, start=1)]


def judgements(qrels: Qrels, run: Run) -> list[Judgement]:
    """One judgement per query of ``qrels``, then per query only in ``run`` (a query missing from
    the run has an empty ranking)."""
    out = []
    for qid in list(qrels) + [q for q in run if q not in qrels]:
        grades = [{"id": d, "grade": int(g)} for d, g in qrels.get(qid, {}).items()]
        case = Case(id=str(qid), question=f"query {qid}", relevant_ids=grades)
        out.append(mark_hits(case, ranked_hits(run.get(qid, {})), "doc_id"))
    return out


def per_query(qrels: Qrels, run: Run, metric: str) -> dict[str, float | int | None]:
    """``{query: value}`` over the scored queries."""
    return {j.case_id: per_case_value(j, metric) for j in judgements(qrels, run) if j.scored}


def mean(values: Sequence[float | int | None]) -> float | None:
    """The mean over the values that exist; None when none does (never NaN)."""
    present = [float(v) for v in values if v is not None]
    return statistics.fmean(present) if present else None


def means(qrels: Qrels, run: Run, metrics: Sequence[str]) -> dict[str, float | None]:
    """``{metric: mean over the queries with a value}``."""
    judged = judgements(qrels, run)
    return {m: mean([per_case_value(j, m) for j in judged]) for m in metrics}
