"""The reranking stage's knobs (:mod:`ragsweep.pipeline.rerank`), Pathway-free."""

from __future__ import annotations

from pydantic import ValidationInfo

from ragsweep.core.knob import Knob


def _earlier(info: ValidationInfo, name: str) -> object:
    """A knob checked before this one (declared earlier); None when absent or invalid."""
    return info.data[name] if name in info.data else None


def _check_candidates(value: int | None, info: ValidationInfo) -> int | None:
    """Read after ``$reranker``, ``$top_k`` and ``$search_topk`` (declared before it)."""
    if value is None:
        if _earlier(info, "reranker") is not None:
            raise ValueError(
                "must be set when $reranker is set: the number of chunks retrieved and reranked, an integer >= $top_k"
            )
        return value
    top_k = _earlier(info, "top_k") or _earlier(info, "search_topk")
    if isinstance(top_k, int) and value < top_k:
        raise ValueError(
            f"must be >= $top_k = {top_k}: the reranker keeps the best $top_k of the $rerank_candidates chunks retrieved"
        )
    return value


KNOBS = (
    Knob(
        name="reranker",
        kind="str",
        choices=("encoder", "cross_encoder", "llm"),
        nullable=True,
        message="must be null, 'encoder', 'cross_encoder' or 'llm'",
        affects="query",
        applied_by="ragsweep",
    ),
    Knob(
        name="reranker_model",
        kind="str",
        min_length=1,
        nullable=True,
        message="must be a non-empty string (a model name or a local model folder), or null",
        affects="query",
        applied_by="ragsweep",
        off_when=("reranker", (None,)),
    ),
    Knob(
        name="rerank_candidates",
        kind="int",
        low=1,
        nullable=True,
        message="must be an integer >= $top_k, or null (required when $reranker is set)",
        affects="query",
        applied_by="ragsweep",
        checked_when_absent=True,  # $reranker needs it
        check=_check_candidates,
        off_when=("reranker", (None,)),
    ),
)
