"""An executor added from one file: registered here, named by ``--executor`` and by the Python API's
``executor=``, used for the run's index work, and giving the numbers of the local executor."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import ragsweep
from ragsweep.cli import main
from ragsweep.datasets.schema import Case
from ragsweep.execution.base import Executor, ExecutorError, IndexWork
from ragsweep.execution.local import LocalExecutor
from ragsweep.execution.registry import EXECUTORS, ExecutorSettings, register_executor
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus
from ragsweep.pipeline.retrieval import Retrieved
from support import MINI, PIPELINE

LIMIT = 4


class RecordingExecutor(LocalExecutor):
    """The local executor, noting the cases of every index group it was handed."""

    name = "recording"

    def __init__(self) -> None:
        self.asked: list[list[str]] = []
        self.closed = False

    def submit(self, work: IndexWork) -> Callable[[], Retrieved]:
        self.asked.append([c.id for c in work.cases])
        return super().submit(work)


@pytest.fixture
def recording() -> Iterator[list[RecordingExecutor]]:
    """``--executor recording`` registered for one test; every executor it opened."""
    opened: list[RecordingExecutor] = []

    @contextmanager
    def open_recording(settings: ExecutorSettings) -> Iterator[Executor]:
        executor = RecordingExecutor()
        opened.append(executor)
        try:
            yield executor
        finally:
            executor.closed = True

    register_executor("recording", open_recording)
    try:
        yield opened
    finally:
        del EXECUTORS["recording"]


def _cases(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines() if line.strip()]


def test_the_python_api_runs_on_an_executor_registered_here(recording):
    local = ragsweep.evaluate(PIPELINE, MINI, limit=LIMIT)
    added = ragsweep.evaluate(PIPELINE, MINI, limit=LIMIT, executor="recording")
    [executor] = recording
    assert executor.asked == [[c.id for c in local.cases]] and executor.closed
    assert added.manifest.executor == {"name": "recording"}
    assert local.manifest.executor == {"name": "local"}
    assert [c.model_dump() for c in added.cases] == [c.model_dump() for c in local.cases]
    assert added.metrics == local.metrics


def test_the_command_line_runs_on_an_executor_registered_here(recording, tmp_path):
    common = ["eval", "--dataset", str(MINI), "--limit", str(LIMIT), "--out", str(tmp_path)]
    assert main([*common, "--name", "local"]) == 0
    assert not recording
    assert main([*common, "--name", "added", "--executor", "recording"]) == 0
    [executor] = recording
    assert len(executor.asked) == 1 and len(executor.asked[0]) == LIMIT
    report = json.loads((tmp_path / "added" / "report.json").read_text())
    assert report["manifest"]["executor"] == {"name": "recording"}
    assert _cases(tmp_path / "added") == _cases(tmp_path / "local")
    local_report = json.loads((tmp_path / "local" / "report.json").read_text())
    assert report["metrics"] == local_report["metrics"]


def test_an_executor_not_registered_or_a_setting_it_does_not_read_is_refused(recording, capsys):
    with pytest.raises(ValueError, match="no such executor: nowhere"):
        ragsweep.evaluate(PIPELINE, MINI, limit=1, executor="nowhere")
    with pytest.raises(ExecutorError, match="--ray-address: only with --executor ray"):
        ragsweep.evaluate(PIPELINE, MINI, limit=1, executor="recording", ray_address="127.0.0.1:6379")
    assert not recording
    with pytest.raises(SystemExit):
        main(["eval", "--dataset", str(MINI), "--executor", "nowhere"])
    assert "(choose from 'local', 'ray', 'recording')" in capsys.readouterr().err


def test_registering_the_built_in_executors_imports_no_ray():
    import subprocess
    import sys

    code = "import sys, ragsweep.execution.registry as r; print(sorted(r.EXECUTORS), 'ray' in sys.modules)"
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert said.split("]")[1].strip() == "False" and "'local', 'ray'" in said
