r"""Chance and oracle levels for every retrieval metric of :mod:`ragsweep.metrics.retrieval`.

A retrieval number means little without its floor and its ceiling. On ``datasets/cuad`` a
question is scoped to one contract of about 9 chunks, so *any* ordering of that contract's
chunks puts a relevant one in the top 5 most of the time: hit@5 = 0.97 reads very
differently once you know that chance gives 0.80. This module computes, for one case:

* **chance**: the expected value of a metric at k when the case's candidate chunks are put
  in a uniformly random order (every one of the N! orderings equally likely);
* **oracle**: the best value of the metric at k over all orderings of the candidates (the
  ceiling left by chunking and relevance marking: an item no candidate covers caps recall).

Input
-----
The *candidates* of a case are all the chunks in its scope (every chunk of the scoped
documents, or of the whole corpus when the case is unscoped). Judge them with the case's
rule exactly as a ranking is judged, and pass the result as a
:class:`~ragsweep.metrics.retrieval.Judgement` whose ``hits`` are all the candidates, in
any order (only ``covers``, ``relevant`` and ``items`` are read; ``rank`` is ignored).
Candidates that are irrelevant and cover nothing need not be materialised: pass their
number as ``extra_blank`` (useful for unscoped cases over a 10k-chunk corpus).

Notation: N candidates, of which m are relevant (``relevant`` flag); R = ``len(items)``;
for item j, c_j = number of candidates covering j, a_j = number of *relevant* candidates
covering j, g_j = its grade; K = min(k, N) (K = N when k = 0, the whole ranking). Every
value below matches :func:`~ragsweep.metrics.retrieval.per_case_value` on the same case —
including the conventions for k > N (precision divides by k) and k = 0.

Chance: exact closed forms
--------------------------
All of them come from one distribution. Put c marked chunks among N in random order; the
rank ``r`` of the first marked one is negative-hypergeometric [JKK05]:

    P_c(r) = C(N - r, c - 1) / C(N, c) = [prod_{t<r-1} (N-c-t)/(N-t)] * c / (N - r + 1),

computed by that running product in O(K) and cached on (N, c, K). Then:

* ``hits@k``      = K m / N.
* ``hit_rate@k``  = sum_{r<=K} P_m(r) = 1 - C(N-m, K) / C(N, K)  (hypergeometric: no
  relevant chunk among K drawn without replacement [Fel68, ch. II]).
* ``precision@k`` = E[hits@K] / k = K m / (N k)  (k -> N when k = 0).
* ``r_precision`` = recall@R (its definition in :mod:`~ragsweep.metrics.retrieval`: items
  covered in the top R, over R), so the recall formula with K = min(R, N); in ranx's world
  (one chunk per item, each item once) that is min(R, N) m / (N R), the expected precision@R.
* ``mrr@k``       = sum_{r<=K} P_m(r) / r  (expected reciprocal rank of the first relevant
  chunk under random ordering; [JKK05] for the distribution of r).
* ``first_relevant_rank@k`` = E[r | r <= K] = sum_{r<=K} r P_m(r) / sum_{r<=K} P_m(r); with
  k = 0 this is (N + 1) / (m + 1) [JKK05]. None when m = 0. (The reported metric is a mean
  over the cases where a relevant chunk was found, hence the conditional expectation.)
* ``recall@k``    = (1/R) sum_j sum_{r<=K} P_{c_j}(r) = (1/R) sum_j [1 - C(N-c_j, K)/C(N, K)].
  Exact for any covering pattern (an item counts once, when first covered; linearity of
  expectation over items), not only when every item is covered by one chunk.
* ``ndcg@k``      = (1/IDCG@k) sum_j g_j sum_{r<=K} P_{c_j}(r) / log2(r + 1)  (expected
  DCG, linearity over items [JK02]) - E[(DCG@k - IDCG@k)+] / IDCG@k. The second term is
  the ``min(1, .)`` cap of :func:`~ragsweep.metrics.retrieval.ndcg`; it is 0 (and the
  first term alone is exact) whenever no ordering has DCG > IDCG, always so when each
  candidate covers at most one item (distinct items at distinct ranks: rearrangement). When
  a chunk covers several items it may pack more gain at rank 1 than the ideal; the excess
  is then computed exactly by a walk over the top ranks that branches only on the chunk
  types still adding gain, closes a branch in closed form as soon as its DCG reaches IDCG
  (DCG only grows: its excess is its DCG plus the expected gain of the remaining ranks,
  from the same P_c, minus IDCG), and prunes a branch that cannot reach IDCG (bound: every
  uncovered grade at the next rank, and the remaining marginal gains, sorted, at the next
  discounts). Method ``"enumerated"``; past ``budget`` nodes it falls back as below.
* ``map@k``       = (1/R) sum_j sum_{r<=K} P_{c_j}(r) [ (m - a_j)/(N - c_j) (r - 1)/r
  + (a_j / c_j) / r ].  Given that item j is first covered at rank r, the r - 1 chunks
  above it are a uniform sample of the N - c_j chunks not covering j, (m - a_j) of them
  relevant, and the chunk at r is a uniform one of the c_j covering chunks. With one
  chunk per item and k = 0 this is Bestgen's exact expected AP of the random baseline
  [Bes15], (1/N)[(m-1)/(N-1)(N - H_N) + H_N]; at a cutoff, compare [MIM25].

Chance: enumeration and sampling
--------------------------------
Used only when the ndcg excess walk exceeds its node budget (never on the bundled data),
or when forced with ``method="enumerate"`` / ``"sample"`` (for any metric; the tests use
this to check the closed forms). Candidates with the same (covered items, relevant) are
interchangeable, so the top K is a random *word* over a few chunk types drawn without
replacement. When the number of such words is at most ``exact_budget`` (default 5000),
they are all enumerated with their exact probabilities (method ``"enumerated"``).
Otherwise ``samples`` (default 2000) orderings are drawn with a fixed seed derived from
(``seed``, case id, metric), so results are reproducible and independent across cases,
and the mean is returned with its standard error s / sqrt(n) (method ``"sampled"``).
Both evaluate :func:`~ragsweep.metrics.retrieval.per_case_value` itself on each ordering,
so they use exactly the metric definitions of the report.

Oracle
------
* ``hits@k`` = min(K, m); ``hit_rate@k`` = ``mrr@k`` = 1 and ``first_relevant_rank`` = 1
  when m >= 1 (else 0 / None); ``precision@k`` = min(K, m) / k; ``r_precision`` = the
  ``recall@R`` oracle (min(R, m) / R in ranx's one-chunk-per-item world).
* ``recall@k`` = (max number of items covered by K candidates) / R. When each candidate
  covers at most one item this is min(K, coverable items); in general it is maximum
  coverage (NP-hard), solved exactly by branch and bound over the distinct, non-dominated
  cover sets (a set contained in another is never needed).
* ``map@k`` = the same maximum coverage / R when every covering candidate is relevant
  (always so for the rules of :mod:`~ragsweep.metrics.relevance`): AP <= covered / R since
  precision <= 1, and putting a maximum-coverage set first gives precision 1 at each of
  its ranks. Otherwise an exhaustive search over orderings of chunk types.
* ``ndcg@k`` = min(1, max DCG@k / IDCG@k). Each candidate covering at most one item: the
  coverable grades in descending order (exact). Otherwise: exact branch and bound over
  orderings of the non-dominated cover sets (bound: the current DCG plus the remaining
  marginal gains, sorted, at the next ranks; stops as soon as the cap 1 is reached).

Token budgets
-------------
``recall@Btok`` and ``hit_rate@Btok`` (:mod:`~ragsweep.metrics.retrieval`) read the longest
prefix of the ordering whose chunks' tokens t_i sum to at most B, so their levels depend on
each candidate's length (``RankVerdict.tokens``) and no rank distribution gives them. Chance:

* every candidate fits (sum_i t_i <= B): the whole pool is read in any order, so chance =
  oracle = the metric over all candidates (method ``"closed_form"``);
* otherwise, exactly by enumerating the sets S with t(S) <= B that can be the prefix (while
  the walk visits at most ``exact_budget`` nodes): the
  first |S| positions hold S (probability |S|! (N - |S|)! / N!) and the next chunk is one of
  the f(S) that do not fit after them (probability f(S) / (N - |S|)), so
  P(prefix = S) = |S|! (N - |S| - 1)! f(S) / N! and chance = sum_S P(S) metric(S) (method
  ``"enumerated"``);
* else by ``samples`` seeded random orderings, as above (method ``"sampled"``).

Oracle: ``hit_rate`` = 1 when a relevant candidate has t_i <= B; ``recall`` = the most items
covered by a set of candidates of at most B tokens (put first, the set is a fitting prefix):
budgeted maximum coverage, solved exactly by branch and bound over the covering candidates
(bound: the items the remaining candidates could still add), or the greedy choice of most
new items per token when cut short (``"greedy"``: a lower bound). Candidates passed as
``extra_blank`` have no length: a budget metric refuses them.

The searches stop after ``budget`` nodes (default 100 000, far beyond what a CUAD case
needs). If a search is cut short, the best ordering found so far (at least the greedy
one) is returned and the method says ``"greedy"``: that value is achievable, so it is a
*lower bound* of the true oracle. :func:`oracle_estimate` reports the method.

References
----------
[Bes15] Y. Bestgen, "Exact Expected Average Precision of the Random Baseline for System
    Evaluation", The Prague Bulletin of Mathematical Linguistics 103, 2015.
[Fel68] W. Feller, An Introduction to Probability Theory and Its Applications, vol. I,
    3rd ed., Wiley, 1968 (hypergeometric distribution).
[JK02] K. Järvelin, J. Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4), 2002.
[JKK05] N. L. Johnson, A. W. Kemp, S. Kotz, Univariate Discrete Distributions, 3rd ed.,
    Wiley, 2005 (negative hypergeometric distribution).
[MIM25] T. Manzhos, T. Ianevych, O. Melnyk, "Average Precision at Cutoff k under Random
    Rankings: Expectation and Variance", arXiv:2511.02571, 2025.
"""

