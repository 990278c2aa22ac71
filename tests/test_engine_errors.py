"""Engine errors end the run, vectors are checked where they enter, nothing broken is cached.

An app shaped like Pathway's question-answering template (tests/fixtures/apps/qa_usearch.yaml: an
OpenAIEmbedder and a USearch index Pathway sizes from the model name, 1536) against the fake endpoint,
whose vectors are 32 wide; the fake's broken modes (NaN, all-zero, empty, mixed widths); ragsweep's own
embedder under an index of another width; and an error of Pathway's engine itself, all with real Pathway.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fake_openai import FakeOpenAI
from ragsweep.cli import main
from ragsweep.core.errors import EngineError, VectorError
from support import MINI as DATASET
from support import ROOT
from support.in_process import Done, run_here
from usearch_pipeline import write_usearch_pipeline

APP = ROOT / "tests" / "fixtures" / "apps" / "qa_usearch.yaml"
KEY = "sk-test-ENGINE-0123456789"
FITS = "retriever_factory.dimensions=32"  # the fake's width: the index then takes its vectors


@pytest.fixture()
def ragsweep_here(monkeypatch, capfd, caplog) -> Callable[..., Done]:
    """The command in this process (support.in_process) with only the given endpoint and key."""

    def run(base_url: str, argv: list[str], limit_s: float, **env: str) -> Done:
        values = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": KEY, **env}
        return run_here(argv, monkeypatch, capfd, caplog, values, limit_s, drop=("OPENAI_", "RAGSWEEP_LLM_MODEL"))

    return run


def _cli(run: Callable[..., Done], tmp_path: Path, base_url: str, name: str, *extra: str) -> Done:
    """The CLI run; its 120 s timeout is the guard against a run that hangs on the error."""
    argv = ["eval", "--pipeline", str(APP), "--dataset", str(DATASET), "--limit", "2", *extra]
    return run(
        base_url,
        [*argv, "--out", str(tmp_path / "runs"), "--name", name],
        120,
        RAGSWEEP_CACHE_DIR=str(tmp_path / "cache"),
        RAGSWEEP_SERVED_CACHE="1",  # a list of the broken run, once cached, would be replayed
    )


def _one_error_line(done: Done) -> str:
    assert done.returncode == 2, f"rc {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert "panicked" not in done.stderr and "ERROR:pathway_engine" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ragsweep: error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


def _reports(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "runs").rglob("report.*"))


def _cached_vectors(cache: Path) -> list[np.ndarray]:
    path = cache / "app_embeddings.sqlite"
    if not path.exists():
        return []
    with sqlite3.connect(path) as conn:
        import io

        return [np.load(io.BytesIO(blob), allow_pickle=False) for (blob,) in conn.execute("SELECT npy FROM vectors")]


@pytest.fixture(scope="module")
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def test_an_index_of_another_width_is_one_line_naming_both_widths_and_again_on_a_second_run(
    fake, tmp_path, ragsweep_here
):
    """Pathway's USearch index is 1536 wide (from the model name), the endpoint's vectors 32: rc 2 (no
    hang), one line naming the embedder, both widths and what sets the index's; no report; the
    second run says the same (nothing of the first was cached as served); with the index's
    ``dimensions`` set to the endpoint's width the app runs and is scored."""
    for name in ("first", "second"):
        line = _one_error_line(_cli(ragsweep_here, tmp_path, fake.base_url, name))
        assert "$embedder: OpenAIEmbedder(text-embedding-3-small)" in line, line
        assert "32 wide" in line and "UsearchKnnFactory expects 1536" in line, line
        assert "model name text-embedding-3-small" in line and "dimensions: 32" in line, line
        assert _reports(tmp_path) == [], "a report was written for a run whose index could not be built"
    assert not any(path.endswith("/chat/completions") for path, _ in fake.log), "the LLM was asked"
    done = _cli(ragsweep_here, tmp_path, fake.base_url, "fits", "--set", FITS)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs" / "fits" / "report.json").exists()


@pytest.mark.parametrize(
    ("mode", "what"),
    [
        ("nan", "have NaN or infinite values"),
        ("zero", "are all zeros"),
        ("empty", "are empty"),
        ("mixed", "are not 32 wide (width 16)"),
        ("short", "vector(s) for"),
    ],
)
def test_broken_vectors_stop_the_run_naming_the_embedder_and_are_never_cached(tmp_path, ragsweep_here, mode, what):
    """The endpoint answers the probe, then gives vectors no index can use for the chunks and the
    questions: one line naming the component, the count and the first text; no report; no broken vector
    in the embedding cache; a second run repeats the error (asked once: each run takes seconds)."""
    server = FakeOpenAI(broken_vectors=mode).start()
    try:
        for name in ("first", "second") if mode == "nan" else ("first",):
            done = _cli(ragsweep_here, tmp_path, server.base_url, name, "--set", FITS)
            line = _one_error_line(done)
            assert f"$embedder: OpenAIEmbedder at {server.base_url} returned vectors the index cannot use" in line
            assert what in line and ("(the first for '" in line or mode == "short"), line
            assert _reports(tmp_path) == []
    finally:
        server.stop()
    kept = _cached_vectors(tmp_path / "cache")
    assert kept, "not even the probe's vector was cached"
    assert all(v.size == 32 and np.isfinite(v).all() and np.any(v) for v in kept), "a broken vector was cached"


