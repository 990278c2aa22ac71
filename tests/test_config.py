"""Pipeline configs in Pathway's YAML syntax: overrides by name, hashes, app configs as-is."""

import pytest

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.config import PipelineConfig, parse_overrides
from ragsweep.pipeline.yaml_symbolic import load_symbolic

APP_YAML = """
$sources:
  - !pw.io.fs.read
    path: data
    format: binary
    with_metadata: true

$splitter: !pw.xpacks.llm.splitters.TokenCountSplitter
  max_tokens: 300

$retriever_factory: !pw.stdlib.indexing.TantivyBM25Factory {}

$document_store: !pw.xpacks.llm.document_store.DocumentStore
  docs: $sources
  splitter: $splitter
  retriever_factory: $retriever_factory
"""


def test_overrides_change_values_and_hash(default_pipeline):
    base = PipelineConfig.load(default_pipeline)
    assert base.get("max_tokens") == 600 and base.retriever_mode == "hybrid"
    other = base.with_overrides({"max_tokens": 400})
    assert other.get("max_tokens") == 400
    assert other.hash != base.hash
    assert PipelineConfig.load(default_pipeline, {"max_tokens": 400}).hash == other.hash
    # top-k does not change chunks nor index; chunk size changes both
    k10 = base.with_overrides({"top_k": 10})
    assert k10.index_key == base.index_key and k10.hash != base.hash
    assert other.chunking_key != base.chunking_key
    bm25 = base.with_overrides({"retriever_mode": "bm25"})
    assert bm25.chunking_key == base.chunking_key and bm25.index_key != base.index_key


def test_build_constructs_each_mode(default_pipeline):
    from pathway.stdlib.indexing import BruteForceKnnFactory, HybridIndexFactory, TantivyBM25Factory

    for mode, cls in [("bm25", TantivyBM25Factory), ("knn", BruteForceKnnFactory), ("hybrid", HybridIndexFactory)]:
        built = PipelineConfig.load(default_pipeline, {"retriever_mode": mode, "max_tokens": 333}).build()
        assert isinstance(built.retriever_factory, cls)
        assert built.splitter.kwargs["max_tokens"] == 333
        assert (built.embedder is None) == (mode == "bm25")


def test_unknown_or_component_override_is_an_error(default_pipeline):
    with pytest.raises(ConfigError, match="no variable \\$chunk_size"):
        PipelineConfig.load(default_pipeline, {"chunk_size": 3})
    with pytest.raises(ConfigError, match="is a component"):
        PipelineConfig.load(default_pipeline, {"splitter": 3})
    with pytest.raises(
        ConfigError,
        match=r"\$retriever_mode = 'bogus': must name a variable of the file holding a "
        r"retriever factory \(bm25, hybrid, knn\)",
    ):
        PipelineConfig.load(default_pipeline, {"retriever_mode": "bogus"}).build()


def test_a_pathway_app_config_is_evaluated_as_is(tmp_path, fixture_corpus_dir):
    from pathway.stdlib.indexing import TantivyBM25Factory

    from ragsweep.pipeline.corpus import parse_corpus
    from ragsweep.pipeline.store import RagStore

    app = tmp_path / "app.yaml"
    app.write_text(APP_YAML)
    config = PipelineConfig.load(app)
    built = config.build()
    assert isinstance(built.retriever_factory, TantivyBM25Factory)
    assert built.splitter.kwargs["max_tokens"] == 300
    hits = RagStore(config, parse_corpus(fixture_corpus_dir)).retrieve(["Ganymede magnetic field"], k=2)
    assert hits[0][0].doc_id == "jupiter.html"
    # Pathway's own splitter knows no offsets: ragsweep locates the chunk in the text
    assert hits[0][0].end > hits[0][0].start


def test_parse_overrides():
    assert parse_overrides(["max_tokens=400", "retriever_mode=bm25", "$rrf_k=30.5"]) == {
        "max_tokens": 400,
        "retriever_mode": "bm25",
        "rrf_k": 30.5,
    }
    with pytest.raises(ConfigError):
        parse_overrides(["oops"])


