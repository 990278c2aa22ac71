r"""Chance and oracle levels for every retrieval metric of :mod:`ragsweep.metrics.retrieval`.

A retrieval number means little without its floor and its ceiling. On ``datasets/cuad`` a
question is scoped to one contract of about 9 chunks, so *any* ordering of that contract's
chunks puts a relevant one in the top 5 most of the time: hit@5 = 0.97 reads very
differently once you know that chance gives 0.80. This module computes, for one case:

* **chance**: the expected value of a metric at k when the case's candidate chunks are put
  in a uniformly random order (every one of the N! orderings equally likely);
* **oracle**: the best value of the metric at k over all orderings of the candidates (the
  ceiling left by chunking and relevance marking: an item no candidate covers caps recall).

Each metric brings its own levels: its declaration hands the registry a chance and an oracle
function (the closed forms and searches below are :mod:`ragsweep.metrics.levels`' functions, one
per metric), and what of a verdict it reads. This module groups the candidates, caches the searches
and the levels, and enumerates or samples the orderings where no closed form holds; it asks the
registry, never a metric's name, what to do.

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

from ragsweep.core.keys import digest

from . import registry
from .levels import BudgetCandidates, BudgetLevels, Estimate, Stop, idcg, ideal_dcg
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

DEFAULT_SAMPLES = 2000
DEFAULT_EXACT_BUDGET = 5000
DEFAULT_SEARCH_BUDGET = 100_000
_MAX_ENUM_DEPTH = 400  # recursion guard for enumeration (deeper words are sampled)


# --------------------------------------------------------------------------- the pool


@dataclass
class _Pool:
    """A case's candidates, grouped by (covered items, relevant): the :class:`~.levels.Candidates` the
    metrics' level functions read, with the searches they ask for (cached here)."""

    judgement: Judgement
    keys: list[tuple[frozenset[str], bool]]
    counts: list[int]
    n: int
    m: int
    items: dict[str, int]
    cover_count: dict[str, int]  # c_j
    rel_cover_count: dict[str, int]  # a_j
    nodes: int = DEFAULT_SEARCH_BUDGET  # the node budget of every search
    # the best-cover oracles by (family, depth, target, budget), and the budget levels by budget
    cover_cache: dict[tuple[object, ...], tuple[float, str]] = field(default_factory=dict)
    budget_cache: dict[int, tuple[dict[str, Estimate], dict[str, Estimate]]] = field(default_factory=dict)

    def depth(self, k: int) -> int:
        return self.n if k == 0 else min(k, self.n)

    def max_dcg(self, k: int, target: float) -> tuple[float, str]:
        key = ("max_dcg", k, target, self.nodes)
        if key not in self.cover_cache:
            ids, masks = _cover_sets(self)
            weights = [float(self.items[i]) for i in ids]
            self.cover_cache[key] = _best_cover(masks, weights, self.depth(k), True, target, self.nodes)
        return self.cover_cache[key]

    def max_cover(self, depth: int) -> tuple[float, str]:
        key = ("max_cover", depth, self.nodes)
        if key not in self.cover_cache:
            ids, masks = _cover_sets(self)
            total = float(sum(1 for i in ids if self.cover_count[i] > 0))
            self.cover_cache[key] = _best_cover(masks, [1.0] * len(ids), depth, False, total, self.nodes)
        return self.cover_cache[key]

    def ndcg_cap_excess(self, k: int) -> tuple[float, bool] | None:
        return _ndcg_cap_excess(self, k, self.nodes)

    def searched_oracle(self, metric: str, k: int) -> Estimate:
        return _search_oracle(self, metric, k, self.nodes)


def _pool(j: Judgement, extra_blank: int = 0, nodes: int = DEFAULT_SEARCH_BUDGET) -> _Pool:
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
        nodes=nodes,
    )


def _leveled(base: str) -> registry.MetricSpec | None:
    """The record of ``base`` when it has a chance and an oracle level."""
    spec = registry.find(base)
    return spec if spec is not None and spec.chance is not None and spec.oracle is not None else None


