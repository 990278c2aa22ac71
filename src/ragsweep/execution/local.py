"""The local executor: a run's index work in this process, one index group at a time (a run without
``--executor``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ragsweep.execution.base import Executor, IndexWork
from ragsweep.execution.registry import ExecutorSettings, register_executor
from ragsweep.pipeline.retrieval import Retrieved, retrieve


class LocalExecutor(Executor):
    """Everything in this process."""

    name = "local"

    def submit(self, work: IndexWork) -> Callable[[], Retrieved]:
        w = work  # one group at a time, in order
        return lambda: retrieve(w.config, w.corpus, w.cases, w.ks, w.progress, fresh=w.fresh)


LOCAL = LocalExecutor()


@contextmanager
def open_local(settings: ExecutorSettings) -> Iterator[Executor]:
    yield LOCAL


register_executor("local", open_local)
