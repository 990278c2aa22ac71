"""The served-list cache: a warm run gets exactly what Pathway served, and nothing stale."""

import logging
import os

import pytest

from ragsweep.commands.eval import EvalOptions, run_eval
from ragsweep.evaluation.manifest import RetrievalCounts
from ragsweep.pipeline import served_cache
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import parse_corpus
from ragsweep.pipeline.served_cache import ServedCache
from ragsweep.pipeline.store import ChunkInfo, Query, RagStore, chunk_texts
from support import ROOT
from support.pathway_asks import count_pathway_queries

QUESTIONS = [
    "Which moon of Jupiter has its own magnetic field?",
    "How long should the levain dough proof in the refrigerator?",
    "Who is the distributor (and what territory) under the agreement?",
]
SMALL = {"min_tokens": 40, "max_tokens": 120}


@pytest.fixture(scope="module")
def corpus(fixture_corpus_dir):
    return parse_corpus(fixture_corpus_dir)


def _queries(extra: tuple[str, ...] = ()) -> list[Query]:
    scoped = Query(QUESTIONS[0], 3, ["sourdough.docx", "jupiter.html"])
    return [Query(q, k) for q in (*QUESTIONS, *extra) for k in (1, 5)] + [scoped]


def _dump(run) -> list:
    return [[h.model_dump() for h in hits] for hits in run.hits]


def _lists(run) -> list:
    """What two Pathway runs must agree on: the same chunks at every rank with the same
    scores (compared to 1e-5: a cached list is compared exactly, with _dump)."""
    return [[(h.doc_id, h.start, h.end, round(h.score, 5)) for h in hits] for hits in run.hits]


@pytest.mark.parametrize("mode", ["hybrid", "bm25"])
def test_a_warm_run_asks_pathway_nothing_and_gets_the_same_lists(mode, corpus, default_pipeline, tmp_path, monkeypatch):
    config = PipelineConfig.load(default_pipeline, {"retriever_mode": mode, **SMALL})
    cache = ServedCache(tmp_path / "served.sqlite")
    cold = RagStore(config, corpus).run(_queries(), cache=cache)
    assert cold.from_cache == 0
    asked = count_pathway_queries(monkeypatch)
    warm = RagStore(config, corpus).run(_queries(), cache=cache)
    assert asked == [] and warm.from_cache == len(_queries())
    assert _dump(warm) == _dump(cold) and any(_dump(cold))
    assert [c.model_dump() for c in warm.chunks] == [c.model_dump() for c in cold.chunks]
    # and what Pathway serves with no cache at all is the same again
    assert _lists(RagStore(config, corpus).run(_queries())) == _lists(cold)


def test_only_new_queries_go_to_pathway(corpus, default_pipeline, tmp_path, monkeypatch):
    config = PipelineConfig.load(default_pipeline, SMALL)
    cache = ServedCache(tmp_path / "served.sqlite")
    RagStore(config, corpus).run(_queries(), cache=cache)
    asked = count_pathway_queries(monkeypatch)
    run = RagStore(config, corpus).run(_queries(("What does the borrow checker enforce?",)), cache=cache)
    assert asked == [2] and run.from_cache == len(_queries())
    fresh = RagStore(config, corpus).run(_queries(("What does the borrow checker enforce?",)))
    assert _lists(run) == _lists(fresh)


def test_an_index_change_is_a_miss_and_top_k_is_not(corpus, default_pipeline, tmp_path):
    cache = ServedCache(tmp_path / "served.sqlite")
    RagStore(PipelineConfig.load(default_pipeline, SMALL), corpus).run(_queries(), cache=cache)
    other_fusion = RagStore(PipelineConfig.load(default_pipeline, {**SMALL, "rrf_k": 30}), corpus)
    assert other_fusion.run(_queries(), cache=cache).from_cache == 0
    other_chunks = RagStore(PipelineConfig.load(default_pipeline, {**SMALL, "max_tokens": 150}), corpus)
    assert other_chunks.run(_queries(), cache=cache).from_cache == 0
    other_top_k = RagStore(PipelineConfig.load(default_pipeline, {**SMALL, "top_k": 2}), corpus)
    assert other_top_k.run(_queries(), cache=cache).from_cache == len(_queries())


def test_another_corpus_is_a_miss(corpus, default_pipeline, tmp_path):
    config = PipelineConfig.load(default_pipeline, SMALL)
    fewer = corpus.model_copy(update={"documents": corpus.documents[1:]})
    assert served_cache.index_fingerprint(config, corpus) != served_cache.index_fingerprint(config, fewer)