def _spec(base: str) -> registry.MetricSpec:
    spec = _leveled(base)
    assert spec is not None  # _resolve checked
    return spec


def _pooled(base: str) -> bool:
    """Whether ``base``'s levels read the pool of chunk types (else its record's functions read the judgement)."""
    spec = _leveled(base)
    return spec is not None and isinstance(spec.chance, registry.PooledLevel)


def _pooled_level(base: str, which: str) -> Callable[[_Pool, int], Estimate | None]:
    spec = _spec(base)
    level = spec.chance if which == "chance" else spec.oracle
    assert isinstance(level, registry.PooledLevel)  # _pooled sent the others to _own_level
    return level.level


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
    return base if (k == 0 or _spec(base).at_items) else f"{base}@{k}"


def _depth(p: _Pool, base: str, k: int) -> int:
    """How many top positions the metric reads (K)."""
    return min(len(p.items), p.n) if _spec(base).at_items else p.depth(k)


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
            raise Stop("budget")
        if value > best:
            best = value
            if best >= target:
                raise Stop("target")
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
    except Stop as stop:
        return best, str(stop)
    return best, "complete"


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
    if idcg(p.items, k) == 0.0:
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
    ideal = ideal_dcg(grades, k)
    depth = n if k == 0 else min(k, n)  # the pool's depth(k)
    grade = list(grades)
    masks = [mask for mask, _ in tally]
    members = [[i for i in range(len(grade)) if mask >> i & 1] for mask in masks]
    try:
        return _excess_walk(n, depth, budget, ideal, grade, masks, members, list(cover_counts), tally)
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
    reads = _spec(base).reads
    merged: Counter[tuple[frozenset[str], bool]] = Counter()
    for (cov, rel), n in zip(p.keys, p.counts):
        key: tuple[frozenset[str], bool]
        if reads == "relevance":
            key = (frozenset(), rel)
        elif reads == "covers":
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
    return acc[0] / acc[1] if _spec(base).partial else acc[0]


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
    sign = 1.0 if _spec(base).higher_is_better else -1.0

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


def _budget_specs() -> list[tuple[str, BudgetLevels]]:
    """The metrics leveled at a token budget, in display order."""
    return [(m.name, m.budget_levels) for m in registry.metrics("at_k") if m.budget_levels is not None]


def _budget_chunks(j: Judgement, extra_blank: int) -> BudgetCandidates:
    if extra_blank:
        raise ValueError("a token-budget level needs every candidate's length: pass the candidates, not extra_blank")
    bit = {item: 1 << i for i, item in enumerate(j.items)}
    tokens = []
    for h in j.hits:
        if h.tokens is None:
            raise ValueError(f"case {j.case_id}: a token-budget level needs each candidate's token count")
        tokens.append(h.tokens)
    masks = [sum(bit[x] for x in h.covers if x in bit) for h in j.hits]
    return BudgetCandidates(tokens, masks, [bool(h.relevant) for h in j.hits], len(j.items))


def _in_context(c: BudgetCandidates, chosen: Iterable[int], specs: Sequence[tuple[str, BudgetLevels]]) -> list[float]:
    """Each budget metric's value for a context holding the candidates ``chosen``."""
    covered, hit = c.context(chosen)
    return [levels.value(c, covered, hit) for _, levels in specs]


