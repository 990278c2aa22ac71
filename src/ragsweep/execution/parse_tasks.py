"""Parsing as Ray tasks: one task per document the parse cache lacks, one CPU each.

The driver reads each file, looks it up in the parse cache and hands each miss here
(:data:`ragsweep.pipeline.corpus.Dispatch`): its bytes travel to a worker through Ray's object
store and its outcome (text, warnings, outline, or the reason it failed) comes back the same way.
The driver then writes the cache and assembles the corpus in the files' sorted order, as a parse
in one process does. A worker that dies on a document is replaced and the task run again; a
document that kills every try is skipped with the reason a local parse gives it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from ragsweep.core.offline import ensure_offline
from ragsweep.execution.base import ParseTask, ParseTaskInfo, TaskRecord
from ragsweep.pipeline.corpus import ParseOutcome, crashed

if TYPE_CHECKING:
    from types import ModuleType

    from ray import ObjectRef


def parse_document(parse: Callable[[], ParseOutcome]) -> tuple[ParseOutcome, ParseTaskInfo]:
    """A task: one document parsed on a worker (offline, as every parse is); its outcome, pid and seconds."""
    ensure_offline()
    outcome = parse()
    return outcome, {"pid": os.getpid(), "seconds": outcome.seconds}


class ParseDispatch:
    """What :func:`~ragsweep.pipeline.corpus.parse_corpus` hands each document to: a Ray task each."""

    def __init__(self, ray: ModuleType, max_retries: int, tasks: list[TaskRecord]):
        self._ray = ray  # the ray module, imported by the executor that opened the cluster
        self._task = ray.remote(parse_document).options(num_cpus=1, max_retries=max_retries)
        self._tasks = tasks  # the executor's record of every task

    def __call__(self, doc_id: str, parse: Callable[[], ParseOutcome]) -> Callable[[], ParseOutcome]:
        ref = self._task.remote(parse)
        return lambda: self._outcome(doc_id, ref)

    def _outcome(self, doc_id: str, ref: ObjectRef[tuple[ParseOutcome, ParseTaskInfo]]) -> ParseOutcome:
        fetch = self._ray.get  # the object store's fetch, not a mapping's lookup
        try:
            found: tuple[ParseOutcome, ParseTaskInfo] = fetch(ref)
        except (self._ray.exceptions.WorkerCrashedError, self._ray.exceptions.OutOfMemoryError):
            # every try died (a crash in native code, or out of memory): this document alone is skipped
            return crashed()
        outcome, info = found
        record: ParseTask = {"stage": "parse", "doc_id": doc_id, **info}
        self._tasks.append(record)
        return outcome