def test_secrets_never_reach_the_manifest(tmp_path, default_pipeline):
    secret = "sk-very-secret-value"
    text = default_pipeline.read_text().replace("$llm_model: null", f"$llm_model: null\n$llm_api_key: {secret}")
    path = tmp_path / "with-key.yaml"
    path.write_text(text)
    config = PipelineConfig.load(path)
    assert config.get("llm_api_key") == secret
    manifest = config.manifest()
    assert manifest["variables"]["llm_api_key"] == "***"
    assert manifest["variables"]["max_tokens"] == 600  # "tokens" is not a secret
    assert secret not in str(manifest) and secret not in config.public_text()
    assert "$llm_api_key: ***" in config.public_text()


# An llm-app question-answering app.yaml (templates/question_answering_rag), with a BM25
# retriever so it runs offline: a DoclingParser with LLM table parsing, an OpenAI chat
# model and a question answerer with its search_topk.
DOCLING_APP_YAML = """
$sources:
  - !pw.io.fs.read
    path: data
    format: binary
    with_metadata: true

$llm: !pw.xpacks.llm.llms.OpenAIChat
  model: "gpt-4.1-mini"
  retry_strategy: !pw.udfs.ExponentialBackoffRetryStrategy
    max_retries: 6
  cache_strategy: !pw.udfs.DefaultCache {}
  temperature: 0

$splitter: !pw.xpacks.llm.splitters.TokenCountSplitter
  max_tokens: 300

$parser: !pw.xpacks.llm.parsers.DoclingParser
  table_parsing_strategy: "llm"
  async_mode: "fully_async"
  chunk: false
  cache_strategy: !pw.udfs.DefaultCache {}

$retriever_factory: !pw.stdlib.indexing.TantivyBM25Factory {}

$document_store: !pw.xpacks.llm.document_store.DocumentStore
  docs: $sources
  parser: $parser
  splitter: $splitter
  retriever_factory: $retriever_factory

question_answerer: !pw.xpacks.llm.question_answering.BaseRAGQuestionAnswerer
  llm: $llm
  indexer: $document_store
  search_topk: 3
"""


def test_an_app_config_with_a_docling_parser_is_parsed_by_that_parser(tmp_path, monkeypatch, fixture_corpus_dir):
    """Pathway's DoclingParser is built from the YAML with its arguments and run as the app runs it: the
    DOCX becomes the one Markdown element ``chunk: false`` gives; what it cannot parse (HTML and text, which
    it reads as a PDF named document.pdf; a PDF without Docling's layout model) is skipped with its error,
    as the app would index nothing of it."""
    from pathway.stdlib.indexing import TantivyBM25Factory
    from pathway.xpacks.llm.parsers import DoclingParser

    from ragsweep.pipeline.corpus import parse_corpus
    from ragsweep.pipeline.store import RagStore

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-sent")  # table_parsing_strategy llm builds a chat model
    app = tmp_path / "app.yaml"
    app.write_text(DOCLING_APP_YAML)
    config = PipelineConfig.load(app)
    built = config.build()
    assert isinstance(built.retriever_factory, TantivyBM25Factory)
    assert built.splitter.kwargs["max_tokens"] == 300
    parser = config.build_parser()
    assert isinstance(parser, DoclingParser) and parser.chunker is None and parser.table_parsing_strategy == "llm"
    spec = config.parser_spec()
    assert spec.identity.startswith("pathway.xpacks.llm.parsers.DoclingParser#") and not spec.native
    assert config.manifest()["parser"] == {
        "parser": "DoclingParser", "by": "app", "class": "pathway.xpacks.llm.parsers.DoclingParser"
    }  # fmt: skip
    # the hash is the file's structure, read symbolically
    assert PipelineConfig(str(app), load_symbolic(DOCLING_APP_YAML)).hash == config.hash

    corpus = parse_corpus(
        fixture_corpus_dir, cache_dir=tmp_path / "cache", parse_fn=spec.parse_fn(), parser_id=spec.identity
    )
    assert [d.doc_id for d in corpus.documents] == ["sourdough.docx"]
    (doc,) = corpus.documents
    assert doc.parser == "app:" + spec.identity and len(doc.elements) == 1 and doc.text.startswith("### Sourdough")
    skipped = {s.doc_id: s.reason for s in corpus.skipped}
    assert "document.pdf" in skipped["jupiter.html"] and "document.pdf" in skipped["cranfield-1-slipstream.txt"]
    assert config.top_k == 3  # the question answerer's search_topk
    hits = RagStore(config, corpus).retrieve(["How long does the dough rise?"])
    assert [h.doc_id for h in hits[0]] == ["sourdough.docx"]  # its one chunk (the corpus has no other)
    for hit in hits[0]:  # offsets into the parsed text, the parser's Markdown included
        assert doc.text[hit.start : hit.end] == hit.text


