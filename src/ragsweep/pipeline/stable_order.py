"""Served lists in one order, run after run: equal scores are ordered by the chunk, not by Pathway.

Why. A Pathway index orders chunks of equal score by where they sit inside it: Tantivy by its
document address, the brute-force KNN index by its row, i.e. the order in which the chunks
reached the index, which changes from one run to the next and with ``PATHWAY_THREADS``. Two
cold ``ragsweep eval`` runs then served different lists wherever two chunks tie (identical
clauses in several contracts): the tie decides which chunk makes a sub-retriever's top k, and
the rank it has there moves the fused RRF score. Scores themselves move too: Tantivy sums a
query's terms in an order that follows that layout, so a chunk's BM25 score moves by a float32
ulp between runs (32 of 1474 scores over cuad-mini), and embeddings computed in other batches
move a KNN distance by ~1e-7.

What. :class:`StableOrderIndex` wraps one retriever's index (any Pathway ``InnerIndex``), as
served *as of now* (what ``DocumentStore.retrieve_query`` asks):

1. the index is asked for :func:`first_depth` (2k + 8) matches instead of k;
2. the matches are sorted by score; consecutive scores closer than :data:`TIE_TOLERANCE`
   (relative, 1e-6, i.e. ~8-16 float32 ulps: far above the jitter, far below real gaps) form
   one group of *equal* scores, served with the group's best score;
3. equal scores are ordered by :func:`tie_key`: document id (else path), chunk start offset,
   then the chunk text when the splitter records no offset;
4. the first k are served. When the group of equal scores at the cut reaches the end of the
   deeper list (more equal chunks may lie beyond it), the query is asked again for every chunk
   of the index, so which tied chunk makes the cut never depends on Pathway's order.

So the list at k is the first k of one total order of the index's chunks (score groups, then
the key): a BM25 or brute-force KNN top k stays the prefix of a deeper answer
(:func:`ragsweep.pipeline.store.prefix_exact`). Scores within a group are served equal, so every
later sort by score (Pathway's ``DataIndex``, the ``DocumentStore``, ragsweep's ``rank_hits``)
keeps this order. :func:`stable_factory` wraps each sub-retriever of a hybrid index (whose
fusion, :mod:`ragsweep.pipeline.fusion`, then sees the same ranks every run) and ragsweep's
``DocumentStore`` (:mod:`ragsweep.pipeline.serving`) applies it to whatever factory it is
given, in process and behind a ``DocumentStoreServer`` alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragsweep.core.hits import ChunkMetadata, chunk_source
from ragsweep.core.offline import ensure_offline

ensure_offline()

import pathway as pw  # noqa: E402
from pathway.stdlib.indexing.bm25 import TantivyBM25Factory  # noqa: E402
from pathway.stdlib.indexing.colnames import _INDEX_REPLY, _SCORE  # noqa: E402
from pathway.stdlib.indexing.data_index import DataIndex, InnerIndex  # noqa: E402
from pathway.stdlib.indexing.hybrid_index import HybridIndexFactory as _PathwayHybridFactory  # noqa: E402
from pathway.stdlib.indexing.nearest_neighbors import BruteForceKnnFactory  # noqa: E402
from pathway.stdlib.indexing.retrievers import InnerIndexFactory  # noqa: E402

from ragsweep.pipeline.fusion import HybridIndexFactory  # noqa: E402

TIE_TOLERANCE = 1e-6  # relative (absolute below 1): scores this close are equal
TieKey = tuple[str, int, str]
Reply = list[tuple[pw.Pointer, float]]


def first_depth(k: int) -> int:
    """How many matches the index is first asked for to serve k: enough beyond k that the
    group of equal scores at the cut almost always ends inside the list."""
    return 2 * int(k) + 8


def tie_key(text: str, metadata: pw.Json | ChunkMetadata | None) -> TieKey:
    """(document id or path, start offset or -1, text when there is no offset)."""
    meta = metadata.as_dict() if isinstance(metadata, pw.Json) else dict(metadata or {})
    doc = chunk_source(meta)
    match meta:
        case {"start": int() as start} if not isinstance(start, bool):
            return (doc, start, "")  # (document, offset) is one chunk: the text adds nothing
    return (doc, -1, str(text))


def ordered(matches: Sequence[tuple[Any, float, TieKey]], k: int, depth: int) -> tuple[bool, Reply]:
    """The first ``k`` of ``matches`` (``(id, score, tie key)``, the index's first ``depth``) in
    the stable order, and whether that cut is final: False when the group of equal scores at the
    cut reaches the end of a full list (equal chunks may lie beyond it)."""
    if k <= 0:
        return True, []
    by_score = sorted(matches, key=lambda m: -m[1])
    grouped: list[tuple[float, TieKey, Any]] = []  # (group's best score, key, id)
    best = previous = 0.0
    for i, (match_id, score, key) in enumerate(by_score):
        if i == 0 or previous - score > TIE_TOLERANCE * max(1.0, abs(previous)):
            best = score  # a gap: a new group of equal scores starts
        grouped.append((best, key, match_id))
        previous = score
    grouped.sort(key=lambda g: (-g[0], g[1]))
    final = len(grouped) < depth or (k < len(grouped) and grouped[k - 1][0] != grouped[-1][0])
    return final, [(match_id, best) for best, _, match_id in grouped[:k]]


@pw.udf(deterministic=True)
def _tie_key(text: str, metadata: pw.Json | None) -> tuple[str, int, str]:
    return tie_key(text, metadata)


@pw.udf(deterministic=True)
def _depth(k: int) -> int:
    return first_depth(k)


def _matches(ids: tuple, keys: tuple, scores: tuple) -> list[tuple[Any, float, TieKey]]:
    return [(i, float(s), tuple(key)) for i, key, s in zip(ids, keys, scores)]  # type: ignore[misc]


@pw.udf(deterministic=True)
def _final(ids: tuple, keys: tuple, scores: tuple, k: int, depth: int) -> bool:
    return ordered(_matches(ids, keys, scores), k, depth)[0]


@pw.udf(deterministic=True)
def _cut(ids: tuple, keys: tuple, scores: tuple, k: int, depth: int) -> list[tuple[pw.Pointer, float]]:
    return ordered(_matches(ids, keys, scores), k, depth)[1]


@dataclass(frozen=True)
class StableOrderIndex(InnerIndex):
    """An index's as-of-now answers in the stable order (module docstring). ``data_column`` and
    ``metadata_column`` are the chunks' text and metadata (the tie key's source), ``inner`` the
    index built over them. ``query`` (answers revised as the index changes; the DocumentStore
    never asks it) is the inner index's own."""

    inner: InnerIndex

    def query(
        self,
        query_column: pw.ColumnReference,
        *,
        number_of_matches: pw.ColumnExpression | int = 3,
        metadata_filter: pw.ColumnExpression | None = None,
    ) -> pw.Table:
        return self.inner.query(query_column, number_of_matches=number_of_matches, metadata_filter=metadata_filter)

    def query_as_of_now(
        self,
        query_column: pw.ColumnReference,
        *,
        number_of_matches: pw.ColumnExpression | int = 3,
        metadata_filter: pw.ColumnExpression | None = None,
    ) -> pw.Table:
        columns: dict[str, Any] = {"_pw_so_query": query_column, "_pw_so_k": number_of_matches}
        if metadata_filter is not None:
            columns["_pw_so_filter"] = metadata_filter
        asked = query_column.table.select(**columns)  # same ids as the queries
        asked = asked.with_columns(_pw_so_depth=_depth(pw.this._pw_so_k), _pw_so_one=0)
        keys = self.data_column.table.select(
            _pw_so_id=pw.this.id, _pw_so_key=_tie_key(self.data_column, self.metadata_column)
        )
        first = self._ask(keys, asked)
        first = first.with_columns(_pw_so_final=_final(*self._answer_args(first)))
        done = first.filter(pw.this._pw_so_final)
        # the rare query whose equal scores at the cut run past the deeper list: every chunk
        size = keys.reduce(_pw_so_size=pw.reducers.count()).with_columns(_pw_so_one=0)
        pending = first.filter(~pw.this._pw_so_final)
        deeper = pending.asof_now_join(size, pending._pw_so_one == size._pw_so_one, id=pending.id).select(
            *(pw.left[name] for name in asked.column_names() if name != "_pw_so_depth"),
            _pw_so_depth=pw.right._pw_so_size,
        )
        second = self._ask(keys, deeper)
        replies = [t.select(**{_INDEX_REPLY: _cut(*self._answer_args(t))}) for t in (done, second)]
        pw.universes.promise_are_pairwise_disjoint(*replies)
        return pw.Table.concat(*replies)

    def _ask(self, keys: pw.Table, asked: pw.Table) -> pw.Table:
        """The inner index's first ``_pw_so_depth`` matches of each query, as tuples of ids, tie keys and scores."""
        found = DataIndex(keys, self.inner).query_as_of_now(
            asked._pw_so_query,
            number_of_matches=asked._pw_so_depth,
            metadata_filter=asked._pw_so_filter if "_pw_so_filter" in asked.column_names() else None,
        )
        return found.select(
            *pw.left,
            _pw_so_ids=pw.coalesce(pw.right._pw_so_id, ()),
            _pw_so_keys=pw.coalesce(pw.right._pw_so_key, ()),
            _pw_so_scores=pw.coalesce(pw.right[_SCORE], ()),
        )

    @staticmethod
    def _answer_args(table: pw.Table) -> tuple:
        t = table
        return (t._pw_so_ids, t._pw_so_keys, t._pw_so_scores, t._pw_so_k, t._pw_so_depth)


