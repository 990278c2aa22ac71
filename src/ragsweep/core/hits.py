"""What retrieval returns: one ranked chunk of one document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias, TypedDict

from pydantic import BaseModel, Field, JsonValue


class Hit(BaseModel):
    """A retrieved chunk.

    ``start``/``end`` are character offsets of the chunk in the parsed text of
    ``doc_id`` (the text the parser produced, see :mod:`ragsweep.pipeline.corpus`), so a
    caller can tell whether a chunk covers an evidence span for any chunk size.
    ``score`` is larger-is-better (the fused RRF score in hybrid mode, the BM25
    score or the cosine similarity otherwise).

    After a reranking stage (:mod:`ragsweep.pipeline.rerank`), ``rank`` is the position in the
    reranked list, ``score`` is still the retriever's, ``rerank_score`` is the
    reranker's (larger is better) and ``retrieval_rank`` the rank the store gave the
    chunk among the ``$rerank_candidates``. Without a reranker both stay ``None``.

    ``text`` is the chunk's own text in the document; ``header`` what the splitter prepended to
    it (``$chunk_header``: title, heading), which the store indexed and served with it:
    :attr:`served_text`, what an answerer or reranker is given. Relevance, the extractive
    answerer and the run's chunk table read ``text``.
    """

    rank: int = Field(ge=1)
    score: float
    text: str
    doc_id: str  # path relative to the documents folder, '/'-separated
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    rerank_score: float | None = None
    retrieval_rank: int | None = Field(default=None, ge=1)
    header: str = ""

    @property
    def served_text(self) -> str:
        """The chunk as the store served it: its header, then its text."""
        return self.header + self.text


def chunk_id(doc_id: str, start: int, end: int) -> str:
    """A chunk's identity within a run: its document and character offsets (the key of the
    run folder's chunk table)."""
    return f"{doc_id}#{start}-{end}"


# a chunk's metadata as Pathway carries it, JSON values: ``doc_id`` (else ``path``), ``start``, ``end``,
# ``header``, and whatever the app's parser put there
ChunkMetadata: TypeAlias = Mapping[str, JsonValue]


def chunk_source(metadata: ChunkMetadata) -> str:
    """The document a served chunk's metadata names: its ``doc_id`` (ragsweep's DocumentStore), else its
    ``path`` (an app reading a folder), else ``""``."""
    return str(metadata.get("doc_id") or metadata.get("path") or "")


def chunk_span(metadata: ChunkMetadata) -> tuple[int, int] | None:
    """The ``start``/``end`` offsets a splitter of ragsweep's records in a chunk's metadata (None: it
    records none, as Pathway's own splitters)."""
    if "start" not in metadata or "end" not in metadata:
        return None
    return _offset(metadata["start"]), _offset(metadata["end"])


def _offset(value: JsonValue) -> int:
    if isinstance(value, (int, float, str)):  # an int, as the splitter wrote it
        return int(value)
    raise TypeError(f"a chunk offset is a number, not {type(value).__name__}")


def chunk_key(hit: Hit) -> str:
    return chunk_id(hit.doc_id, hit.start, hit.end)


def split_header(text: str, metadata: ChunkMetadata) -> tuple[str, str]:
    """A served chunk's text as (header, the document's own text): the header is the chunk
    metadata's ``header`` when the text starts with it (a splitter without headers: ``""``)."""
    header = str(metadata["header"]) if "header" in metadata else ""
    return (header, text[len(header) :]) if header and text.startswith(header) else ("", text)


class ServedItem(TypedDict):
    """One item of what the DocumentStore serves for a query (Pathway's JSON): a chunk's text (its
    header first), its metadata and its distance (the negated score)."""

    text: str
    metadata: ChunkMetadata
    dist: float