from __future__ import annotations

import hashlib
import math
import random
import statistics
import zlib
from bisect import bisect_right
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NotRequired, TypedDict, TypeVar

from . import registry
from .retrieval import Judgement, RankVerdict, parse_budget, parse_metric, per_case_value

__all__ = [
    "Estimate",
    "Baselines",
    "chance",
    "chance_estimate",
    "oracle",
    "oracle_estimate",
    "case_baselines",
]

# the token-budget families whose levels _Chunks.values computes
_BUDGETED: tuple[str, ...] = ("hit_rate", "recall")
# what the enumeration of chunk types may merge: the metrics that read only relevance, or only covers
_ONLY_RELEVANT = {"hits", "hit_rate", "precision", "mrr", "first_relevant_rank"}
_ONLY_COVERS = {"recall", "ndcg", "r_precision"}

DEFAULT_SAMPLES = 2000
DEFAULT_EXACT_BUDGET = 5000
DEFAULT_SEARCH_BUDGET = 100_000
_MAX_ENUM_DEPTH = 400  # recursion guard for enumeration (deeper words are sampled)


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


# --------------------------------------------------------------------------- the pool


@dataclass
class _Pool:
    """A case's candidates, grouped by (covered items, relevant)."""

    judgement: Judgement
    keys: list[tuple[frozenset[str], bool]]
    counts: list[int]
    n: int
    m: int
    items: dict[str, int]
    cover_count: dict[str, int]  # c_j
    rel_cover_count: dict[str, int]  # a_j
    # the best-cover oracles by (family, depth, target, budget), and the budget levels by budget
    cover_cache: dict[tuple[object, ...], tuple[float, str]] = field(default_factory=dict)
    budget_cache: dict[int, tuple[dict[str, Estimate], dict[str, Estimate]]] = field(default_factory=dict)


def _pool(j: Judgement, extra_blank: int = 0) -> _Pool:
    if extra_blank < 0:
        raise ValueError("extra_blank must be >= 0")
    item_ids = frozenset(j.items)
    tally: Counter[tuple[frozenset[str], bool]] = Counter()  # insertion order kept: the pool's order
    for h in j.hits:
        tally[(h.covers & item_ids, bool(h.relevant))] += 1
    if extra_blank:
        blank: tuple[frozenset[str], bool] = (frozenset(), False)
        tally[blank] += extra_blank
    keys = list(tally)
    counts = [tally[k] for k in keys]
    c: dict[str, int] = dict.fromkeys(j.items, 0)
    a: dict[str, int] = dict.fromkeys(j.items, 0)
    for (cov, rel), n in zip(keys, counts):
        for item in cov:
            c[item] += n
            if rel:
                a[item] += n
    return _Pool(
        judgement=j,
        keys=keys,
        counts=counts,
        n=sum(counts),
        m=sum(n for (_, rel), n in zip(keys, counts) if rel),
        items=dict(j.items),
        cover_count=c,
        rel_cover_count=a,
    )


def _leveled(base: str) -> registry.MetricSpec | None:
    """The record of ``base`` when it has a chance and an oracle level."""
    spec = registry.get(base)
    return spec if spec is not None and spec.chance is not None and spec.oracle is not None else None


def _pooled(base: str) -> bool:
    """Whether this module's closed forms and searches give ``base``'s levels (else its record's own)."""
    spec = _leveled(base)
    return spec is not None and isinstance(spec.chance, registry.PooledLevel)


