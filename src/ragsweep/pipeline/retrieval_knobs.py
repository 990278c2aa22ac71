"""The retrieval stage's knobs: the depth (``$top_k``), the retriever (``$retriever_mode``) and the hybrid's
fusion (``$rrf_k``, :mod:`ragsweep.pipeline.fusion`), Pathway-free."""

from __future__ import annotations

from typing import TypedDict

from pydantic import ValidationInfo

from ragsweep.core.knob import Knob

DEFAULT_TOP_K = 5


class KnobContext(TypedDict):
    """What :meth:`ragsweep.pipeline.config.PipelineConfig.validate` gives the knobs' checks: the variables of the file
    holding a retriever factory (what ``$retriever_mode`` may name)."""

    retriever_factories: list[str]


def _check_mode(value: str | None, info: ValidationInfo) -> str | None:
    if value is None or info.context is None:  # no context: not validate()'s, no file to look in
        return value
    context: KnobContext = info.context
    factories = context["retriever_factories"]
    if value not in factories:
        choices = ", ".join(sorted(factories)) or "none is defined"
        raise ValueError(f"must name a variable of the file holding a retriever factory ({choices}), or be null")
    return value


KNOBS = (
    Knob(
        name="top_k",
        kind="int",
        low=1,
        nullable=True,
        default=DEFAULT_TOP_K,
        message="must be an integer >= 1",
        affects="query",
        applied_by="ragsweep",
    ),
    # the top-k when $top_k is absent (an app's question answerer's own name for it)
    Knob(name="search_topk", kind="int", low=1, nullable=True, message="must be an integer >= 1", affects="query"),
    Knob(
        name="retriever_mode",
        kind="str",
        nullable=True,
        message="must name a variable of the file holding a retriever factory, or be null",
        affects="index",  # it picks the factory: a key over that factory's definition holds it
        check=_check_mode,
    ),
    Knob(
        name="rrf_k",
        kind="float",
        low=0,
        low_open=True,
        message="must be a number > 0",
        affects="query",
        off_when=("retriever_mode", ("bm25", "knn")),  # it weighs a fusion's parts
    ),
)
