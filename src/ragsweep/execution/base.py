"""The seam between the evaluation loop and where its index work runs.

The parse hands each document the parse cache lacks to an :class:`Executor`'s ``dispatch``; the loop
(:mod:`ragsweep.evaluation.loop`) and the sweep ask it for what the store serves (a sweep submits every
index group first, then gathers them in order). Answering, scoring and every file of the run folder stay
in the driver. The local executor is the code path of a run without ``--executor``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, Protocol

from ragsweep.datasets.schema import Case
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus, Dispatch
from ragsweep.pipeline.retrieval import Retrieved, retrieve

ExecutorName = Literal["local", "ray"]
EXECUTORS = ("local", "ray")


class Executor(Protocol):
    name: str

    @property
    def dispatch(self) -> Dispatch | None: ...  # where each document the parse cache lacks is parsed (None: here)

    def retrieve(
        self,
        config: PipelineConfig,
        corpus: Corpus,
        cases: Sequence[Case],
        ks: Iterable[int],
        progress: bool,
        fresh: bool,
    ) -> Retrieved: ...  # what the store serves each case at each of ``ks``, in the cases' order

    def submit(
        self,
        config: PipelineConfig,
        corpus: Corpus,
        cases: Sequence[Case],
        ks: Iterable[int],
        progress: bool,
        fresh: bool,
    ) -> Callable[[], Retrieved]: ...  # retrieve, started now (Ray) or when called (local); the call gives it

    def describe(self) -> dict[str, Any]: ...  # where the run's index work ran (its manifest's "executor")


class LocalExecutor:
    """Everything in this process."""

    name = "local"
    dispatch: Dispatch | None = None

    def retrieve(
        self,
        config: PipelineConfig,
        corpus: Corpus,
        cases: Sequence[Case],
        ks: Iterable[int],
        progress: bool,
        fresh: bool,
    ) -> Retrieved:
        return retrieve(config, corpus, cases, ks, progress, fresh=fresh)

    def submit(
        self,
        config: PipelineConfig,
        corpus: Corpus,
        cases: Sequence[Case],
        ks: Iterable[int],
        progress: bool,
        fresh: bool,
    ) -> Callable[[], Retrieved]:
        return lambda: self.retrieve(config, corpus, cases, ks, progress, fresh)  # one group at a time, in order

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


LOCAL = LocalExecutor()


def check_executor(name: str, address: str | None) -> None:
    """Options that cannot go together are an error before any work."""
    if name != "ray" and address is not None:
        from ragsweep.evaluation.runfolder import RunError

        raise RunError("--ray-address: only with --executor ray")


@contextmanager
def open_executor(name: str = "local", address: str | None = None) -> Iterator[Executor]:
    """The executor a run asked for, released when the run ends (a Ray connection this run opened is closed)."""
    check_executor(name, address)
    if name == "local":
        yield LOCAL
        return
    from ragsweep.execution.ray_executor import RayExecutor

    executor = RayExecutor.connect(address)
    try:
        yield executor
    finally:
        executor.close()
