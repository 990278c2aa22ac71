"""The served-list cache is off for a pipeline whose named code cannot be read: no key could see it change."""

import importlib
import math
import sqlite3
import sys
import types

import pytest

from ragsweep.pipeline import served_cache
from ragsweep.pipeline.built import component_sources
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import parse_corpus
from ragsweep.pipeline.served_cache import ServedCache
from ragsweep.pipeline.store import Query, RagStore
from support.pathway_asks import count_pathway_queries

QUESTIONS = ["Which moon of Jupiter has its own magnetic field?", "Who is the distributor under the agreement?"]
QUERIES = [Query(q, 3) for q in QUESTIONS]
MODULE = "ragsweep_test_unreadable_splitter"
SOURCE = (
    "from ragsweep.pipeline.chunking import OffsetTokenCountSplitter\n\n"
    "MAX = 120  # chunk size: the test changes it in memory once the file is gone\n\n\n"
    "class MySplitter(OffsetTokenCountSplitter):\n"
    "    def __init__(self, **kwargs):\n"
    "        super().__init__(**{**kwargs, 'min_tokens': MAX // 3, 'max_tokens': MAX})\n"
)


@pytest.fixture
def user_splitter(default_pipeline, tmp_path, monkeypatch):
    """A pipeline naming a splitter of a module written here (BM25 only: no embedding)."""
    path = tmp_path / f"{MODULE}.py"
    path.write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yaml = default_pipeline.read_text().replace(
        "!ragsweep.pipeline.chunking.OffsetTokenCountSplitter", f"!{MODULE}.MySplitter"
    )
    (tmp_path / "pipeline.yaml").write_text(yaml)
    try:
        yield PipelineConfig.load(tmp_path / "pipeline.yaml", {"retriever_mode": "bm25"}), path
    finally:
        sys.modules.pop(MODULE, None)


def _rows(path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM served").fetchone()[0])


def _lists(run) -> list:
    return [[(h.doc_id, h.start, h.end) for h in hits] for hits in run.hits]


def test_a_deleted_source_asks_pathway_stores_nothing_and_says_so_once(
    user_splitter, fixture_corpus_dir, tmp_path, monkeypatch, capsys
):
    config, source = user_splitter
    corpus = parse_corpus(fixture_corpus_dir)
    cache = ServedCache(tmp_path / "served.sqlite")
    cold = RagStore(config, corpus).run(QUERIES, cache=cache)
    asked = count_pathway_queries(monkeypatch)
    assert RagStore(config, corpus).run(QUERIES, cache=cache).from_cache == len(QUERIES) and asked == []
    rows = _rows(tmp_path / "served.sqlite")

    source.unlink()  # the module stays imported: its code runs, its source is gone
    module = importlib.import_module(MODULE)
    same = RagStore(config, corpus).run(QUERIES, cache=cache)
    monkeypatch.setattr(module, "MAX", 60)  # an edit no key can see
    edited = RagStore(config, corpus).run(QUERIES, cache=cache)
    assert asked == [len(QUERIES), len(QUERIES)] and same.from_cache == edited.from_cache == 0
    assert _lists(same) == _lists(cold) and _lists(edited) != _lists(cold)  # what the code serves now
    assert _rows(tmp_path / "served.sqlite") == rows  # nothing written under a key blind to the code
    said = [line for line in capsys.readouterr().err.splitlines() if "served-list cache off" in line]
    assert len(said) == 1, said  # once, not once per run or per query
    assert f"{MODULE}.MySplitter" in said[0] and "cannot be read" in said[0] and str(source) in said[0]

    # the source readable again (the same bytes): the lists stored before are served again
    source.write_text(SOURCE)
    monkeypatch.setattr(module, "MAX", 120)
    warm = RagStore(config, corpus).run(QUERIES, cache=cache)
    assert warm.from_cache == len(QUERIES) and len(asked) == 2 and _lists(warm) == _lists(cold)


def _tree(*constructors) -> dict:
    from pathway.internals.yaml_loader import Value

    return {f"$c{n}": Value(constructor=c, kwargs={}) for n, c in enumerate(constructors)}


def test_code_without_a_file_is_named_and_compiled_code_is_left_to_its_version(tmp_path, monkeypatch, capsys):
    import zipfile

    import pathway.engine

    fileless = types.ModuleType("ragsweep_test_fileless")  # a module built in memory: no file at all
    exec("class Built:\n    pass\n\ndef make():\n    return Built()\n", fileless.__dict__)
    monkeypatch.setitem(sys.modules, fileless.__name__, fileless)
    with zipfile.ZipFile(tmp_path / "code.zip", "w") as archive:  # imported from a zip: no file to read
        archive.writestr(
            "ragsweep_test_zipped.py", "class Zipped:\n    @classmethod\n    def make(cls):\n        pass\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path / "code.zip"))
    extension_type = next(
        v for v in vars(pathway.engine).values() if isinstance(v, type) and v.__module__ == "pathway.engine"
    )
    try:
        zipped = importlib.import_module("ragsweep_test_zipped").Zipped
        found = component_sources(_tree(fileless.Built, fileless.make, zipped.make, dict, math.sqrt, extension_type))
    finally:
        sys.modules.pop("ragsweep_test_zipped", None)  # no later test finds it imported
    # builtins and the extension type have no entry: their package's (or Python's) version stands for them
    assert list(found) == ["ragsweep_test_fileless", "ragsweep_test_zipped"]
    assert found["ragsweep_test_fileless"] == {"ragsweep_test_fileless.Built": "", "ragsweep_test_fileless.make": ""}
    assert list(found["ragsweep_test_zipped"]) == ["ragsweep_test_zipped.Zipped.make"]  # the method's own code
    assert served_cache.component_digests({"m": found["ragsweep_test_zipped"]}) is None
    assert served_cache.component_digests(found) is None
    said = capsys.readouterr().err
    assert "ragsweep_test_zipped.Zipped.make" in said and "code.zip" in said and "cannot be read" in said
    assert "ragsweep_test_fileless.Built" in said and "no source file" in said


def test_a_partial_and_a_decorated_function_are_keyed_by_their_own_code():
    """A partial object and a cache wrapper are C types: their function's own file is the one to see."""
    import functools

    from ragsweep.pipeline import built

    found = component_sources(_tree(functools.partial(served_cache.component_digests), built._loader_class))
    assert found == {
        "ragsweep.pipeline.built": {"ragsweep.pipeline.built._loader_class": built.__file__},
        "ragsweep.pipeline.served_cache": {"ragsweep.pipeline.served_cache.component_digests": served_cache.__file__},
    }


def test_readable_sources_keep_their_key_part(default_pipeline):
    """The key's component part for readable files is what it always was: [module, sha256 of the file]."""
    import hashlib

    sources = PipelineConfig.load(default_pipeline).component_sources()
    paths = {module: next(iter(places.values())) for module, places in sources.items()}
    expected = [[m, hashlib.sha256(open(p, "rb").read()).hexdigest()] for m, p in paths.items()]
    assert served_cache.component_digests(sources) == expected and len(expected) >= 5
