"""What the embedders share: the content-keyed vector cache (``embeddings.sqlite``) and the
error for a model that is not installed.

:mod:`ragsweep.pipeline.embedding` (the registry, :class:`CachedSentenceTransformerEmbedder`)
and :mod:`ragsweep.pipeline.embedders_extra` (:class:`UseMultilingualEmbedder`) both build on
this module; it imports neither, so the two embedder modules import in one direction only.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ragsweep.core.cache_files import SQLiteCacheFile, default_cache_dir, rows_for_keys
from ragsweep.core.errors import VectorError
from ragsweep.core.keys import cache_key

_SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, vec BLOB)",)


class MissingModelError(ImportError):
    """A model, or the package that ships it, is not installed (its message says how to install it).

    The one such error: an embedding model of :mod:`ragsweep.pipeline.embedding` or
    :mod:`ragsweep.pipeline.embedders_extra`; a reranker's model is a
    :class:`ragsweep.pipeline.rerank.MissingRerankerModelError`, a subclass."""


class EmbeddingCache:
    """Vectors on disk keyed by embedder id and text; safe across threads.

    The sqlite file heals itself (:class:`~ragsweep.core.cache_files.SQLiteCacheFile`):
    a truncated, garbled or non-SQLite ``embeddings.sqlite``, found on open or on any
    later read or write, is moved aside as ``embeddings.sqlite.corrupt-<timestamp>`` with
    a warning naming it, and rebuilt; texts it held are embedded again. Any other failure
    (a locked file, a full disk) makes reads misses and skips writes: never a crash.
    """

    def __init__(self, path: Path | None):
        self.path = path
        self._db: SQLiteCacheFile | None = None
        if path is not None:
            self._db = SQLiteCacheFile(path, _SCHEMA, what="embedding")
            self._db.open()  # check it now: a corrupt file is reported before the first batch

    @staticmethod
    def key(embedder_id: str, text: str) -> str:
        return cache_key("embedding", embedder_id, text)

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        if self._db is None or not keys:
            return {}

        def read(conn: sqlite3.Connection) -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            for key, dim, blob in rows_for_keys(conn, "SELECT key, dim, vec FROM vectors", keys):
                if isinstance(blob, bytes) and len(blob) == 4 * (dim or 0) and dim:  # a damaged row is a miss
                    found[key] = np.frombuffer(blob, dtype=np.float32)
            return found

        return self._db.run(read, default={}, action="read")

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        if self._db is None or not items:
            return
        rows = [(k, len(v), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()]

        def write(conn: sqlite3.Connection) -> None:
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
            conn.commit()

        self._db.run(write, action="write")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


def vector_problem(vectors: Sequence[Any], texts: Sequence[str], width: int | None = None) -> str | None:
    """What makes an embedder's vectors unfit for a KNN index, in words (``3 of 10 vector(s) have NaN or
    infinite values (the first for '...')``), or None: an empty vector, one whose width is not ``width``
    (without it: not the batch's most common), NaN or infinite values, all zeros (no cosine, no direction)."""
    arrays = [np.asarray(v) for v in vectors]
    sizes = Counter(a.size for a in arrays if a.size)
    if _all_fit(arrays, sizes, width):  # the usual batch, checked at once
        return None
    # without the index's width: the batch's most common one (a tie: the wider)
    expected = width if width is not None else max(sizes, key=lambda w: (sizes[w], w), default=None)
    checks: list[tuple[str, Callable[[np.ndarray], bool]]] = [
        ("are empty", lambda a: a.size == 0),
        (f"are not {expected} wide", lambda a: a.size != expected),
        ("have NaN or infinite values", lambda a: not bool(np.isfinite(a.astype(np.float64)).all())),
        ("are all zeros", lambda a: not bool(np.any(a))),
    ]
    for what, bad in checks:
        found = [i for i, a in enumerate(arrays) if bad(a)]
        if found:
            widths = sorted({arrays[i].size for i in found})
            wide = f" (width {', '.join(map(str, widths))})" if what.startswith("are not") else ""
            return f"{len(found)} of {len(arrays)} vector(s) {what}{wide} (the first for {_shown(texts[found[0]])})"
    return None


def _all_fit(arrays: list[np.ndarray], sizes: Counter[int], width: int | None) -> bool:
    if len(sizes) != 1 or sum(sizes.values()) != len(arrays) or (width is not None and width not in sizes):
        return False
    stacked = np.stack([a.reshape(-1) for a in arrays]).astype(np.float64, copy=False)
    return bool(np.isfinite(stacked).all() and np.any(stacked, axis=1).all())


def _shown(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


class CachingEmbedder(Protocol):
    """One of ragsweep's embedders: its vector cache and the counters :func:`attach_cache` zeroes."""

    embedder_id: str
    cache: EmbeddingCache
    embedded_count: int  # texts that really went through the model
    requested_count: int
    seconds: float
    on_progress: Callable[[int], object] | None  # called with the texts of each call, for a progress bar
    expected_width: int | None  # the index's width, once checked against it (None: the first vector's)
    failure: Exception | None  # the first broken batch of a run, which ends it


# Pathway may call an embedder for several batches at once (one question asked at several depths
# lands in several rows): one lock makes a text embedded by one call a cache hit for the next.
EMBED_LOCK = threading.RLock()


def embed_through_cache(
    embedder: CachingEmbedder, texts: list[str], encode: Callable[[list[str]], Any]
) -> list[np.ndarray]:
    """``texts``' vectors: from ``embedder.cache`` where it holds them, the rest by ``encode`` (each
    distinct text once) and stored; the embedder's counters, time and progress callback updated."""
    started = time.perf_counter()
    with EMBED_LOCK:
        embedder.requested_count += len(texts)
        keys = [EmbeddingCache.key(embedder.embedder_id, t) for t in texts]
        found = embedder.cache.get_many(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in found))
        if missing:
            vectors = encode(missing)
            # checked before the cache: a broken vector stored would be replayed by every later run
            if (problem := vector_problem(vectors, missing, embedder.expected_width)) is not None:
                failure = VectorError(
                    f"embedder {embedder.embedder_id} returned vectors the index cannot use: {problem}"
                )
                if getattr(embedder, "failure", None) is None:  # the first, raised after the run (run_with)
                    embedder.failure = failure
                raise failure
            embedder.embedded_count += len(missing)
            fresh = {
                EmbeddingCache.key(embedder.embedder_id, t): np.asarray(v, dtype=np.float32)
                for t, v in zip(missing, vectors, strict=True)
            }
            embedder.cache.put_many(fresh)
            found.update(fresh)
    embedder.seconds += time.perf_counter() - started
    if embedder.on_progress is not None:
        embedder.on_progress(len(texts))
    return [found[k] for k in keys]


def attach_cache(embedder: CachingEmbedder, cache_dir: str | Path | bool | None) -> None:
    """Give an embedder its vector cache (``cache_dir`` False: none; None: the default folder) and
    zeroed counters, which :func:`embed_through_cache` keeps."""
    cache_path = None
    if cache_dir is not False:
        root = Path(cache_dir) if isinstance(cache_dir, (str, Path)) else default_cache_dir()
        cache_path = root / "embeddings.sqlite"
    embedder.cache = EmbeddingCache(cache_path)
    embedder.embedded_count = 0
    embedder.requested_count = 0
    embedder.seconds = 0.0
    embedder.on_progress = None  # callable(n_texts) for a progress bar
    embedder.expected_width = None
    embedder.failure = None