def _resolve(metric: str, k: int | None) -> tuple[str, int]:
    base, mk = parse_metric(metric)
    if _leveled(base) is None:
        supported = [m.name for m in registry.metrics("at_k", "ranking") if _leveled(m.name)]
        raise ValueError(f"no chance/oracle level for {metric!r} (supported: {', '.join(supported)})")
    if k is None:
        k = mk
    elif mk and mk != k:
        raise ValueError(f"{metric!r} conflicts with k={k}")
    if k < 0:
        raise ValueError("k must be >= 0")
    return base, k


def _name(base: str, k: int) -> str:
    return base if (k == 0 or base == "r_precision") else f"{base}@{k}"


def _depth(p: _Pool, base: str, k: int) -> int:
    """How many top positions the metric reads (K)."""
    if base == "r_precision":
        return min(len(p.items), p.n)
    return p.n if k == 0 else min(k, p.n)


# --------------------------------------------------------------------------- closed forms


@lru_cache(maxsize=65536)
def _moments(n: int, c: int, depth: int) -> tuple[float, float, float, float, float]:
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


def _idcg(items: Mapping[str, int], k: int) -> float:
    return _ideal_dcg(items.values(), k)


def _ideal_dcg(grades: Iterable[float], k: int) -> float:
    ideal = sorted(grades, reverse=True)
    if k:
        ideal = ideal[:k]
    return sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))


def _closed_chance(p: _Pool, base: str, k: int) -> float | None:
    """The closed form (for ndcg: E[DCG] / IDCG, before the cap excess is subtracted)."""
    n, m, big_r = p.n, p.m, len(p.items)
    depth = _depth(p, base, k)
    if base == "first_relevant_rank":
        s0, _, _, _, s_r = _moments(n, m, depth)
        return s_r / s0 if s0 > 0 else None
    if n == 0:
        return 0.0
    if base == "hits":
        return depth * m / n
    if base == "precision":
        return depth * m / (n * (k if k else n))
    if base == "r_precision":  # = recall@R in retrieval.py
        return _closed_chance(p, "recall", big_r)
    if base == "hit_rate":
        return _moments(n, m, depth)[0]
    if base == "mrr":
        return _moments(n, m, depth)[1]
    if base == "recall":
        return math.fsum(_moments(n, p.cover_count[i], depth)[0] for i in p.items) / big_r
    if base == "ndcg":
        idcg = _idcg(p.items, k)
        if idcg == 0.0:
            return 0.0
        edcg = math.fsum(g * _moments(n, p.cover_count[i], depth)[2] for i, g in p.items.items())
        return edcg / idcg
    if base == "map":
        total = []
        for i in p.items:
            c = p.cover_count[i]
            if c == 0:
                continue
            a = p.rel_cover_count[i]
            _, s_inv, _, s_rm1, _ = _moments(n, c, depth)
            above = (m - a) / (n - c) * s_rm1 if n > c else 0.0
            total.append(above + a / c * s_inv)
        return math.fsum(total) / big_r
    raise AssertionError(base)


# --------------------------------------------------------------------------- cover search


def _cover_sets(p: _Pool) -> tuple[list[str], list[int]]:
    """Item ids and the distinct, non-dominated cover sets as bit masks over them."""
    ids = list(p.items)
    bit = {item: 1 << i for i, item in enumerate(ids)}
    masks = {sum(bit[x] for x in cov) for (cov, _), n in zip(p.keys, p.counts) if cov and n}
    kept: list[int] = []
    for mask in sorted(masks, key=lambda x: (-x.bit_count(), x)):
        if not any(k & mask == mask for k in kept):
            kept.append(mask)
    return ids, kept


class _Stop(Exception):
    pass


def _best_cover(
    masks: Sequence[int],
    weights: Sequence[float],
    depth: int,
    ordered: bool,
    target: float,
    budget: int,
) -> tuple[float, str]:
    """Max over <= depth of the sets of sum_{new items} weight * discount(rank).

    ``ordered``: discount 1/log2(rank + 1) (DCG) and order matters; else discount 1 and
    subsets are searched (maximum coverage). Returns (best value, status) with status
    ``"complete"`` (proved optimal), ``"target"`` (reached ``target``, search stopped) or
    ``"budget"`` (cut short: best found, a lower bound).
    """
    n = len(masks)
    depth = min(depth, n) if not ordered else depth
    disc = [1.0 / math.log2(r + 2) if ordered else 1.0 for r in range(depth)]
    members = [[i for i in range(len(weights)) if mask >> i & 1] for mask in masks]

    def gain(s: int, covered: int) -> float:
        return sum(weights[i] for i in members[s] if not covered >> i & 1)

    best = _greedy_cover(masks, gain, disc, depth)
    if best >= target:
        return best, "target"
    return _search_cover(masks, gain, disc, depth, ordered, target, budget, best)


def _greedy_cover(masks: Sequence[int], gain: Callable[[int, int], float], disc: Sequence[float], depth: int) -> float:
    """The greedy incumbent of :func:`_best_cover`: at each rank the set with the largest gain."""
    n = len(masks)
    covered = used = 0
    best = 0.0
    for r in range(depth):
        cand = [(gain(s, covered), -s) for s in range(n) if not used >> s & 1]
        if not cand:
            break
        g, neg = max(cand)
        if g <= 0:
            break
        best += g * disc[r]
        covered |= masks[-neg]
        used |= 1 << -neg
    return best


def _search_cover(
    masks: Sequence[int],
    gain: Callable[[int, int], float],
    disc: Sequence[float],
    depth: int,
    ordered: bool,
    target: float,
    budget: int,
    best: float,
) -> tuple[float, str]:
    """Branch and bound of :func:`_best_cover` from the incumbent ``best``."""
    n = len(masks)
    nodes = 0
    eps = 1e-12 * max(1.0, abs(target)) if math.isfinite(target) else 1e-12

    def dfs(level: int, covered: int, value: float, start: int, used: int) -> None:
        nonlocal best, nodes
        nodes += 1
        if nodes > budget:
            raise _Stop("budget")
        if value > best:
            best = value
            if best >= target:
                raise _Stop("target")
        if level == depth:
            return
        cand = []
        for s in range(start, n) if not ordered else range(n):
            if used >> s & 1:
                continue
            g = gain(s, covered)
            if g > 0:
                cand.append((g, s))
        if not cand:
            return
        cand.sort(key=lambda t: (-t[0], t[1]))
        bound = value + sum(g * disc[level + t] for t, (g, _) in enumerate(cand[: depth - level]))
        if bound <= best + eps:
            return
        for g, s in cand:
            dfs(level + 1, covered | masks[s], value + g * disc[level], s + 1, used | 1 << s)

    try:
        dfs(0, 0, 0.0, 0, 0)
    except _Stop as stop:
        return best, str(stop)
    return best, "complete"


