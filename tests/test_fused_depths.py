"""A hybrid's lists at every depth, fused from one ask of each sub-retriever, are the lists the hybrid
store serves when asked at each depth: item for item, scores to the last bit, over every case of
cuad-mini (scoped and unscoped, four depths)."""

from __future__ import annotations

import json

import pytest

from ragsweep.pipeline import store as store_module
from ragsweep.pipeline.fused_depths import exact_parts, fuse_served
from ragsweep.pipeline.store import Query, RagStore
from support import MINI, ROOT


def _queries() -> list[Query]:
    cases = [json.loads(line) for line in (MINI / "cases.jsonl").read_text().splitlines()]
    scoped = [Query(c["question"], k, c.get("doc_scope")) for c in cases for k in (1, 3, 5, 10)]
    unscoped = [Query(c["question"], k) for c in cases[:40] for k in (1, 5, 10)]
    return scoped + unscoped


@pytest.fixture(scope="module")
def store() -> RagStore:
    return RagStore.from_folder(ROOT / "pipelines" / "default.yaml", MINI / "docs")


def test_the_fused_lists_are_the_hybrids_own(store, monkeypatch):
    queries = _queries()
    fused = store.run(queries)
    assert exact_parts(store.config.build().retriever_factory) is not None  # the default app's hybrid is fused
    monkeypatch.setattr(store_module, "exact_parts", lambda factory: None)  # the hybrid asked at each depth
    plain = store.run(queries)
    assert [[h.model_dump() for h in hits] for hits in fused.hits] == [
        [h.model_dump() for h in hits] for hits in plain.hits
    ]
    assert sum(len(h) for h in fused.hits) > 3 * len(queries)  # lists, not empty answers
    assert [c.model_dump() for c in fused.chunks] == [c.model_dump() for c in plain.chunks]


def _item(doc: str, start: int, text: str = "") -> dict:
    return {"text": text or f"{doc}:{start}", "metadata": {"doc_id": doc, "start": start}, "dist": 0.0}


def test_fusion_by_hand():
    bm25 = [_item("a", 0), _item("b", 0), _item("c", 0)]
    knn = [_item("b", 0), _item("d", 0), _item("a", 0)]
    # depth 1: a (bm25 rank 1) and b (knn rank 1) tie at 1/61; the tie goes to the first retriever's
    at1 = fuse_served([bm25, knn], 60, 1)
    assert [i["metadata"]["doc_id"] for i in at1] == ["a"] and at1[0]["dist"] == -1 / 61
    # depth 3: b = 1/62 + 1/61 > a = 1/61 + 1/63 > d = 1/62 > c = 1/63
    at3 = fuse_served([bm25, knn], 60, 3)
    assert [i["metadata"]["doc_id"] for i in at3] == ["b", "a", "d"]
    assert [i["dist"] for i in at3] == [-(1 / 62 + 1 / 61), -(1 / 61 + 1 / 63), -1 / 62]