def test_editing_a_component_the_pipeline_names_is_a_miss(default_pipeline, corpus, tmp_path, monkeypatch):
    module = tmp_path / "my_splitter.py"
    module.write_text(
        "from ragsweep.pipeline.chunking import OffsetTokenCountSplitter\n\n\n"
        "class MySplitter(OffsetTokenCountSplitter):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yaml = default_pipeline.read_text().replace(
        "!ragsweep.pipeline.chunking.OffsetTokenCountSplitter", "!my_splitter.MySplitter"
    )
    assert "!my_splitter.MySplitter" in yaml
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(yaml)
    config = PipelineConfig.load(pipeline)
    before = served_cache.index_fingerprint(config, corpus)
    assert served_cache.index_fingerprint(config, corpus) == before
    module.write_text(module.read_text() + "\n# a change that may change the chunks\n")
    assert served_cache.index_fingerprint(config, corpus) != before


def test_a_corrupt_cache_file_is_moved_aside_and_pathway_answers(corpus, default_pipeline, tmp_path, caplog):
    config = PipelineConfig.load(default_pipeline, SMALL)
    path = tmp_path / "served.sqlite"
    path.write_bytes(b"this is not a sqlite database" * 100)
    with caplog.at_level(logging.WARNING):
        run = RagStore(config, corpus).run(_queries(), cache=ServedCache(path))
    assert run.from_cache == 0 and any(run.hits)
    assert "corrupt" in caplog.text
    assert RagStore(config, corpus).run(_queries(), cache=ServedCache(path)).from_cache == len(_queries())


