"""Retrieval metrics, ranx-compatible, over judged chunk rankings.

A :class:`Judgement` is one case's ranking after relevance marking (see
:mod:`ragsweep.metrics.relevance`): for each retrieved chunk, in rank order, the set of
relevance *items* it covers. Items are what a case needs retrieved, each with a grade >= 1:

* rule ``doc_id``: the relevant documents (grades from ``relevant_ids``);
* rules ``evidence_offsets`` / ``word_overlap``: the evidence spans (grade 1 each).

Definitions (``k = 0`` means the whole ranking; ``rel_i`` = 1 if the chunk at rank i covers
at least one item; ``r_j`` = the rank of the first chunk covering item j; ``R`` = number of
items; ``g_j`` = grade of item j):

* ``hits@k``       = sum_{i<=k} rel_i  (relevant *chunks*; repeated chunks of a relevant
  document each count).
* ``hit_rate@k``   = 1 if some rel_i = 1 for i <= k, else 0.
* ``precision@k``  = hits@k / k  (ranx: divides by k even when fewer than k chunks came back).
* ``recall@k``     = |{j : r_j <= k}| / R  (each item counted once, so repeated chunks of the
  same document or span never count twice).
* ``mrr@k``        = 1 / min{i <= k : rel_i = 1}, 0 if none (a per-case reciprocal rank;
  the reported value is its mean over cases).
* ``ndcg@k``       = DCG@k / IDCG@k, DCG@k = sum_{j : r_j <= k} g_j / log2(r_j + 1),
  IDCG@k = sum_{i=1}^{min(k,R)} g_(i) / log2(i + 1) with grades sorted descending
  (Järvelin & Kekäläinen gain, ranx's default ``ndcg``); 0 when IDCG is 0; capped at 1
  (the cap only binds when one chunk covers several items at once).
* ``map@k``        = (1/R) sum_{j : r_j <= k} precision@r_j  (average precision, mean over cases).
* ``r_precision``  = recall@R: the items covered in the top R, over R (precision@R in ranx's
  one-chunk-per-item world; counted in items so that it shares recall's units).
* ``first_relevant_rank`` = min{i : rel_i = 1} over the whole ranking: mean and median over
  the cases where a relevant chunk was retrieved (rank 1 included, unlike Pathway's
  ``mean_hit``), the misses are counted, not averaged in.
* ``recall@Btok``   = recall over the chunks that fit in a context of B tokens: with t_i the
  tokens of the chunk at rank i and n_B = max{n : sum_{i<=n} t_i <= B}, the items covered in
  the top n_B, over R. ``hit_rate@Btok`` = 1 if a relevant chunk is in the top n_B. The
  context is filled in rank order with whole chunks and stops at the first chunk that does
  not fit: a chunk is never cut, a later smaller one never skips ahead (the first B tokens
  of a prompt built from the ranking), so a first chunk longer than B leaves an empty
  context (0). The rank cut-off of @k is replaced by a length cut-off, so configurations
  whose chunks differ in size are compared at equal context: recall@k at a fixed k rewards
  longer chunks for the text they add, not for their ranking (the same concern as passage
  retrieval measured in characters rather than passages: the TREC 2006 Genomics track's
  passage MAP, Hersh et al., TREC 2006; ranx has no such metric). t_i
  is the chunk's length as Pathway's ``TokenCountSplitter`` counts it (tiktoken
  ``cl100k_base``, ``encode_ordinary``: :func:`ragsweep.pipeline.chunking.chunk_tokens`).
* ``citation_precision`` = |{c in cited : chunk c is relevant}| / |cited| over the distinct
  1-based chunk numbers an answer cites (a number beyond the ranking counts as not
  relevant); cases without citations are excluded and counted.

When every chunk covers at most one item and no item is covered twice (e.g. a document-level
run where each document appears once, which is exactly what ranx models), these are ranx's
definitions (ranx 0.3.x, ``ranx/metrics/*.py``; Bassani, "ranx: A Blazing-Fast Python
Library for Ranking Evaluation and Comparison", ECIR 2022) and give the same numbers.
A case with no items (unanswerable, or no relevance information) has no value
(:func:`per_case_value` gives ``None``, never NaN): the run's aggregate
(:func:`ragsweep.evaluation.scoring.aggregate`) leaves it out of every mean and counts it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict, Unpack

from pydantic import BaseModel

from . import levels, registry

__all__ = [
    "RankVerdict",
    "Judgement",
    "hits",
    "hit_rate",
    "precision",
    "recall",
    "reciprocal_rank",
    "ndcg",
    "average_precision",
    "r_precision",
    "first_relevant_rank",
    "citation_precision",
    "in_budget",
    "parse_budget",
    "parse_metric",
    "per_case_value",
]


@dataclass(frozen=True)
class RankVerdict:
    """The relevance verdict on one rank of a ranking: what the chunk there covers (not the chunk itself,
    which is :class:`ragsweep.evaluation.records.JudgedHit`)."""

    rank: int  # 1-based
    covers: frozenset[str] = frozenset()  # ids of the items this chunk covers
    relevant: bool = False  # covers an item (or a rule matched it without crediting an item)
    grade: int = 0  # highest grade among the covered items, 0 if none
    doc_id: str | None = None
    tokens: int | None = None  # the chunk's length in tokens (the token-budget metrics need it)


class UnlocatedSpan(BaseModel):
    """An evidence span found in no parsed document it may come from (under ``doc_id``: a relevant
    document with no parsed text, ``text`` empty)."""

    index: int  # its place in the case's evidence (doc_id: in its relevant documents)
    text: str
    doc_id: str | None  # the document it names; None: any of the case's scope (or of the corpus)
    reason: Literal["not in the parsed text", "document not parsed"]
    searched: list[str] = []  # the parsed documents of its doc_id or scope it was looked for in; []: every one

    def shown(self, limit: int = 60) -> str:
        """The span as reports quote it, or "relevant document" for a document judged by id."""
        if not self.text:
            return "relevant document"
        return repr(self.text if len(self.text) <= limit else self.text[: limit - 3] + "...")


@dataclass
class RelevanceDetail:
    """What the relevance rule found besides the verdicts (:func:`ragsweep.metrics.relevance.judge`)."""

    # evidence_offsets: how each span was found in each document ("e0@doc": method)
    located: dict[str, str] = field(default_factory=dict)
    unlocated: list[UnlocatedSpan] = field(default_factory=list)  # the evidence found in no parsed document
    none_located: bool = False  # none of it was found: the case is excluded unless unlocated="zero"


@dataclass
class Judgement:
    """One case's judged ranking."""

    case_id: str
    rule: str
    items: dict[str, int]  # item id -> grade (>= 1)
    hits: list[RankVerdict]
    cited: list[int] | None = None
    # why the case is not scored: "unanswerable" | "no relevance information" | "unlocated evidence"
    excluded: str | None = None
    detail: RelevanceDetail = field(default_factory=RelevanceDetail)

    @property
    def scored(self) -> bool:
        return self.excluded is None and bool(self.items)


