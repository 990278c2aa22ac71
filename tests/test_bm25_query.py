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

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "pipelines" / "default.yaml"
CHINESE = ROOT / "pipelines" / "chinese.yaml"
LONG = "莫高窟的藏经洞是在哪一年被谁发现的"  # one run of 17 CJK characters: 51 bytes, a token Tantivy drops
NOTHING = "？！🙂"  # no token at all
SYNTAX = "Which moon of Jupiter is the largest (by far)?"
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
    assert tantivy_safe(SYNTAX) == "Which moon of Jupiter is the largest by far ?"


def test_the_app_fails_only_where_pathways_tantivy_ends_the_run():
    """Measured on Pathway's own TantivyBM25: one word without a kept token finds nothing; two or more
    end pw.run ("Invalid query: Only excluding terms given")."""
    assert served_app_failure(LONG + "？") is None and served_app_failure(NOTHING) is None
    assert served_app_failure(LONG + " law") is None
    for text in (f"{LONG} {LONG}", f"{LONG} ？", "？ ！"):
        assert "Only excluding terms given" in (served_app_failure(text) or ""), text
    assert "'('" in (served_app_failure(SYNTAX) or "")


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
