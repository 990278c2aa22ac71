"""Cases split into shards and the shards' answers put back together in the cases' order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ragsweep.pipeline.retrieval import Retrieved, Served

T = TypeVar("T")


def split(items: Sequence[T], n_shards: int) -> list[list[T]]:
    """``items`` in at most ``n_shards`` contiguous, near-equal shards (none empty)."""
    n = max(1, min(n_shards, len(items)))
    size, extra = divmod(len(items), n)
    shards, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        shards.append(list(items[start:end]))
        start = end
    return [s for s in shards if s]


def merge(case_ids: Sequence[str], parts: Sequence[Retrieved]) -> Retrieved:
    """One :class:`Retrieved` from its shards': lists in ``case_ids`` order; every shard indexed
    the same corpus, so the chunks are the first shard's; counts and times are summed."""
    served: Served = {}
    for part in parts:
        served.update(part.served)
    timings: dict[str, float] = {}
    for part in parts:
        for name, seconds in part.timings.items():
            timings[name] = timings.setdefault(name, 0.0) + seconds
    first = parts[0]
    return Retrieved(
        served={cid: served[cid] for cid in case_ids},
        chunks_by_doc=first.chunks_by_doc,
        timings=timings,
        seconds=sum(p.seconds for p in parts),
        embedded_texts=sum(p.embedded_texts for p in parts),
        n_chunks=first.n_chunks,
        queries=sum(p.queries for p in parts),
        from_cache=sum(p.from_cache for p in parts),
    )
