"""How every report reads a number: a metric value as a float or None, and a result's mean of a
metric. Light on purpose (no models built at import): the terminal tables, which ``ragsweep --help``
imports, read numbers as report.html and MLflow do."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragsweep.evaluation.records import Aggregate


def num(value: object) -> float | None:
    """A metric value as float, or None for missing / NaN / non-numeric."""
    if value is None or isinstance(value, str):
        return None
    try:
        v = float(value)  # type: ignore[arg-type]  # anything float() takes; the rest is None
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def mean_of(result: Aggregate, metric: str) -> float | None:
    """A result's mean of ``metric`` as the reports show it (None when missing or NaN)."""
    return num(result.metric(metric))
