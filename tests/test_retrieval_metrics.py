"""Hand-computed fixtures for every retrieval metric: ties, empty runs, k beyond the run.

Queries are judged and scored the way an eval run does (:mod:`ranked_runs`: ``mark_hits`` with
rule ``doc_id``, then ``per_case_value``)."""

from __future__ import annotations

import math
import statistics

import pytest

from ragsweep.core.hits import Hit
from ragsweep.datasets import Case
from ragsweep.metrics.relevance import mark_hits
from ragsweep.metrics.retrieval import (
    Judgement,
    RankVerdict,
    average_precision,
    citation_precision,
    first_relevant_rank,
    hit_rate,
    hits,
    ndcg,
    parse_metric,
    per_case_value,
    precision,
    r_precision,
    recall,
    reciprocal_rank,
)
from ranked_runs import judgements, mean, means, per_query

L2 = math.log2

# q1: ranking d4 (not judged), d1 (grade 2), d3 (grade 0), d2 (grade 1); R = 2 relevant
QRELS = {
    "q1": {"d1": 2, "d2": 1, "d3": 0},
    "q2": {"a": 1},  # tie between b and a
    "q3": {"x": 1},  # empty run
    "q4": {"y": 0},  # no relevant document -> excluded
}
RUN = {
    "q1": {"d4": 0.9, "d1": 0.8, "d3": 0.7, "d2": 0.6},
    "q2": {"b": 1.0, "a": 1.0, "c": 0.5},
    "q3": {},
    "q4": {"y": 1.0},
    "q5": {"z": 1.0},  # not in qrels -> excluded
}


def _j(qid: str):
    return {j.case_id: j for j in judgements(QRELS, RUN)}[qid]


def test_per_query_hand_values_q1():
    j = _j("q1")
    assert [h.doc_id for h in j.hits] == ["d4", "d1", "d3", "d2"]
    assert hits(j, 2) == 1 and hits(j) == 2
    assert hit_rate(j, 1) == 0.0 and hit_rate(j, 2) == 1.0
    assert precision(j, 1) == 0.0
    assert precision(j, 2) == 0.5
    assert precision(j, 4) == 0.5
    assert precision(j, 10) == 2 / 10  # k beyond the run: ranx divides by k
    assert precision(j) == 2 / 4  # k = 0: the whole run
    assert recall(j, 1) == 0.0 and recall(j, 2) == 0.5 and recall(j, 4) == 1.0 and recall(j, 100) == 1.0
    assert reciprocal_rank(j) == 0.5 and reciprocal_rank(j, 1) == 0.0
    dcg = 2 / L2(3) + 1 / L2(5)
    idcg = 2 / L2(2) + 1 / L2(3)
    assert ndcg(j, 4) == pytest.approx(dcg / idcg, abs=1e-15)
    assert ndcg(j, 10) == pytest.approx(dcg / idcg, abs=1e-15)
    assert ndcg(j, 2) == pytest.approx((2 / L2(3)) / idcg, abs=1e-15)
    assert ndcg(j, 1) == 0.0
    assert average_precision(j) == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert average_precision(j, 2) == pytest.approx((1 / 2) / 2)
    assert average_precision(j, 3) == pytest.approx((1 / 2) / 2)
    assert r_precision(j) == 0.5
    assert first_relevant_rank(j) == 2


def test_ties_keep_insertion_order():
    j = _j("q2")
    assert [h.doc_id for h in j.hits] == ["b", "a", "c"]
    assert reciprocal_rank(j) == 0.5
    flipped = judgements({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0}})[0]
    assert reciprocal_rank(flipped) == 1.0


def test_the_served_rank_orders_a_list_not_its_score_or_its_order():
    case = Case(id="q", question="q", relevant_ids=["a"])
    served = [Hit(rank=2, score=9.0, text="", doc_id="a", start=0, end=0)]
    served.append(Hit(rank=1, score=0.0, text="", doc_id="b", start=0, end=0))
    j = mark_hits(case, served, "doc_id")
    assert [(h.rank, h.doc_id) for h in j.hits] == [(1, "b"), (2, "a")]
    assert reciprocal_rank(j) == 0.5 and per_case_value(j, "mrr") == 0.5


def test_empty_run_scores_zero_and_counts_as_miss():
    j = _j("q3")
    assert j.scored and j.hits == []
    for f in (hit_rate, precision, recall, reciprocal_rank, ndcg, average_precision, r_precision):
        assert f(j) == 0.0 and f(j, 5) == 0.0
    assert first_relevant_rank(j) is None