def _max_dcg(p: _Pool, k: int, target: float, budget: int) -> tuple[float, str]:
    key = ("max_dcg", k, target, budget)
    if key not in p.cover_cache:
        ids, masks = _cover_sets(p)
        weights = [float(p.items[i]) for i in ids]
        p.cover_cache[key] = _best_cover(masks, weights, _depth(p, "ndcg", k), True, target, budget)
    return p.cover_cache[key]


def _max_cover(p: _Pool, depth: int, budget: int) -> tuple[float, str]:
    key = ("max_cover", depth, budget)
    if key not in p.cover_cache:
        ids, masks = _cover_sets(p)
        total = float(sum(1 for i in ids if p.cover_count[i] > 0))
        p.cover_cache[key] = _best_cover(masks, [1.0] * len(ids), depth, False, total, budget)
    return p.cover_cache[key]


@lru_cache(maxsize=65536)
def _shifted_log_moment(n: int, c: int, depth: int, offset: int) -> float:
    """sum_{s<=depth} P_c(s) / log2(offset + s + 1): the discount of the first of c marked
    chunks among the n still unranked ones, below ``offset`` ranks already filled."""
    if c <= 0 or n <= 0 or depth <= 0:
        return 0.0
    total = 0.0
    survive = 1.0
    for s in range(1, depth + 1):
        total += survive * c / (n - s + 1) / math.log2(offset + s + 1)
        survive *= (n - c - s + 1) / (n - s + 1)
        if survive <= 0.0:
            break
    return total


class _OverBudget(Exception):
    pass


def _ndcg_cap_excess(p: _Pool, k: int, budget: int) -> tuple[float, bool] | None:
    """E[max(0, DCG@k - IDCG@k)] under random ordering, and whether any ordering can exceed.

    E[min(1, DCG/IDCG)] = (E[DCG] - E[(DCG - IDCG)+]) / IDCG. The excess is found by a
    depth-first walk over the top ranks, one branch per chunk type that still adds gain
    (plus one for all the others), with each branch's exact probability. A branch is closed
    when (a) its DCG already reaches IDCG: DCG only grows, so its excess is its DCG plus the
    closed-form expected gain of the remaining ranks, minus IDCG; or (b) its DCG plus an
    upper bound of what the remaining ranks can add (the remaining marginal gains, sorted,
    at the next discounts) cannot pass IDCG: no excess. Returns None beyond ``budget`` nodes.
    """
    if all(len(cov) <= 1 for (cov, _), n in zip(p.keys, p.counts) if n):
        return 0.0, False  # distinct ranks for distinct items: DCG <= IDCG (rearrangement)
    if _idcg(p.items, k) == 0.0:
        return 0.0, False
    ids = list(p.items)
    bit = {item: 1 << i for i, item in enumerate(ids)}
    tally: Counter[int] = Counter()
    for (cov, _), n in zip(p.keys, p.counts):
        if cov and n:
            tally[sum(bit[x] for x in cov)] += n
    return _cap_excess(
        p.n,
        k,
        budget,
        tuple(float(p.items[i]) for i in ids),
        tuple(sorted(tally.items())),
        tuple(p.cover_count[i] for i in ids),
    )


@lru_cache(maxsize=65536)
def _cap_excess(
    n: int,
    k: int,
    budget: int,
    grades: tuple[float, ...],
    tally: tuple[tuple[int, int], ...],
    cover_counts: tuple[int, ...],
) -> tuple[float, bool] | None:
    """:func:`_ndcg_cap_excess` of a pool reduced to what the walk reads: its size, the items'
    grades and cover counts, and how many chunks cover each set of items (a bit mask over the
    items). Cases with the same shape (common: one contract's questions are scored over the
    same chunks) share one walk; the walk at 255 CUAD contracts was a third of the scoring time."""
    idcg = _ideal_dcg(grades, k)
    depth = n if k == 0 else min(k, n)  # _depth(p, "ndcg", k)
    grade = list(grades)
    masks = [mask for mask, _ in tally]
    members = [[i for i in range(len(grade)) if mask >> i & 1] for mask in masks]
    try:
        return _excess_walk(n, depth, budget, idcg, grade, masks, members, list(cover_counts), tally)
    except _OverBudget:
        return None


_K = TypeVar("_K")
_V = TypeVar("_V")


class _Memo(dict[_K, _V]):
    """A dict that computes a missing value once, with ``compute(key)``."""

    def __init__(self, compute: Callable[[_K], _V]):
        super().__init__()
        self.compute = compute

    def __missing__(self, key: _K) -> _V:
        value = self[key] = self.compute(key)
        return value


def _excess_walk(
    n: int,
    depth: int,
    budget: int,
    idcg: float,
    grade: list[float],
    masks: list[int],
    members: list[list[int]],
    cover_count: list[int],
    tally: tuple[tuple[int, int], ...],
) -> tuple[float, bool]:
    """The walk of :func:`_cap_excess`: (excess, exceeded); raises :class:`_OverBudget`.

    What depends only on the items already covered is computed once per covered set (the walk
    meets the same set on many branches): each type's marginal gain, largest first, the grades
    still uncovered, and the expected gain of the remaining ranks."""
    disc = [0.0] + [1.0 / math.log2(r + 1) for r in range(1, depth + 1)]  # disc[rank]
    excess, nodes, exceeded = 0.0, 0, False
    gains_of = _Memo[int, list[tuple[float, int]]](lambda covered: _marginal_gains(covered, grade, masks, members))
    left_of = _Memo[int, float](lambda covered: sum([grade[i] for i in range(len(grade)) if not covered >> i & 1]))
    more_of = _Memo[tuple[int, int], float](lambda key: _expected_more(n, depth, key[0], key[1], grade, cover_count))

    def walk(level: int, covered: int, dcg: float, prob: float, counts: list[int]) -> None:
        nonlocal excess, nodes, exceeded
        nodes += 1
        if nodes > budget or level > _MAX_ENUM_DEPTH:
            raise _OverBudget
        if dcg >= idcg:
            exceeded = True
            excess += prob * (dcg + more_of[level, covered] - idcg)
            return
        if level == depth:
            return
        useful = [(g, t) for g, t in gains_of[covered] if counts[t]]
        if not useful:
            return
        # what the remaining ranks can add: at most every uncovered grade at the next rank,
        # and at most the marginal gains, sorted, at the next discounts
        if dcg + left_of[covered] * disc[level + 1] <= idcg:
            return
        bound = dcg
        for r, (g, _) in enumerate(useful[: depth - level]):
            bound += g * disc[level + 1 + r]
        if bound <= idcg:
            return
        rest = n - level
        idle = rest - sum(counts[t] for _, t in useful)
        if idle:
            walk(level + 1, covered, dcg, prob * idle / rest, counts)
        for g, t in useful:
            c = counts[t]
            counts[t] = c - 1
            walk(level + 1, covered | masks[t], dcg + g * disc[level + 1], prob * c / rest, counts)
            counts[t] = c

    walk(0, 0, 0.0, 1.0, [count for _, count in tally])
    return excess, exceeded


