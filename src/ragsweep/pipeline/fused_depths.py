"""A hybrid index's lists at several depths from one ask of each of its sub-retrievers.

A case is scored at several depths (k = 1, 3, 5, 10): asked of a hybrid store, each depth is a query
of its own, because RRF over each sub-retriever's top k is not the prefix of RRF over a deeper top k.
But when each sub-retriever is exact (BM25, brute-force KNN: in the stable order its top k *is* the
prefix of any deeper answer), the hybrid's list at every depth follows from each sub-retriever's list
at the deepest one: :func:`fuse_served` applies ragsweep's fusion (:mod:`ragsweep.pipeline.fusion`)
to their first k items. So :class:`ragsweep.pipeline.store.RagStore` asks one store per sub-retriever
(ragsweep's ``DocumentStore``, as the hybrid's store builds each: same chunks, same stable order,
the question made safe for Tantivy when the hybrid uses it) once per question and scope, at its
deepest k, instead of the hybrid once per depth: a quarter of the queries for four depths, and the
lists the hybrid serves (tests/test_fused_depths.py compares them item for item).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ragsweep.core.offline import ensure_offline

ensure_offline()

from pathway.stdlib.indexing.hybrid_index import HybridIndexFactory as _PathwayHybridFactory  # noqa: E402

from ragsweep.pipeline.stable_order import exact_index, stable_factory, tie_key  # noqa: E402


def exact_parts(factory: Any) -> tuple[list[Any], float] | None:
    """A hybrid factory's sub-retriever factories and RRF constant when every sub-retriever is exact;
    None for any other factory (then each depth is asked of the store itself)."""
    if not isinstance(factory, _PathwayHybridFactory):
        return None
    parts = list(factory.retriever_factories)
    if not parts or not all(exact_index(stable_factory(part)) for part in parts):
        return None
    return parts, factory.k


FusedKey = tuple[tuple[str, int, str], str]  # a chunk: its tie key and its text


def fuse_served(lists: Sequence[Sequence[Mapping[str, Any]]], rrf_k: float, depth: int) -> list[dict[str, Any]]:
    """What :class:`HybridIndex` serves at ``depth`` through ragsweep's ``DocumentStore``, from what
    each sub-retriever's own store served at a depth >= ``depth`` (items ``{text, metadata, dist}`` in
    served order). Exact when each sub-retriever's list is the prefix of its deeper one (BM25 and
    brute-force KNN in the stable order: :func:`ragsweep.pipeline.stable_order.exact_index`): the same
    first ``depth`` ranks, the same RRF terms ``1 / (k + rank)`` summed by ``math.fsum``, the same
    order (-score, best rank x retrievers + retriever index) and cut, then the store's own order
    (distance, tie key) with distance = -score. tests/test_fused_depths.py compares it with the
    hybrid asked at each depth."""
    terms: dict[FusedKey, list[float]] = {}
    ties: dict[FusedKey, int] = {}
    items: dict[FusedKey, Mapping[str, Any]] = {}
    for index, served in enumerate(lists):
        for rank, item in enumerate(served[:depth], start=1):
            key = (tie_key(str(item["text"]), item["metadata"]), str(item["text"]))
            terms.setdefault(key, []).append(1 / (rrf_k + rank))
            ties[key] = min(ties.get(key, rank * len(lists) + index), rank * len(lists) + index)
            items[key] = item
    scores = {key: math.fsum(values) for key, values in terms.items()}
    kept = sorted(scores, key=lambda key: (-scores[key], ties[key]))[:depth]
    fused = [{**items[key], "dist": -scores[key]} for key in kept]
    return sorted(fused, key=lambda item: (float(item["dist"]), tie_key(str(item["text"]), item["metadata"])))
