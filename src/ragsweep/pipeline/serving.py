"""The DocumentStore ragsweep evaluates is the one it serves.

:class:`DocumentStore` is Pathway's ``DocumentStore`` with two changes:

- each of Pathway's own Tantivy BM25 indexes (alone or inside a hybrid) is asked the question as
  :func:`ragsweep.datasets.pathway_limits.tantivy_safe` leaves it, because one question holding
  Tantivy query syntax ends the whole ``pw.run`` (a server process dies with
  ``EngineError: Syntax Error``). Only that index sees the change: a hybrid's KNN side embeds
  the question as it is, as Pathway's ``HybridIndex`` passes it, and a question with nothing
  searchable left searches nothing in BM25 (an empty list, fused as Pathway fuses it). Questions
  without such characters reach Pathway unchanged; ragsweep's segmented BM25
  (:mod:`ragsweep.pipeline.cjk`) cleans its own query;
- its retriever serves equal scores in one documented order, run after run
  (:mod:`ragsweep.pipeline.stable_order`: each index, or each sub-retriever of a hybrid,
  orders equal scores by document id, start offset, then text, and which tied chunk makes
  the cut does not depend on Pathway's order), and the served list is sorted by
  (distance, that key). Scores and every list without equal scores at the cut are Pathway's
  (a served score may be moved by at most 1e-6, relative, to equal its group's best).

The in-process store (:mod:`ragsweep.pipeline.store`) builds this class, and
:func:`build_server` serves it over REST with Pathway's own ``DocumentStoreServer``:
``/v1/retrieve`` answers what ``ragsweep eval`` scored (tests/test_server_parity.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragsweep.core.offline import ensure_offline
from ragsweep.datasets.pathway_limits import tantivy_safe

if TYPE_CHECKING:
    from ragsweep.core.hits import ServedItem

ensure_offline()

import pathway as pw  # noqa: E402
from pathway.stdlib.indexing import TantivyBM25Factory  # noqa: E402
from pathway.stdlib.indexing.hybrid_index import HybridIndexFactory as _PathwayHybridFactory  # noqa: E402
from pathway.xpacks.llm import document_store as _pathway_store  # noqa: E402

from ragsweep.pipeline.cjk import QueryMappedTantivyBM25, SegmentedTantivyBM25Factory  # noqa: E402
from ragsweep.pipeline.stable_order import StableOrderFactory, stable_factory, tie_key  # noqa: E402


def uses_tantivy(factory: Any) -> bool:
    """Does this retriever factory (or one it fuses) hand the question to Tantivy's query parser as it
    is, as Pathway's own ``TantivyBM25Factory`` does (so a question with Tantivy syntax ends the app's
    run)? ragsweep's segmented BM25 cleans its own query."""
    if isinstance(factory, TantivyBM25Factory):
        return not isinstance(factory, (SegmentedTantivyBM25Factory, CleanedTantivyBM25Factory))
    if isinstance(factory, StableOrderFactory):
        return uses_tantivy(factory.inner)
    return any(uses_tantivy(f) for f in getattr(factory, "retriever_factories", None) or [])


@pw.udf(deterministic=True)
def _tantivy_query(text: str) -> str:
    return tantivy_safe(text)


@dataclass(frozen=True)
class CleanedTantivyBM25(QueryMappedTantivyBM25):
    """Pathway's Tantivy BM25 index asked :func:`tantivy_safe`'s query: the question itself when it
    parses, ``""`` (no match) when nothing searchable is left."""

    def query_udf(self) -> pw.UDF:
        return _tantivy_query


@dataclass
class CleanedTantivyBM25Factory(TantivyBM25Factory):
    """Pathway's ``TantivyBM25Factory`` building :class:`CleanedTantivyBM25`."""

    def build_inner_index(self, data_column: pw.ColumnReference, metadata_column: pw.ColumnExpression | None = None):
        return CleanedTantivyBM25(
            data_column, metadata_column, ram_budget=self.ram_budget, in_memory_index=self.in_memory_index
        )


def bm25_queries_cleaned(factory: Any) -> Any:
    """``factory`` with each of Pathway's own Tantivy BM25 factories, alone or inside a hybrid, asking
    :func:`tantivy_safe`'s query. Every other index (a KNN, ragsweep's segmented BM25, which cleans
    its own) is asked the question as it is."""
    if type(factory) is TantivyBM25Factory:
        return CleanedTantivyBM25Factory(ram_budget=factory.ram_budget, in_memory_index=factory.in_memory_index)
    if isinstance(factory, StableOrderFactory):
        return StableOrderFactory(bm25_queries_cleaned(factory.inner))
    if isinstance(factory, _PathwayHybridFactory):
        return type(factory)([bm25_queries_cleaned(f) for f in factory.retriever_factories], factory.k)
    return factory


class DocumentStore(_pathway_store.DocumentStore):
    """Pathway's DocumentStore; Pathway's Tantivy BM25 asked a question safe for its query parser,
    equal scores served in the stable order."""

    def __init__(self, docs: Any, retriever_factory: Any, *args: Any, **kwargs: Any):
        super().__init__(docs, stable_factory(bm25_queries_cleaned(retriever_factory)), *args, **kwargs)

    def apply_processor(self, table: pw.Table, processor: pw.UDF) -> pw.Table:
        """Pathway's stage, except that a splitter whose chunks depend on their document's metadata
        (``takes_metadata``: chunk headers, :mod:`ragsweep.pipeline.chunking`) is given
        ``(text, metadata)``, as Pathway's splitter API takes it, and its chunks keep the metadata
        it returns."""
        if processor is not self.splitter or not getattr(processor, "takes_metadata", False):
            return super().apply_processor(table, processor)
        pieces = (
            table.select(piece=processor(pw.make_tuple(pw.this.text, pw.this.metadata)))
            .await_futures()
            .flatten(pw.this.piece)
        )
        return pieces.select(
            text=pw.apply_with_type(_piece_text, str, pw.this.piece),
            metadata=pw.apply_with_type(_piece_metadata, pw.Json, pw.this.piece),
        )

    def retrieve_query(self, retrieval_queries: pw.Table) -> pw.Table:
        served = super().retrieve_query(retrieval_queries)
        # Pathway sorts by distance alone: equal distances in the index's tie order
        return served.with_columns(result=pw.apply_with_type(in_served_order, pw.Json, pw.this.result))


def _piece_text(piece: Any) -> str:
    return str(piece[0])


def _piece_metadata(piece: Any) -> pw.Json:
    meta = piece[1]
    return pw.Json(meta.as_dict() if isinstance(meta, pw.Json) else dict(meta))


def in_served_order(result: pw.Json) -> pw.Json:
    """A reply's items by (distance, then the stable tie key of their chunk)."""
    items = list(result.as_list())  # ServedItem dicts (Pathway types the list loosely)
    items.sort(key=_served_key)
    return pw.Json(items)


def _served_key(item: ServedItem) -> tuple[float, tuple[str, int, str]]:
    return float(item["dist"]), tie_key(str(item["text"]), item["metadata"])


def build_server(host: str, port: int, store: DocumentStore, **kwargs: Any):
    """Pathway's ``DocumentStoreServer`` over ragsweep's DocumentStore (``server.run()`` serves)."""
    from pathway.xpacks.llm.servers import DocumentStoreServer

    return DocumentStoreServer(host, int(port), store, **kwargs)
