"""The in-process Pathway DocumentStore finds the right document in every retriever mode."""

import pytest

from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import parse_corpus
from ragsweep.pipeline.store import RagStore, sanitize_query, scope_filter

QUESTIONS = {
    # question -> document that must come first
    "Which moon of Jupiter has its own magnetic field?": "jupiter.html",
    "How long should the levain dough proof in the refrigerator before the Dutch oven?": "sourdough.docx",
    "What does the borrow checker enforce about mutable references?": "notes/borrow-checker.md",
    "lift increase of a wing in a propeller slipstream": "cranfield-1-slipstream.txt",
    "Who is the distributor and what territory is granted under the distributor agreement?": "lucid-distributor-agreement.pdf",
}


@pytest.fixture(scope="module")
def corpus(fixture_corpus_dir):
    return parse_corpus(fixture_corpus_dir)


@pytest.mark.parametrize("mode", ["bm25", "knn", "hybrid"])
def test_each_mode_finds_the_right_document(mode, corpus, default_pipeline):
    config = PipelineConfig.load(default_pipeline, {"retriever_mode": mode, "min_tokens": 40, "max_tokens": 120})
    store = RagStore(config, corpus)
    results = store.retrieve(list(QUESTIONS), k=3)
    for (question, expected), hits in zip(QUESTIONS.items(), results):
        assert hits, f"{mode}: no hit for {question!r}"
        assert hits[0].doc_id == expected, f"{mode}: {question!r} -> {[h.doc_id for h in hits]}"
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_hits_carry_offsets_into_the_parsed_text(corpus, default_pipeline):
    config = PipelineConfig.load(default_pipeline, {"retriever_mode": "bm25", "min_tokens": 40, "max_tokens": 120})
    store = RagStore(config, corpus)
    hits = store.retrieve(["Ganymede magnetic field", "distributor territory"], k=5)
    for hit in (h for hs in hits for h in hs):
        assert corpus.text_of(hit.doc_id)[hit.start : hit.end] == hit.text
    # chunks of the PDF are consecutive and cover it
    pdf_chunks = [c for c in store.last_run.chunks if c.doc_id == "lucid-distributor-agreement.pdf"]
    assert len(pdf_chunks) > 3
    assert all(a.end <= b.start + 16 for a, b in zip(pdf_chunks, pdf_chunks[1:]))
    assert all(c.tokens <= 120 for c in pdf_chunks)


def test_doc_scope_restricts_each_question(corpus, default_pipeline):
    config = PipelineConfig.load(default_pipeline, {"retriever_mode": "hybrid"})
    store = RagStore(config, corpus)
    question = "Which moon of Jupiter has its own magnetic field?"
    unscoped, scoped, two = store.retrieve(
        [question] * 3,
        k=5,
        doc_scopes=[None, ["sourdough.docx"], ["sourdough.docx", "notes/borrow-checker.md"]],
    )
    assert unscoped[0].doc_id == "jupiter.html"
    assert scoped and {h.doc_id for h in scoped} == {"sourdough.docx"}
    assert {h.doc_id for h in two} == {"sourdough.docx", "notes/borrow-checker.md"}


def test_questions_that_break_tantivy_are_sanitised(corpus, default_pipeline):
    config = PipelineConfig.load(default_pipeline, {"retriever_mode": "bm25"})
    nasty = ['Governing law: "Delaware" (state', "moon\u00a0Ganymede", "AND OR NOT", "((", "a:b:c ~2 ^3"]
    results = RagStore(config, corpus).retrieve(nasty, k=2)
    assert len(results) == len(nasty)
    assert results[1][0].doc_id == "jupiter.html"


def test_ranking_is_deterministic_across_runs(corpus, default_pipeline):
    config = PipelineConfig.load(default_pipeline, {"retriever_mode": "hybrid", "min_tokens": 40, "max_tokens": 120})
    first = RagStore(config, corpus).retrieve(list(QUESTIONS), k=4)
    second = RagStore(config, corpus).retrieve(list(QUESTIONS), k=4)
    assert [[(h.doc_id, h.start) for h in hs] for hs in first] == [[(h.doc_id, h.start) for h in hs] for hs in second]


def test_sanitize_and_scope_filter():
    assert sanitize_query('Law: "NY" (x)') == "Law NY x"
    assert sanitize_query("?!") == ""  # nothing searchable: BM25 finds nothing, no stand-in word
    assert scope_filter(["b.pdf", "a.pdf"]) == "doc_id == `a.pdf` || doc_id == `b.pdf`"
    assert scope_filter(None) is None
    with pytest.raises(ValueError, match="backtick"):
        scope_filter(["we`ird"])


def test_store_from_a_config_path_and_a_folder(fixture_corpus_dir, default_pipeline):
    store = RagStore.from_folder(default_pipeline, fixture_corpus_dir, {"retriever_mode": "bm25"})
    assert store.config.retriever_mode == "bm25" and len(store.corpus.documents) == 5
    [hits] = store.retrieve(["Which moon of Jupiter has its own magnetic field?"], k=1)
    assert hits[0].doc_id == "jupiter.html"


def test_a_second_batch_neither_splits_nor_embeds_again(corpus, default_pipeline):
    """Build once, ask many batches: the second batch re-runs the graph but splits no document
    and embeds no chunk again (an in-process split memo and the embedding cache)."""
    from ragsweep.pipeline.chunking import OffsetTokenCountSplitter

    config = PipelineConfig.load(default_pipeline, {"retriever_mode": "hybrid", "min_tokens": 40, "max_tokens": 120})
    store = RagStore(config, corpus)
    first = store.retrieve(list(QUESTIONS), k=3)
    splits = OffsetTokenCountSplitter.calls
    again = store.retrieve(list(QUESTIONS), k=3)
    assert OffsetTokenCountSplitter.calls == splits
    assert store.last_run.embedded_texts == 0
    assert [[(h.doc_id, h.start) for h in hits] for hits in again] == [
        [(h.doc_id, h.start) for h in hits] for hits in first
    ]
