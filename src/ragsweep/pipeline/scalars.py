"""The values of a pipeline's plain ``$variables``: what ``--set`` and a sweep's grid may replace.

Their own module so that :mod:`ragsweep.pipeline.parsing` (which carries a configuration's overrides to
the processes that build its parser) and :mod:`ragsweep.pipeline.config` share them without importing
each other.
"""

from __future__ import annotations

from typing import TypeAlias

# a plain ``$variable``: what ``--set NAME=VALUE`` may replace
Scalar: TypeAlias = str | int | float | bool | None
# ``--set`` values, a sweep's parameters: each replaces a plain ``$variable``
Overrides: TypeAlias = dict[str, Scalar]