def _budget_chance(
    j: Judgement,
    c: BudgetCandidates,
    budget: int,
    specs: Sequence[tuple[str, BudgetLevels]],
    draws: tuple[int, int, int],
) -> tuple[list[float], str, list[float]]:
    """Chance of each of ``specs`` at ``budget``: values, method, standard errors (sampled only).
    ``draws``: the samples, the seed and the enumeration's node budget."""
    samples, seed, nodes = draws
    n = len(c.tokens)
    exact = [0.0] * len(specs)
    if sum(c.tokens) <= budget:
        return _in_context(c, range(n), specs), "closed_form", exact
    try:
        return _enumerate_budget(c, budget, specs, nodes), "enumerated", exact
    except Stop:
        pass
    rng = random.Random(_seed(seed, j.case_id, f"@{budget}tok"))
    cap = _most_that_fit(c.tokens, budget) + 1  # a prefix is never longer: later draws are not read
    rows = []
    for _ in range(samples):
        used, chosen = 0, []
        for i in rng.sample(range(n), min(n, cap)):
            used += c.tokens[i]
            if used > budget:
                break
            chosen.append(i)
        rows.append(_in_context(c, chosen, specs))
    columns = list(zip(*rows, strict=True))
    means = [statistics.fmean(column) for column in columns]
    errors = [statistics.stdev(column) / math.sqrt(len(column)) if len(column) > 1 else 0.0 for column in columns]
    return means, "sampled", errors


def _most_that_fit(tokens: Sequence[int], budget: int) -> int:
    used = count = 0
    for t in sorted(tokens):
        used += t
        if used > budget:
            break
        count += 1
    return count


def _enumerate_budget(
    c: BudgetCandidates, budget: int, specs: Sequence[tuple[str, BudgetLevels]], nodes: int
) -> list[float]:
    """sum over the fitting sets S of P(prefix = S) metric(S), P as in the module docstring."""
    n = len(c.tokens)
    log_n = math.lgamma(n + 1)
    acc = [0.0] * len(specs)
    chosen: list[int] = []
    visited = 0

    def walk(i: int, used: int) -> None:
        nonlocal visited
        visited += 1
        if visited > nodes:
            raise Stop
        if i == n:
            size = len(chosen)
            if size == n:
                return  # not reached: every candidate fitting is the closed form
            room = budget - used
            # the chunks left out that do not fit after S (a chosen chunk is never "next")
            f = sum(1 for t in c.tokens if t > room) - sum(1 for k in chosen if c.tokens[k] > room)
            if f:
                weight = f * math.exp(math.lgamma(size + 1) + math.lgamma(n - size) - log_n)
                for at, value in enumerate(_in_context(c, chosen, specs)):
                    acc[at] += weight * value
            return
        if used + c.tokens[i] <= budget:
            chosen.append(i)
            walk(i + 1, used + c.tokens[i])
            chosen.pop()
        walk(i + 1, used)

    walk(0, 0)
    return acc


def _budget_levels(
    p: _Pool, extra_blank: int, budget: int, samples: int, seed: int, exact_nodes: int, nodes: int
) -> tuple[dict[str, Estimate], dict[str, Estimate]]:
    """Chance and oracle estimates of every token-budget family at ``budget`` (cached on the pool:
    one enumeration or one set of samples serves them all)."""
    if budget not in p.budget_cache:
        p.budget_cache[budget] = _budget_estimates(
            p.judgement, extra_blank, budget, (samples, seed, exact_nodes), nodes
        )
    return p.budget_cache[budget]


def _budget_estimates(
    j: Judgement, extra_blank: int, budget: int, draws: tuple[int, int, int], nodes: int
) -> tuple[dict[str, Estimate], dict[str, Estimate]]:
    specs = _budget_specs()
    if not j.scored:
        none = {name: Estimate(None, "closed_form") for name, _ in specs}
        return none, none
    c = _budget_chunks(j, extra_blank)
    values, method, errors = _budget_chance(j, c, budget, specs, draws)
    n = draws[0] if method == "sampled" else 0
    chance_est = {
        name: Estimate(value, method, error, n) for (name, _), value, error in zip(specs, values, errors, strict=True)
    }
    oracle_est = {name: Estimate(*levels.oracle(c, budget, nodes)) for name, levels in specs}
    return chance_est, oracle_est


# --------------------------------------------------------------------------- public API


def _chance_pool(p: _Pool, base: str, k: int, method: str, samples: int, seed: int, exact_budget: int) -> Estimate:
    if method not in ("auto", "enumerate", "sample"):
        raise ValueError("method must be 'auto', 'enumerate' or 'sample'")
    if not p.judgement.scored:
        return Estimate(None, "closed_form")
    if method == "auto":
        closed = _pooled_level(base, "chance")(p, k)
        if closed is not None:
            return closed
    if p.n == 0:
        return Estimate(None if _spec(base).partial else 0.0, "closed_form")
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


