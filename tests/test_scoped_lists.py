"""A question asked with many scopes is asked once of each exact index for all its matches, and each
scoped list is cut from that answer: the lists equal the store asked query by query (item for item,
scores to the last bit; BM25's to within a float32 ulp, which Tantivy's scores move by from one run to the
next, cut or asked: see ragsweep.pipeline.stable_order) for BM25, KNN and their hybrid over cuad-mini's
cases at four depths."""

from __future__ import annotations

import json

import pytest

from ragsweep.pipeline import store as store_module
from ragsweep.pipeline.scoped_lists import Ask, answer_lists, by_document, scoped_cut
from ragsweep.pipeline.store import Query, RagStore
from support import MINI, ROOT


def _queries() -> list[Query]:
    cases = [json.loads(line) for line in (MINI / "cases.jsonl").read_text().splitlines()]
    scoped = [Query(c["question"], k, c.get("doc_scope")) for c in cases for k in (1, 3, 5, 10)]
    return scoped + [Query(c["question"], 5) for c in cases[:10]]  # some questions unscoped too


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "knn"])
def test_cut_lists_are_the_stores_own(mode, monkeypatch):
    store = RagStore.from_folder(ROOT / "pipelines" / "default.yaml", MINI / "docs", {"retriever_mode": mode})
    queries = _queries()
    cut, rest = store_module._split_by_scopes(queries)
    assert len(cut) > len(queries) / 2 and rest  # both ways are in this batch
    served = store.run(queries)
    monkeypatch.setattr(store_module, "_cut_plan", lambda pipeline: None)  # every query asked of the store
    asked = store.run(queries)
    without_scores = [[h.model_dump(exclude={"score"}) for h in hits] for hits in served.hits]
    assert without_scores == [[h.model_dump(exclude={"score"}) for h in hits] for hits in asked.hits]
    scores = [h.score for hits in served.hits for h in hits]
    asked_scores = [h.score for hits in asked.hits for h in hits]
    assert scores == (asked_scores if mode != "bm25" else pytest.approx(asked_scores, rel=1e-6))
    assert sum(len(h) for h in served.hits) > 3 * len(queries)  # lists, not empty answers
    assert [c.model_dump() for c in served.chunks] == [c.model_dump() for c in asked.chunks]


def _matches(*rows: tuple[str, str, int, float]) -> dict:
    """(chunk, doc, start, score) rows as an index's reply."""
    return by_document([r[0] for r in rows], [(r[1], r[2], "") for r in rows], [r[3] for r in rows])


def test_a_scope_is_cut_from_its_own_matches_by_hand():
    reply = _matches(("x1", "a", 0, 3.0), ("y1", "b", 0, 2.5), ("x2", "a", 9, 2.0), ("x3", "a", 5, 2.0 + 1e-7))
    # scope a: x1, then x2 and x3 tie (1e-7 apart: one group, best 2.0000001), ordered by offset: x3 (5) < x2 (9)
    assert [(c, s) for c, s, _ in scoped_cut(reply, ("a",), 2)] == [("x1", 3.0), ("x3", 2.0 + 1e-7)]
    assert [c for c, _, _ in scoped_cut(reply, ("a",), 3)] == ["x1", "x3", "x2"]
    assert [c for c, _, _ in scoped_cut(reply, ("b",), 3)] == ["y1"]
    assert [c for c, _, _ in scoped_cut(reply, None, 2)] == ["x1", "y1"]  # unscoped: the whole index
    assert scoped_cut(reply, ("missing",), 3) == []


def test_a_hybrids_lists_fuse_each_retrievers_cut_by_hand():
    bm25 = _matches(("p", "a", 0, 9.0), ("q", "a", 1, 8.0), ("r", "a", 2, 7.0), ("s", "b", 0, 9.5))
    knn = _matches(("q", "a", 1, -0.1), ("t", "a", 3, -0.2), ("p", "a", 0, -0.3))
    lists = answer_lists([bm25, knn], [Ask(7, ("a",), (1, 3))], rrf_k=60)
    assert [(g, k) for g, k, _ in lists] == [(7, 1), (7, 3)]
    # depth 1: p (bm25 rank 1) and q (knn rank 1) tie at 1/61; the first retriever's wins
    assert lists[0][2] == [{"chunk": "p", "dist": -1 / 61}]
    # depth 3: q = 1/62 + 1/61, p = 1/61 + 1/63, t = 1/62 (r = 1/63 is cut)
    assert [i["chunk"] for i in lists[1][2]] == ["q", "p", "t"]
    assert lists[1][2][0]["dist"] == -(1 / 62 + 1 / 61)


def test_a_question_asked_with_many_scopes_is_one_ask_of_a_run_by_hand():
    q = [
        Query("a", 1, ["d1"]), Query("a", 1, ["d2"]), Query("b", 1), Query("a", 3, ["d1"]),
        Query("c", 1, ["d1"]), Query("b", 1, ["d1"]),
    ]  # fmt: skip
    # "a" (two scopes) is one ask, pulled together; "b" is also asked unscoped and "c" with one scope: one each
    assert store_module.run_batches(q, list(range(6)), 2, cut_whole=True) == [[0, 1, 3, 2], [4, 5]]
    assert store_module.run_batches(q, [1, 2, 4, 5], 2, cut_whole=True) == [[1, 2], [4, 5]]  # "a" once: not cut
    assert store_module.run_batches(q, list(range(6)), 2, cut_whole=False) == [[0, 1], [2, 3], [4, 5]]
    assert store_module.run_batches(q, [], 2, cut_whole=True) == [[]]  # one run still gives the chunk table


def test_every_scope_of_a_question_is_asked_in_one_run_whatever_the_limit(monkeypatch):
    """cuad-mini's 41 questions x 3 contracts x 4 depths (492 queries) with at most 50 asks a run: one
    Pathway run (not ten, each indexing the corpus again), the same lists as one unlimited run."""
    store = RagStore.from_folder(ROOT / "pipelines" / "default.yaml", MINI / "docs", {"retriever_mode": "hybrid"})
    queries = [q for q in _queries() if q.doc_scope]
    whole = store.run(queries)
    runs: list[int] = []
    serve = RagStore._serve
    monkeypatch.setattr(RagStore, "_serve", lambda self, qs, *a: runs.append(len(qs)) or serve(self, qs, *a))
    monkeypatch.setenv("RAGSWEEP_QUERIES_PER_RUN", "50")
    limited = store.run(queries)
    assert runs == [len(queries)] == [492]
    assert [[h.model_dump() for h in hits] for hits in limited.hits] == [
        [h.model_dump() for h in hits] for hits in whole.hits
    ]
    monkeypatch.setattr(store_module, "_cut_plan", lambda pipeline: None)  # asked one by one: 50 a run
    runs.clear()
    store.run(queries[:120])
    assert runs == [50, 50, 20]