def test_ragsweeps_own_embedder_under_an_index_of_another_width_is_one_line(tmp_path, capsys):
    """The default pipeline with an explicit ``UsearchKnnFactory dimensions: 768`` over MiniLM (384):
    one line naming the embedder and both widths, not a panic of Pathway's engine."""
    pipeline = write_usearch_pipeline(tmp_path / "usearch768.yaml", 768)
    argv = ["eval", "--pipeline", str(pipeline), "--dataset", str(DATASET), "--limit", "2"]
    code = main([*argv, "--set", "retriever_mode=knn", "--out", str(tmp_path / "runs"), "--name", "own"])
    err = capsys.readouterr().err
    assert code == 2, err
    line = next(line for line in err.splitlines() if line.startswith("ragsweep: error:"))
    assert "CachedSentenceTransformerEmbedder(all-MiniLM-L6-v2) returns vectors 384 wide" in line, line
    assert "UsearchKnnFactory expects 768 (its dimensions: 768)" in line, line
    assert _reports(tmp_path) == []


def test_ragsweeps_own_embedder_caches_no_broken_vector(tmp_path):
    """A batch holding a NaN vector is refused, named by its first text, and nothing of it is stored."""
    from ragsweep.pipeline.embedding import CachedSentenceTransformerEmbedder
    from ragsweep.pipeline.embedding_base import EmbeddingCache, embed_through_cache

    embedder = CachedSentenceTransformerEmbedder(cache_dir=tmp_path)
    texts = ["a fine text", "a text the model breaks on"]
    with pytest.raises(VectorError, match=r"1 of 2 vector\(s\) have NaN .*'a text the model breaks on'"):
        embed_through_cache(embedder, texts, lambda missing: [np.ones(384), np.full(384, np.nan)])
    assert embedder.cache.get_many([EmbeddingCache.key(embedder.embedder_id, t) for t in texts]) == {}
    assert isinstance(embedder.failure, VectorError)


def test_an_error_of_pathways_engine_ends_the_run_with_one_line(capfd):
    """Pathway's own USearch index fed vectors of another width (no embedder in between): the engine
    logs an error per row and serves empty matches; the run ends with one EngineError naming the index
    and the engine's message instead of taking those matches as served."""
    import pathway as pw
    from pathway.stdlib.indexing.nearest_neighbors import UsearchKnnFactory

    from ragsweep.pipeline.app_components import run_with

    class Rows(pw.Schema):
        vector: np.ndarray

    pw.internals.parse_graph.G.clear()
    docs = pw.debug.table_from_rows(Rows, [(np.ones(4),), (np.arange(4.0),)])
    queries = pw.debug.table_from_rows(Rows, [(np.ones(4),)])
    factory = UsearchKnnFactory(dimensions=8, reserved_space=10, embedder=None)
    matches = factory.build_index(docs.vector, docs).query_as_of_now(queries.vector, number_of_matches=2)
    served: list[dict] = []
    pw.io.subscribe(
        matches.select(match=pw.right.vector), on_change=lambda key, row, time, is_addition: served.append(row)
    )
    with pytest.raises(EngineError) as raised:
        with run_with(None, factory) as options:
            pw.run(monitoring_level=pw.MonitoringLevel.NONE, default_logging=False, **options)
    message = str(raised.value)
    assert "(UsearchKnnFactory)" in message and "Vector length must match index dimensionality" in message
    assert "\n" not in message
    assert "panicked" not in capfd.readouterr().err


def _sweep(run: Callable[..., Done], tmp_path: Path, base_url: str, grid: str, name: str, *extra: str) -> Done:
    path = tmp_path / f"{name}.yaml"
    path.write_text(grid)
    argv = ["sweep", "--pipeline", str(APP), "--dataset", str(DATASET), "--limit", "2"]
    return run(
        base_url,
        [*argv, "--grid", str(path), "--out", str(tmp_path / "runs"), "--name", name, *extra],
        180,
        RAGSWEEP_CACHE_DIR=str(tmp_path / "cache"),
    )