def _expected_more(n: int, depth: int, level: int, covered: int, grade: list[float], cover_count: list[int]) -> float:
    """Closed-form expected gain of the ranks below ``level`` from the items not in ``covered``."""
    rest = n - level
    return math.fsum(
        grade[i] * _shifted_log_moment(rest, cover_count[i], depth - level, level)
        for i in range(len(grade))
        if not covered >> i & 1
    )


def _marginal_gains(
    covered: int, grade: list[float], masks: list[int], members: list[list[int]]
) -> list[tuple[float, int]]:
    """Each chunk type's marginal gain over ``covered`` (types adding an item), largest first."""
    return sorted(
        (
            (sum([grade[i] for i in members[t] if not covered >> i & 1]), t)
            for t, mask in enumerate(masks)
            if mask & ~covered
        ),
        reverse=True,
    )


# --------------------------------------------------------------------------- words of chunk types


def _project(p: _Pool, base: str) -> tuple[list[RankVerdict], list[int]]:
    """Interchangeable chunk types for ``base`` with a representative hit and a count each."""
    merged: Counter[tuple[frozenset[str], bool]] = Counter()
    for (cov, rel), n in zip(p.keys, p.counts):
        key: tuple[frozenset[str], bool]
        if base in _ONLY_RELEVANT:
            key = (frozenset(), rel)
        elif base in _ONLY_COVERS:
            key = (cov, bool(cov))
        else:
            key = (cov, rel)
        merged[key] += n
    reps = [
        RankVerdict(rank=0, covers=cov, relevant=rel, grade=max((p.items[i] for i in cov), default=0))
        for cov, rel in merged
    ]
    return reps, list(merged.values())


def _count_words(counts: Sequence[int], depth: int, cap: int) -> int:
    """Number of distinct words of length ``depth`` using type t at most counts[t] times
    (capped at cap + 1)."""
    dp = [1] + [0] * depth  # dp[L] = words of length L over the types seen so far
    for c in counts:
        new = [0] * (depth + 1)
        for length, ways in enumerate(dp):
            if not ways:
                continue
            for extra in range(0, min(c, depth - length) + 1):
                new[length + extra] += ways * math.comb(length + extra, extra)
        dp = [min(x, cap + 1) for x in new]
    return dp[depth]


def _value(p: _Pool, word: Sequence[RankVerdict], name: str) -> float | int | None:
    j = p.judgement
    return per_case_value(Judgement(case_id=j.case_id, rule=j.rule, items=p.items, hits=list(word)), name)


def _enumerate_chance(p: _Pool, base: str, k: int) -> float | None:
    reps, counts = _project(p, base)
    depth = _depth(p, base, k)
    name = _name(base, k)
    acc = [0.0, 0.0]  # sum p*v, sum p over defined values
    remaining = list(counts)
    word: list[RankVerdict] = []

    def walk(prob: float, level: int) -> None:
        if level == depth:
            v = _value(p, word, name)
            if v is not None:
                acc[0] += prob * float(v)
                acc[1] += prob
            return
        left = p.n - level
        for t, c in enumerate(remaining):
            if c:
                remaining[t] -= 1
                word.append(reps[t])
                walk(prob * c / left, level + 1)
                word.pop()
                remaining[t] += 1

    walk(1.0, 0)
    if acc[1] <= 0.0:
        return None
    return acc[0] / acc[1] if base == "first_relevant_rank" else acc[0]


def _seed(seed: int, case_id: str, name: str) -> int:
    return zlib.crc32(f"{seed}\x1f{case_id}\x1f{name}".encode())


def _sample_chance(p: _Pool, base: str, k: int, samples: int, seed: int) -> Estimate:
    reps, counts = _project(p, base)
    depth = _depth(p, base, k)
    name = _name(base, k)
    bounds = []
    total = 0
    for c in counts:
        total += c
        bounds.append(total)
    rng = random.Random(_seed(seed, p.judgement.case_id, name))
    values: list[float] = []
    seen: dict[tuple[int, ...], float | int | None] = {}  # most words repeat (mostly filler)
    for _ in range(samples):
        word = tuple(bisect_right(bounds, i) for i in rng.sample(range(p.n), depth))
        if word not in seen:
            seen[word] = _value(p, [reps[t] for t in word], name)
        v = seen[word]
        if v is not None:
            values.append(float(v))
    if not values:
        return Estimate(None, "sampled", 0.0, samples)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return Estimate(statistics.fmean(values), "sampled", se, samples)


def _search_oracle(p: _Pool, base: str, k: int, budget: int) -> Estimate:
    """Best ordering of chunk types by exhaustive search (greedy when over budget)."""
    reps, counts = _project(p, base)
    depth = _depth(p, base, k)
    name = _name(base, k)
    sign = -1.0 if registry.lower_is_better(base) else 1.0

    def score(word: list[RankVerdict]) -> float | None:
        v = _value(p, word, name)
        return None if v is None else sign * float(v)

    best: float | None = None
    if depth <= _MAX_ENUM_DEPTH and _count_words(counts, depth, budget) <= budget:
        remaining = list(counts)
        word: list[RankVerdict] = []

        def walk(level: int) -> None:
            nonlocal best
            if level == depth:
                v = score(word)
                if v is not None and (best is None or v > best):
                    best = v
                return
            for t, c in enumerate(remaining):
                if c:
                    remaining[t] -= 1
                    word.append(reps[t])
                    walk(level + 1)
                    word.pop()
                    remaining[t] += 1

        walk(0)
        method = "exact"
    else:
        remaining = list(counts)
        word = []
        for _ in range(depth):
            options = []
            for t, c in enumerate(remaining):
                if c:
                    v = score(word + [reps[t]])
                    options.append((-math.inf if v is None else v, reps[t].relevant, len(reps[t].covers), -t))
            _, _, _, neg = max(options)
            remaining[-neg] -= 1
            word.append(reps[-neg])
        best = score(word)
        method = "greedy"
    return Estimate(None if best is None else sign * best, method)


# --------------------------------------------------------------------------- token budgets


@dataclass(frozen=True)
class _Chunks:
    """A case's candidates for the token-budget levels: lengths, covered items (bit masks), relevance."""

    tokens: list[int]
    masks: list[int]
    relevant: list[bool]
    n_items: int

    def values(self, chosen: Iterable[int]) -> tuple[float, float]:
        """(recall, hit_rate) of a context holding the candidates ``chosen``."""
        covered, hit = 0, False
        for i in chosen:
            covered |= self.masks[i]
            hit = hit or self.relevant[i]
        return covered.bit_count() / self.n_items, 1.0 if hit else 0.0


