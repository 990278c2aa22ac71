"""A hybrid index's lists at several depths from one ask of each of its sub-retrievers.

A case is scored at several depths (k = 1, 3, 5, 10): asked of a hybrid store, each depth is a query
of its own, because RRF over each sub-retriever's top k is not the prefix of RRF over a deeper top k.
But when each sub-retriever is exact (BM25, brute-force KNN: in the stable order its top k *is* the
prefix of any deeper answer), the hybrid's list at every depth follows from each sub-retriever's list
at the deepest one: :func:`fuse_served` applies ragsweep's fusion (:mod:`ragsweep.pipeline.fusion`)
to their first k items. So :class:`ragsweep.pipeline.store.RagStore` asks one store per sub-retriever
(ragsweep's ``DocumentStore``, as the hybrid's store builds each: same chunks, same stable order,
the question as each sub-retriever gets it, cleaned for Tantivy on the BM25 side only) once per
question and scope, at its
deepest k, instead of the hybrid once per depth: a quarter of the queries for four depths, and the
lists the hybrid serves (tests/test_fused_depths.py compares them item for item).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from ragsweep.core.offline import ensure_offline

ensure_offline()

from pathway.stdlib.indexing.hybrid_index import HybridIndexFactory as _PathwayHybridFactory  # noqa: E402

from ragsweep.pipeline.serving import bm25_queries_cleaned  # noqa: E402
from ragsweep.pipeline.stable_order import TieKey, exact_index, stable_factory, tie_key  # noqa: E402


def exact_parts(factory: Any) -> tuple[list[Any], float] | None:
    """A hybrid factory's sub-retriever factories (each asking its own query, as inside the hybrid:
    :func:`ragsweep.pipeline.serving.bm25_queries_cleaned`) and RRF constant when every sub-retriever
    is exact; None for any other factory (then each depth is asked of the store itself)."""
    if not isinstance(factory, _PathwayHybridFactory):
        return None
    parts = [bm25_queries_cleaned(part) for part in factory.retriever_factories]
    if not parts or not all(exact_index(stable_factory(part)) for part in parts):
        return None
    return parts, factory.k


def fused_order(
    lists: Sequence[Sequence[tuple[Hashable, TieKey]]], rrf_k: float, depth: int
) -> list[tuple[Any, float, TieKey]]:
    """RRF at ``depth`` over sub-retriever lists of ``(item, tie key)`` in served order, as
    ragsweep's fusion (:mod:`ragsweep.pipeline.fusion`) makes it: the first ``depth`` ranks of each,
    the terms ``1 / (k + rank)`` summed by ``math.fsum``, the order (-score, best rank x retrievers +
    retriever index) and cut; then ``(item, score, tie key)`` in the store's order (distance =
    -score, then the tie key)."""
    terms: dict[Hashable, list[float]] = {}
    ties: dict[Hashable, int] = {}
    keys: dict[Hashable, TieKey] = {}
    for index, served in enumerate(lists):
        for rank, (item, key) in enumerate(served[:depth], start=1):
            terms.setdefault(item, []).append(1 / (rrf_k + rank))
            ties[item] = min(ties.get(item, rank * len(lists) + index), rank * len(lists) + index)
            keys[item] = key
    scores = {item: math.fsum(values) for item, values in terms.items()}
    kept = sorted(scores, key=lambda item: (-scores[item], ties[item]))[:depth]
    return sorted(((item, scores[item], keys[item]) for item in kept), key=lambda m: (-m[1], m[2]))


def fuse_served(lists: Sequence[Sequence[Mapping[str, Any]]], rrf_k: float, depth: int) -> list[dict[str, Any]]:
    """What :class:`HybridIndex` serves at ``depth`` through ragsweep's ``DocumentStore``, from what
    each sub-retriever's own store served at a depth >= ``depth`` (items ``{text, metadata, dist}`` in
    served order): :func:`fused_order` over them, the items served with distance = -score. Exact when
    each sub-retriever's list is the prefix of its deeper one (BM25 and brute-force KNN in the stable
    order: :func:`ragsweep.pipeline.stable_order.exact_index`). tests/test_fused_depths.py compares it
    with the hybrid asked at each depth."""
    items: dict[tuple[TieKey, str], Mapping[str, Any]] = {}
    keyed: list[list[tuple[Hashable, TieKey]]] = []
    for served in lists:
        keyed.append([])
        for item in served:
            tie = tie_key(str(item["text"]), item["metadata"])
            items[(tie, str(item["text"]))] = item
            keyed[-1].append(((tie, str(item["text"])), tie))
    return [{**items[key], "dist": -score} for key, score, _ in fused_order(keyed, rrf_k, depth)]
