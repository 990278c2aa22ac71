"""The reranking stage inside eval and sweep: candidates from the store, reranked, cut to each depth."""

from __future__ import annotations

from pathlib import Path

import ragsweep

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "datasets" / "cuad-mini"
PIPELINE = ROOT / "pipelines" / "default.yaml"


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
    assert report.manifest["stage_seconds"].get("rerank") is not None


def test_sweep_reranker_axis_shares_one_index(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "grid:\n  rerank: [{reranker: null}, {reranker: encoder, rerank_candidates: 8}]\n"
        "  retriever_mode: [bm25]\nbaseline: {reranker: null}\nobjectives: [mrr@k]\nks: [1, 5]\n"
    )
    report = ragsweep.sweep(PIPELINE, MINI, grid, limit=8)
    assert len(report.configs) == 2
    assert len({c.index_key for c in report.configs}) == 1
    by = {c.params["reranker"]: c for c in report.configs}
    assert by[None].metrics["mrr@k"] is not None and by["encoder"].metrics["mrr@k"] is not None
