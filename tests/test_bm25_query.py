"""Only Pathway's own Tantivy BM25 is asked a cleaned question (ragsweep.pipeline.serving): a hybrid's KNN
side embeds the question as it is, as Pathway's HybridIndex passes it; a question Tantivy keeps no token of
searches nothing in BM25 (an empty list, fused as Pathway fuses it), never a stand-in word; the "served app
fails" note is given only where the configured BM25 really ends the app's run."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsweep.datasets.pathway_limits import served_app_failure, tantivy_safe
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import parse_corpus
from ragsweep.pipeline.store import RagStore
from support import CHINESE
from support import PIPELINE as DEFAULT

LONG = "莫高窟的藏经洞是在哪一年被谁发现的"  # one run of 17 CJK characters: 51 bytes, a token Tantivy drops
NOTHING = "？！🙂"  # no token at all
SYNTAX = "Which moon of Jupiter is the largest (by far?"  # an unbalanced parenthesis: the app's run ends
TAKEN = "Which moon of Jupiter is the largest (by far)?"  # balanced: the app's own query
DOCS = {
    "contract.txt": "This document lists the parties to the agreement and the law that governs it.",
    "jupiter.txt": "Jupiter has many moons. Ganymede is the largest moon of Jupiter and of the solar system.",
    "bread.txt": "Sourdough bread needs a starter of flour and water, fed every day.",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("docs")
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    return parse_corpus(folder)


def test_what_pathways_tantivy_is_asked():
    assert tantivy_safe(LONG + "？") == "" and tantivy_safe(NOTHING) == ""  # Tantivy keeps no token: nothing
    assert tantivy_safe(LONG + " law") == LONG + " law"  # the app drops the long token itself and searches "law"
    assert tantivy_safe(SYNTAX) == "Which moon of Jupiter is the largest by far?"
    for taken in (TAKEN, "Is the co-op's 2020-01-01 notice valid?", 'the "governing law" clause', "law OR x"):
        assert tantivy_safe(taken) == taken  # Pathway's parser takes it: asked as the app asks it


def test_the_app_fails_only_where_pathways_tantivy_ends_the_run():
    """Measured on Pathway's own TantivyBM25: one word without a kept token finds nothing; two or more
    end pw.run ("Invalid query: Only excluding terms given")."""
    assert served_app_failure(LONG + "？") is None and served_app_failure(NOTHING) is None
    assert served_app_failure(LONG + " law") is None
    for text in (f"{LONG} {LONG}", f"{LONG} ？", "？ ！"):
        assert "Only excluding terms given" in (served_app_failure(text) or ""), text
    assert "'('" in (served_app_failure(SYNTAX) or "")
    assert served_app_failure(TAKEN) is None and served_app_failure("Is the co-op's notice valid?") is None


def test_bm25_with_nothing_searchable_finds_nothing(corpus):
    store = RagStore(PipelineConfig.load(DEFAULT, {"retriever_mode": "bm25"}), corpus)
    nothing, syntax = store.retrieve([NOTHING, SYNTAX], k=3)
    assert nothing == []  # a stand-in word would find the contract ("This document ...")
    assert syntax[0].doc_id == "jupiter.txt"


def test_the_hybrids_knn_side_gets_the_raw_question_and_an_empty_bm25_list_fuses_as_pathway_fuses(corpus, monkeypatch):
    from ragsweep.pipeline.embedding import CachedSentenceTransformerEmbedder

    real = CachedSentenceTransformerEmbedder.embed
    embedded: list[str] = []

    def recording(self, texts):
        embedded.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(CachedSentenceTransformerEmbedder, "embed", recording)
    knn = RagStore(PipelineConfig.load(DEFAULT, {"retriever_mode": "knn"}), corpus).retrieve([NOTHING], k=3)[0]
    hybrid = RagStore(PipelineConfig.load(DEFAULT, {"retriever_mode": "hybrid"}), corpus).retrieve(
        [NOTHING, SYNTAX], k=3
    )
    assert {NOTHING, SYNTAX} <= set(embedded)
    assert "document" not in embedded and tantivy_safe(SYNTAX) not in embedded
    # RRF over the KNN list alone: its order, each at 1 / (60 + rank)
    assert [h.doc_id for h in hybrid[0]] == [h.doc_id for h in knn]
    assert [h.score for h in hybrid[0]] == pytest.approx([1 / 61, 1 / 62, 1 / 63])
    assert hybrid[1][0].doc_id == "jupiter.txt"


def test_the_served_app_note_follows_the_configured_bm25(corpus):
    """Two long Chinese words: Pathway's own TantivyBM25 ends the app's run (noted); ragsweep's segmented
    BM25 in pipelines/chinese.yaml cuts them into words and answers (no note)."""
    import ragsweep
    from ragsweep.datasets.schema import Case

    cases = [Case(id="two-long-words", question=f"{LONG} {LONG}")]
    docs = Path(corpus.docs_dir)
    plain = ragsweep.evaluate(DEFAULT, cases, docs=docs, overrides={"retriever_mode": "bm25"}, validate=False)
    assert "Only excluding terms given" in plain.cases[0].notes["served_app"]
    segmented = ragsweep.evaluate(CHINESE, cases, docs=docs, overrides={"retriever_mode": "bm25"}, validate=False)
    assert "served_app" not in segmented.cases[0].notes


def pathway_bm25_answers(factory, question: str) -> bool:
    """Does a Pathway BM25 index built by ``factory`` answer ``question`` (False: the run ended)?"""
    import pathway as pw
    from pathway.internals.parse_graph import G
    from pathway.stdlib.indexing.data_index import DataIndex

    G.clear()
    docs = pw.debug.table_from_rows(pw.schema_from_types(text=str), [(t,) for t in DOCS.values()])
    queries = pw.debug.table_from_rows(pw.schema_from_types(query=str), [(question,)])
    index = DataIndex(docs, factory.build_inner_index(docs.text))
    try:
        pw.debug.table_to_pandas(index.query_as_of_now(queries.query, number_of_matches=3).select(t=pw.right.text))
    except Exception:  # noqa: BLE001 - Pathway's EngineError: the app's server would stop here
        return False
    finally:
        G.clear()
    return True


@pytest.mark.parametrize(
    "question",
    [
        *(LONG + "？", NOTHING, f"{LONG} law", f"{LONG} {LONG}", f"{LONG} ？", "？ ！", SYNTAX, TAKEN),
        *("law AND", "law OR x", "NOT law", "-law", "+law", "law:value", "co-op law", "law\u00a0governs"),
        *('the "governing law" clause', '"a b', "[a TO b]", "a> law", "<a law", "law ~2", "what's the law"),
    ],
)
def test_the_note_is_what_pathways_own_bm25_does(question):
    """served_app_failure against Pathway's own TantivyBM25 run on the question; ragsweep's segmented
    BM25 answers every one."""
    from pathway.stdlib.indexing import TantivyBM25Factory

    from ragsweep.pipeline.cjk import SegmentedTantivyBM25Factory

    assert pathway_bm25_answers(TantivyBM25Factory(), question) == (served_app_failure(question) is None)
    assert pathway_bm25_answers(SegmentedTantivyBM25Factory(), question)
