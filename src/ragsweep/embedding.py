"""Embedders for the KNN index: the offline MiniLM by default, with a content cache.

Each distinct chunk text is embedded once per embedder, ever: vectors live in a
SQLite file keyed by (embedder id, text hash), shared across configurations,
sweeps and runs. ``embedded_count`` says how many texts really went through the
model in this process, which is what tests and benchmarks check.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
from pathway.xpacks.llm.embedders import BaseEmbedder

from ragsweep.corpus import default_cache_dir
from ragsweep.offline import embedder_model_path, ensure_offline

DEFAULT_MODEL = "all-MiniLM-L6-v2"


@lru_cache(maxsize=4)
def load_sentence_transformer(model: str):
    """One model instance per process, however many stores are built."""
    ensure_offline()
    from sentence_transformers import SentenceTransformer

    path = embedder_model_path() if model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}") else model
    return SentenceTransformer(path, device="cpu")


class EmbeddingCache:
    """Vectors on disk keyed by embedder id and text; safe across threads."""

    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(path), check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, vec BLOB)")
            self._conn.commit()

    @staticmethod
    def key(embedder_id: str, text: str) -> str:
        return hashlib.sha256(f"{embedder_id}\0{text}".encode()).hexdigest()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        if self._conn is None or not keys:
            return {}
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                rows = self._conn.execute(
                    f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})", part
                ).fetchall()
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        if self._conn is None or not items:
            return
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(k, len(v), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
            )
            self._conn.commit()


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
