"""The lists the DocumentStore served, as ragsweep ranks and keeps them: the queries asked, the
chunk table, each query's hits in a deterministic order, and the served-list cache's part of a run.

No Pathway here: a run whose every query the served-list cache answers (:func:`cached_run`) is
ranked without importing it; :mod:`ragsweep.pipeline.store` asks Pathway for the rest.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from pydantic import BaseModel, Field

from ragsweep.core.hits import ChunkMetadata, Hit, ServedItem, chunk_id, chunk_source, chunk_span, split_header
from ragsweep.datasets.pathway_limits import unscopable_reason
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus, ParsedDocument
from ragsweep.pipeline.served_cache import (
    UNRESOLVED,
    ServedCache,
    chunks_key,
    compact_list,
    expand_list,
    index_fingerprint,
    query_key,
)


def doc_filter(doc_ids: list[str]) -> str:
    """The JMESPath filter allowing exactly ``doc_ids`` (each id expressible: see
    :func:`scope_filter`)."""
    return " || ".join(f"doc_id == `{d}`" for d in sorted(set(doc_ids)))


class ChunkInfo(BaseModel):
    """One indexed chunk: its own text, the header indexed with it, and the tokens of both."""

    doc_id: str
    start: int
    end: int
    tokens: int
    text: str = Field(default="", repr=False)
    header: str = Field(default="", repr=False)

    def as_hit(self, rank: int = 1) -> Hit:
        return Hit(
            rank=rank, score=0.0, text=self.text, doc_id=self.doc_id, start=self.start, end=self.end, header=self.header
        )


def chunk_texts(chunks: Iterable[ChunkInfo]) -> dict[str, str]:
    """A chunk table as chunk id -> the text served: a chunk's header (``$chunk_header``), then its own text."""
    return {chunk_id(c.doc_id, c.start, c.end): c.header + c.text for c in chunks}


@dataclass
class Query:
    text: str
    k: int
    doc_scope: list[str] | None = None
    # shallower depths answered by this query's prefix (only where a prefix is what the store
    # serves at that depth: BM25 and KNN, never a fused hybrid; see prefix_exact)
    prefix_ks: tuple[int, ...] = ()


class _Ranked(NamedTuple):
    """A served chunk with its score (the negated distance), in the order ranking sorts by."""

    score: float
    doc_id: str
    start: int
    end: int
    text: str
    header: str


@dataclass
class StoreRun:
    hits: list[list[Hit]]
    chunks: list[ChunkInfo]
    seconds: float
    embedded_texts: int
    timings: dict[str, float] = field(default_factory=dict)
    # per query: {depth: hits} for the depths of Query.prefix_ks (each from Pathway's own order)
    hits_at: list[dict[int, list[Hit]]] = field(default_factory=list)
    from_cache: int = 0  # queries answered from the served-list cache, not asked of Pathway


def scope_filter(doc_scope: list[str] | None) -> str | None:
    """JMESPath filter restricting a query to the given document ids.

    Pathway rewrites filters before parsing them (backtick -> quote, ``'`` -> ``\\'``,
    ``"`` dropped), so ids are written between backticks and become raw string
    literals; an id holding a backtick or a double quote cannot be expressed.
    """
    if not doc_scope:
        return None
    for doc_id in doc_scope:
        if (reason := unscopable_reason(doc_id)) is not None:
            raise ValueError(f"document id {doc_id!r}: {reason}")
    return doc_filter(doc_scope)


def served_offsets(meta: ChunkMetadata, chunk: str, doc: ParsedDocument | None) -> tuple[int, int]:
    """Chunk offsets in the document's parsed text (:meth:`ParsedDocument.chunk_offsets`)."""
    if doc is not None:
        return doc.chunk_offsets(chunk, meta)
    return chunk_span(meta) or (0, 0)


def served_order(raw: list[ServedItem] | None) -> list[ServedItem]:
    """The store's reply in the order it served it (DocumentStore sorts by distance, stably)."""
    return sorted(list(raw or []), key=lambda item: float(item["dist"]))


def rank_hits(
    raw: list[ServedItem], k: int, texts: dict[str, ParsedDocument], shared: dict[str, str] | None = None
) -> list[Hit]:
    """What the store served for k, in a deterministic order: score desc, then doc id,
    then offset. Only the order among exactly equal scores is ours; the set is Pathway's."""
    rows: list[_Ranked] = []
    for item in raw:
        meta = item["metadata"] or {}
        doc_id = chunk_source(meta)
        header, text = split_header(str(item["text"]), meta)
        if shared is not None:  # one str per chunk text, however many lists it is in
            text, header = shared.setdefault(text, text), shared.setdefault(header, header)
        start, end = served_offsets(meta, text, texts.get(doc_id))
        rows.append(_Ranked(-float(item["dist"]), doc_id, start, end, text, header))
    rows.sort(key=lambda r: (-r.score, r.doc_id, r.start))
    seen: set[tuple[str, int]] = set()
    hits: list[Hit] = []
    for score, doc_id, start, end, text, header in rows:
        if (doc_id, start) in seen:
            continue
        seen.add((doc_id, start))
        # typed as Hit declares them (offsets from ChunkMetadata's ints): built without validating again
        hits.append(
            Hit.model_construct(
                rank=len(hits) + 1, score=score, text=text, doc_id=doc_id, start=start, end=end, header=header
            )
        )
        if len(hits) == k:
            break
    return hits