def test_parser_native_replaces_the_apps_parser_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-sent")
    app = tmp_path / "app.yaml"
    app.write_text(DOCLING_APP_YAML)
    config = PipelineConfig.load(app, {"parser": "native"})
    assert type(config.build_parser()).__name__ == "NativeParser"
    assert config.parser_spec().native and config.hash != PipelineConfig.load(app).hash
    assert config.manifest()["parser"]["note"].startswith("parsed by ragsweep, not by the app's parser (DoclingParser)")
    with pytest.raises(ConfigError, match="the only parser override is parser=native"):
        PipelineConfig.load(app, {"parser": "docling"})


def test_search_topk_is_the_top_k_of_an_app_config_without_top_k(tmp_path):
    import inspect

    from pathway.xpacks.llm.question_answering import BaseRAGQuestionAnswerer

    def load(text, overrides=None):
        path = tmp_path / "app.yaml"
        path.write_text(text)
        return PipelineConfig.load(path, overrides)

    literal = DOCLING_APP_YAML
    assert load(literal).top_k == 3
    assert load(literal).manifest()["top_k"] == {"value": 3, "from": "question_answerer.search_topk"}
    assert load(literal, {"top_k": 8}).top_k == 8  # ragsweep's knob may be set on such a file

    variable = literal.replace("search_topk: 3", "search_topk: $search_topk") + "\n$search_topk: 4\n"
    assert load(variable).top_k == 4
    assert load(variable, {"search_topk": 2}).top_k == 2
    assert load("$search_topk: 7\n" + APP_YAML).top_k == 7
    assert load("$top_k: 9\n" + variable).top_k == 9  # $top_k first

    pathway_default = inspect.signature(BaseRAGQuestionAnswerer).parameters["search_topk"].default
    assert load(literal.replace("  search_topk: 3\n", "")).top_k == pathway_default
    assert load(APP_YAML).top_k == 5  # no question answerer: ragsweep's default

    with pytest.raises(ConfigError, match=r"question_answerer.search_topk = 0: must be an integer >= 1"):
        load(literal.replace("search_topk: 3", "search_topk: 0"))
    with pytest.raises(ConfigError, match=r"\$search_topk = 'many': must be an integer >= 1"):
        load(variable, {"search_topk": "many"})


def test_a_top_level_document_store_is_used_too(tmp_path):
    """llm-app's document-indexing template names it ``document_store:``, without ``$``."""
    from pathway.stdlib.indexing import TantivyBM25Factory

    app = tmp_path / "app.yaml"
    app.write_text(
        APP_YAML.replace("$document_store:", "document_store:")
        + "  parser: $parser\n\n$parser: !pw.xpacks.llm.parsers.UnstructuredParser {}\n"
    )
    config = PipelineConfig.load(app)
    built = config.build()
    assert isinstance(built.retriever_factory, TantivyBM25Factory) and built.splitter.kwargs["max_tokens"] == 300
    assert config.manifest()["parser"]["class"] == "pathway.xpacks.llm.parsers.UnstructuredParser"
    assert config.with_overrides({"top_k": 2}).index_key == config.index_key
