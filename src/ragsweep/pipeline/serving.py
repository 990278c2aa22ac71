"""The DocumentStore ragsweep evaluates is the one it serves.

:class:`DocumentStore` is Pathway's ``DocumentStore`` with one change: when the
index has a Tantivy BM25 retriever, each question first goes through
:func:`ragsweep.datasets.pathway_limits.tantivy_safe`, because one question holding
Tantivy query syntax ends the whole ``pw.run`` (a server process dies with
``EngineError: Syntax Error``). Questions without such characters reach Pathway
unchanged, so for them a stock ``DocumentStoreServer`` serves exactly the same lists.

The in-process store (:mod:`ragsweep.pipeline.store`) builds this class, and
:func:`build_server` serves it over REST with Pathway's own ``DocumentStoreServer``:
``/v1/retrieve`` answers what ``ragsweep eval`` scored (tests/test_server_parity.py).
"""

from __future__ import annotations

from typing import Any

from ragsweep.datasets.pathway_limits import tantivy_safe
from ragsweep.pipeline.offline import ensure_offline

ensure_offline()

import pathway as pw  # noqa: E402
from pathway.stdlib.indexing import TantivyBM25Factory  # noqa: E402
from pathway.xpacks.llm import document_store as _pathway_store  # noqa: E402


def uses_tantivy(factory: Any) -> bool:
    """Does this retriever factory (or one it fuses) query Tantivy?"""
    if isinstance(factory, TantivyBM25Factory):
        return True
    return any(uses_tantivy(f) for f in getattr(factory, "retriever_factories", None) or [])


class DocumentStore(_pathway_store.DocumentStore):
    """Pathway's DocumentStore; questions made safe for Tantivy's query parser when it is used."""

    def retrieve_query(self, retrieval_queries: pw.Table) -> pw.Table:
        if uses_tantivy(self.retriever_factory):
            retrieval_queries = retrieval_queries.with_columns(
                query=pw.apply_with_type(safe_question, str, pw.this.query)
            )
        return super().retrieve_query(retrieval_queries)


def safe_question(text: str) -> str:
    """What reaches Tantivy: the question itself when it parses, else with the syntax
    characters replaced by spaces (``"document"`` when nothing is left)."""
    return tantivy_safe(text) or "document"


def build_server(host: str, port: int, store: DocumentStore, **kwargs: Any):
    """Pathway's ``DocumentStoreServer`` over ragsweep's DocumentStore (``server.run()`` serves)."""
    from pathway.xpacks.llm.servers import DocumentStoreServer

    return DocumentStoreServer(host, int(port), store, **kwargs)