class StableOrderFactory(InnerIndexFactory):
    """Builds ``inner``'s index wrapped in a :class:`StableOrderIndex`."""

    def __init__(self, inner: InnerIndexFactory):
        self.inner = inner

    def build_inner_index(
        self, data_column: pw.ColumnReference, metadata_column: pw.ColumnExpression | None = None
    ) -> InnerIndex:
        return StableOrderIndex(
            data_column, metadata_column, self.inner.build_inner_index(data_column, metadata_column)
        )


def stable_factory(factory: Any) -> Any:
    """``factory`` serving the stable order: a plain index wrapped; a hybrid (Pathway's or
    ragsweep's) as ragsweep's tie-breaking fusion over its wrapped sub-retrievers (never wrapped
    itself: RRF over deeper lists is another answer); a factory that is not an ``InnerIndexFactory``
    (ragsweep cannot see its matches) as it is."""
    if isinstance(factory, StableOrderFactory):
        return factory
    if isinstance(factory, _PathwayHybridFactory):
        return HybridIndexFactory([stable_factory(f) for f in factory.retriever_factories], factory.k)
    if isinstance(factory, InnerIndexFactory):
        return StableOrderFactory(factory)
    return factory


def exact_index(factory: Any) -> bool:
    """Does this factory find every match by its exact score (Tantivy's BM25, brute-force KNN),
    so that, in the stable order, its top k is the first k of any deeper answer? Approximate
    indexes (USearch, LSH), hybrids and factories ragsweep cannot wrap do not promise it."""
    inner = factory.inner if isinstance(factory, StableOrderFactory) else factory
    return isinstance(inner, (TantivyBM25Factory, BruteForceKnnFactory))
