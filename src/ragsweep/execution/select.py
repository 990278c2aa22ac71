"""The executor a run's options name: checked before any work, opened for the run, closed after it.

Apart from :mod:`ragsweep.execution.base` so that the executors (which subclass its
:class:`~ragsweep.execution.base.Executor`) and the choice among them do not import each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ragsweep.core.errors import RunError
from ragsweep.execution.base import LOCAL, Executor
from ragsweep.execution.ray_executor import RayExecutor


def check_executor(name: str, address: str | None) -> None:
    """Options that cannot go together are an error before any work."""
    if name != "ray" and address is not None:
        raise RunError("--ray-address: only with --executor ray")


@contextmanager
def open_executor(name: str = "local", address: str | None = None) -> Iterator[Executor]:
    """The executor a run asked for, released when the run ends (a Ray connection this run opened is closed)."""
    check_executor(name, address)
    if name == "local":
        yield LOCAL
        return
    executor = RayExecutor.connect(address)
    try:
        yield executor
    finally:
        executor.close()
