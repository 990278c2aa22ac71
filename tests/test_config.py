"""Pipeline configs in Pathway's YAML syntax: overrides by name, hashes, app configs as-is."""

import pytest

from ragsweep.config import ConfigError, PipelineConfig, parse_overrides

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
    with pytest.raises(ConfigError, match="retriever_mode is 'bogus'"):
        PipelineConfig.load(default_pipeline, {"retriever_mode": "bogus"}).build()


def test_a_pathway_app_config_is_evaluated_as_is(tmp_path, fixture_corpus_dir):
    from pathway.stdlib.indexing import TantivyBM25Factory

    from ragsweep.corpus import parse_corpus
    from ragsweep.store import RagStore

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
        "max_tokens": 400, "retriever_mode": "bm25", "rrf_k": 30.5}
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
