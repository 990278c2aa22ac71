r"""The chance and oracle levels of the built-in retrieval metrics: one function per metric and level,
which the metric's declaration in :mod:`ragsweep.metrics.retrieval` hands to the registry.

Each function reads a case's candidates grouped by (covered items, relevant) (a :class:`Candidates`,
built by :mod:`ragsweep.metrics.baselines`) and the depth k, and returns an :class:`Estimate`. A chance
function may return None where its closed form does not hold: the candidates' orderings are then
enumerated or sampled. The formulas, their sources and the notation (N, m, R, c_j, a_j, g_j, K) are
in :mod:`ragsweep.metrics.baselines`' docstring.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol


@dataclass(frozen=True)
class Estimate:
    """A chance or oracle value and how it was obtained.

    ``method``: ``"closed_form"`` (exact formula), ``"enumerated"`` (exact: the ndcg cap
    walk, or all orderings by chunk type), ``"sampled"`` (mean over ``samples`` seeded random orderings,
    ``stderr`` = s / sqrt(n)), ``"exact"`` (oracle by exhaustive / branch-and-bound
    search) or ``"greedy"`` (oracle search cut short: an achievable lower bound).
    ``value`` is None when the case is not scored (or, for ``first_relevant_rank``, when no
    relevant chunk can appear in the top k).
    """

    value: float | None
    method: str
    stderr: float = 0.0
    samples: int = 0


class Candidates(Protocol):
    """What the level functions read of a case's candidates, and the searches they may ask for."""

    n: int  # N
    m: int  # relevant candidates
    items: dict[str, int]  # item -> grade
    cover_count: dict[str, int]  # c_j
    rel_cover_count: dict[str, int]  # a_j
    keys: list[tuple[frozenset[str], bool]]  # the chunk types: (covered items, relevant)
    counts: list[int]  # candidates of each type

    def depth(self, k: int) -> int:
        """K: how many top positions a metric at depth k reads."""
        ...

    def max_cover(self, depth: int) -> tuple[float, str]:
        """The most items ``depth`` candidates cover, and the search's status."""
        ...

    def max_dcg(self, k: int, target: float) -> tuple[float, str]:
        """The largest DCG@k of an ordering (the search stops at ``target``), and its status."""
        ...

    def ndcg_cap_excess(self, k: int) -> tuple[float, bool] | None:
        """E[(DCG@k - IDCG@k)+] under random ordering and whether it can be positive; None: over budget."""
        ...

    def searched_oracle(self, metric: str, k: int) -> Estimate:
        """The best value of ``metric`` at k by a search over orderings of the chunk types."""
        ...


@lru_cache(maxsize=65536)
def first_marked(n: int, c: int, depth: int) -> tuple[float, float, float, float, float]:
    """Sums over r <= depth of P_c(r) times 1, 1/r, 1/log2(r+1), (r-1)/r and r.

    P_c(r) = probability that the first of c marked chunks among n (random order) is at r.
    """
    if c <= 0 or n <= 0 or depth <= 0:
        return (0.0, 0.0, 0.0, 0.0, 0.0)
    s0 = s_inv = s_log = s_rm1 = s_r = 0.0
    survive = 1.0  # P(first > r - 1)
    for r in range(1, depth + 1):
        p = survive * c / (n - r + 1)
        s0 += p
        s_inv += p / r
        s_log += p / math.log2(r + 1)
        s_rm1 += p * (r - 1) / r
        s_r += p * r
        survive *= (n - c - r + 1) / (n - r + 1)
        if survive <= 0.0:
            break
    return (min(s0, 1.0), s_inv, s_log, s_rm1, s_r)


def idcg(items: Mapping[str, int], k: int) -> float:
    return ideal_dcg(items.values(), k)


def ideal_dcg(grades: Iterable[float], k: int) -> float:
    ideal = sorted(grades, reverse=True)
    if k:
        ideal = ideal[:k]
    return sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))


def _closed(value: float | None) -> Estimate:
    return Estimate(value, "closed_form")


def _exact(value: float | None) -> Estimate:
    return Estimate(value, "exact")


def _searched(value: float, status: str) -> Estimate:
    return Estimate(value, "greedy" if status == "budget" else "exact")


# --------------------------------------------------------------------------- chance


def hits_chance(p: Candidates, k: int) -> Estimate:
    return _closed(p.depth(k) * p.m / p.n if p.n else 0.0)


