"""The seam between the evaluation loop and where its index work runs.

The parse hands each document the parse cache lacks to an :class:`Executor`'s ``dispatch``; the loop
(:mod:`ragsweep.evaluation.loop`) and the sweep ask it for what the store serves (a sweep submits every
index group first, then gathers them in order). Answering, scoring and every file of the run folder stay
in the driver. The local executor is the code path of a run without ``--executor``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from ragsweep.datasets.schema import Case
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus, Dispatch
from ragsweep.pipeline.retrieval import Retrieved, retrieve

ExecutorName = Literal["local", "ray"]
EXECUTORS = ("local", "ray")


class Executor:
    """Where a run's index work runs. A subclass defines ``submit``; ``retrieve`` is its result."""

    name: str
    dispatch: Dispatch | None = None  # where each document the parse cache lacks is parsed (None: here)

    def submit(
        self,
        config: PipelineConfig,
        corpus: Corpus,
        cases: Sequence[Case],
        ks: Iterable[int],
        progress: bool,
        fresh: bool,
    ) -> Callable[[], Retrieved]:
        """What the store serves each case at each of ``ks``, started now (Ray) or when the call
        returned is made (local); the call gives it, in the cases' order."""
        raise NotImplementedError

    def retrieve(
        self,
        config: PipelineConfig,
        corpus: Corpus,
        cases: Sequence[Case],
        ks: Iterable[int],
        progress: bool,
        fresh: bool,
    ) -> Retrieved:
        return self.submit(config, corpus, cases, ks, progress, fresh)()

    def describe(self) -> dict[str, Any]:
        """Where the run's index work ran (its manifest's ``executor``)."""
        return {"name": self.name}


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
