"""A pipeline loaded again reads what its built components answer from its remembered facts, without
building them, and every fact equals what a build gives; a warm evaluation then never imports Pathway."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from ragsweep.core.cache_files import BlobTable
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.config_facts import facts_key
from support import ROOT

APPS = ROOT / "tests" / "fixtures" / "apps"
# every pipeline file shipped or tested (the others in those folders are sweep grids)
FILES = [ROOT / "pipelines" / "default.yaml", ROOT / "pipelines" / "chinese.yaml"] + [
    APPS / f"{name}.yaml" for name in ("answer_sweep", "best_app", "parity_adaptive", "parity_base", "rag_evals_style")
]
PROPERTIES = ("hash", "chunking_key", "index_key", "top_k", "top_k_origin", "retriever_mode")
METHODS = (
    "scalars",
    "manifest",
    "configured_parser",
    "embedder_description",
    "has_embedder",
    "keeps_app_embedder",
    "uses_tantivy",
    "prefix_exact",
    "fused_from_parts",
    "component_sources",
)


def facts_of(config: PipelineConfig) -> dict:
    found = {name: getattr(config, name) for name in PROPERTIES}
    found.update({name: getattr(config, name)() for name in METHODS})
    spec = config.parser_spec()
    found["parser_spec"] = {**dataclasses.asdict(dataclasses.replace(spec, app_parse=None)), "parses": spec.app_parse}
    found["variables"] = config.variables.model_dump()
    found["fields_set"] = sorted(config.variables.model_fields_set)
    return json.loads(json.dumps(found, default=str))


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-sent")
    monkeypatch.delenv("RAGSWEEP_CONFIG_FACTS", raising=False)
    return tmp_path / "cache"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_second_load_reads_every_fact_back_as_pathways_loader_gives_it(path, own_cache, monkeypatch):
    monkeypatch.setenv("RAGSWEEP_CONFIG_FACTS", "0")
    fresh = PipelineConfig.load(path)
    assert fresh.facts is None
    expected = facts_of(fresh)
    monkeypatch.delenv("RAGSWEEP_CONFIG_FACTS")
    first = PipelineConfig.load(path)  # computes each fact and keeps it
    assert facts_of(first) == expected and first.tree is not None  # the built facts built it
    second = PipelineConfig.load(path)
    assert second.tree is None  # nothing read through Pathway's loader
    assert facts_of(second) == expected
    assert second.tree is None
    # what needs the components loads the file then, and builds what a fresh load builds
    assert type(second.build().retriever_factory) is type(fresh.build().retriever_factory)
    assert second.tree is not None and second.hash == fresh.hash
    # it travels to a Ray task or a worker process as it is
    assert facts_of(pickle.loads(pickle.dumps(PipelineConfig.load(path)))) == expected


def test_overrides_are_part_of_the_key(own_cache):
    path = ROOT / "pipelines" / "default.yaml"
    PipelineConfig.load(path, {"top_k": 3, "retriever_mode": "bm25"})
    plain = PipelineConfig.load(path)
    again = PipelineConfig.load(path, {"top_k": 3, "retriever_mode": "bm25"})
    assert again.tree is None and again.top_k == 3 and again.retriever_mode == "bm25" and again.uses_tantivy() is True
    assert plain.top_k == 5 and plain.index_key != again.index_key


def test_an_edited_file_is_loaded_anew(own_cache, tmp_path):
    path = tmp_path / "rag.yaml"
    path.write_text((ROOT / "pipelines" / "default.yaml").read_text())
    assert PipelineConfig.load(path).top_k == 5
    assert PipelineConfig.load(path).tree is None
    path.write_text(path.read_text().replace("$top_k: 5", "$top_k: 7"))
    edited = PipelineConfig.load(path)
    assert edited.facts is not None and edited.facts.values == {} and edited.top_k == 7


def test_a_file_naming_code_outside_pathway_and_ragsweep_is_never_remembered(own_cache):
    default = (ROOT / "pipelines" / "default.yaml").read_text()
    assert facts_key(default, Path("rag.yaml"), {}) is not None
    assert facts_key(default + "\n$x: !!str plain\n$y: 'Hello!world'\n", Path("rag.yaml"), {}) is not None
    assert facts_key(default + "\n$mine: !mypackage.MyEmbedder {}\n", Path("rag.yaml"), {}) is None


def test_a_damaged_row_is_computed_again(own_cache):
    path = ROOT / "pipelines" / "default.yaml"
    expected = PipelineConfig.load(path).index_key
    key = facts_key(path.read_text(), path, {})
    assert key is not None
    BlobTable.shared(own_cache / "config_facts.sqlite", "facts", what="pipeline-facts").put_many({key: b"\x00not json"})
    again = PipelineConfig.load(path)
    assert again.facts is not None and again.facts.values == {} and again.index_key == expected
    assert again.uses_tantivy() is True
    remembered = PipelineConfig.load(path)
    assert remembered.uses_tantivy() is True and remembered.tree is None  # remembered again


WARM = """
import json, sys
import ragsweep
result = ragsweep.evaluate(sys.argv[1], sys.argv[2])
print(json.dumps({"imported": sorted(set(sys.argv[3:]) & set(sys.modules)), "metrics": result.metrics}))
"""


# what a run whose every list, answer and score comes from the caches has no use for
UNNEEDED = ("pathway", "numpy", "httpx", "openai", "scipy", "ragas", "torch")


def test_a_warm_evaluation_imports_no_pathway_numpy_or_http_client_and_gives_the_same_numbers(tmp_path):
    env = {
        **os.environ,
        "RAGSWEEP_CACHE_DIR": str(tmp_path / "cache"),
        "RAGSWEEP_SERVED_CACHE": "1",
        "RAGSWEEP_SCORED_CACHE": "1",  # answers, scores and intervals too
        "PYTHONPATH": str(ROOT / "src"),
    }
    env.pop("RAGSWEEP_CONFIG_FACTS", None)
    args = [
        sys.executable,
        "-c",
        WARM,
        str(ROOT / "pipelines" / "default.yaml"),
        str(ROOT / "datasets" / "cuad-mini"),
        *UNNEEDED,
    ]

    def evaluate() -> dict:
        done = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    cold, warm = evaluate(), evaluate()
    assert "pathway" in cold["imported"] and warm["imported"] == []
    assert warm["metrics"] == cold["metrics"]
