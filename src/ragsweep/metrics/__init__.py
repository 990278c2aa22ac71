"""Evaluation metrics.

* :func:`evaluate` — ranx-compatible entry point on plain dicts
  (``qrels = {qid: {doc_id: grade}}``, ``run = {qid: {doc_id: score}}``).
* :func:`evaluate_retrieval` — cases + retrieved :class:`~ragsweep.pipeline.hits.Hit` lists ->
  relevance marking (:mod:`.relevance`) -> metrics (:mod:`.retrieval`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .retrieval import (
    DEFAULT_METRICS,
    Judgement,
    RankVerdict,
    RetrievalResult,
    aggregate,
    parse_metric,
    per_case_value,
)

__all__ = [
    "DEFAULT_METRICS",
    "RankVerdict",
    "Judgement",
    "RetrievalResult",
    "aggregate",
    "evaluate",
    "evaluate_retrieval",
    "judgements_from_run",
    "parse_metric",
]


def judgements_from_run(
    qrels: Mapping[str, Mapping[str, float]],
    run: Mapping[str, Mapping[str, float]],
    rel_lvl: int = 1,
) -> list[Judgement]:
    """Turn ranx-style dicts into judgements (rule ``doc_id``).

    Each run is sorted by score descending; ties keep the run's insertion order (ranx
    sorts with numba's quicksort, which keeps insertion order for tied groups in short
    runs but not in general, so ranx's order among tied documents is not defined).
    Documents with grade >= ``rel_lvl`` are relevant (ranx ``rel_lvl``). A query in the
    run but not in qrels, or without any relevant document, is excluded and counted; a
    query in qrels but missing from the run has an empty ranking.
    """
    out: list[Judgement] = []
    for qid in list(qrels) + [q for q in run if q not in qrels]:
        items = {d: int(g) for d, g in qrels.get(qid, {}).items() if g >= rel_lvl}
        ranked = sorted(run.get(qid, {}).items(), key=lambda kv: -kv[1])  # stable
        hits = [
            RankVerdict(
                rank=pos,
                covers=frozenset([d]) if d in items else frozenset(),
                relevant=d in items,
                grade=items.get(d, 0),
                doc_id=d,
            )
            for pos, (d, _score) in enumerate(ranked, start=1)
        ]
        out.append(
            Judgement(
                case_id=str(qid),
                rule="doc_id",
                items=items,
                hits=hits,
                excluded=None if items else "no relevance information",
            )
        )
    return out


def evaluate(
    qrels: Mapping[str, Mapping[str, float]],
    run: Mapping[str, Mapping[str, float]],
    metrics: str | Sequence[str],
    per_query: bool = False,
    rel_lvl: int = 1,
) -> Any:
    """ranx-compatible evaluation: ``evaluate(qrels, run, ["ndcg@10", "mrr"])`` -> ``{metric: mean}``.

    A single metric name returns a float (like ranx). ``per_query=True`` returns
    ``{metric: {qid: value}}`` instead (only scored queries). Queries without a relevant
    document are excluded from the means (ranx would score them 0); a metric with no scored
    query is None. Extra keys as in :func:`ragsweep.metrics.retrieval.aggregate`.
    """
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    judgements = judgements_from_run(qrels, run, rel_lvl)
    if per_query:
        table = {m: {j.case_id: per_case_value(j, m) for j in judgements if j.scored} for m in names}
        return table[names[0]] if isinstance(metrics, str) else table
    result = aggregate(judgements, names)
    if isinstance(metrics, str):
        return result.scores[metrics]
    return result.scores


def evaluate_retrieval(
    cases: Sequence[Any],
    hits_by_case: Mapping[str, Sequence[Any]],
    metrics: Sequence[str] = DEFAULT_METRICS,
    relevance: Any = None,
    parsed_texts: Any = None,
    cited_by_case: Mapping[str, Sequence[int]] | None = None,
    per_case: bool = False,
) -> RetrievalResult:
    """Judge each case's hits and aggregate the metrics.

    ``cases``: a list of :class:`~ragsweep.datasets.schema.Case` or a
    :class:`~ragsweep.datasets.schema.Dataset` (whose relevance config is then the default).
    ``hits_by_case``: ``{case.id: [Hit, ...]}``. ``relevance``: rule name or
    :class:`~ragsweep.datasets.schema.RelevanceConfig` (overrides the dataset's).
    ``parsed_texts``: ``{doc_id: parsed text}`` or a function (used by ``evidence_offsets``).
    ``cited_by_case``: ``{case.id: [1-based chunk numbers cited]}`` for ``citation_precision``.
    The result's ``rule`` names the relevance rule that ran.
    """
    from ragsweep.datasets.schema import Dataset

    from .relevance import judge_cases

    if isinstance(cases, Dataset):
        relevance = relevance or cases.relevance
        cases = cases.cases
    judgements = judge_cases(cases, hits_by_case, relevance, parsed_texts, cited_by_case)
    return aggregate(judgements, metrics, per_case=per_case)
