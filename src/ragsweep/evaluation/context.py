"""One run's context, opened once by eval and sweep alike: its typed state (the folder's state file),
its run folder (or none), and the executor its index work runs on.

>>> with open_run(state, Where(out=Path("runs"), default_name="x"), open_executor()) as run:
...     result = evaluate(config, dataset, cases, settings, run)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel

from ragsweep.datasets.schema import Case, UnlocatedMode
from ragsweep.evaluation.loop import scored_ks
from ragsweep.evaluation.runfolder import LAYOUT_VERSION, SWEEP_LAYOUT_VERSION, FolderState, RunFolder, now
from ragsweep.evaluation.settings import RunSettings, SweepSettings
from ragsweep.execution.base import Executor
from ragsweep.pipeline.config import PipelineConfig


class RunState(FolderState):
    """An eval run folder's ``state.json``: what the run is; a resume must match on :attr:`RESUME_KEYS`."""

    MARKER: ClassVar[str] = "state.json"
    RESUME_KEYS: ClassVar[tuple[str, ...]] = (
        "config_hash", "dataset_hash", "split", "limit", "sample", "seed", "ks", "budgets", "use_llm", "unlocated",
    )  # fmt: skip

    layout: int = LAYOUT_VERSION
    config_hash: str
    dataset: str
    dataset_hash: str
    split: str | None
    limit: int | None
    sample: int | None
    seed: int
    ks: list[int]
    budgets: list[int] | None  # None: a folder from before budgets resumes as it was
    use_llm: bool
    unlocated: UnlocatedMode
    case_ids: list[str]
    started_at: str | None = None


class SweepState(FolderState):
    """A sweep folder's ``sweep-state.json``."""

    MARKER: ClassVar[str] = "sweep-state.json"
    RESUME_KEYS: ClassVar[tuple[str, ...]] = ("pipeline_hash", "ks", "budgets", "case_ids", "unlocated")

    layout: int = SWEEP_LAYOUT_VERSION
    grid: str
    pipeline_hash: str
    ks: list[int]
    budgets: list[int] | None
    case_ids: list[str]
    unlocated: UnlocatedMode


def run_state(config: PipelineConfig, dataset_hash: str, settings: RunSettings, cases: Sequence[Case]) -> RunState:
    selection = settings.selection
    return RunState(
        config_hash=config.hash, dataset=selection.dataset, dataset_hash=dataset_hash, split=selection.split,
        limit=selection.limit, sample=selection.sample, seed=selection.seed, ks=scored_ks(settings.ks, config.top_k),
        budgets=settings.budgets or None, use_llm=settings.answer.use_llm, unlocated=settings.unlocated,
        case_ids=[c.id for c in cases], started_at=now(),
    )  # fmt: skip


def sweep_state(
    base: PipelineConfig, settings: SweepSettings, ks: Sequence[int], budgets: Sequence[int], cases: Sequence[Case]
) -> SweepState:
    return SweepState(
        grid=settings.grid, pipeline_hash=base.hash, ks=list(ks), budgets=list(budgets) or None,
        case_ids=[c.id for c in cases], unlocated=settings.unlocated,
    )  # fmt: skip


class Where(BaseModel):
    """Where a run's folder goes: ``out`` None writes nothing (the Python API without ``out``)."""

    out: Path | None = None
    default_name: str = "run"
    name: str | None = None
    resume: str | None = None  # a folder to finish, or "latest"
    create: bool = True  # False: find the name (and check a resume) but leave nothing behind (a dry run)


S = TypeVar("S", bound=FolderState)


@dataclass
class RunContext(Generic[S]):
    """An open run: its state, its folder (locked for the run) and its executor."""

    state: S
    folder: RunFolder
    executor: Executor

    @property
    def path(self) -> Path | None:
        return self.folder.path


def open_folder(state: S, where: Where) -> RunFolder:
    """The run folder (new, or the one to resume, checked against ``state``), locked; no folder without ``out``."""
    if where.out is None:
        return RunFolder.none(state)
    return RunFolder.open(
        where.out, marker=state.MARKER, state=state,
        default_name=where.default_name, name=where.name, resume=where.resume, create=where.create,
    )  # fmt: skip


@contextmanager
def open_run(state: S, where: Where | RunFolder, executor: AbstractContextManager[Executor]) -> Iterator[RunContext[S]]:
    """The run's folder and executor, both released when the run ends (a folder holding nothing is removed)."""
    folder = where if isinstance(where, RunFolder) else open_folder(state, where)
    with folder, executor as opened:
        yield RunContext(state=folder.state, folder=folder, executor=opened)  # type: ignore[arg-type]
