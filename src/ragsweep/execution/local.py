"""The local executor: a run's index work in this process, one index group at a time (a run without
``--executor``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from ragsweep.datasets.schema import Case
from ragsweep.execution.base import Executor
from ragsweep.execution.registry import ExecutorSettings, register_executor
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus
from ragsweep.pipeline.retrieval import Retrieved, retrieve


class LocalExecutor(Executor):
    """Everything in this process."""

    name = "local"

    def submit(
        self,
        config: PipelineConfig,
        corpus: Corpus,
        cases: Sequence[Case],
        ks: Iterable[int],
        progress: bool,
        fresh: bool,
    ) -> Callable[[], Retrieved]:
        return lambda: retrieve(config, corpus, cases, ks, progress, fresh=fresh)  # one group at a time, in order


LOCAL = LocalExecutor()


@contextmanager
def open_local(settings: ExecutorSettings) -> Iterator[Executor]:
    yield LOCAL


register_executor("local", open_local)