def test_evaluate_means_and_exclusions():
    metrics = ["hit_rate@1", "hit_rate@2", "precision@2", "recall@4", "mrr", "ndcg@4", "map", "r-precision"]
    got = means(QRELS, RUN, metrics)
    # scored queries: q1, q2, q3 (q4 has no relevant doc, q5 is not in qrels)
    assert got["hit_rate@1"] == pytest.approx((0 + 0 + 0) / 3)
    assert got["hit_rate@2"] == pytest.approx((1 + 1 + 0) / 3)
    assert got["precision@2"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert got["recall@4"] == pytest.approx((1 + 1 + 0) / 3)
    assert got["mrr"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    q2_ndcg = (1 / L2(3)) / 1
    assert got["ndcg@4"] == pytest.approx(((2 / L2(3) + 1 / L2(5)) / (2 + 1 / L2(3)) + q2_ndcg + 0) / 3)
    assert got["map"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert got["r-precision"] == pytest.approx((0.5 + 0 + 0) / 3)
    assert means(QRELS, RUN, ["mrr"])["mrr"] == pytest.approx(1 / 3)
    assert per_query(QRELS, RUN, "mrr") == {"q1": 0.5, "q2": 0.5, "q3": 0.0}
    judged = judgements(QRELS, RUN)
    scored = [j.case_id for j in judged if j.scored]
    excluded = [j for j in judged if not j.scored]
    assert len(judged) == 5 and len(scored) == 3 and len(excluded) == 2
    assert sorted(j.case_id for j in excluded if j.excluded == "no relevance information") == ["q4", "q5"]
    assert all(per_case_value(j, m) is None for j in excluded for m in metrics)  # out of every mean


def test_no_scored_case_gives_none_not_nan():
    qrels, run = {"q": {"d": 0}}, {"q": {"d": 1.0}}
    got = means(qrels, run, ["ndcg@10", "first_relevant_rank"])
    assert got["ndcg@10"] is None and got["first_relevant_rank"] is None
    assert [j for j in judgements(qrels, run) if j.scored] == []  # no miss to count either


def test_first_relevant_rank_counts_rank_one_and_misses():
    qrels = {"a": {"x": 1}, "b": {"x": 1}, "c": {"x": 1}}
    run = {"a": {"x": 3.0, "y": 1.0}, "b": {"y": 3.0, "z": 2.0, "x": 1.0}, "c": {"y": 1.0}}
    ranks = [per_case_value(j, "first_relevant_rank") for j in judgements(qrels, run) if j.scored]
    assert ranks == [1, 3, None]  # None: a miss, counted, not averaged in
    found = [r for r in ranks if r is not None]
    assert mean(ranks) == 2.0  # mean of ranks 1 and 3 (rank 1 is not dropped)
    assert statistics.median(found) == 2.0
    assert len(found) == 2 and ranks.count(None) == 1


def _chunks(*covers, items):
    return Judgement(
        case_id="c",
        rule="evidence_offsets",
        items=items,
        hits=[
            RankVerdict(rank=i, covers=frozenset(c), relevant=bool(c), grade=max((items[x] for x in c), default=0))
            for i, c in enumerate(covers, start=1)
        ],
    )


def test_repeated_chunks_of_one_item_count_once_for_recall_ndcg_map():
    # chunks of A, A again, B (not relevant); relevant items: A, C
    j = _chunks({"A"}, {"A"}, set(), items={"A": 1, "C": 1})
    assert precision(j, 3) == pytest.approx(2 / 3)  # both chunks of A are relevant context
    assert recall(j, 3) == 0.5
    assert ndcg(j, 3) == pytest.approx(1 / (1 + 1 / L2(3)))
    assert average_precision(j) == pytest.approx(1 / 2)
    assert r_precision(j) == 0.5  # in items, like recall: of A and C only A is in the top R = 2


def test_one_chunk_covering_two_items():
    j = _chunks({"e0", "e1"}, set(), items={"e0": 1, "e1": 1})
    assert recall(j, 1) == 1.0
    assert ndcg(j, 1) == 1.0  # capped
    assert average_precision(j) == 1.0
    assert precision(j, 2) == 0.5


def test_citation_precision():
    j = _chunks({"A"}, set(), {"A"}, items={"A": 1})
    assert citation_precision(j, [1, 3, 3, 9]) == pytest.approx(2 / 3)  # distinct 1, 3, 9; 9 is out of range
    assert citation_precision(j, []) is None
    j.cited = [2]
    assert citation_precision(j) == 0.0
    other = _chunks({"A"}, items={"A": 1})
    other.case_id = "no-citations"
    values = [per_case_value(case, "citation_precision") for case in (j, other)]
    assert values == [0.0, None]  # a case without citations is left out of the mean, and counted
    assert mean(values) == 0.0 and sum(v is not None for v in values) == 1


def test_metric_names():
    assert parse_metric("ndcg@10") == ("ndcg", 10)
    assert parse_metric("MRR") == ("mrr", 0)
    assert parse_metric("r-precision") == ("r_precision", 0)
    with pytest.raises(ValueError):
        parse_metric("bleu@4")
    with pytest.raises(ValueError):
        parse_metric("ndcg@x")