def _budget_chunks(j: Judgement, extra_blank: int) -> _Chunks:
    if extra_blank:
        raise ValueError("a token-budget level needs every candidate's length: pass the candidates, not extra_blank")
    bit = {item: 1 << i for i, item in enumerate(j.items)}
    tokens = []
    for h in j.hits:
        if h.tokens is None:
            raise ValueError(f"case {j.case_id}: a token-budget level needs each candidate's token count")
        tokens.append(h.tokens)
    masks = [sum(bit[x] for x in h.covers if x in bit) for h in j.hits]
    return _Chunks(tokens, masks, [bool(h.relevant) for h in j.hits], len(j.items))


def _budget_chance(
    c: _Chunks, budget: int, case_id: str, samples: int, seed: int, nodes: int
) -> tuple[dict[str, float], str, dict[str, float]]:
    """Chance of (recall, hit_rate) at ``budget``: values, method, standard errors (sampled only)."""
    n = len(c.tokens)
    if sum(c.tokens) <= budget:
        recall, hit = c.values(range(n))
        return {"recall": recall, "hit_rate": hit}, "closed_form", dict.fromkeys(_BUDGETED, 0.0)
    try:
        return _enumerate_budget(c, budget, nodes), "enumerated", dict.fromkeys(_BUDGETED, 0.0)
    except _Stop:
        pass
    rng = random.Random(_seed(seed, case_id, f"@{budget}tok"))
    cap = _most_that_fit(c.tokens, budget) + 1  # a prefix is never longer: later draws are not read
    rows = []
    for _ in range(samples):
        used, chosen = 0, []
        for i in rng.sample(range(n), min(n, cap)):
            used += c.tokens[i]
            if used > budget:
                break
            chosen.append(i)
        rows.append(c.values(chosen))
    means, errors = {}, {}
    for name, column in zip(("recall", "hit_rate"), zip(*rows, strict=True), strict=True):
        means[name] = statistics.fmean(column)
        errors[name] = statistics.stdev(column) / math.sqrt(len(column)) if len(column) > 1 else 0.0
    return means, "sampled", errors


def _most_that_fit(tokens: Sequence[int], budget: int) -> int:
    used = count = 0
    for t in sorted(tokens):
        used += t
        if used > budget:
            break
        count += 1
    return count


def _enumerate_budget(c: _Chunks, budget: int, nodes: int) -> dict[str, float]:
    """sum over the fitting sets S of P(prefix = S) metric(S), P as in the module docstring."""
    n = len(c.tokens)
    log_n = math.lgamma(n + 1)
    acc = [0.0, 0.0]
    chosen: list[int] = []
    visited = 0

    def walk(i: int, used: int) -> None:
        nonlocal visited
        visited += 1
        if visited > nodes:
            raise _Stop
        if i == n:
            size = len(chosen)
            if size == n:
                return  # not reached: every candidate fitting is the closed form
            room = budget - used
            # the chunks left out that do not fit after S (a chosen chunk is never "next")
            f = sum(1 for t in c.tokens if t > room) - sum(1 for k in chosen if c.tokens[k] > room)
            if f:
                weight = f * math.exp(math.lgamma(size + 1) + math.lgamma(n - size) - log_n)
                recall, hit = c.values(chosen)
                acc[0] += weight * recall
                acc[1] += weight * hit
            return
        if used + c.tokens[i] <= budget:
            chosen.append(i)
            walk(i + 1, used + c.tokens[i])
            chosen.pop()
        walk(i + 1, used)

    walk(0, 0)
    return {"recall": acc[0], "hit_rate": acc[1]}


def _budget_oracle(c: _Chunks, budget: int, nodes: int) -> tuple[dict[str, float], str]:
    """Oracle of (recall, hit_rate) at ``budget`` and the method of the recall search."""
    hit = 1.0 if any(r and t <= budget for r, t in zip(c.relevant, c.tokens, strict=True)) else 0.0
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
            raise _Stop
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
    except _Stop:
        method = "greedy"
    return {"recall": best / c.n_items, "hit_rate": hit}, method


def _greedy_budget_cover(c: _Chunks, order: Sequence[int], budget: int) -> int:
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


def _budget_levels(
    p: _Pool, extra_blank: int, budget: int, samples: int, seed: int, exact_nodes: int, nodes: int
) -> tuple[dict[str, Estimate], dict[str, Estimate]]:
    """Chance and oracle estimates of every token-budget family at ``budget`` (cached on the pool:
    one enumeration or one set of samples serves them all)."""
    key = budget
    if key not in p.budget_cache:
        j = p.judgement
        if not j.scored:
            none = {name: Estimate(None, "closed_form") for name in _BUDGETED}
            p.budget_cache[key] = (none, none)
        else:
            c = _budget_chunks(j, extra_blank)
            values, method, errors = _budget_chance(c, budget, j.case_id, samples, seed, exact_nodes)
            n = samples if method == "sampled" else 0
            chance_est = {name: Estimate(values[name], method, errors[name], n) for name in values}
            best, how = _budget_oracle(c, budget, nodes)
            oracle_est = {"recall": Estimate(best["recall"], how), "hit_rate": Estimate(best["hit_rate"], "exact")}
            p.budget_cache[key] = (chance_est, oracle_est)
    return p.budget_cache[key]


# --------------------------------------------------------------------------- public API


def _chance_pool(
    p: _Pool, base: str, k: int, method: str, samples: int, seed: int, exact_budget: int, budget: int
) -> Estimate:
    if method not in ("auto", "enumerate", "sample"):
        raise ValueError("method must be 'auto', 'enumerate' or 'sample'")
    if not p.judgement.scored:
        return Estimate(None, "closed_form")
    if method == "auto":
        if base != "ndcg":
            return Estimate(_closed_chance(p, base, k), "closed_form")
        capped = _ndcg_cap_excess(p, k, budget)
        if capped is not None:
            excess, can_bind = capped
            value = _closed_chance(p, base, k)
            if not can_bind or not value:
                return Estimate(value, "closed_form")
            return Estimate(max(0.0, value - excess / _idcg(p.items, k)), "enumerated")
    if p.n == 0:
        return Estimate(None if base == "first_relevant_rank" else 0.0, "closed_form")
    depth = _depth(p, base, k)
    if method == "enumerate" and depth > _MAX_ENUM_DEPTH:
        raise ValueError(f"cannot enumerate orderings of depth {depth} (> {_MAX_ENUM_DEPTH}); sample instead")
    if method == "enumerate" or (
        method == "auto"
        and depth <= _MAX_ENUM_DEPTH
        and _count_words(_project(p, base)[1], depth, exact_budget) <= exact_budget
    ):
        return Estimate(_enumerate_chance(p, base, k), "enumerated")
    return _sample_chance(p, base, k, samples, seed)


