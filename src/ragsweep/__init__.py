"""ragsweep: an in-process Pathway RAG pipeline and its evaluator.

``ragsweep.evaluate(pipeline, dataset) -> Report``, ``ragsweep.sweep(...)``, ``ragsweep.tune(...)``,
``ragsweep.watch(pipeline, dataset, max_updates=...)``, ``ragsweep.compare(a, b)``, ``ragsweep.RagStore``; for pytest,
``from ragsweep.testing import assert_quality``. Imported lazily: ``import ragsweep``
is cheap until one of them is used.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "evaluate": "ragsweep.api",
    "sweep": "ragsweep.api",
    "compare": "ragsweep.api",
    "watch": "ragsweep.api",
    "tune": "ragsweep.api",
    "Report": "ragsweep.api",
    "CaseResult": "ragsweep.evaluation.records",
    "Case": "ragsweep.datasets.schema",
    "PipelineConfig": "ragsweep.pipeline.config",
    "RagStore": "ragsweep.pipeline.store",
}

__all__ = [
    "Case",
    "CaseResult",
    "PipelineConfig",
    "RagStore",
    "Report",
    "compare",
    "evaluate",
    "sweep",
    "tune",
    "watch",
]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ragsweep' has no attribute {name!r}")
