"""A pipeline's spec is read, overridden, checked and keyed without Pathway; its build is Pathway's own."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.tag_classes import is_retriever_factory
from ragsweep.pipeline.yaml_symbolic import Ref, Tagged, load_symbolic
from support import PIPELINE as DEFAULT
from support import ROOT

APP = ROOT / "tests" / "fixtures" / "apps" / "qa_usearch.yaml"
CASES = [
    (DEFAULT, {"max_tokens": 400, "retriever_mode": "knn"}),
    (APP, {"question_answerer.search_topk": 3, "splitter.max_tokens": 300}),
]

KEYS_SCRIPT = """
import json, sys
import ragsweep
out = []
for path, overrides in json.loads(sys.argv[1]):
    base = ragsweep.PipelineConfig.load(path)
    changed = base.with_overrides(overrides)
    changed.validate()
    out.append([[c.hash, c.chunking_key, c.index_key, c.top_k] for c in (base, changed)])
print(json.dumps({"keys": out, "pathway": sorted(m for m in sys.modules if m.split(".")[0] == "pathway")}))
"""


def _keys_in_a_fresh_process(tmp_path: Path, seed: int) -> dict:
    cache = tmp_path / f"cache-{seed}"
    env = {**os.environ, "RAGSWEEP_CACHE_DIR": str(cache), "PYTHONHASHSEED": str(seed)}
    env["PYTHONPATH"] = str(ROOT / "src")
    env.pop("RAGSWEEP_CONFIG_FACTS", None)
    cases = json.dumps([[str(path), overrides] for path, overrides in CASES])
    done = subprocess.run(
        [sys.executable, "-c", KEYS_SCRIPT, cases], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_loading_overriding_checking_and_keying_import_no_pathway_and_give_the_same_keys_everywhere(tmp_path):
    first, second = (_keys_in_a_fresh_process(tmp_path, seed) for seed in (1, 2))
    assert first["pathway"] == [] and second["pathway"] == []
    here = []
    for path, overrides in CASES:
        base = PipelineConfig.load(path)
        changed = base.with_overrides(overrides)
        here.append([[c.hash, c.chunking_key, c.index_key, c.top_k] for c in (base, changed)])
    assert first["keys"] == second["keys"] == here
    for base, changed in here:
        assert base[0] != changed[0], "an override changes the hash"
    (default, knn), (app, smaller) = here
    assert knn[1] != default[1] and knn[2] != default[2]  # max_tokens: other chunks, so another index
    assert smaller[1] != app[1] and smaller[3] == 3  # the app's splitter argument and its answerer's top-k


def test_each_key_covers_what_decides_its_stage():
    base = PipelineConfig.load(DEFAULT)
    keys = {
        name: base.with_overrides(overrides)
        for name, overrides in {
            "top_k": {"top_k": 10},
            "mode": {"retriever_mode": "bm25"},
            "header": {"chunk_header": "title"},
            "route": {"route_docs": 3},
            "native": {"parser": "native"},
        }.items()
    }
    assert keys["top_k"].index_key == base.index_key and keys["top_k"].hash != base.hash
    assert keys["mode"].chunking_key == base.chunking_key and keys["mode"].index_key != base.index_key
    assert keys["header"].chunking_key != base.chunking_key and keys["header"].index_key != base.index_key
    assert keys["route"].chunking_key == base.chunking_key and keys["route"].index_key != base.index_key
    assert keys["native"].hash != base.hash  # a variable the file sets to ragsweep's own parse already
    again = PipelineConfig.load(DEFAULT, {"chunk_header": "title"})
    assert (again.hash, again.chunking_key, again.index_key) == (
        keys["header"].hash,
        keys["header"].chunking_key,
        keys["header"].index_key,
    )


def test_the_yaml_is_read_as_symbols():
    raw = load_symbolic(
        "$k: 5\n$knn: !pw.stdlib.indexing.BruteForceKnnFactory\n  embedder: $embedder\n"
        "  metric: !pw.stdlib.indexing.BruteForceKnnMetricKind.COS\n"
        "$parser: !mypackage.parsers:MyParser {}\nquestion_answerer: !pw.x.QA {llm: $llm}\n"
    )
    assert isinstance(raw, dict) and raw[Ref("k")] == 5
    knn = raw[Ref("knn")]
    assert isinstance(knn, Tagged) and knn.path == "pathway.stdlib.indexing.BruteForceKnnFactory"
    assert knn.kwargs["embedder"] == Ref("embedder") and not knn.bare
    metric = knn.kwargs["metric"]
    assert isinstance(metric, Tagged) and metric.bare and metric.name == "COS"
    parser = raw[Ref("parser")]
    assert isinstance(parser, Tagged) and parser.path == "mypackage.parsers.MyParser" and parser.kwargs == {}
    assert raw["question_answerer"].kwargs == {"llm": Ref("llm")}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("$x: !!python/object/apply:os.system ['id']\n", r"line 1, column 5: the tag !!python/object/apply:os\.system"),
        ("$x: !pw.xpacks.llm.splitters.TokenCountSplitter [1, 2]\n", "expected a mapping or empty node"),
        ("$1x: 3\n", "is not a valid identifier"),
    ],
)
def test_a_file_the_app_could_not_load_is_one_line_before_any_import(tmp_path, text, said):
    path = tmp_path / "app.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=said):
        PipelineConfig.load(path)


def _classes(package: str) -> list[type]:
    """Every class defined in ``package``'s modules (one that cannot be imported here is left out)."""
    root = importlib.import_module(package)
    names = [package] + [m.name for m in pkgutil.walk_packages(root.__path__, package + ".") if ".tests" not in m.name]
    found: dict[str, type] = {}
    for name in names:
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional extra not installed
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name:
                found[f"{name}.{cls.__qualname__}"] = cls
    return list(found.values())


def test_a_retriever_factory_of_pathway_or_ragsweep_is_told_by_its_name_as_by_its_class():
    """The spec tells which ``$variables`` ``$retriever_mode`` may name without importing their classes: every
    class of Pathway's indexing and LLM xpack and of ragsweep's pipeline is one exactly when its name says so."""
    from pathway.stdlib.indexing import AbstractRetrieverFactory

    classes = [c for p in ("pathway.stdlib.indexing", "pathway.xpacks.llm", "ragsweep.pipeline") for c in _classes(p)]
    assert len(classes) > 100
    wrong = [
        f"{c.__module__}.{c.__qualname__}"
        for c in classes
        if is_retriever_factory(Tagged(f"{c.__module__}.{c.__qualname__}", {}), {})
        != issubclass(c, AbstractRetrieverFactory)
    ]
    assert wrong == []


def test_the_build_is_pathways_loader_over_the_same_text_and_overrides(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-sent")  # the app's OpenAIEmbedder is built, never called
    from pathway.internals.yaml_loader import Value, Variable
    from pathway.stdlib.indexing import UsearchKnnFactory

    config = PipelineConfig.load(APP, {"splitter.max_tokens": 300, "question_answerer.search_topk": 3})
    assert config.tree is None  # nothing built yet
    built = config.build()
    assert isinstance(built.retriever_factory, UsearchKnnFactory)
    assert built.splitter.kwargs["max_tokens"] == 300
    splitter = config.raw[Variable("splitter")]
    assert isinstance(splitter, Value) and splitter.kwargs["max_tokens"] == 300
    assert config.uses_tantivy() is False and config.has_embedder() is True