def _oracle_pool(p: _Pool, base: str, k: int) -> Estimate:
    if not p.judgement.scored:
        return Estimate(None, "exact")
    level = _pooled_level(base, "oracle")(p, k)
    assert level is not None  # an oracle always has a value
    return level


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
    return _chance_pool(_pool(judgement, extra_blank, budget), base, k, method, samples, seed, exact_budget)


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
    return _oracle_pool(_pool(judgement, extra_blank, budget), base, k)


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
    return _chance_pool(p, base, k, "auto", samples, seed, exact_budget), _oracle_pool(p, base, k)


class _LevelMemo:
    """The levels of the pools seen lately, by content: a sweep's configurations that share a chunking
    share each case's pool (the candidates depend on neither the retriever nor the top-k). The key is a
    digest of every field the closed forms, searches and seeds read, so a level served from here is the
    one computed anew."""

    def __init__(self, pools: int = 8192):
        self.pools = pools
        self.by_pool: OrderedDict[str, dict[str, tuple[Estimate, Estimate]]] = OrderedDict()

    def of(self, j: Judgement, settings: tuple[int, ...]) -> dict[str, tuple[Estimate, Estimate]]:
        """The levels known for this pool (filled in place by the caller)."""
        shown = repr(
            (j.case_id, j.rule, j.excluded, list(j.items.items()), settings,
             [(h.rank, sorted(h.covers), h.relevant, h.grade, h.doc_id, h.tokens) for h in j.hits])
        )  # fmt: skip
        key = digest(shown, 32)
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
    settings = (samples, seed, exact_budget, budget)
    out = Baselines(metrics=list(metrics), chance={}, oracle={}, chance_stderr={}, methods={}, excluded={})
    methods: dict[str, Counter[str]] = {name: Counter() for name in metrics}
    for j in judgements:
        if not j.scored:
            out.excluded.setdefault(j.excluded or "no relevance information", []).append(j.case_id)
            continue
        blank = extra_blank.get(j.case_id, 0)
        row = _case_levels(_pool(j, blank, budget), blank, parsed, budgeted, settings)
        _fill(out, methods, j.case_id, row, oracle_levels)
    out.methods = {name: dict(tally) for name, tally in methods.items()}
    return out


def _case_levels(
    p: _Pool,
    blank: int,
    parsed: Sequence[tuple[str, str, int]],
    budgeted: set[str],
    settings: tuple[int, int, int, int],
) -> dict[str, tuple[Estimate, Estimate]]:
    """Each metric's chance and oracle on one case's pool, from memory where the same pool was seen."""
    samples, seed, exact_budget, budget = settings
    known = _LEVELS.of(p.judgement, (blank, *settings))
    row: dict[str, tuple[Estimate, Estimate]] = {}
    for name, base, k in parsed:
        if name not in known:
            found = _metric_levels(p, blank, base, k, name in budgeted, samples, seed, exact_budget, budget)
            if name in budgeted or _pooled(base):  # a registered level may read anything of the judgement
                known[name] = found
        row[name] = known[name] if name in known else found
    return row


def _fill(
    out: Baselines,
    methods: Mapping[str, Counter[str]],
    case_id: str,
    row: Mapping[str, tuple[Estimate, Estimate]],
    oracle_levels: bool,
) -> None:
    """Write one case's levels into ``out`` and count their methods."""
    crow: dict[str, float | None] = {}
    orow: dict[str, float | None] = {}
    for name, (est, o) in row.items():
        crow[name] = est.value
        tally = methods[name]
        tally[f"chance:{est.method}"] += 1
        if est.method == "sampled":
            out.chance_stderr.setdefault(case_id, {})[name] = est.stderr
        if oracle_levels:
            orow[name] = o.value
            tally[f"oracle:{o.method}"] += 1
    out.chance[case_id] = crow
    out.oracle[case_id] = orow
