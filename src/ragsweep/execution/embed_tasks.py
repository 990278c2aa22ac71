"""Embedding as its own Ray tasks: an index group's distinct chunk texts that the shared embedding cache
lacks, in one batch per worker, embedded into that cache before the shards query (each shard then builds its
DocumentStore from cached vectors instead of embedding the whole corpus again)."""

from __future__ import annotations

import os
import time
from typing import Protocol, runtime_checkable

from ragsweep.execution.base import ConfigRef, EmbedTaskInfo
from ragsweep.pipeline.config import BuiltPipeline, PipelineConfig
from ragsweep.pipeline.corpus import Corpus
from ragsweep.pipeline.embedding_base import EmbeddingCache


@runtime_checkable
class _AheadEmbedder(Protocol):
    """An embedder whose vectors an embed task can put in the shared cache ahead of the store: one of
    ragsweep's, which embeds through its vector cache (an app's embedder keeps its own cache)."""

    embedder_id: str
    cache: EmbeddingCache

    def embed(self, texts: list[str]) -> object: ...


def _cached_embedder(pipeline: BuiltPipeline) -> _AheadEmbedder | None:
    """The pipeline's embedder when it embeds through ragsweep's vector cache (else None: nothing to do ahead)."""
    embedder = pipeline.embedder
    return embedder if isinstance(embedder, _AheadEmbedder) else None


def texts_to_embed(config: PipelineConfig, corpus: Corpus) -> tuple[str, list[str]]:
    """The group's embedder and the distinct chunk texts of ``corpus`` as its splitter cuts them that have
    no cached vector yet."""
    pipeline = config.build()
    embedder = _cached_embedder(pipeline)
    split = getattr(pipeline.splitter, "__wrapped__", None)
    if embedder is None or split is None:
        return "", []
    pieces = (text for doc in corpus.documents for text, _ in doc.pieces())  # element by element, as the store splits
    texts = list(dict.fromkeys(str(chunk) for piece in pieces for chunk, _ in split(piece)))
    keys = {EmbeddingCache.key(embedder.embedder_id, t): t for t in texts}
    found = embedder.cache.get_many(list(keys))
    return str(embedder.embedder_id), [t for key, t in keys.items() if key not in found]


_EMBEDDED_HERE: list[bool] = []  # not empty once this worker process ran an embed task (its model loaded)


def embed_batch(ref: ConfigRef, texts: list[str]) -> EmbedTaskInfo:
    """A task: ``texts`` embedded into the shared cache (on a worker); its pid, texts and seconds, whether it
    was this process's first, and the seconds it took to build the pipeline and load the model (a cost per
    worker, not per text)."""
    started = time.perf_counter()
    embedder = _cached_embedder(ref.load().build())
    getattr(embedder, "model", None)  # a sentence-transformers embedder loads its model here (once per process)
    loaded = time.perf_counter() - started
    if embedder is not None:
        embedder.embed(texts)
    first = not _EMBEDDED_HERE
    _EMBEDDED_HERE.append(True)
    seconds = time.perf_counter() - started
    return {"pid": os.getpid(), "texts": len(texts), "seconds": seconds, "first": first, "load": loaded}