def _cut(j: Judgement, k: int) -> list[RankVerdict]:
    if k < 0:
        raise ValueError("k must be >= 0")
    return j.hits if k == 0 else j.hits[:k]


def _first_cover(j: Judgement) -> dict[str, int]:
    first: dict[str, int] = {}
    for pos, h in enumerate(j.hits, start=1):
        for item in h.covers:
            if item in j.items and item not in first:
                first[item] = pos
    return first


def hits(j: Judgement, k: int = 0) -> float:
    """Number of relevant chunks in the top k (ranx ``hits``)."""
    return float(sum(1 for h in _cut(j, k) if h.relevant))


def hit_rate(j: Judgement, k: int = 0) -> float:
    """1 if a relevant chunk is in the top k, else 0 (ranx ``hit_rate``; trec_eval ``success``)."""
    if not j.items:
        return 0.0
    return 1.0 if any(h.relevant for h in _cut(j, k)) else 0.0


def precision(j: Judgement, k: int = 0) -> float:
    r"""Precision@k = hits@k / k (ranx ``precision``): k, not the run length, is the denominator.

    With ``k = 0`` the denominator is the run length; an empty run scores 0.
    """
    denom = k if k != 0 else len(j.hits)
    if denom == 0 or not j.items:
        return 0.0
    return hits(j, k) / denom


def recall(j: Judgement, k: int = 0) -> float:
    r"""Recall@k = |items covered in the top k| / |items| (ranx ``recall``), items counted once."""
    if not j.items:
        return 0.0
    limit = len(j.hits) if k == 0 else k
    covered = sum(1 for r in _first_cover(j).values() if r <= limit)
    return covered / len(j.items)


def reciprocal_rank(j: Judgement, k: int = 0) -> float:
    """1 / rank of the first relevant chunk within the top k, 0 if none (ranx ``mrr``)."""
    if not j.items:
        return 0.0
    for pos, h in enumerate(_cut(j, k), start=1):
        if h.relevant:
            return 1.0 / pos
    return 0.0