def hit_rate_chance(p: Candidates, k: int) -> Estimate:
    return _closed(first_marked(p.n, p.m, p.depth(k))[0] if p.n else 0.0)


def precision_chance(p: Candidates, k: int) -> Estimate:
    return _closed(p.depth(k) * p.m / (p.n * (k if k else p.n)) if p.n else 0.0)


def mrr_chance(p: Candidates, k: int) -> Estimate:
    return _closed(first_marked(p.n, p.m, p.depth(k))[1] if p.n else 0.0)


def recall_chance(p: Candidates, k: int) -> Estimate:
    if not p.n:
        return _closed(0.0)
    depth = p.depth(k)
    return _closed(math.fsum(first_marked(p.n, p.cover_count[i], depth)[0] for i in p.items) / len(p.items))


def r_precision_chance(p: Candidates, k: int) -> Estimate:
    """recall@R (r_precision's definition in :mod:`~ragsweep.metrics.retrieval`); k is ignored."""
    return recall_chance(p, len(p.items))


def _expected_ndcg(p: Candidates, k: int) -> float:
    """E[DCG] / IDCG, before the cap's excess is taken off."""
    if not p.n:
        return 0.0
    ideal = idcg(p.items, k)
    if ideal == 0.0:
        return 0.0
    depth = p.depth(k)
    return math.fsum(g * first_marked(p.n, p.cover_count[i], depth)[2] for i, g in p.items.items()) / ideal


def ndcg_chance(p: Candidates, k: int) -> Estimate | None:
    """E[min(1, DCG/IDCG)]: the expected DCG less the cap's excess (None: its walk ran out of nodes)."""
    capped = p.ndcg_cap_excess(k)
    if capped is None:
        return None
    excess, can_bind = capped
    value = _expected_ndcg(p, k)
    if not can_bind or not value:
        return _closed(value)
    return Estimate(max(0.0, value - excess / idcg(p.items, k)), "enumerated")


def map_chance(p: Candidates, k: int) -> Estimate:
    if not p.n:
        return _closed(0.0)
    n, m, depth = p.n, p.m, p.depth(k)
    total = []
    for i in p.items:
        c = p.cover_count[i]
        if c == 0:
            continue
        a = p.rel_cover_count[i]
        _, s_inv, _, s_rm1, _ = first_marked(n, c, depth)
        above = (m - a) / (n - c) * s_rm1 if n > c else 0.0
        total.append(above + a / c * s_inv)
    return _closed(math.fsum(total) / len(p.items))


def first_relevant_rank_chance(p: Candidates, k: int) -> Estimate:
    """E[r | r <= K]: the mean rank over the orderings that find a relevant chunk."""
    s0, _, _, _, s_r = first_marked(p.n, p.m, p.depth(k))
    return _closed(s_r / s0 if s0 > 0 else None)


# --------------------------------------------------------------------------- oracle


def hits_oracle(p: Candidates, k: int) -> Estimate:
    return _exact(float(min(p.depth(k), p.m)) if p.n else 0.0)


def found_oracle(p: Candidates, k: int) -> Estimate:
    """hit_rate and mrr: 1 when a relevant candidate can be put first."""
    return _exact(1.0 if p.n and p.m and p.depth(k) else 0.0)


def precision_oracle(p: Candidates, k: int) -> Estimate:
    return _exact(min(p.depth(k), p.m) / (k if k else p.n) if p.n else 0.0)


def recall_oracle(p: Candidates, k: int) -> Estimate:
    if not p.n:
        return _exact(0.0)
    best, status = p.max_cover(p.depth(k))
    return _searched(best / len(p.items), status)


def r_precision_oracle(p: Candidates, k: int) -> Estimate:
    return recall_oracle(p, len(p.items))


def map_oracle(p: Candidates, k: int) -> Estimate:
    """The recall oracle when every covering candidate is relevant (a maximum cover put first), else a search."""
    if p.n and not all(rel for (cov, rel), c in zip(p.keys, p.counts) if cov and c):
        return p.searched_oracle("map", k)
    return recall_oracle(p, k)


def ndcg_oracle(p: Candidates, k: int) -> Estimate:
    ideal = idcg(p.items, k)
    if not p.n or ideal == 0.0:
        return _exact(0.0)
    best, status = p.max_dcg(k, ideal)
    return _searched(min(1.0, best / ideal), status)


def first_relevant_rank_oracle(p: Candidates, k: int) -> Estimate:
    return _exact(1.0 if p.m and p.depth(k) else None)


