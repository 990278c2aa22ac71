"""The errors that end a command with a message (no traceback), raised at every layer."""

from __future__ import annotations


class ConfigError(Exception):
    """A pipeline configuration ragsweep cannot run: a bad knob, a parser that cannot be built."""


class RunError(Exception):
    """A run cannot start or go on: bad inputs, a run folder in the way, a write that failed."""


class StageError(Exception):
    """A stage cannot go on (e.g. no document could be parsed)."""


class VectorError(StageError):
    """An embedder's vectors cannot go into the index: NaN, infinite, all-zero, empty, or not its width."""


class EngineError(StageError):
    """Pathway's engine reported an error while indexing or answering; the message names the component."""
