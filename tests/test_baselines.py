"""Chance and oracle levels: hand values, and every closed form against all orderings."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from ragsweep.metrics.baselines import (
    case_baselines,
    chance,
    chance_estimate,
    oracle,
    oracle_estimate,
)
from ragsweep.metrics.retrieval import Judgement, RankVerdict, per_case_value

BLANK = ((), False)


def judgement(items, chunks, case_id="c", excluded=None):
    """chunks: list of (covered item ids, relevant)."""
    hits = []
    for pos, (cov, rel) in enumerate(chunks, start=1):
        cov = frozenset(cov)
        hits.append(
            RankVerdict(rank=pos, covers=cov, relevant=rel, grade=max((items[c] for c in cov if c in items), default=0))
        )
    return Judgement(case_id=case_id, rule="test", items=dict(items), hits=hits, excluded=excluded)


def orderings(j):
    """Every distinct ordering of the candidates (uniform over them = uniform over all N!)."""
    keys = [(h.covers, h.relevant) for h in j.hits]
    types = sorted(set(keys), key=repr)
    rep = {t: next(h for h in j.hits if (h.covers, h.relevant) == t) for t in types}
    labels = [types.index(t) for t in keys]
    for perm in set(itertools.permutations(labels)):
        yield Judgement(j.case_id, j.rule, j.items, [rep[types[t]] for t in perm])


KS = (0, 1, 2, 3, 5, 10)
BASES = ("hits", "hit_rate", "precision", "recall", "mrr", "ndcg", "map", "first_relevant_rank")
METRICS = [b if k == 0 else f"{b}@{k}" for b in BASES for k in KS] + ["r_precision"]


def brute(j, metrics=METRICS):
    """Exact chance (mean over orderings) and oracle (best ordering) by enumeration."""
    values = {m: [] for m in metrics}
    for perm in orderings(j):
        for m in metrics:
            values[m].append(per_case_value(perm, m))
    mean, best = {}, {}
    for m, vs in values.items():
        found = [v for v in vs if v is not None]
        mean[m] = sum(found) / len(found) if found else None
        best[m] = (min(found) if m.startswith("first_relevant_rank") else max(found)) if found else None
    return mean, best


CONFIGS = {
    # doc_id rule, one chunk per relevant document, graded
    "single_graded": ({"a": 3, "b": 1, "c": 2}, [({"a"}, True), ({"b"}, True), ({"c"}, True)] + [BLANK] * 3),
    # several chunks of the same relevant document (doc_id rule on chunk-level retrieval)
    "repeated": ({"a": 2, "b": 1}, [({"a"}, True)] * 3 + [({"b"}, True)] + [BLANK] * 3),
    # evidence spans: chunks covering several spans; the nDCG cap binds
    "multi_cover": (
        {"e0": 1, "e1": 1, "e2": 1},
        [({"e0", "e1"}, True), ({"e1"}, True), ({"e2"}, True), ({"e0", "e1", "e2"}, True)] + [BLANK] * 2,
    ),
    # graded, multi-cover, one item covered by no candidate
    "multi_graded": (
        {"x": 3, "y": 1, "z": 2, "w": 1},
        [({"x", "y"}, True), ({"y", "z"}, True), ({"z"}, True), ({"x"}, True)] + [BLANK] * 3,
    ),
    # word_overlap: relevant chunks covering no single span; span e1 never covered
    "word_overlap": ({"e0": 1, "e1": 1}, [({"e0"}, True), ((), True), ((), True)] + [BLANK] * 3),
    # a covering chunk not flagged relevant (not produced by relevance.py, still defined)
    "inconsistent": ({"a": 1, "b": 1}, [({"a"}, False), ({"b"}, True), ((), True), ({"a", "b"}, True), BLANK]),
    "nothing_relevant": ({"a": 1}, [BLANK] * 5),
    "fewer_than_k": ({"a": 1}, [({"a"}, True), BLANK]),
    "all_relevant": ({"a": 1, "b": 2}, [({"a"}, True), ({"b"}, True), ({"a", "b"}, True)]),
}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def config(request):
    items, chunks = CONFIGS[request.param]
    j = judgement(items, chunks)
    mean, best = brute(j)
    return request.param, j, mean, best


def _close(a, b, tol=1e-12):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


# --------------------------------------------------------------------------- hand values


def test_hand_values_one_relevant_among_four():
    j = judgement({"a": 1}, [({"a"}, True)] + [BLANK] * 3)
    assert chance(j, "hit_rate@2") == pytest.approx(0.5)
    assert chance(j, "mrr@2") == pytest.approx(1 / 4 * 1 + 1 / 4 * 1 / 2)  # 0.375
    assert chance(j, "precision@2") == pytest.approx(2 * 1 / (4 * 2))
    assert chance(j, "recall@2") == pytest.approx(0.5)
    assert chance(j, "ndcg@2") == pytest.approx(1 / 4 + 1 / 4 / math.log2(3))
    assert chance(j, "first_relevant_rank") == pytest.approx((4 + 1) / (1 + 1))
    assert chance(j, "precision@10") == pytest.approx(1 / 10)  # k beyond N: ranx divides by k
    assert chance(j, "precision") == pytest.approx(1 / 4)  # k = 0: the whole ranking
    for name in ("hit_rate@2", "mrr@2", "recall@2", "ndcg@2", "map@2", "r_precision"):
        assert chance_estimate(j, name).method == "closed_form"
        assert oracle(j, name) == 1.0
    assert oracle(j, "precision@2") == 0.5


def test_hand_values_cuad_like_scope():
    nine_one = judgement({"e0": 1}, [({"e0"}, True)] + [BLANK] * 8)
    assert chance(nine_one, "hit_rate@5") == pytest.approx(5 / 9)
    nine_two = judgement({"e0": 1}, [({"e0"}, True)] * 2 + [BLANK] * 7)
    assert chance(nine_two, "hit_rate@5") == pytest.approx(1 - math.comb(7, 5) / math.comb(9, 5))  # 5/6
    assert chance(nine_two, "first_relevant_rank") == pytest.approx(10 / 3)
    assert chance(nine_two, "recall@5") == pytest.approx(5 / 6)  # one item, covered twice
    # k given separately, or inside the name
    assert chance(nine_two, "hit_rate", 5) == chance(nine_two, "hit_rate@5")


def test_map_matches_bestgen_exact_random_baseline():
    n, m = 9, 3
    j = judgement({f"d{i}": 1 for i in range(m)}, [({f"d{i}"}, True) for i in range(m)] + [BLANK] * (n - m))
    h_n = sum(1 / i for i in range(1, n + 1))
    expected = ((m - 1) / (n - 1) * (n - h_n) + h_n) / n  # Bestgen (2015)
    assert chance(j, "map") == pytest.approx(expected, rel=1e-12)


def test_extra_blank_equals_explicit_blanks():
    items = {"e0": 1, "e1": 2}
    chunks = [({"e0"}, True), ({"e0", "e1"}, True), ((), True)]
    explicit = judgement(items, chunks + [BLANK] * 6)
    compact = judgement(items, chunks + [BLANK])
    for name in METRICS:
        assert _close(chance(explicit, name), chance(compact, name, extra_blank=5)), name
        assert _close(oracle(explicit, name), oracle(compact, name, extra_blank=5)), name


# --------------------------------------------------------------------------- against all orderings


def test_chance_auto_is_exact(config):
    name, j, mean, _ = config
    for metric in METRICS:
        est = chance_estimate(j, metric)
        assert est.method in ("closed_form", "enumerated"), (name, metric, est)
        assert _close(est.value, mean[metric]), (name, metric, est.value, mean[metric])


def test_closed_forms_cover_everything_but_a_binding_ndcg_cap(config):
    name, j, _, _ = config
    for metric in METRICS:
        method = chance_estimate(j, metric).method
        if not metric.startswith("ndcg"):
            assert method == "closed_form", (name, metric)
        elif name not in ("multi_cover", "multi_graded", "all_relevant", "inconsistent"):
            assert method == "closed_form", (name, metric)
    if name == "multi_cover":  # {e0, e1, e2} in one chunk: DCG@1 = 3 > IDCG@1 = 1
        assert chance_estimate(j, "ndcg@1").method == "enumerated"


def test_enumeration_fallback_is_exact(config):
    name, j, mean, _ = config
    for metric in METRICS:
        assert _close(chance(j, metric, method="enumerate"), mean[metric]), (name, metric)


def test_sampling_fallback_within_its_standard_error(config):
    name, j, mean, _ = config
    for metric in ("hit_rate@2", "mrr@3", "recall@2", "ndcg@3", "ndcg@1", "map@5", "first_relevant_rank"):
        est = chance_estimate(j, metric, method="sample", samples=1000, seed=7)
        assert est.method == "sampled" and est.samples == 1000
        if mean[metric] is None:
            assert est.value is None
            continue
        assert abs(est.value - mean[metric]) <= 4.5 * est.stderr + 1e-12, (name, metric, est, mean[metric])
    # seeded: reproducible
    assert chance_estimate(j, "ndcg@3", method="sample", samples=200, seed=7) == chance_estimate(
        j, "ndcg@3", method="sample", samples=200, seed=7
    )


def test_oracle_is_the_best_ordering(config):
    name, j, _, best = config
    for metric in METRICS:
        est = oracle_estimate(j, metric)
        assert est.method == "exact", (name, metric)
        assert _close(est.value, best[metric]), (name, metric, est.value, best[metric])


def test_oracle_bounds_every_ordering_and_chance(config):
    name, j, mean, _ = config
    levels = {metric: (oracle(j, metric), chance(j, metric)) for metric in METRICS}
    rng = random.Random(0)
    for _ in range(20):
        hits = list(j.hits)
        rng.shuffle(hits)
        run = Judgement(j.case_id, j.rule, j.items, hits)
        for metric in METRICS:
            v, (o, c) = per_case_value(run, metric), levels[metric]
            if metric.startswith("first_relevant_rank"):
                assert v is None or o <= v + 1e-12
                assert c is None or o <= c + 1e-12
            else:
                assert v <= o + 1e-12 and c <= o + 1e-12 and c >= -1e-12, (name, metric)


def test_ndcg_cap_walk_matches_full_enumeration_beyond_brute_force():
    # 40 candidates (too many orderings to list), spans packed into shared chunks
    items = {"e0": 1, "e1": 2, "e2": 1}
    chunks = [({"e0", "e1"}, True), ({"e0", "e1", "e2"}, True), ({"e2"}, True), ({"e1"}, True)]
    j = judgement(items, chunks * 2 + [((), True)] * 2 + [BLANK] * 30)
    for name in ("ndcg@1", "ndcg@2", "ndcg@3", "ndcg@5"):
        walk = chance_estimate(j, name)
        assert walk.method == "enumerated"
        full = chance_estimate(j, name, method="enumerate")
        assert walk.value == pytest.approx(full.value, rel=1e-12, abs=1e-15), name
        sampled = chance_estimate(j, name, budget=0, exact_budget=0, samples=500)
        assert sampled.method == "sampled" and abs(sampled.value - walk.value) <= 4.5 * sampled.stderr


def test_ndcg_walk_over_budget_falls_back():
    j = judgement(*CONFIGS["multi_cover"])
    mean, _ = brute(j, ["ndcg@3"])
    est = chance_estimate(j, "ndcg@3", budget=1)  # walk cut short -> all words enumerated
    assert est.method == "enumerated" and est.value == pytest.approx(mean["ndcg@3"], rel=1e-12)
    est = chance_estimate(j, "ndcg@3", budget=1, exact_budget=1, samples=1500)
    assert est.method == "sampled" and abs(est.value - mean["ndcg@3"]) <= 4.5 * est.stderr


# --------------------------------------------------------------------------- oracle specifics


def test_oracle_hit_rate_is_one_with_any_relevant_chunk():
    j = judgement({"a": 1}, [((), True)] + [BLANK] * 20)  # relevant, covers no item
    assert oracle(j, "hit_rate@1") == 1.0 and oracle(j, "mrr@1") == 1.0
    assert oracle(j, "recall@5") == 0.0 and oracle(j, "ndcg@5") == 0.0
    none = judgement({"a": 1}, [BLANK] * 4)
    assert oracle(none, "hit_rate@5") == 0.0 and chance(none, "hit_rate@5") == 0.0
    assert oracle(none, "first_relevant_rank") is None and chance(none, "first_relevant_rank") is None


def test_oracle_max_coverage_beats_greedy():
    # greedy takes {1,2,3} first and reaches 5 items with 3 chunks; {1,4},{2,5},{3,6} reach 6
    items = {str(i): 1 for i in range(1, 7)}
    chunks = [({"1", "2", "3"}, True), ({"1", "4"}, True), ({"2", "5"}, True), ({"3", "6"}, True)]
    j = judgement(items, chunks + [BLANK] * 2)
    assert oracle_estimate(j, "recall@3").value == 1.0
    assert oracle(j, "map@3") == 1.0
    _, best = brute(j, ["recall@3", "ndcg@3", "map@3"])
    assert oracle(j, "ndcg@3") == pytest.approx(best["ndcg@3"])
    cut = oracle_estimate(j, "recall@3", budget=1)
    assert cut.method == "greedy" and cut.value == pytest.approx(5 / 6)  # achievable lower bound


def test_oracle_search_when_a_covering_chunk_is_not_relevant():
    j = judgement(*CONFIGS["inconsistent"])
    _, best = brute(j, ["map@2"])
    assert oracle_estimate(j, "map@2") == oracle_estimate(j, "map@2")  # deterministic
    assert oracle_estimate(j, "map@2").method == "exact" and oracle(j, "map@2") == pytest.approx(best["map@2"])
    cut = oracle_estimate(j, "map@2", budget=1)
    assert cut.method == "greedy" and cut.value <= best["map@2"] + 1e-12


def test_oracle_ceiling_from_uncovered_items():
    j = judgement({"a": 2, "b": 1, "c": 1}, [({"a"}, True), ({"b"}, True)] + [BLANK] * 5)
    assert oracle(j, "recall@5") == pytest.approx(2 / 3)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert oracle(j, "ndcg@5") == pytest.approx((2 + 1 / math.log2(3)) / idcg)
    assert oracle(j, "ndcg@1") == 1.0
    assert oracle(j, "r_precision") == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- API edges


def test_unscored_and_bad_names():
    j = judgement({}, [BLANK] * 3, excluded="unanswerable")
    assert chance(j, "hit_rate@5") is None and oracle(j, "hit_rate@5") is None
    ok = judgement({"a": 1}, [({"a"}, True)])
    with pytest.raises(ValueError):
        chance(ok, "citation_precision")
    with pytest.raises(ValueError):
        chance(ok, "ndcg@10", 5)
    with pytest.raises(ValueError):
        chance(ok, "ndcg@10", method="bogus")


def test_large_unscoped_case_uses_closed_forms():
    items = {f"e{i}": 1 + i % 3 for i in range(5)}
    chunks = [({f"e{i}"}, True) for i in range(5)] + [({"e0"}, True)] * 3 + [((), True)]
    j = judgement(items, chunks)
    n, m = 10_000, 9
    for name in ("hit_rate@10", "recall@10", "ndcg@10", "map@10", "mrr@10", "precision@10", "r_precision"):
        assert chance_estimate(j, name, extra_blank=n - len(chunks)).method == "closed_form"
    assert chance(j, "hit_rate@10", extra_blank=n - len(chunks)) == pytest.approx(
        1 - math.comb(n - m, 10) / math.comb(n, 10), rel=1e-12
    )
    assert chance(j, "first_relevant_rank", extra_blank=n - len(chunks)) == pytest.approx((n + 1) / (m + 1))
    assert oracle(j, "recall@10", extra_blank=n - len(chunks)) == 1.0


def test_batch_matches_single_calls():
    cases = [
        judgement(*CONFIGS["single_graded"], case_id="q1"),
        judgement(*CONFIGS["multi_cover"], case_id="q2"),
        judgement(*CONFIGS["word_overlap"], case_id="q3"),
        judgement({}, [BLANK], case_id="q4", excluded="unanswerable"),
    ]
    metrics = ["hit_rate@1", "recall@5", "ndcg@1", "ndcg@10", "map@10", "first_relevant_rank", "r_precision"]
    out = case_baselines(cases, metrics, extra_blank={"q3": 4})
    assert set(out.chance) == {"q1", "q2", "q3"} and out.excluded == {"unanswerable": ["q4"]}
    for j in cases[:3]:
        extra = 4 if j.case_id == "q3" else 0
        for m in metrics:
            assert _close(out.chance[j.case_id][m], chance(j, m, extra_blank=extra)), (j.case_id, m)
            assert _close(out.oracle[j.case_id][m], oracle(j, m, extra_blank=extra)), (j.case_id, m)
    means = out.means()
    assert means["chance"]["hit_rate@1"] == pytest.approx(sum(out.chance[c]["hit_rate@1"] for c in out.chance) / 3)
    assert means["chance_stderr"]["ndcg@1"] == 0.0  # everything exact here
    assert out.methods["ndcg@1"]["chance:enumerated"] == 1  # q2: the cap binds
    assert out.methods["recall@5"] == {"chance:closed_form": 3, "oracle:exact": 3}
    d = out.as_dict(per_case=True)
    assert d["n_scored"] == 3 and d["per_case"]["q1"]["oracle"]["hit_rate@1"] == 1.0


def test_a_pool_seen_again_gets_its_levels_from_memory_and_a_changed_one_anew(monkeypatch):
    """A sweep's configurations of one chunking share each case's pool: its levels are computed once.
    The memory is by content: one changed verdict or token count is another pool, computed anew."""
    from dataclasses import replace

    from ragsweep.metrics import baselines

    rng = random.Random(7)
    items = {"e0": 1, "e1": 2}
    chunks = [({"e0"}, True), ({"e1"}, True), ((), False), ({"e0", "e1"}, True)] + [((), False)] * 40
    pool = judgement(items, chunks, case_id="memo-case")
    pool = replace(pool, hits=[replace(h, tokens=rng.randint(50, 400)) for h in pool.hits])
    names = ["recall@5", "ndcg@10", "hit_rate@3", "recall@800tok", "precision@5"]
    monkeypatch.setattr(baselines, "_LEVELS", baselines._LevelMemo())
    computed = []
    real = baselines._metric_levels
    monkeypatch.setattr(baselines, "_metric_levels", lambda *a, **k: computed.append(a[3]) or real(*a, **k))

    first = case_baselines([pool], names)
    assert len(computed) == len(names)
    again = case_baselines([replace(pool, hits=list(pool.hits))], names)  # equal content, other objects
    assert len(computed) == len(names), "a pool seen before was computed again"
    assert (again.chance, again.oracle, again.methods) == (first.chance, first.oracle, first.methods)

    for changed in (
        replace(pool, hits=[replace(pool.hits[0], relevant=False), *pool.hits[1:]]),
        replace(pool, hits=[*pool.hits[:-1], replace(pool.hits[-1], tokens=pool.hits[-1].tokens + 1)]),
        replace(pool, case_id="another-case"),  # the sampled levels' seed is the case's
    ):
        before = len(computed)
        fresh = case_baselines([changed], names)
        assert len(computed) == before + len(names)
        monkeypatch.setattr(baselines, "_LEVELS", baselines._LevelMemo())  # the same pool with nothing remembered
        assert case_baselines([changed], names).chance == fresh.chance
