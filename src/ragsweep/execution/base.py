"""The seam between the evaluation loop and where its index work runs.

The parse hands each document the parse cache lacks to an :class:`Executor`'s ``dispatch``; the loop
(:mod:`ragsweep.evaluation.loop`) and the sweep ask it for what the store serves (a sweep submits every
index group first, then gathers them in order). Answering, scoring and every file of the run folder stay
in the driver. The executors a run can name are in :mod:`ragsweep.execution.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragsweep.datasets.schema import Case
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus, Dispatch
from ragsweep.pipeline.retrieval import Retrieved


class ExecutorError(Exception):
    """An executor that cannot be opened or whose work failed; the message names the option at fault."""


@dataclass(frozen=True)
class IndexWork:
    """One index group's store work: every case of ``cases`` asked at each depth of ``ks`` of the store
    ``config`` builds over ``corpus`` (``fresh``: past the served-list cache)."""

    config: PipelineConfig
    corpus: Corpus
    cases: Sequence[Case]
    ks: Sequence[int]
    progress: bool = False
    fresh: bool = False


class Executor:
    """Where a run's index work runs. A subclass defines ``submit``; ``retrieve`` is its result."""

    name: str
    dispatch: Dispatch | None = None  # where each document the parse cache lacks is parsed (None: here)

    def submit(self, work: IndexWork) -> Callable[[], Retrieved]:
        """What the store serves each case at each of ``ks``, started now (Ray) or when the call
        returned is made (local); the call gives it, in the cases' order."""
        raise NotImplementedError

    def retrieve(self, work: IndexWork) -> Retrieved:
        return self.submit(work)()

    def describe(self) -> dict[str, Any]:
        """Where the run's index work ran (its manifest's ``executor``)."""
        return {"name": self.name}
