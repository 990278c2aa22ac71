"""Resume across real processes: SIGKILL a running `ragsweep eval` / `sweep`, resume in a new one.

Every case must end up exactly once and every metric must equal an uninterrupted run's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support import MINI, ROOT
from support.in_process import run_timed

RAGSWEEP = [sys.executable, "-m", "ragsweep.cli"]


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [*RAGSWEEP, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            return
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before it could be killed:\n{proc.stderr.read().decode()[-3000:]}")
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("timed out waiting for the moment to kill")


def _lines(path: Path) -> int:
    try:
        return sum(1 for line in path.read_text().splitlines() if line.strip())
    except FileNotFoundError:
        return 0


def _cases(run_dir: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines() if line.strip()]
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "a case appears twice"
    return {r["id"]: r for r in rows}


def _run_here(args: list[str], monkeypatch) -> None:
    """The uninterrupted run to compare with, in this process: the command's own code path (from the
    repository, as the processes run), without a new interpreter loading Pathway and the models."""
    monkeypatch.chdir(ROOT)
    assert run_timed(args, 900) == 0


def _run(args: list[str]) -> subprocess.CompletedProcess:
    out = subprocess.run([*RAGSWEEP, *args], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def test_eval_killed_while_scoring_resumes_in_a_new_process(tmp_path, monkeypatch):
    common = ["eval", "--dataset", str(MINI), "--out", str(tmp_path)]
    _run_here([*common, "--name", "whole"], monkeypatch)
    whole = tmp_path / "whole"

    proc = _start([*common, "--name", "cut"])
    cut = tmp_path / "cut"
    _kill_when(proc, lambda: 0 < _lines(cut / "cases.jsonl") < 123)
    assert not (cut / "report.json").exists()
    written = _lines(cut / "cases.jsonl")
    assert (cut / ".lock").exists()  # a killed run leaves its lock file, unlocked
    out = _run([*common, "--resume", str(cut)])
    assert f"resuming: {written} case(s) already done" in out.stderr or "unreadable line" in out.stderr
    assert not (cut / ".lock").exists() and not (whole / ".lock").exists()

    a, b = _cases(whole), _cases(cut)
    assert set(a) == set(b) and len(b) == 123
    for case_id in a:
        assert a[case_id]["metrics"] == b[case_id]["metrics"], case_id
    ra = json.loads((whole / "report.json").read_text())
    rb = json.loads((cut / "report.json").read_text())
    assert ra["metrics"] == rb["metrics"] and ra["baselines"] == rb["baselines"]


def test_eval_killed_while_parsing_resumes(tmp_path):
    common = ["eval", "--dataset", str(MINI), "--limit", "10", "--out", str(tmp_path)]
    proc = _start([*common, "--name", "early"])
    early = tmp_path / "early"
    _kill_when(proc, lambda: (early / "state.json").exists())
    assert not (early / "cases.jsonl").exists()
    _run([*common, "--resume", str(early)])
    assert len(_cases(early)) == 10
    assert (early / "report.json").exists()


def test_sweep_killed_between_configurations_resumes(tmp_path, monkeypatch):
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "grid:\n  top_k: [1, 3]\n  retriever_mode: [bm25, knn]\n"
        "baseline: {top_k: 3, retriever_mode: bm25}\nks: [1, 3]\n"
    )
    common = ["sweep", "--dataset", str(MINI), "--limit", "20", "--grid", str(grid), "--out", str(tmp_path)]
    _run_here([*common, "--name", "whole"], monkeypatch)
    proc = _start([*common, "--name", "cut"])
    cut = tmp_path / "cut"
    _kill_when(
        proc,
        lambda: len(list(cut.glob("configs/*/result.json"))) >= 1 and len(list(cut.glob("configs/*/result.json"))) < 4,
    )
    out = _run([*common, "--resume", str(cut)])
    assert "configuration(s) already done" in out.stderr
    whole = json.loads((tmp_path / "whole" / "sweep.json").read_text())
    again = json.loads((cut / "sweep.json").read_text())
    assert {c["id"]: c["metrics"] for c in whole["configs"]} == {c["id"]: c["metrics"] for c in again["configs"]}
