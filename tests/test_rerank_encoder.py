"""What the ``encoder`` reranker can and cannot do: with the KNN index's own embedder it is that
index's own score, so over knn candidates it serves knn's order and says so; over bm25 candidates
it reorders them by dense similarity."""

from __future__ import annotations

import logging

import pytest

from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.rerank import _warn_once, build_reranker, encoder_repeats_knn, rerank_batch
from support import PIPELINE as DEFAULT
from support import ROOT

DOCS = ROOT / "datasets" / "cuad-mini" / "docs"
QUESTIONS = [
    "Which state/country's law governs the interpretation of the contract?",
    "What is the notice period required to terminate renewal?",
    "Is there a requirement for insurance that must be maintained by one party for the benefit of the counterparty?",
    "Does the contract limit the ability of a party to transfer the license being granted to a third party?",
]
CANDIDATES, TOP_K = 8, 3
SMALL = {"min_tokens": 40, "max_tokens": 120, "top_k": TOP_K}


@pytest.fixture(scope="module")
def corpus():
    from ragsweep.pipeline.corpus import parse_corpus

    return parse_corpus(DOCS)


def _served(corpus, mode: str, k: int):
    from ragsweep.pipeline.store import RagStore

    config = PipelineConfig.load(DEFAULT, {**SMALL, "retriever_mode": mode})
    return RagStore(config, corpus).retrieve(QUESTIONS, k=k)


def _keys(hits) -> list[tuple[str, int]]:
    return [(h.doc_id, h.start) for h in hits]


def _reranker(mode: str):
    config = PipelineConfig.load(
        DEFAULT, {**SMALL, "retriever_mode": mode, "reranker": "encoder", "rerank_candidates": CANDIDATES}
    )
    return build_reranker(config)


def test_over_knn_candidates_the_encoder_serves_knns_own_order(corpus):
    candidates, knn_top = _served(corpus, "knn", CANDIDATES), _served(corpus, "knn", TOP_K)
    reranked = rerank_batch(list(zip(QUESTIONS, candidates)), _reranker("knn"), TOP_K)
    assert [_keys(hits) for hits in reranked] == [_keys(hits) for hits in knn_top]
    assert all(h.rank == h.retrieval_rank for hits in reranked for h in hits)


def test_over_bm25_candidates_the_encoder_reorders_them(corpus):
    candidates = _served(corpus, "bm25", CANDIDATES)
    reranked = rerank_batch(list(zip(QUESTIONS, candidates)), _reranker("bm25"), TOP_K)
    assert any(_keys(mine) != _keys(theirs[:TOP_K]) for mine, theirs in zip(reranked, candidates))


@pytest.mark.parametrize(
    "overrides, repeats",
    [
        ({"retriever_mode": "knn"}, True),
        ({"retriever_mode": "knn", "reranker_model": "sentence-transformers/all-MiniLM-L6-v2"}, True),
        ({"retriever_mode": "knn", "reranker_model": "all-mpnet-base-v2"}, False),
        ({"retriever_mode": "hybrid"}, False),
        ({"retriever_mode": "bm25"}, False),
    ],
)
def test_the_encoder_on_its_own_knn_index_is_named(overrides, repeats):
    config = PipelineConfig.load(DEFAULT, {"reranker": "encoder", "rerank_candidates": 8, **overrides})
    assert encoder_repeats_knn(config) is repeats


def test_building_it_warns_that_it_cannot_change_knns_order(caplog):
    _warn_once.cache_clear()
    with caplog.at_level(logging.WARNING, logger="ragsweep.pipeline.rerank"):
        _reranker("knn")
        _reranker("knn")  # a sweep builds it per configuration: one warning
        _reranker("hybrid")
    warned = [r.getMessage() for r in caplog.records if "serves knn's order unchanged" in r.getMessage()]
    assert len(warned) == 1
    own = "default.yaml: $reranker = encoder re-scores with the KNN index's own embedder (all-MiniLM-L6-v2)"
    assert own in warned[0]