def ndcg(j: Judgement, k: int = 0) -> float:
    r"""nDCG@k with Järvelin & Kekäläinen gain (ranx ``ndcg``, its default; TOIS 20(4), 2002).

    DCG@k = sum over items first covered at rank r <= k of grade / log2(r + 1);
    IDCG@k = the same for the grades sorted descending at ranks 1..min(k, R).
    """
    if not j.items:
        return 0.0
    limit = len(j.hits) if k == 0 else min(k, len(j.hits))
    dcg = sum(j.items[item] / math.log2(r + 1) for item, r in _first_cover(j).items() if r <= limit)
    ideal = sorted(j.items.values(), reverse=True)
    n_ideal = len(ideal) if k == 0 else min(k, len(ideal))
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal[:n_ideal], start=1))
    if idcg == 0.0:
        return 0.0
    return min(1.0, dcg / idcg)


def average_precision(j: Judgement, k: int = 0) -> float:
    r"""AP@k = (1/R) sum over items first covered at rank r <= k of precision@r (ranx ``map``)."""
    if not j.items:
        return 0.0
    limit = len(j.hits) if k == 0 else k
    rel_prefix = [0]
    for h in j.hits:
        rel_prefix.append(rel_prefix[-1] + (1 if h.relevant else 0))
    total = 0.0
    for r in _first_cover(j).values():
        if r <= limit:
            total += rel_prefix[r] / r
    return total / len(j.items)


def r_precision(j: Judgement, k: int = 0) -> float:
    """R-precision = |items covered in the top R| / R, R = number of items (``k`` is ignored).

    Counted in items, like recall (two chunks of one relevant document count once), so it
    is recall@R; when each chunk covers at most one item and each item is covered once,
    this is precision@R, ranx's ``r-precision``.
    """
    if not j.items:
        return 0.0
    return recall(j, len(j.items))


def first_relevant_rank(j: Judgement, k: int = 0) -> int | None:
    """Rank (1-based) of the first relevant chunk in the whole ranking (or top k), None for a miss."""
    for pos, h in enumerate(_cut(j, k), start=1):
        if h.relevant:
            return pos
    return None


def citation_precision(j: Judgement, cited: Sequence[int] | None = None) -> float | None:
    """Share of the distinct cited chunk numbers (1-based, chunk c = hits[c-1]) that are relevant.

    None when nothing is cited. A number outside the ranking counts as not relevant.
    """
    cited = j.cited if cited is None else cited
    if not cited:
        return None
    distinct = list(dict.fromkeys(int(c) for c in cited))
    good = sum(1 for c in distinct if 1 <= c <= len(j.hits) and j.hits[c - 1].relevant)
    return good / len(distinct)


def in_budget(j: Judgement, budget: int) -> list[RankVerdict]:
    """The top n_B chunks: the longest prefix of the ranking whose tokens sum to at most ``budget``."""
    kept: list[RankVerdict] = []
    used = 0
    for h in j.hits:
        if h.tokens is None:
            raise ValueError(f"case {j.case_id}: a token-budget metric needs each chunk's token count")
        used += h.tokens
        if used > budget:
            break
        kept.append(h)
    return kept


def recall_in_budget(j: Judgement, budget: int) -> float:
    """recall@Btok: the items covered by the chunks that fit in ``budget`` tokens, over the items."""
    if not j.items:
        return 0.0
    covered = {item for h in in_budget(j, budget) for item in h.covers if item in j.items}
    return len(covered) / len(j.items)


def hit_rate_in_budget(j: Judgement, budget: int) -> float:
    """hit_rate@Btok: 1 if a relevant chunk is among those that fit in ``budget`` tokens."""
    if not j.items:
        return 0.0
    return 1.0 if any(h.relevant for h in in_budget(j, budget)) else 0.0


_BUDGET_RE = re.compile(r"^([a-z_\-]+)@(\d+)tok$")


def _budget_func(base: str) -> Callable[[Judgement, int], float] | None:
    spec = registry.find(base)
    return spec.budget if spec is not None and spec.kind == "at_k" else None


def parse_budget(name: str) -> tuple[str, int] | None:
    """``"recall@1500tok"`` -> ``("recall", 1500)``; None for a name that is not a token-budget metric."""
    m = _BUDGET_RE.match(name.strip().lower())
    if not m:
        return None
    base = _base(m.group(1))
    if _budget_func(base) is None:
        known = ", ".join(f"{b}@<N>tok" for b in registry.budget_families())
        raise ValueError(f"no token-budget metric {name!r}; known: {known}")
    return base, int(m.group(2))