# --------------------------------------------------------------------------- token budgets


class Stop(Exception):
    """A search ran past its node budget."""


@dataclass(frozen=True)
class BudgetCandidates:
    """A case's candidates for the token-budget levels: lengths, covered items (bit masks), relevance."""

    tokens: list[int]
    masks: list[int]
    relevant: list[bool]
    n_items: int

    def context(self, chosen: Iterable[int]) -> tuple[int, bool]:
        """The items a context holding the candidates ``chosen`` covers (a bit mask), and whether it holds a relevant one."""
        covered, hit = 0, False
        for i in chosen:
            covered |= self.masks[i]
            hit = hit or self.relevant[i]
        return covered, hit


@dataclass(frozen=True)
class BudgetLevels:
    """How a token-budget metric is leveled: ``value(candidates, covered, relevant)`` of a context that
    covers the items ``covered`` (a bit mask) and holds a relevant chunk or not, and
    ``oracle(candidates, tokens, search nodes) -> (value, method)``."""

    value: Callable[[BudgetCandidates, int, bool], float]
    oracle: Callable[[BudgetCandidates, int, int], tuple[float, str]]


def hit_rate_budget_oracle(c: BudgetCandidates, budget: int, nodes: int) -> tuple[float, str]:
    """1 when a relevant candidate fits in ``budget`` tokens."""
    return (1.0 if any(r and t <= budget for r, t in zip(c.relevant, c.tokens, strict=True)) else 0.0), "exact"


def recall_budget_oracle(c: BudgetCandidates, budget: int, nodes: int) -> tuple[float, str]:
    """Budgeted maximum coverage by branch and bound over the covering candidates (``"greedy"`` past ``nodes``)."""
    fits = [i for i in range(len(c.tokens)) if c.masks[i] and c.tokens[i] <= budget]
    # a candidate covering a subset of another's items with at least its length is never needed
    kept = [
        i
        for i in fits
        if not any(
            j != i and c.masks[i] & c.masks[j] == c.masks[i] and c.tokens[j] <= c.tokens[i]
            and (c.masks[j] != c.masks[i] or c.tokens[j] < c.tokens[i] or j < i)
            for j in fits
        )
    ]  # fmt: skip
    kept.sort(key=lambda i: (-c.masks[i].bit_count(), c.tokens[i]))
    best = _greedy_budget_cover(c, kept, budget)
    reach = [0] * (len(kept) + 1)  # items the candidates from position i on could still add
    for pos in range(len(kept) - 1, -1, -1):
        reach[pos] = reach[pos + 1] | c.masks[kept[pos]]
    visited = 0

    def walk(pos: int, used: int, covered: int) -> None:
        nonlocal best, visited
        visited += 1
        if visited > nodes:
            raise Stop
        best = max(best, covered.bit_count())
        if pos == len(kept) or (covered | reach[pos]).bit_count() <= best or best == c.n_items:
            return
        i = kept[pos]
        if used + c.tokens[i] <= budget and c.masks[i] & ~covered:
            walk(pos + 1, used + c.tokens[i], covered | c.masks[i])
        walk(pos + 1, used, covered)

    try:
        walk(0, 0, 0)
        method = "exact"
    except Stop:
        method = "greedy"
    return best / c.n_items, method


def _greedy_budget_cover(c: BudgetCandidates, order: Sequence[int], budget: int) -> int:
    """Items covered by taking, while any fits, the candidate with the most new items per token."""
    used = covered = 0
    left = list(order)
    while True:
        options = [
            ((c.masks[i] & ~covered).bit_count() / max(1, c.tokens[i]), i)
            for i in left
            if used + c.tokens[i] <= budget and c.masks[i] & ~covered
        ]
        if not options:
            return covered.bit_count()
        _, i = max(options)
        used += c.tokens[i]
        covered |= c.masks[i]
        left.remove(i)


def _recall_in_context(c: BudgetCandidates, covered: int, hit: bool) -> float:
    return covered.bit_count() / c.n_items


def _hit_rate_in_context(c: BudgetCandidates, covered: int, hit: bool) -> float:
    return 1.0 if hit else 0.0


RECALL_IN_BUDGET = BudgetLevels(_recall_in_context, recall_budget_oracle)
HIT_RATE_IN_BUDGET = BudgetLevels(_hit_rate_in_context, hit_rate_budget_oracle)