@dataclass
class CachedLists:
    """What the served-list cache holds for a batch of queries (nothing without a cache)."""

    index_key: str | None
    keys: list[str]  # per query (empty without a cache)
    table_key: str
    stored: dict[str, list[ServedItem]]  # query key -> served list, texts put back
    stored_chunks: list[ChunkInfo] | None  # the chunk table
    table_texts: dict[str, str] | None
    todo: list[int]  # the queries to ask of Pathway


def read_cache(config: PipelineConfig, corpus: Corpus, queries: list[Query], cache: ServedCache | None) -> CachedLists:
    index_key = index_fingerprint(config, corpus) if cache is not None and queries else None
    keys = (
        [query_key(index_key, q.text, q.k, scope_filter(q.doc_scope), q.prefix_ks) for q in queries]
        if index_key
        else []
    )
    table_key = chunks_key(index_key) if index_key else ""
    stored = cache.get_many([*keys, table_key]) if index_key and cache is not None else {}
    table = stored.pop(table_key, None)  # read once here: a table of this index key is ChunkInfo's dumps
    stored_chunks = [ChunkInfo.model_validate(row) for row in table] if table is not None else None
    table_texts = chunk_texts(stored_chunks) if stored_chunks is not None else None
    stored = {
        key: value
        for key, value in ((k, expand_list(v, table_texts)) for k, v in stored.items())
        if value is not UNRESOLVED
    }
    todo = [i for i, key in enumerate(keys) if key not in stored] if index_key else list(range(len(queries)))
    return CachedLists(index_key, keys, table_key, stored, stored_chunks, table_texts, todo)


def store_served(
    cache: ServedCache,
    cached: CachedLists,
    part: list[int],
    answers: dict[int, list[ServedItem]],
    chunks: list[ChunkInfo],
) -> None:
    """The chunk table once, then each list of ``part`` without the texts the table holds."""
    cached.table_texts = cached.table_texts or chunk_texts(chunks)
    rows = {cached.keys[i]: compact_list(answers[i], cached.table_texts) for i in part if i in answers}
    if cached.stored_chunks is None:
        rows[cached.table_key] = [c.model_dump() for c in chunks]
        cached.stored_chunks = chunks
    cache.put_many(rows)


def hits_of_run(
    queries: list[Query],
    answers: dict[int, list[ServedItem]],
    chunks: list[ChunkInfo],
    corpus: Corpus,
    started: float,
    *,
    embedded_texts: int,
    timings: dict[str, float],
    from_cache: int,
) -> StoreRun:
    """Each query's hits at its k and at its prefix depths, from the store's raw answers."""
    texts = {doc.doc_id: doc for doc in corpus.documents}
    missing = [i for i in range(len(queries)) if i not in answers]
    if missing:
        raise RuntimeError(
            f"Pathway returned no result for {len(missing)} queries (first: {queries[missing[0]].text!r})"
        )
    shared: dict[str, str] = {}
    hits = [rank_hits(list(answers[i] or []), q.k, texts, shared) for i, q in enumerate(queries)]
    hits_at = [
        {d: rank_hits(served_order(answers[i])[:d], d, texts, shared) for d in q.prefix_ks}
        for i, q in enumerate(queries)
    ]
    return StoreRun(
        hits=hits,
        hits_at=hits_at,
        chunks=chunks,
        seconds=time.perf_counter() - started,
        embedded_texts=embedded_texts,
        timings=timings,
        from_cache=from_cache,
    )


def cached_run(queries: list[Query], corpus: Corpus, cached: CachedLists, started: float) -> StoreRun | None:
    """The run when the served-list cache holds every query's list and the chunk table (None otherwise):
    what Pathway served for them before, ranked as :meth:`ragsweep.pipeline.store.RagStore.run` ranks."""
    if not cached.index_key or cached.todo or cached.stored_chunks is None:
        return None
    answers = {i: cached.stored[key] for i, key in enumerate(cached.keys)}
    return hits_of_run(
        queries,
        answers,
        cached.stored_chunks,
        corpus,
        started,
        embedded_texts=0,
        timings={"split": 0.0, "embed": 0.0},
        from_cache=len(queries),
    )