_ALIASES = {"r-precision": "r_precision", "hitrate": "hit_rate", "success": "hit_rate", "ap": "map"}
_METRIC_RE = re.compile(r"^([a-z_\-]+)(?:@(\d+))?$")


def _base(family: str) -> str:
    return _ALIASES.get(family, family)


def _ranking_metric(base: str) -> Callable[[Judgement, int], float | int | None] | None:
    spec = registry.find(base)
    return spec.compute if spec is not None and spec.kind in ("at_k", "ranking") else None


def parse_metric(name: str) -> tuple[str, int]:
    """``"ndcg@10"`` -> ``("ndcg", 10)``; ``"mrr"`` -> ``("mrr", 0)`` (0 = whole ranking)."""
    m = _METRIC_RE.match(name.strip().lower())
    if not m:
        raise ValueError(f"bad metric name {name!r}")
    base = _base(m.group(1))
    if base != registry.CITATION_PRECISION and _ranking_metric(base) is None:
        known = sorted([*(s.name for s in registry.metrics("at_k", "ranking")), registry.CITATION_PRECISION])
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(known)}")
    return base, int(m.group(2) or 0)


def per_case_value(j: Judgement, metric: str) -> float | int | None:
    """One case's value of ``metric`` (None when the case is not scored for it)."""
    budget = parse_budget(metric)
    if budget is not None:
        at_budget = _budget_func(budget[0])
        return at_budget(j, budget[1]) if at_budget is not None and j.scored else None
    base, k = parse_metric(metric)
    if not j.scored:
        return None
    func = _ranking_metric(base)
    if func is None:
        return citation_precision(j)
    return func(j, k)


class _SpecOptions(TypedDict, total=False):
    """The :class:`~ragsweep.metrics.registry.MetricSpec` fields a retrieval metric may set besides its levels."""

    budget: Callable[[Judgement, int], float]
    budget_levels: levels.BudgetLevels
    curve: bool
    headline: float
    higher_is_better: bool
    scored: bool
    reads: Literal["relevance", "covers", "both"]
    at_items: bool
    partial: bool


def _retrieval(
    name: str,
    compute: Callable[[Judgement, int], float | int | None],
    order: float,
    levels_of: tuple[Callable[..., levels.Estimate | None], Callable[..., levels.Estimate]],
    kind: registry.Kind = "at_k",
    **more: Unpack[_SpecOptions],
) -> None:
    chance, oracle = levels_of
    registry.register(
        registry.MetricSpec(
            name,
            kind,
            order,
            compute,
            chance=registry.PooledLevel(chance),
            oracle=registry.PooledLevel(oracle),
            **more,
        )
    )


_retrieval("hits", hits, 5, (levels.hits_chance, levels.hits_oracle), scored=False, reads="relevance")
_retrieval(
    "hit_rate",
    hit_rate,
    10,
    (levels.hit_rate_chance, levels.found_oracle),
    budget=hit_rate_in_budget,
    budget_levels=levels.HIT_RATE_IN_BUDGET,
    curve=True,
    headline=1,
    reads="relevance",
)
_retrieval(
    "recall",
    recall,
    20,
    (levels.recall_chance, levels.recall_oracle),
    budget=recall_in_budget,
    budget_levels=levels.RECALL_IN_BUDGET,
    curve=True,
    headline=2,
    reads="covers",
)
_retrieval(
    "precision", precision, 30, (levels.precision_chance, levels.precision_oracle), curve=True, reads="relevance"
)
_retrieval("mrr", reciprocal_rank, 40, (levels.mrr_chance, levels.found_oracle), headline=3, reads="relevance")
_retrieval("ndcg", ndcg, 50, (levels.ndcg_chance, levels.ndcg_oracle), curve=True, headline=4, reads="covers")
_retrieval("map", average_precision, 60, (levels.map_chance, levels.map_oracle), curve=True)
_retrieval(
    "r_precision",
    r_precision,
    70,
    (levels.r_precision_chance, levels.r_precision_oracle),
    kind="ranking",
    reads="covers",
    at_items=True,
)
_retrieval(
    "first_relevant_rank",
    first_relevant_rank,
    80,
    (levels.first_relevant_rank_chance, levels.first_relevant_rank_oracle),
    kind="ranking",
    higher_is_better=False,
    reads="relevance",
    partial=True,
)
registry.register(
    registry.MetricSpec(registry.CITATION_PRECISION, "answer", 100)
)  # filled by the case scorer from the citations
