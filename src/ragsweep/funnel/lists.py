"""The lists the funnel's later stages read that the served lists do not hold: each case's list
before the reranker."""

from __future__ import annotations

from ragsweep.core.hits import Hit
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.retrieval import Retrieved


def pre_rerank_lists(config: PipelineConfig, retrieved: Retrieved | None) -> dict[str, list[Hit]] | None:
    """Each case's list as the store served it to the reranker (its ``$rerank_candidates``); None
    without a reranker, or when the store's lists are not at hand (the served hits'
    ``retrieval_rank`` then stands in)."""
    if config.variables.reranker is None or retrieved is None:
        return None
    # deferred: rerank imports pathway (~1 s); a configuration without a reranker does not need it
    from ragsweep.pipeline.rerank import rerank_candidates

    depth = rerank_candidates(config)
    if depth is None:
        return None
    return {case: by_k[depth] for case, by_k in retrieved.served.items() if depth in by_k}
