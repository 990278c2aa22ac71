"""The reranking stage inside eval and sweep: candidates from the store, reranked, cut to each depth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ragsweep
from support import MINI, PIPELINE


def test_eval_with_a_reranker_scores_the_reranked_lists():
    report = ragsweep.evaluate(
        PIPELINE,
        MINI,
        sample=12,
        seed=2,
        ks=[1, 3],
        overrides={"reranker": "encoder", "rerank_candidates": 8, "retriever_mode": "bm25"},
    )
    case = next(c for c in report.cases if c.hits)
    assert len(case.hits) <= 5
    assert all(h.rerank_score is not None and h.retrieval_rank is not None for h in case.hits)
    scores = [h.rerank_score for h in case.hits]
    assert scores == sorted(scores, reverse=True)
    assert any(h.retrieval_rank != h.rank for c in report.cases for h in c.hits)  # the order really changed
    assert report.manifest.stage_seconds.get("rerank") is not None


def _hits(sweep_dir: Path, config_id: str) -> dict[str, list[dict[str, Any]]]:
    """Each case's stored hits in one configuration of a sweep."""
    lines = (sweep_dir / "configs" / config_id / "cases.jsonl").read_text().splitlines()
    return {row["id"]: row.get("hits", []) for row in map(json.loads, lines) if row.get("id")}


def test_sweep_reranker_axis_shares_one_index(tmp_path, monkeypatch):
    from ragsweep.pipeline.store import RagStore

    asked: list[int] = []  # the questions of each index run
    run = RagStore.run

    def counting_run(self, queries, *args, **kwargs):
        asked.append(len(queries))
        return run(self, queries, *args, **kwargs)

    monkeypatch.setattr(RagStore, "run", counting_run)
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "grid:\n  rerank: [{reranker: null}, {reranker: encoder, rerank_candidates: 8}]\n"
        "  retriever_mode: [bm25]\nbaseline: {reranker: null}\nobjectives: [mrr@k]\nks: [1, 5]\n"
    )
    report = ragsweep.sweep(PIPELINE, MINI, grid, limit=8, out=tmp_path, name="s")
    assert len(report.configs) == 2
    assert len({c.index_key for c in report.configs}) == 1
    assert asked == [8]  # one index run, one query per question (BM25: every depth a prefix of the deepest)
    by = {c.params["reranker"]: c for c in report.configs}
    plain, reranked = _hits(tmp_path / "s", by[None].id), _hits(tmp_path / "s", by["encoder"].id)
    assert sorted(plain) == sorted(reranked) and len(plain) == 8
    moved = 0
    for case_id, hits in reranked.items():
        served = plain[case_id]  # the unreranked list: the first 5 of the candidates the reranker ordered
        assert all(h.get("rerank_score") is None for h in served)
        assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1)) and len(hits) == len(served)
        scores = [h.get("rerank_score") for h in hits]
        assert None not in scores and scores == sorted(scores, reverse=True), scores
        for hit in hits:
            assert 1 <= hit.get("retrieval_rank", 0) <= 8  # one of the 8 candidates
            if hit["retrieval_rank"] <= len(served):  # the same chunk of the same index as served unreranked
                same = served[hit["retrieval_rank"] - 1]
                assert [hit[f] for f in ("doc_id", "start", "end", "score")] == [
                    same[f] for f in ("doc_id", "start", "end", "score")
                ]
        moved += [(h["doc_id"], h["start"]) for h in hits] != [(h["doc_id"], h["start"]) for h in served]
    assert moved > 0  # the reranker changed some list
    assert by[None].metrics["mrr@k"] != by["encoder"].metrics["mrr@k"]