def test_eval_reports_cache_use_and_fresh_retrieval_asks_again(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSWEEP_SERVED_CACHE", "1")
    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    base = dict(
        pipeline=str(ROOT / "pipelines" / "default.yaml"),
        dataset=str(ROOT / "datasets" / "cuad-mini"),
        limit=6,
        out=str(tmp_path / "runs"),
        progress=False,
        ragas_nonllm=False,
    )
    _, cold = run_eval(EvalOptions(**base, name="cold"))
    _, warm = run_eval(EvalOptions(**base, name="warm"))
    _, fresh = run_eval(EvalOptions(**base, name="fresh", fresh_retrieval=True))
    asked = cold.manifest.retrieval.queries
    assert asked > 0 and cold.manifest.retrieval.from_served_cache == 0
    assert warm.manifest.retrieval == RetrievalCounts(queries=asked, from_served_cache=asked, asked_pathway=0)
    assert fresh.manifest.retrieval.from_served_cache == 0
    assert warm.metrics == cold.metrics == fresh.metrics
    monkeypatch.setenv("RAGSWEEP_SERVED_CACHE", "0")
    assert ServedCache.default() is None


def test_queries_split_over_several_pathway_runs_get_the_same_lists(corpus, default_pipeline, monkeypatch):
    config = PipelineConfig.load(default_pipeline, SMALL)
    whole = RagStore(config, corpus).run(_queries())
    monkeypatch.setenv("RAGSWEEP_QUERIES_PER_RUN", "3")
    asked = count_pathway_queries(monkeypatch)
    split = RagStore(config, corpus).run(_queries())
    assert asked == [3, 3, 1] and _lists(split) == _lists(whole)
    assert [c.model_dump() for c in split.chunks] == [c.model_dump() for c in whole.chunks]
    # one str per chunk text across every list
    texts = [h.text for hits in split.hits for h in hits]
    assert len({id(t) for t in texts}) == len(set(texts))
    monkeypatch.setenv("RAGSWEEP_QUERIES_PER_RUN", "0")
    with pytest.raises(ValueError, match="RAGSWEEP_QUERIES_PER_RUN"):
        RagStore(config, corpus).run(_queries())


def test_evaluate_takes_the_served_cache_and_fresh_retrieval(tmp_path, monkeypatch):
    """The Python API: a repeated call is served from the cache; ``fresh_retrieval=True`` asks Pathway."""
    from ragsweep import evaluate

    monkeypatch.setenv("RAGSWEEP_SERVED_CACHE", "1")
    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    args = (str(ROOT / "pipelines" / "default.yaml"), str(ROOT / "datasets" / "cuad-mini"))
    cold = evaluate(*args, limit=5, workers=1)
    warm = evaluate(*args, limit=5)
    fresh = evaluate(*args, limit=5, fresh_retrieval=True)
    asked = cold.manifest.retrieval.queries
    assert asked > 0 and cold.manifest.retrieval.asked_pathway == asked
    assert warm.manifest.retrieval == RetrievalCounts(queries=asked, from_served_cache=asked, asked_pathway=0)
    assert fresh.manifest.retrieval == RetrievalCounts(queries=asked, from_served_cache=0, asked_pathway=asked)
    assert warm.metrics == cold.metrics == fresh.metrics


def test_the_key_does_not_depend_on_where_the_code_lives(corpus, default_pipeline, fixture_corpus_dir, tmp_path):
    """The same ragsweep source at another path (another checkout, another machine) gives the
    same index fingerprint: the key holds module names and file contents, never paths."""
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "elsewhere" / "src"
    shutil.copytree(ROOT / "src" / "ragsweep", copy / "ragsweep", ignore=shutil.ignore_patterns("__pycache__"))
    script = (
        "import sys, ragsweep\n"
        f"assert ragsweep.__file__.startswith({str(copy)!r}), ragsweep.__file__\n"
        "from ragsweep.pipeline import served_cache\n"
        "from ragsweep.pipeline.config import PipelineConfig\n"
        "from ragsweep.pipeline.corpus import parse_corpus\n"
        f"config = PipelineConfig.load({str(default_pipeline)!r}, {SMALL!r})\n"
        f"print(served_cache.index_fingerprint(config, parse_corpus({str(fixture_corpus_dir)!r})))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(copy)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    here = served_cache.index_fingerprint(PipelineConfig.load(default_pipeline, SMALL), corpus)
    assert out.stdout.strip().splitlines()[-1] == here


def test_lists_are_stored_without_the_chunk_texts_and_come_back_whole(corpus, default_pipeline, tmp_path, monkeypatch):
    """Each chunk text is stored once, in the index's chunk table; a list refers to it by its
    document and offsets. Without the table a list is a miss, never a list with texts missing."""
    import json
    import sqlite3
    import zlib

    config = PipelineConfig.load(default_pipeline, SMALL)
    path = tmp_path / "served.sqlite"
    cold = RagStore(config, corpus).run(_queries(), cache=ServedCache(path))
    texts = {json.dumps(h.text)[1:-1] for hits in cold.hits for h in hits}  # as stored: JSON-escaped
    with sqlite3.connect(path) as db:
        values = [zlib.decompress(v).decode() for (v,) in db.execute("SELECT value FROM served")]
    lists = [v for v in values if '"text_from_table"' in v]
    assert len(lists) == len(_queries())  # every list refers to the table
    assert not any(t in v for v in lists for t in texts if len(t) > 40)  # no chunk text in a list
    assert sum(any(t in v for t in texts if len(t) > 40) for v in values) == 1  # only the table holds them

    warm = RagStore(config, corpus).run(_queries(), cache=ServedCache(path))
    assert warm.from_cache == len(_queries()) and _dump(warm) == _dump(cold)

    index_key = served_cache.index_fingerprint(config, corpus)
    with sqlite3.connect(path) as db:  # the table gone: its lists cannot be rebuilt
        db.execute("DELETE FROM served WHERE key = ?", (served_cache.chunks_key(index_key),))
    asked = count_pathway_queries(monkeypatch)
    again = RagStore(config, corpus).run(_queries(), cache=ServedCache(path))
    assert asked == [len(_queries())] and again.from_cache == 0 and _lists(again) == _lists(cold)


def test_compact_and_expand_are_lossless():
    table = chunk_texts([ChunkInfo(doc_id="a.pdf", start=0, end=5, tokens=1, text="hello")])
    raw = [
        {"text": "hello", "metadata": {"doc_id": "a.pdf", "start": 0, "end": 5}, "dist": -0.5},
        {"text": "other", "metadata": {"doc_id": "a.pdf", "start": 0, "end": 5}, "dist": -0.4},
        {"text": "no offsets", "metadata": {"path": "b.md"}, "dist": -0.3},
    ]
    stored = served_cache.compact_list(raw, table)
    assert stored["text_from_table"] == [0] and "text" not in stored["items"][0]
    assert served_cache.expand_list(stored, table) == raw
    assert served_cache.expand_list(stored, None) is served_cache.UNRESOLVED
    assert served_cache.expand_list(raw, None) == raw and served_cache.compact_list(None, table) is None
