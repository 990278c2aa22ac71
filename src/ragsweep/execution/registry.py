"""The executors a run can name (``--executor``): a name -> factory table that each executor's own
module fills with :func:`register_executor` when it is imported (the built-in ones: see the package).

A factory takes the run's :class:`ExecutorSettings` and returns a context manager giving the
:class:`~ragsweep.execution.base.Executor`; what it opened (a cluster connection) is released when the
run ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from ragsweep.execution.base import Executor, ExecutorError


class ExecutorSettings(BaseModel):
    """Where a run's index work runs: the executor's name and its own settings (None: not given).
    A setting is given on the command line as ``--<field-name>``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "local"
    ray_address: str | None = None


ExecutorFactory = Callable[[ExecutorSettings], AbstractContextManager[Executor]]


@dataclass(frozen=True)
class RegisteredExecutor:
    factory: ExecutorFactory
    settings: frozenset[str]  # the fields of ExecutorSettings it reads; any other given is refused


EXECUTORS: dict[str, RegisteredExecutor] = {}  # by name, in the order they were registered


def register_executor(name: str, factory: ExecutorFactory, settings: tuple[str, ...] = ()) -> None:
    """``--executor name`` opens ``factory(settings)``; ``settings``: the fields of
    :class:`ExecutorSettings` besides ``name`` that it reads."""
    unknown = set(settings) - set(ExecutorSettings.model_fields) | ({"name"} & set(settings))
    if unknown:
        raise ValueError(f"executor {name}: not an executor setting: {', '.join(sorted(unknown))}")
    EXECUTORS[name] = RegisteredExecutor(factory, frozenset(settings))


def check_executor(settings: ExecutorSettings) -> None:
    """An unknown executor, or a setting its executor does not read, is an error before any work."""
    entry = EXECUTORS.get(settings.name)
    if entry is None:
        raise ExecutorError(f"--executor {settings.name}: no such executor (one of: {', '.join(EXECUTORS)})")
    for field, value in settings:
        if field != "name" and value is not None and field not in entry.settings:
            readers = " or ".join(f"--executor {n}" for n, e in EXECUTORS.items() if field in e.settings)
            raise ExecutorError(f"--{field.replace('_', '-')}: only with {readers}")


@contextmanager
def open_executor(settings: ExecutorSettings | None = None) -> Iterator[Executor]:
    """The executor a run asked for (default: local), released when the run ends."""
    settings = settings or ExecutorSettings()
    check_executor(settings)
    with EXECUTORS[settings.name].factory(settings) as executor:
        yield executor
