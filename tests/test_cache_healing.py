"""Corrupt caches heal: a warning naming the file, the file moved aside, a fresh cache, no crash.

Covers ``embeddings.sqlite`` (the real embedder), ``llm/responses.sqlite`` (the LLM client and
the ragas path, whose crash left report.json unwritten) and the parsed-document cache. Each
kind of damage is written into a temporary ``RAGSWEEP_CACHE_DIR``: garbage bytes, a truncated
SQLite file, garbled pages, a zero-length file, and corruption that appears mid-run.
"""

from __future__ import annotations

import json
import logging
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from ragsweep.core.cache_files import SQLiteCacheFile, is_corruption, quarantine
from ragsweep.llm.cache import ResponseCache
from ragsweep.pipeline.embedding import CachedSentenceTransformerEmbedder
from ragsweep.pipeline.embedding_base import EmbeddingCache

RNG = random.Random(11)


def _garbage(n: int) -> bytes:
    return RNG.randbytes(n)


def _sqlite_with_rows(path: Path, table_sql: str, rows: list[tuple], insert_sql: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(table_sql)
    conn.executemany(insert_sql, rows)
    conn.commit()
    conn.close()


def _reply_rows(n: int = 300) -> list[tuple]:
    return [(f"k{i}", "u", _garbage(2000), 0.0) for i in range(n)]


def _damage(path: Path, kind: str) -> None:
    """Write one kind of damage into ``path`` (a cache file)."""
    if kind == "garbage":
        path.write_bytes(_garbage(8192))
    elif kind == "text":
        path.write_text("this is not a database at all\n" * 50)
    elif kind == "zero":
        path.write_bytes(b"")
    elif kind in ("truncated", "garbled"):
        data = bytearray(path.read_bytes())
        assert len(data) > 50_000, "the fixture must span many pages"
        if kind == "truncated":
            path.write_bytes(bytes(data[: len(data) // 2 + 1234]))
        else:
            for off in range(4096, len(data), 4096):
                data[off : off + 300] = _garbage(300)
            path.write_bytes(bytes(data))
    else:  # pragma: no cover
        raise ValueError(kind)


def _aside(path: Path) -> list[Path]:
    """The moved-aside copies of ``path`` (without their -wal/-shm companions)."""
    return sorted(p for p in path.parent.glob(path.name + ".corrupt-*") if not p.name.endswith(("-wal", "-shm")))


def _warned_about(caplog, path: Path) -> bool:
    return any(str(path) in r.getMessage() and r.levelno >= logging.WARNING for r in caplog.records)


# ------------------------------------------------------------------ LLM reply cache
@pytest.mark.parametrize("kind", ["garbage", "text", "truncated", "garbled"])
def test_response_cache_heals_on_open(tmp_path, caplog, kind):
    path = tmp_path / "llm" / "responses.sqlite"
    path.parent.mkdir()
    if kind in ("truncated", "garbled"):
        _sqlite_with_rows(
            path,
            "CREATE TABLE replies (key TEXT PRIMARY KEY, url TEXT, body BLOB, created REAL)",
            _reply_rows(),
            "INSERT INTO replies VALUES (?, ?, ?, ?)",
        )
    _damage(path, kind)
    caplog.set_level(logging.WARNING)
    cache = ResponseCache(path)
    assert cache.get("k1") is None  # a miss, not a crash
    cache.put("k", "http://h/v1/chat/completions", b"body")
    assert cache.get("k") == b"body"
    assert len(cache) == 1
    assert _warned_about(caplog, path), caplog.text
    moved = _aside(path)
    assert len(moved) == 1 and moved[0].stat().st_size > 0
    assert "corrupt" in caplog.text and str(moved[0]) in caplog.text
    # the fresh file is a sound database
    assert sqlite3.connect(path).execute("PRAGMA quick_check").fetchone()[0] == "ok"


def test_zero_length_cache_is_just_empty(tmp_path, caplog):
    path = tmp_path / "responses.sqlite"
    _damage(path, "zero")
    caplog.set_level(logging.WARNING)
    cache = ResponseCache(path)
    assert cache.get("k") is None
    cache.put("k", "u", b"v")
    assert cache.get("k") == b"v"
    assert not _aside(path)  # SQLite reads an empty file as an empty database: nothing to heal


def test_response_cache_heals_mid_run(tmp_path, caplog):
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    for key, url, body, _ in _reply_rows(400):
        cache.put(key, url, body)
    assert cache.get("k7") is not None
    # the file is damaged under the open connection (a crash of another writer, a bad disk)
    cache._db.run(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.seek(4096)
        fh.write(_garbage(size - 4096))
    cache._db.run(lambda conn: conn.execute("PRAGMA shrink_memory").fetchall())  # drop cached pages
    caplog.set_level(logging.WARNING)
    assert cache.get("k399") is None  # DatabaseError mid-run -> healed, a miss
    cache.put("after", "u", b"fresh")
    assert cache.get("after") == b"fresh"
    assert _warned_about(caplog, path)
    assert len(_aside(path)) == 1


def test_two_caches_on_one_file_heal_once(tmp_path, caplog):
    """A second cache object meeting the damage after the first healed reuses the fresh file."""
    path = tmp_path / "responses.sqlite"
    a, b = ResponseCache(path), ResponseCache(path)
    for key, url, body, _ in _reply_rows(400):
        a.put(key, url, body)
    assert b.get("k3") is not None
    a._db.run(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.seek(4096)
        fh.write(_garbage(size - 4096))
    for c in (a, b):
        c._db.run(lambda conn: conn.execute("PRAGMA shrink_memory").fetchall())
    caplog.set_level(logging.WARNING)
    assert a.get("k399") is None  # a heals: moves the file aside, starts a fresh one
    a.put("fresh", "u", b"kept")
    assert b.get("k398") is None  # b meets the old damage on its old connection
    assert b.get("fresh") == b"kept"  # ... and reopens a's fresh file instead of discarding it
    assert len(_aside(path)) == 1


def test_damaged_row_is_a_miss_not_a_bad_reply(fake_server, llm_settings):
    """A stored body that no longer parses is refetched, never handed to the client."""
    from ragsweep.llm import LLMClient
    from ragsweep.llm.cache import shared_cache

    msgs = [{"role": "user", "content": "Below:\n------\n[1] The term is five years.\n------\nQuery: term\nAnswer:"}]
    first = LLMClient(llm_settings).chat(msgs)
    assert first.ok and not first.cached
    cache = shared_cache(llm_settings.cache_path())
    cache._db.run(lambda conn: (conn.execute("UPDATE replies SET body=?", (b"\x00garbled",)), conn.commit()))
    again = LLMClient(llm_settings).chat(msgs)
    assert again.ok and again.text == first.text and not again.cached
    third = LLMClient(llm_settings).chat(msgs)
    assert third.cached  # the refetched reply replaced the damaged one


def test_llm_client_with_corrupt_cache(fake_server, llm_settings, caplog):
    path = llm_settings.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    _damage(path, "garbage")
    caplog.set_level(logging.WARNING)
    from ragsweep.llm import LLMClient

    msgs = [{"role": "user", "content": "Below:\n------\n[1] The fee is ten dollars.\n------\nQuery: fee\nAnswer:"}]
    result = LLMClient(llm_settings).chat(msgs)
    assert result.ok and result.text.startswith("The fee is ten dollars.")
    assert LLMClient(llm_settings).chat(msgs).cached
    assert _warned_about(caplog, path) and len(_aside(path)) == 1


def test_ragas_llm_with_corrupt_cache(fake_server, llm_settings, caplog):
    """The reported crash: `--ragas-llm` died on a corrupt responses.sqlite before report.json."""
    from ragsweep.metrics.ragas_llm import FAITHFULNESS, RagasLLMScorer

    path = llm_settings.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    _sqlite_with_rows(
        path,
        "CREATE TABLE replies (key TEXT PRIMARY KEY, url TEXT, body BLOB, created REAL)",
        _reply_rows(),
        "INSERT INTO replies VALUES (?, ?, ?, ?)",
    )
    _damage(path, "truncated")
    caplog.set_level(logging.WARNING)
    scorer = RagasLLMScorer(llm_settings, metrics=(FAITHFULNESS,))
    out = scorer.score("What is the term?", "The term is five years.", ["The term is five years."], "five years")
    assert out[FAITHFULNESS].error is None and out[FAITHFULNESS].value == 1.0
    assert _warned_about(caplog, path) and len(_aside(path)) == 1
    assert scorer.last_stats["cache_misses"] >= 1


# ------------------------------------------------------------------ embedding cache
def _vectors_db(path: Path, n: int = 400) -> None:
    _sqlite_with_rows(
        path,
        "CREATE TABLE vectors (key TEXT PRIMARY KEY, dim INTEGER, vec BLOB)",
        [(f"k{i}", 384, np.ones(384, dtype=np.float32).tobytes()) for i in range(n)],
        "INSERT INTO vectors VALUES (?, ?, ?)",
    )


@pytest.mark.parametrize("kind", ["garbage", "truncated", "garbled"])
def test_embedding_cache_heals_on_open(tmp_path, caplog, kind):
    path = tmp_path / "embeddings.sqlite"
    if kind != "garbage":
        _vectors_db(path)
    _damage(path, kind)
    caplog.set_level(logging.WARNING)
    cache = EmbeddingCache(path)
    assert _warned_about(caplog, path)  # reported when opened, before the first batch
    assert cache.get_many(["k1", "k2"]) == {}
    cache.put_many({"a": np.arange(4, dtype=np.float32)})
    assert np.array_equal(cache.get_many(["a"])["a"], np.arange(4, dtype=np.float32))
    assert len(_aside(path)) == 1


def test_embedding_cache_heals_mid_run(tmp_path, caplog):
    path = tmp_path / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many({f"k{i}": np.full(384, i, dtype=np.float32) for i in range(400)})
    cache._db.run(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.seek(4096)
        fh.write(_garbage(size - 4096))
    cache._db.run(lambda conn: conn.execute("PRAGMA shrink_memory").fetchall())
    caplog.set_level(logging.WARNING)
    assert cache.get_many([f"k{i}" for i in range(400)]) == {}
    cache.put_many({"x": np.ones(3, dtype=np.float32)})
    assert "x" in cache.get_many(["x"])
    assert _warned_about(caplog, path) and len(_aside(path)) == 1


def test_real_embedder_with_corrupt_cache_dir(tmp_path, monkeypatch, caplog):
    """The default embedder under a RAGSWEEP_CACHE_DIR holding a garbled embeddings.sqlite."""
    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path))
    path = tmp_path / "embeddings.sqlite"
    _vectors_db(path)
    _damage(path, "garbled")
    caplog.set_level(logging.WARNING)
    embedder = CachedSentenceTransformerEmbedder()
    assert embedder.cache.path == path
    vecs = embedder.embed(["The term is five years.", "Governing law: Delaware."])
    assert len(vecs) == 2 and vecs[0].shape == (384,) and embedder.embedded_count == 2
    assert _warned_about(caplog, path) and len(_aside(path)) == 1
    again = CachedSentenceTransformerEmbedder()
    assert np.allclose(again.embed(["The term is five years."])[0], vecs[0])
    assert again.embedded_count == 0  # the rebuilt cache serves it


# ------------------------------------------------------------------ helpers
def test_quarantine_moves_side_files_and_never_collides(tmp_path):
    path = tmp_path / "c.sqlite"
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"c.sqlite{suffix}").write_bytes(b"x")
    first = quarantine(path)
    assert first is not None and first.exists() and not path.exists()
    assert Path(str(first) + "-wal").exists() and not (tmp_path / "c.sqlite-wal").exists()
    path.write_bytes(b"y")
    second = quarantine(path)
    assert second is not None and second != first and second.read_bytes() == b"y"
    assert quarantine(tmp_path / "absent.sqlite") is None


def test_other_errors_are_not_corruption(tmp_path, caplog):
    assert is_corruption(sqlite3.DatabaseError("database disk image is malformed"))
    assert is_corruption(sqlite3.DatabaseError("file is not a database"))
    assert not is_corruption(sqlite3.OperationalError("database is locked"))
    assert not is_corruption(OSError("disk full"))
    # a cache that cannot be created at all: reads miss, writes are skipped, warned once, nothing moved
    (tmp_path / "not-a-dir").write_text("a file where the folder should be")
    db = SQLiteCacheFile(tmp_path / "not-a-dir" / "x.sqlite", ["CREATE TABLE IF NOT EXISTS t (a)"], what="test")
    caplog.set_level(logging.WARNING)
    assert db.run(lambda conn: 1, default="miss") == "miss"
    assert db.run(lambda conn: 1, default="miss") == "miss"
    assert sum("x.sqlite" in r.getMessage() for r in caplog.records) == 1
    assert not db.healed


# ------------------------------------------------------------------ parsed-document cache
@pytest.mark.parametrize("content", [b"\xff\xfe garbage \x00\x01", b'{"text": "trunc', b"[1, 2]", b'{"text": 5}', b""])
def test_parse_cache_corrupt_entry(tmp_path, caplog, content):
    from ragsweep.pipeline.corpus import ParseCache

    cache = ParseCache(tmp_path)
    cache.put("ab" + "0" * 62, "parsed text")
    assert cache.get("ab" + "0" * 62) == "parsed text"
    entry = next((tmp_path / "parsed").rglob("*.json"))
    entry.write_bytes(content)
    caplog.set_level(logging.WARNING)
    assert cache.get("ab" + "0" * 62) is None  # a miss: the document is parsed again
    assert _warned_about(caplog, entry)
    assert not entry.exists() and len(_aside(entry)) == 1
    cache.put("ab" + "0" * 62, "parsed again")
    assert cache.get("ab" + "0" * 62) == "parsed again"
    assert json.loads(entry.read_text()) == {"text": "parsed again"}


def test_parse_cache_unwritable_is_not_fatal(tmp_path, caplog):
    from ragsweep.pipeline.corpus import ParseCache

    (tmp_path / "parsed").write_text("a file where the folder should be")
    caplog.set_level(logging.WARNING)
    cache = ParseCache(tmp_path)
    cache.put("cd" + "1" * 62, "text")  # warned, not raised
    assert cache.get("cd" + "1" * 62) is None
    assert "not written" in caplog.text


def _make_read_only(paths: list[Path]) -> Callable[[], None]:
    """Make files and folders unwritable even for root (chattr +i); chmod for other users.
    Returns what undoes it; skips the test where neither is possible."""
    import os
    import subprocess

    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not possible here: {done.stderr.decode().strip()}")
        return lambda: subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
    modes = {p: p.stat().st_mode for p in paths}
    for p in paths:
        p.chmod(0o555 if p.is_dir() else 0o444)
    return lambda: [p.chmod(m) for p, m in modes.items()]


def test_a_read_only_cache_is_read(tmp_path, caplog):
    """A cache restored read-only (its folder and files unwritable, a write-ahead log beside it and no
    -shm, as a CI cache snapshot may be): SQLite cannot open it in place, yet every entry is read."""
    import sqlite3

    folder = tmp_path / "cache"
    folder.mkdir()
    path = folder / "served.sqlite"
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")  # the entry stays in the write-ahead log
    writer.execute("CREATE TABLE t (key TEXT PRIMARY KEY, value)")
    writer.execute("INSERT INTO t VALUES ('a', 1)")
    writer.commit()
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    for name in ("served.sqlite", "served.sqlite-wal"):  # copied while the writer holds it: no -shm
        (snapshot / name).write_bytes((folder / name).read_bytes())
    writer.close()
    undo = _make_read_only([snapshot / "served.sqlite", snapshot / "served.sqlite-wal", snapshot])
    try:
        cache = SQLiteCacheFile(
            snapshot / "served.sqlite", ["CREATE TABLE IF NOT EXISTS t (key TEXT PRIMARY KEY, value)"]
        )
        with caplog.at_level(logging.WARNING):
            rows = cache.run(lambda conn: conn.execute("SELECT key, value FROM t").fetchall(), default=None)
        cache.close()
    finally:
        undo()
    assert rows == [("a", 1)]
    assert "cannot be written" in caplog.text and "reading a copy" in caplog.text
    assert sorted(p.name for p in snapshot.iterdir()) == ["served.sqlite", "served.sqlite-wal"]