def _oracle_pool(p: _Pool, base: str, k: int, budget: int) -> Estimate:
    if not p.judgement.scored:
        return Estimate(None, "exact")
    n, m, big_r = p.n, p.m, len(p.items)
    depth = _depth(p, base, k)
    if base == "first_relevant_rank":
        return Estimate(1.0 if m and depth else None, "exact")
    if n == 0:
        return Estimate(0.0, "exact")
    if base == "hits":
        return Estimate(float(min(depth, m)), "exact")
    if base == "hit_rate" or base == "mrr":
        return Estimate(1.0 if m and depth else 0.0, "exact")
    if base == "precision":
        return Estimate(min(depth, m) / (k if k else n), "exact")
    if base == "r_precision":  # = recall@R in retrieval.py
        return _oracle_pool(p, "recall", big_r, budget)
    if base == "recall" or (base == "map" and all(rel for (cov, rel), c in zip(p.keys, p.counts) if cov and c)):
        best, status = _max_cover(p, depth, budget)
        return Estimate(best / big_r, "greedy" if status == "budget" else "exact")
    if base == "map":
        return _search_oracle(p, base, k, budget)
    if base == "ndcg":
        idcg = _idcg(p.items, k)
        if idcg == 0.0:
            return Estimate(0.0, "exact")
        best, status = _max_dcg(p, k, idcg, budget)
        return Estimate(min(1.0, best / idcg), "greedy" if status == "budget" else "exact")
    raise AssertionError(base)


def chance_estimate(
    judgement: Judgement,
    metric: str,
    k: int | None = None,
    *,
    extra_blank: int = 0,
    method: str = "auto",
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    exact_budget: int = DEFAULT_EXACT_BUDGET,
    budget: int = DEFAULT_SEARCH_BUDGET,
) -> Estimate:
    """Expected value of ``metric`` under a uniformly random ordering of the candidates.

    ``judgement.hits`` = all the case's candidate chunks (any order), plus ``extra_blank``
    irrelevant chunks covering nothing. ``metric`` as in the report (``"ndcg@10"``,
    ``"r_precision"``); ``k`` may be given separately (``chance(j, "ndcg", 10)``).
    ``method``: ``"auto"`` (closed form when exact, else enumeration within
    ``exact_budget`` words, else ``samples`` seeded orderings), ``"enumerate"`` or
    ``"sample"``; ``budget`` = nodes of the ndcg cap walk. Formulas: see the module docstring.
    A token-budget metric (``"recall@1500tok"``) needs each candidate's ``tokens``.
    """
    at_budget = parse_budget(metric)
    if at_budget is not None:
        p = _pool(judgement, 0)
        return _budget_levels(p, extra_blank, at_budget[1], samples, seed, exact_budget, budget)[0][at_budget[0]]
    base, k = _resolve(metric, k)
    if not _pooled(base):
        return _own_level(judgement, base, k, extra_blank, "chance")
    return _chance_pool(_pool(judgement, extra_blank), base, k, method, samples, seed, exact_budget, budget)


def chance(
    judgement: Judgement,
    metric: str,
    k: int | None = None,
    *,
    extra_blank: int = 0,
    method: str = "auto",
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    exact_budget: int = DEFAULT_EXACT_BUDGET,
    budget: int = DEFAULT_SEARCH_BUDGET,
) -> float | None:
    """:func:`chance_estimate`'s value: the metric's expected value under random ordering."""
    return chance_estimate(
        judgement,
        metric,
        k,
        extra_blank=extra_blank,
        method=method,
        samples=samples,
        seed=seed,
        exact_budget=exact_budget,
        budget=budget,
    ).value


def oracle_estimate(
    judgement: Judgement,
    metric: str,
    k: int | None = None,
    *,
    extra_blank: int = 0,
    budget: int = DEFAULT_SEARCH_BUDGET,
) -> Estimate:
    """Best value of ``metric`` over all orderings of the candidates (lowest for
    ``first_relevant_rank``). Method ``"exact"``, or ``"greedy"`` when a search over
    multi-item cover sets exceeded ``budget`` nodes (then an achievable lower bound)."""
    at_budget = parse_budget(metric)
    if at_budget is not None:
        p = _pool(judgement, 0)
        return _budget_levels(p, extra_blank, at_budget[1], DEFAULT_SAMPLES, 0, DEFAULT_EXACT_BUDGET, budget)[1][
            at_budget[0]
        ]
    base, k = _resolve(metric, k)
    if not _pooled(base):
        return _own_level(judgement, base, k, extra_blank, "oracle")
    return _oracle_pool(_pool(judgement, extra_blank), base, k, budget)


def _own_level(judgement: Judgement, base: str, k: int, extra_blank: int, which: str) -> Estimate:
    """A level by the function the metric's record names (method ``"registered"``)."""
    if extra_blank:
        raise ValueError(f"the {which} level of {base!r} needs every candidate: pass them, not extra_blank")
    spec = _leveled(base)
    assert spec is not None and spec.chance is not None and spec.oracle is not None  # _resolve checked
    if not judgement.scored:
        return Estimate(None, "registered")
    level = spec.chance if which == "chance" else spec.oracle
    assert not isinstance(level, registry.PooledLevel)  # _pooled sent those to the closed forms
    value = level(judgement, k)
    return Estimate(None if value is None else float(value), "registered")


def oracle(
    judgement: Judgement,
    metric: str,
    k: int | None = None,
    *,
    extra_blank: int = 0,
    budget: int = DEFAULT_SEARCH_BUDGET,
) -> float | None:
    """:func:`oracle_estimate`'s value: the best achievable value of the metric at k."""
    return oracle_estimate(judgement, metric, k, extra_blank=extra_blank, budget=budget).value


class BaselineMeans(TypedDict):
    """The mean level of each metric over the scored cases (:meth:`Baselines.means`)."""

    chance: dict[str, float | None]
    oracle: dict[str, float | None]
    chance_stderr: dict[str, float | None]  # from sampling alone; None: no case has a value


class CaseLevels(TypedDict):
    chance: dict[str, float | None]
    oracle: dict[str, float | None]


class BaselinesSummary(BaselineMeans):
    """:meth:`Baselines.as_dict`: the means, how they were computed, and each case's levels if asked."""

    metrics: list[str]
    methods: dict[str, dict[str, int]]
    n_scored: int
    excluded: dict[str, int]  # reason -> cases
    per_case: NotRequired[dict[str, CaseLevels]]


