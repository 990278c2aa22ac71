"""A sweep's user errors end before any work, in one line (rc 2, no traceback): a grid file that is not YAML,
an axis with no values, a grid over the size limits (counted, never expanded: bounded in time here, also with
--dry-run), ``--write-best`` into a folder that is missing or cannot be written, or over the input pipeline
file without ``--force``. A grid that runs says its size first."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragsweep.cli import main
from support import MINI, PIPELINE

# 10^6 configurations: expanded, this took minutes and gigabytes
HUGE = "grid:\n" + "".join(
    f"  {axis}: {values}\n"
    for axis, values in [
        ("top_k", list(range(1, 11))),
        ("min_tokens", list(range(10, 110, 10))),
        ("max_tokens", list(range(200, 300, 10))),
        ("rrf_k", list(range(50, 60))),
        ("llm_model", [f"m{i}" for i in range(10)]),
        ("prompt_template", [f"{{context}} {{query}} {i}" for i in range(10)]),
    ]
)


def _sweep(tmp_path: Path, grid: str, *extra: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    (tmp_path / "grid.yaml").write_text(grid)
    args = ["sweep", "--pipeline", str(PIPELINE), "--dataset", str(MINI), "--grid", str(tmp_path / "grid.yaml")]
    code = main([*args, "--out", str(tmp_path / "runs"), "--limit", "4", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("ragsweep: error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize(
    ("grid", "said"),
    [
        ("grid:\n  top_k: [1, 3\n  retriever_mode: [bm25]\n", "grid.yaml: not valid YAML: "),
        ("grid: {top_k: [1, 3], retriever_mode: []}\n", "grid axis 'retriever_mode' has no values"),
        ("grid\n", "needs a top-level 'grid' mapping"),  # a string that holds the word
    ],
)
def test_a_bad_grid_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], grid: str, said: str) -> None:
    code, _, err = _sweep(tmp_path, grid, capsys=capsys)
    assert code == 2 and said in _one_error_line(err)
    assert not (tmp_path / "runs").exists()


def test_a_syntax_error_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = _sweep(tmp_path, "grid:\n  top_k: [1, 3\n  retriever_mode: [bm25]\n", capsys=capsys)
    assert "(line 3, column" in _one_error_line(err)


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_huge_grid_is_counted_not_expanded(tmp_path: Path, dry_run: bool) -> None:
    (tmp_path / "grid.yaml").write_text(HUGE)
    args = [sys.executable, "-m", "ragsweep.cli", "sweep", "--pipeline", str(PIPELINE), "--dataset", str(MINI)]
    args += ["--grid", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / "runs"), "--limit", "4"]
    done = subprocess.run([*args, *(["--dry-run", "--yes"] if dry_run else [])], capture_output=True, text=True,
                          timeout=90)  # fmt: skip
    # top_k, the LLM and the prompt do not change the index: 10 x 10 x 10 index groups at most
    size = "1,000,000 configurations, about 1,000 index groups"
    if dry_run:
        assert done.returncode == 0, done.stderr[-2000:]
        estimate = json.loads(done.stdout)
        assert estimate["configurations"] == 1_000_000 and estimate["configs"] == {}
        assert estimate["size"]["index_groups"] == 1000 and "counted, not expanded" in estimate["notes"][0]
        assert size in done.stderr
    else:
        assert done.returncode == 2
        line = _one_error_line(done.stderr)
        assert size in line and "over the limit of 1,000 configurations (--yes runs it)" in line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("missing/best.yaml", "no folder"),
        ("/sys/ragsweep-best.yaml", "cannot be written"),  # sysfs: no file can be created there, even by root
        (".", "is a folder"),
    ],
)
def test_write_best_that_cannot_be_written_is_refused_before_the_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, said: str
) -> None:
    path = target if target.startswith("/") else str(tmp_path / target)
    code, _, err = _sweep(tmp_path, "grid: {top_k: [1, 3]}\n", "--write-best", path, capsys=capsys)
    assert code == 2 and said in _one_error_line(err) and "--write-best" in err
    assert not (tmp_path / "runs").exists()  # refused before any work


def test_write_best_over_the_input_pipeline_needs_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = tmp_path / "pipeline.yaml"
    shutil.copy(PIPELINE, pipeline)
    before = pipeline.read_text()
    (tmp_path / "grid.yaml").write_text("grid: {top_k: [1, 3]}\nbaseline: {top_k: 3}\n")
    args = ["sweep", "--pipeline", str(pipeline), "--dataset", str(MINI), "--grid", str(tmp_path / "grid.yaml")]
    args += ["--out", str(tmp_path / "runs"), "--limit", "4", "--write-best", str(pipeline), "--no-validate"]
    assert main(args) == 2
    assert "is the input pipeline file; --force writes over it" in _one_error_line(capsys.readouterr().err)
    assert pipeline.read_text() == before and not (tmp_path / "runs").exists()
    assert main([*args, "--force", "--name", "s"]) == 0
    err = capsys.readouterr().err
    assert "sweep: 2 configurations, about 1 index groups (one Pathway run each), at least ~" in err
    written = pipeline.read_text()
    assert written.startswith("# ragsweep best:") and written != before
