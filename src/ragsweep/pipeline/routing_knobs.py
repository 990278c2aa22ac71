"""The routing stage's knob (:mod:`ragsweep.pipeline.routing`), Pathway-free."""

from __future__ import annotations

from ragsweep.core.knob import Knob

KNOBS = (
    # documents ranked first, chunks then retrieved inside the top N: the store ragsweep builds (an index)
    Knob(
        name="route_docs",
        kind="int",
        low=1,
        nullable=True,
        message="must be an integer >= 1 (chunks are retrieved inside the top N documents), or null",
        affects="index",
        applied_by="ragsweep",
    ),
)
