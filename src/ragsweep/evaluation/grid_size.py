"""How big a sweep grid is, counted before it is expanded: its configurations, an estimate of its index groups
(one Pathway index, and run, each) and of its time; a grid over the limits runs only when the user says yes.

The count is the product of the axes' lengths (nothing built). The index groups are estimated per axis: an
axis whose values all give the base pipeline one index (``top_k``, a prompt, a model that only answers) does
not multiply them; any other axis multiplies them by its number of distinct indexes (an upper bound: two axes
may together give one index).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.scalars import Overrides, Scalar

# over either, a sweep asks for --yes (``yes=True`` in the Python API)
MAX_CONFIGURATIONS = 1000
MAX_INDEX_GROUPS = 100
# a floor per index group (a Pathway run over a 3-document corpus, 20 questions: 0.7 to 20 s measured) and per
# configuration (scoring its cases: 0.25 to 2 s there); a larger corpus or more cases take longer
SECONDS_PER_GROUP = 0.7
SECONDS_PER_CONFIGURATION = 0.25
# an axis longer than this is not built value by value: each value is counted as its own index
AXIS_BUILD_LIMIT = 64

AxisValues = Sequence[Scalar | Mapping[str, Scalar]]


class GridSize(BaseModel):
    """A grid's configurations, its estimated index groups and time."""

    configurations: int
    index_groups: int
    seconds: float

    def line(self) -> str:
        return (
            f"{self.configurations:,} configurations, about {self.index_groups:,} index groups "
            f"(one Pathway run each), at least ~{_duration(self.seconds)}"
        )

    def over_limit(self) -> str | None:
        """Why the grid needs a yes, or None."""
        if self.configurations > MAX_CONFIGURATIONS:
            return f"over the limit of {MAX_CONFIGURATIONS:,} configurations"
        if self.index_groups > MAX_INDEX_GROUPS:
            return f"over the limit of {MAX_INDEX_GROUPS:,} index groups"
        return None


def grid_size(axes: Mapping[str, AxisValues], base_config: PipelineConfig) -> GridSize:
    """The grid's size from its axes alone (never the product of them)."""
    configurations = math.prod(len(values) for values in axes.values())
    groups = min(configurations, math.prod(_indexes_on(name, values, base_config) for name, values in axes.items()))
    seconds = groups * SECONDS_PER_GROUP + configurations * SECONDS_PER_CONFIGURATION
    return GridSize(configurations=configurations, index_groups=groups, seconds=seconds)


def _indexes_on(name: str, values: AxisValues, base_config: PipelineConfig) -> int:
    """How many distinct indexes one axis gives the base pipeline (each value set alone)."""
    if len(values) > AXIS_BUILD_LIMIT:
        return len(values)
    keys = set()
    for value in values:
        params: Overrides = dict(value) if isinstance(value, Mapping) else {name: value}
        try:
            keys.add(base_config.with_overrides(params).index_key)
        except ConfigError:  # valid only with another axis's value: counted as its own index
            keys.add(f"unbuilt:{len(keys)}")
    return max(1, len(keys))


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"
