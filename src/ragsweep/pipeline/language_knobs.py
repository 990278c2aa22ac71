"""The corpus language's knob: the BM25 index's segmentation (:mod:`ragsweep.pipeline.cjk`) and the answer
metrics' tokens (:mod:`ragsweep.pipeline.language` warns when a corpus needs it), Pathway-free."""

from __future__ import annotations

from ragsweep.core.knob import Knob

KNOBS = (
    Knob(
        name="language",
        kind="str",
        choices=("en", "zh"),
        nullable=True,
        default="en",
        message="must be en or zh (zh: rjieba word segmentation for BM25 and token-level answer metrics), or null",
        affects="index",
    ),
)