@dataclass
class Baselines:
    """Per-case chance and oracle levels for a list of metrics (see :func:`case_baselines`)."""

    metrics: list[str]
    chance: dict[str, dict[str, float | None]]  # case id -> metric -> value (scored cases)
    oracle: dict[str, dict[str, float | None]]
    chance_stderr: dict[str, dict[str, float]]  # only the sampled entries
    methods: dict[str, dict[str, int]]  # metric -> {"chance:closed_form": n, "oracle:exact": n, ...}
    excluded: dict[str, list[str]]  # reason -> case ids (not scored, as in aggregate)

    def means(self) -> BaselineMeans:
        """``{"chance": {metric: mean}, "oracle": {...}, "chance_stderr": {...}}`` over the
        scored cases with a value (first_relevant_rank: the cases where one can be found).
        ``chance_stderr`` is the standard error of the mean from sampling alone
        (sqrt(sum se_i^2) / n; 0 when every case was exact)."""
        out: BaselineMeans = {"chance": {}, "oracle": {}, "chance_stderr": {}}
        for metric in self.metrics:
            for mean, table in ((out["chance"], self.chance), (out["oracle"], self.oracle)):
                vals = [v for row in table.values() if (v := row.get(metric)) is not None]  # no oracle row: not asked
                mean[metric] = math.fsum(vals) / len(vals) if vals else None
            n_c = sum(1 for row in self.chance.values() if row[metric] is not None)
            var = math.fsum(row.get(metric, 0.0) ** 2 for row in self.chance_stderr.values())
            out["chance_stderr"][metric] = math.sqrt(var) / n_c if n_c else None
        return out

    def as_dict(self, per_case: bool = False) -> BaselinesSummary:
        means = self.means()
        out: BaselinesSummary = {
            "metrics": self.metrics,
            "chance": means["chance"],
            "oracle": means["oracle"],
            "chance_stderr": means["chance_stderr"],
            "methods": self.methods,
            "n_scored": len(self.chance),
            "excluded": {k: len(v) for k, v in self.excluded.items()},
        }
        if per_case:
            out["per_case"] = {cid: {"chance": self.chance[cid], "oracle": self.oracle[cid]} for cid in self.chance}
        return out


def _metric_levels(
    p: _Pool, blank: int, base: str, k: int, budgeted: bool, samples: int, seed: int, exact_budget: int, budget: int
) -> tuple[Estimate, Estimate]:
    """One metric's chance and oracle estimates on a case's pool (``k``: its budget in tokens when ``budgeted``)."""
    if not budgeted and not _pooled(base):
        return _own_level(p.judgement, base, k, blank, "chance"), _own_level(p.judgement, base, k, blank, "oracle")
    if budgeted:
        chance_est, oracle_est = _budget_levels(p, blank, k, samples, seed, exact_budget, budget)
        return chance_est[base], oracle_est[base]
    return _chance_pool(p, base, k, "auto", samples, seed, exact_budget, budget), _oracle_pool(p, base, k, budget)


class _LevelMemo:
    """The levels of the pools seen lately, by content: a sweep's configurations that share a chunking
    share each case's pool (the candidates depend on neither the retriever nor the top-k). The key is a
    digest of every field the closed forms, searches and seeds read, so a level served from here is the
    one computed anew."""

    def __init__(self, pools: int = 8192):
        self.pools = pools
        self.by_pool: OrderedDict[bytes, dict[str, tuple[Estimate, Estimate]]] = OrderedDict()

    def of(self, j: Judgement, settings: tuple[int, ...]) -> dict[str, tuple[Estimate, Estimate]]:
        """The levels known for this pool (filled in place by the caller)."""
        shown = repr(
            (j.case_id, j.rule, j.excluded, list(j.items.items()), settings,
             [(h.rank, sorted(h.covers), h.relevant, h.grade, h.doc_id, h.tokens) for h in j.hits])
        )  # fmt: skip
        key = hashlib.blake2b(shown.encode(), digest_size=16).digest()
        known = self.by_pool.pop(key, None)
        self.by_pool[key] = known = known if known is not None else {}
        if len(self.by_pool) > self.pools:
            self.by_pool.popitem(last=False)
        return known


_LEVELS = _LevelMemo()


def case_baselines(
    judgements: Iterable[Judgement],
    metrics: Sequence[str],
    *,
    extra_blank: Mapping[str, int] | None = None,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    exact_budget: int = DEFAULT_EXACT_BUDGET,
    budget: int = DEFAULT_SEARCH_BUDGET,
    oracle_levels: bool = True,
) -> Baselines:
    """Chance (and oracle) of every metric for every case.

    ``judgements``: one candidate judgement per case (see the module docstring);
    ``extra_blank``: case id -> number of extra irrelevant, non-covering candidates.
    Each case's candidates are grouped once and the closed forms' rank distributions are
    cached on (N, c, K) across cases and metrics, so a case costs O(N) once plus
    O(K + R) per metric. A metric whose record has no chance level (``citation_precision``) has no
    baseline: it is left out.
    """
    metrics = [name for name in metrics if parse_budget(name) is not None or _leveled(parse_metric(name)[0])]
    parsed = [(name, *(parse_budget(name) or _resolve(name, None))) for name in metrics]
    budgeted = {name for name in metrics if parse_budget(name) is not None}
    extra_blank = extra_blank or {}
    chance_t: dict[str, dict[str, float | None]] = {}
    oracle_t: dict[str, dict[str, float | None]] = {}
    stderr_t: dict[str, dict[str, float]] = {}
    methods: dict[str, Counter[str]] = {name: Counter() for name in metrics}
    excluded: dict[str, list[str]] = {}
    for j in judgements:
        if not j.scored:
            excluded.setdefault(j.excluded or "no relevance information", []).append(j.case_id)
            continue
        blank = extra_blank.get(j.case_id, 0)
        p = _pool(j, blank)
        known = _LEVELS.of(j, (blank, samples, seed, exact_budget, budget))
        crow: dict[str, float | None] = {}
        orow: dict[str, float | None] = {}
        for name, base, k in parsed:
            if name not in known:
                levels = _metric_levels(p, blank, base, k, name in budgeted, samples, seed, exact_budget, budget)
                if name in budgeted or _pooled(base):  # a registered level may read anything of the judgement
                    known[name] = levels
            else:
                levels = known[name]
            est, o = levels
            crow[name] = est.value
            tally = methods[name]
            tally[f"chance:{est.method}"] += 1
            if est.method == "sampled":
                stderr_t.setdefault(j.case_id, {})[name] = est.stderr
            if oracle_levels:
                orow[name] = o.value
                tally[f"oracle:{o.method}"] += 1
        chance_t[j.case_id] = crow
        oracle_t[j.case_id] = orow
    return Baselines(
        metrics=list(metrics),
        chance=chance_t,
        oracle=oracle_t,
        chance_stderr=stderr_t,
        methods={name: dict(tally) for name, tally in methods.items()},
        excluded=excluded,
    )
