"""The warnings a ragsweep user did not cause and cannot act on, silenced by category and module.

Pathway's own classes still use Pydantic's class-based ``config``: every process that imports its
LLM xpack gets a ``PydanticDeprecatedSince20`` pointing into Pathway. Only that pair (Pydantic's
deprecation warnings, raised from Pathway's modules) is silenced; every other warning is shown.
"""

from __future__ import annotations

import warnings

# (the warning's category by its import path, the regular expression of the modules it comes from)
DEPENDENCY_WARNINGS = (("pydantic.warnings.PydanticDeprecationWarning", r"pathway(\.|$)"),)


def silence_dependency_warnings() -> None:
    """Ignore :data:`DEPENDENCY_WARNINGS` in this process (the ``ragsweep`` command's)."""
    from pydantic.warnings import PydanticDeprecationWarning

    for _, module in DEPENDENCY_WARNINGS:
        warnings.filterwarnings("ignore", category=PydanticDeprecationWarning, module=module)


def filterwarnings_lines() -> list[str]:
    """:data:`DEPENDENCY_WARNINGS` as pytest ``filterwarnings`` lines (pytest resets Python's
    filters around every test, then applies these)."""
    return [f"ignore::{category}:{module}" for category, module in DEPENDENCY_WARNINGS]
