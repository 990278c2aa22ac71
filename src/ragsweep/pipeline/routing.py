"""Document routing (``$route_docs: N``): find the documents first, then the chunks inside them.

Stage 1 asks a second Pathway ``DocumentStore`` over the same documents, one row per document
(its title, else its file stem, then the first chunk the pipeline's splitter makes of it:
where a contract names its parties and what it is), built with the pipeline's own retriever
factory and embedder, for its top N rows. Stage 2 asks the chunk store, as without routing,
with a metadata filter restricting it to those N documents (the JMESPath filter a scoped
case uses).

Both stages are one method, :meth:`RoutedDocumentStore.retrieve_query`, in one graph: the
in-process store and a ``DocumentStoreServer`` over it serve the same lists
(tests/test_server_parity.py). A query with its own filter (a case's ``doc_scope``) is routed
among the documents that filter allows, so stage 2 gets the intersection; a scope of at most
N documents is therefore served exactly as without routing (the scope wins). When stage 1
returns no document, or one whose id a filter cannot express, the query is served unrouted.

``$route_docs`` is declared in :mod:`ragsweep.pipeline.routing_knobs` (Pathway-free: a spec reads it).
"""

from __future__ import annotations

from typing import Any

from ragsweep.core.offline import ensure_offline
from ragsweep.datasets.pathway_limits import unscopable_reason

ensure_offline()

import pathway as pw  # noqa: E402
from pathway.internals import dtype as dt  # noqa: E402
from pathway.xpacks.llm.splitters import BaseSplitter  # noqa: E402

from ragsweep.core.hits import split_header  # noqa: E402
from ragsweep.pipeline.chunking import header_of  # noqa: E402
from ragsweep.pipeline.served_lists import doc_filter  # noqa: E402
from ragsweep.pipeline.serving import DocumentStore  # noqa: E402


class DocumentRows(BaseSplitter):
    """One row per document for stage 1: its title (or file stem) and the first chunk the
    pipeline's ``splitter`` makes of it (that chunk's own header left out)."""

    takes_metadata = True  # serving.DocumentStore hands it (text, metadata)

    def __init__(self, splitter: Any):
        super().__init__()
        self.splitter = splitter

    def chunk(self, text: str, metadata: dict = {}, **kwargs: Any) -> list[tuple[str, dict]]:  # noqa: B006 - Pathway's signature
        pieces = self.splitter.chunk(text, metadata)
        if not pieces:
            return []
        first_text, first_meta = pieces[0]
        _, first = split_header(first_text, dict(first_meta))
        meta = {k: v for k, v in metadata.items() if k != "headings"}
        return [(header_of("title", metadata, 0) + first, {**meta, "start": 0, "end": len(first)})]


def routed_filter(ranked: pw.Json, own_filter: str | None) -> str | None:
    """Stage 2's filter: the documents stage 1 served (already inside ``own_filter``), or
    ``own_filter`` when it served none or one no filter can name."""
    doc_ids = [str(item["metadata"]["doc_id"]) for item in ranked.as_list()]
    if not doc_ids or any(unscopable_reason(d) is not None for d in doc_ids):
        return own_filter
    return doc_filter(doc_ids)


class RoutedDocumentStore(DocumentStore):
    """ragsweep's DocumentStore whose queries are answered inside the top ``route_docs``
    documents of a document-level store (this module's docstring)."""

    def __init__(self, docs: Any, retriever_factory: Any, *args: Any, route_docs: int, **kwargs: Any):
        splitter = kwargs.pop("splitter")
        super().__init__(docs, retriever_factory, *args, splitter=splitter, **kwargs)
        self.route_docs = int(route_docs)
        self.documents = DocumentStore(docs, retriever_factory, *args, splitter=DocumentRows(splitter), **kwargs)

    def retrieve_query(self, retrieval_queries: pw.Table) -> pw.Table:
        ranked = self.documents.retrieve_query(retrieval_queries.with_columns(k=self.route_docs))
        routed = retrieval_queries.with_columns(
            metadata_filter=pw.apply_with_type(
                routed_filter,
                dt.Optional(dt.STR),
                ranked.with_universe_of(retrieval_queries).result,
                retrieval_queries.metadata_filter,
            )
        )
        return super().retrieve_query(routed)


def serving_store(docs: pw.Table, pipeline: Any, parser: Any = None) -> DocumentStore:
    """The DocumentStore a pipeline (a ``BuiltPipeline``) serves over ``docs`` (parsed by ``parser``, else
    Pathway's default ``Utf8Parser``): routed when ``$route_docs`` is set."""
    if pipeline.route_docs is None:
        return DocumentStore(
            docs, retriever_factory=pipeline.retriever_factory, splitter=pipeline.splitter, parser=parser
        )
    return RoutedDocumentStore(
        docs, retriever_factory=pipeline.retriever_factory, splitter=pipeline.splitter, route_docs=pipeline.route_docs,
        parser=parser,
    )  # fmt: skip