def test_a_sweep_lists_a_configuration_that_cannot_be_indexed_as_failed_and_ranks_the_rest(
    fake, tmp_path, ragsweep_here
):
    """A grid over the index's width, the broken width as baseline: the working configuration is scored
    and ranked alone; the broken one is listed failed with both widths (terminal, sweep.json, report.html),
    never best nor what the other is compared with, on the dev split and in the test split's verdict; rc 2
    after the reports are written; --resume runs only the failed one again."""
    grid = (
        "grid:\n  retriever_factory.dimensions: [1536, 32]\n"
        "baseline: {retriever_factory.dimensions: 1536}\nobjectives: [recall@k]\n"
    )
    every_case = ("--limit", "200")  # both splits: the choice on dev, its verdict on test
    done = _sweep(ragsweep_here, tmp_path, fake.base_url, grid, "dims", *every_case)
    line = _one_error_line(done)
    assert "1 of 2 configurations failed" in line and "--resume" in line, line
    assert "returns vectors 32 wide, but its UsearchKnnFactory expects 1536" in line, line
    folder = tmp_path / "runs" / "dims"
    sweep = json.loads((folder / "sweep.json").read_text())
    assert [c["params"] for c in sweep["configs"]] == [{"retriever_factory.dimensions": 32}]
    (broken,) = sweep["failed"]
    assert broken["id"] == sweep["baseline"] and broken["params"] == {"retriever_factory.dimensions": 1536}
    assert "32 wide" in broken["reason"] and "expects 1536" in broken["reason"]
    (scored,) = sweep["configs"]
    assert sweep["best"] == {"recall@k": scored["id"]} and sweep["pareto"] == [scored["id"]]
    assert scored["compared_with"] == {"recall@k": None} and scored["p_values"] == {"recall@k": None}
    assert scored["metrics"]["recall@k"] is not None
    assert not (folder / "configs" / broken["id"] / "result.json").exists()
    assert "failed: 1 of 2 configurations" in done.stdout and "the baseline failed" in done.stdout
    verdict = sweep["verdict"]
    assert verdict["chosen"] == scored["id"] and verdict["compared_with"] is None and verdict["p_value"] is None
    assert list(verdict["configs"]) == [scored["id"]], "the failed baseline was scored on the test split"
    assert "test split: the baseline failed: the chosen configuration is tested against nothing" in done.stdout
    page = (folder / "report.html").read_text()
    assert "Failed configurations" in page and "expects 1536" in page

    again = _sweep(ragsweep_here, tmp_path, fake.base_url, grid, "dims", *every_case, "--resume", str(folder))
    assert again.returncode == 2 and "resuming: 1 configuration(s) already done" in again.stderr, again.stderr
    assert "[1/2]" in again.stderr and "[2/2]" not in again.stderr, again.stderr  # the scored one is not rerun


def test_a_sweep_stops_when_its_first_tries_fail_alike(fake, tmp_path, ragsweep_here):
    """Three index groups that all fail the same way (the index's width, which the grid's knob does not
    change): the third is not run, listed as not run with the error; rc 2 with the reports written."""
    grid = "grid:\n  retriever_factory.reserved_space: [100, 200, 300]\nobjectives: [recall@k]\n"
    done = _sweep(ragsweep_here, tmp_path, fake.base_url, grid, "alike")
    line = _one_error_line(done)
    assert "3 of 3 configurations failed" in line, line
    assert "[3/3]" not in done.stderr, done.stderr
    sweep = json.loads((tmp_path / "runs" / "alike" / "sweep.json").read_text())
    assert sweep["configs"] == [] and sweep["best"] == {}
    reasons = [f["reason"] for f in sweep["failed"]]
    assert reasons[0] == reasons[1] and "expects 1536" in reasons[0]
    assert reasons[2].startswith("not run: the sweep stopped after its first 2 tries failed with the same error")
    assert (tmp_path / "runs" / "alike" / "report.html").exists()


@pytest.mark.parametrize(
    ("vectors", "width", "said"),
    [
        ([[1.0, np.inf], [1.0, 2.0]], None, "1 of 2 vector(s) have NaN or infinite values (the first for 'a')"),
        (
            [[1.0, 2.0], [1.0, 2.0, 3.0], [3.0, 4.0]],
            None,
            "1 of 3 vector(s) are not 2 wide (width 3) (the first for 'b')",
        ),
        ([[1.0, 2.0], [3.0, 4.0]], 3, "2 of 2 vector(s) are not 3 wide (width 2) (the first for 'a')"),
        ([[1.0, 2.0], [0.0, 0.0]], 2, "1 of 2 vector(s) are all zeros (the first for 'b')"),
        ([[1.0, 2.0], [3.0, 4.0]], 2, None),
    ],
)
def test_what_is_wrong_with_a_batch_is_said_with_its_count_and_first_text(vectors, width, said):
    from ragsweep.pipeline.embedding_base import vector_problem

    assert vector_problem([np.asarray(v) for v in vectors], ["a", "b", "c"][: len(vectors)], width) == said
