"""The seam between the evaluation loop and where its index work runs.

The parse hands each document the parse cache lacks to an :class:`Executor`'s ``dispatch``; the loop
(:mod:`ragsweep.evaluation.loop`) and the sweep ask it for what the store serves (a sweep submits every
index group first, then gathers them in order). Answering, scoring and every file of the run folder stay
in the driver. The executors a run can name are in :mod:`ragsweep.execution.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Required, TypedDict

from ragsweep.core.errors import ConfigError, StageError
from ragsweep.datasets.schema import Case
from ragsweep.pipeline.app_components import AppComponentError
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus, Dispatch
from ragsweep.pipeline.retrieval import Retrieved
from ragsweep.pipeline.scalars import Overrides

# what fails one configuration (or one index group's), wherever it ran, and names its cause in one line: an
# engine error, broken vectors, an app component that could not do its work, a configuration that cannot be built
CONFIG_FAILURES = (StageError, AppComponentError, ConfigError)


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


@dataclass(frozen=True)
class ConfigRef:
    """A configuration as a worker loads it: its file (absolute) and overrides. The loaded
    components cannot be pickled; the hash checks that the worker read the driver's file."""

    path: str
    overrides: Overrides
    hash: str

    @classmethod
    def of(cls, config: PipelineConfig) -> ConfigRef:
        return cls(str(Path(config.path).resolve()), dict(config.overrides), config.hash)

    def load(self) -> PipelineConfig:
        config = PipelineConfig.load(self.path, self.overrides)
        if config.hash != self.hash:
            raise RuntimeError(
                f"{self.path} on this node is not the driver's (config hash {config.hash} != {self.hash})"
            )
        return config


class ParseTaskInfo(TypedDict):
    """What a parse task says of itself: the worker's pid and the seconds the parse took."""

    pid: int
    seconds: float


class EmbedTaskInfo(TypedDict):
    """An embed task: its texts, seconds, whether it was its process's first (``load``: the seconds
    the pipeline and the model took to load)."""

    pid: int
    texts: int
    seconds: float
    first: bool
    load: float


class RetrieveTaskInfo(TypedDict):
    """A retrieve task: its shard's cases, its seconds and the store's split and embed seconds."""

    pid: int
    cases: int
    seconds: float
    split: float
    embed: float


class ParseTask(ParseTaskInfo):
    stage: Literal["parse"]
    doc_id: str


class EmbedTask(EmbedTaskInfo):
    stage: Literal["embed"]


class RetrieveTask(RetrieveTaskInfo):
    stage: Literal["retrieve"]


# one task an executor ran, as its manifest lists it (``stage`` first, then the task's own fields)
TaskRecord = ParseTask | EmbedTask | RetrieveTask


class ExecutorInfo(TypedDict, total=False):
    """Where a run's index work ran (its manifest's ``executor``), in this key order."""

    name: Required[str]
    resources: dict[str, float]  # the cluster's CPUs, GPUs, memory...
    tasks: list[TaskRecord]


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

    def describe(self) -> ExecutorInfo:
        """Where the run's index work ran (its manifest's ``executor``)."""
        return {"name": self.name}
