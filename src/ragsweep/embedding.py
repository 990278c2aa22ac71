"""Embedders for the KNN index: the offline MiniLM by default, with a content cache.

Each distinct chunk text is embedded once per embedder, ever: vectors live in a
SQLite file keyed by (embedder id, text hash), shared across configurations,
sweeps and runs. ``embedded_count`` says how many texts really went through the
model in this process, which is what tests and benchmarks check.
"""

from __future__ import annotations

import hashlib
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
from pathway.xpacks.llm.embedders import BaseEmbedder

from ragsweep.corpus import default_cache_dir
from ragsweep.llm.sqlite_cache import SQLiteCacheFile
from ragsweep.offline import embedder_model_path, ensure_offline

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, vec BLOB)",)


@lru_cache(maxsize=4)
def load_sentence_transformer(model: str):
    """One model instance per process, however many stores are built."""
    ensure_offline()
    from sentence_transformers import SentenceTransformer

    path = embedder_model_path() if model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}") else model
    return SentenceTransformer(path, device="cpu")


class EmbeddingCache:
    """Vectors on disk keyed by embedder id and text; safe across threads.

    The sqlite file heals itself (:class:`~ragsweep.llm.sqlite_cache.SQLiteCacheFile`):
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
        return hashlib.sha256(f"{embedder_id}\0{text}".encode()).hexdigest()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        if self._db is None or not keys:
            return {}

        def read(conn) -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                rows = conn.execute(
                    f"SELECT key, dim, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})", part
                ).fetchall()
                for key, dim, blob in rows:
                    if isinstance(blob, bytes) and len(blob) == 4 * (dim or 0) and dim:  # a damaged row is a miss
                        found[key] = np.frombuffer(blob, dtype=np.float32)
            return found

        return self._db.run(read, default={}, action="read")

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        if self._db is None or not items:
            return
        rows = [(k, len(v), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()]

        def write(conn) -> None:
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
            conn.commit()

        self._db.run(write, action="write")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


class CachedSentenceTransformerEmbedder(BaseEmbedder):
    """Sentence-Transformers embedder for Pathway with a persistent content cache.

    Args:
        model: ``all-MiniLM-L6-v2`` (the offline packaged copy) or a local model path.
        batch_size: texts per Pathway UDF batch and per ``encode`` call (32 was
            faster than Pathway's 1024 on 2 cores and halves peak memory).
        cache_dir: where ``embeddings.sqlite`` lives; ``None`` uses the ragsweep
            cache folder; ``False`` disables the cache.
    """

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = 32, cache_dir: str | Path | bool | None = None):
        super().__init__(max_batch_size=batch_size)
        self.model_name = model
        self.batch_size = batch_size
        self.embedder_id = f"sentence-transformers:{model}"
        if cache_dir is False:
            cache_path = None
        else:
            root = Path(cache_dir) if isinstance(cache_dir, (str, Path)) else default_cache_dir()
            cache_path = root / "embeddings.sqlite"
        self.cache = EmbeddingCache(cache_path)
        self.embedded_count = 0
        self.requested_count = 0
        self.seconds = 0.0
        self.on_progress = None  # callable(n_texts) for a progress bar

    @property
    def model(self):
        return load_sentence_transformer(self.model_name)

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        """Embed a batch, through the cache; what the Pathway UDF calls."""
        started = time.perf_counter()
        self.requested_count += len(texts)
        keys = [EmbeddingCache.key(self.embedder_id, t) for t in texts]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in found))
        if missing:
            vectors = self.model.encode(missing, batch_size=self.batch_size, convert_to_numpy=True)
            self.embedded_count += len(missing)
            fresh = {EmbeddingCache.key(self.embedder_id, t): np.asarray(v, dtype=np.float32) for t, v in zip(missing, vectors)}
            self.cache.put_many(fresh)
            found.update(fresh)
        self.seconds += time.perf_counter() - started
        if self.on_progress is not None:
            self.on_progress(len(texts))
        return [found[k] for k in keys]

    def __wrapped__(self, input: list[str], **kwargs) -> list[np.ndarray]:
        return self.embed(list(input))

    def get_embedding_dimension(self, **kwargs) -> int:
        return int(self.model.get_sentence_embedding_dimension() or len(self.embed(["."])[0]))
