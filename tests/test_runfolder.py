"""Run folders: tolerant reads keep every valid line, one process at a time, named write errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragsweep.core.errors import RunError
from ragsweep.core.hits import Hit
from ragsweep.evaluation.records import JudgedHit
from ragsweep.evaluation.runfolder import JsonlWriter, RunLock, new_run_dir, read_jsonl, saved_hit, write_json


def _lines(path: Path, rows: list) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def test_corrupt_middle_line_keeps_every_valid_line(tmp_path, capsys):
    path = tmp_path / "cases.jsonl"
    rows = [{"id": f"c{i}", "v": i} for i in range(60)]
    _lines(path, [*rows[:5], '{"id": "c5", "v": 5, BROKEN', *rows[6:]])
    good = read_jsonl(path)
    assert [r["id"] for r in good] == [r["id"] for r in rows if r["id"] != "c5"]  # the 54 after it are kept
    assert "line 6" in capsys.readouterr().err
    assert (tmp_path / "cases.jsonl.bad-lines").read_text().startswith('{"id": "c5"')
    assert len(path.read_text().splitlines()) == 59  # rewritten without the bad line


def test_torn_last_line_is_dropped(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"id": "a"}) + "\n" + '{"id": "b", "met')
    assert [r["id"] for r in read_jsonl(path)] == ["a"]
    with JsonlWriter(path) as w:  # appending continues cleanly
        w.write({"id": "b"})
    assert [r["id"] for r in read_jsonl(path)] == ["a", "b"]


def test_second_holder_gets_an_error_naming_the_first(tmp_path):
    lock = RunLock(tmp_path)
    code = (
        "import sys; from pathlib import Path; from ragsweep.evaluation.runfolder import RunLock\nfrom ragsweep.core.errors import RunError\n"
        "try:\n    RunLock(Path(sys.argv[1]))\nexcept RunError as e:\n    print(e); sys.exit(3)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 3, out.stderr
    assert f"pid {os.getpid()}" in out.stdout and "in use" in out.stdout
    lock.release()
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_release_removes_the_lock_file_and_a_killed_holders_file_is_taken_over(tmp_path):
    RunLock(tmp_path).release()
    assert not (tmp_path / ".lock").exists()  # a finished folder holds only its results
    code = "import os, sys; from pathlib import Path; from ragsweep.evaluation.runfolder import RunLock\nRunLock(Path(sys.argv[1])); os._exit(0)\n"
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / ".lock").exists()  # a process that died holding it leaves it behind, unlocked
    lock = RunLock(tmp_path)
    assert f"pid {os.getpid()}" in (tmp_path / ".lock").read_text()
    lock.release()
    assert not (tmp_path / ".lock").exists()


def test_a_lock_file_removed_under_a_waiting_opener_is_not_taken(tmp_path, monkeypatch):
    first = RunLock(tmp_path)
    import ragsweep.evaluation.runfolder as runfolder

    real_flock, calls = runfolder.fcntl.flock, []

    def flock_after_release(fd: int, op: int) -> None:
        if op & runfolder.fcntl.LOCK_EX and not calls:
            calls.append(fd)
            first.release()  # the holder finishes between this opener's open and its flock
        real_flock(fd, op)

    monkeypatch.setattr(runfolder.fcntl, "flock", flock_after_release)
    second = RunLock(tmp_path)
    assert os.path.samestat(os.fstat(second.fh.fileno()), os.stat(tmp_path / ".lock"))  # the file now there
    second.release()
    assert not (tmp_path / ".lock").exists()


def test_existing_name_is_refused(tmp_path):
    (tmp_path / "mine").mkdir()
    with pytest.raises(RunError, match="already exists.*--resume"):
        new_run_dir(tmp_path, "mine", "x")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_full_disk_is_a_named_error(tmp_path):
    target = tmp_path / "cases.jsonl"
    target.symlink_to("/dev/full")
    writer = JsonlWriter(target)
    with pytest.raises(RunError, match=r"cases\.jsonl: the disk is full.*--resume"):
        writer.write({"id": "a"})
    (tmp_path / "report.json.tmp").symlink_to("/dev/full")  # write_json writes a temp file, then renames it
    with pytest.raises(RunError, match=r"report\.json: the disk is full"):
        write_json(tmp_path / "report.json", {"big": "x" * 100_000})
    assert not (tmp_path / "report.json").exists()


def test_a_saved_hit_is_its_dump_without_text():
    fields = dict(rank=2, score=0.5, text="t", doc_id="d.pdf", start=3, end=9, rerank_score=1.5, retrieval_rank=4)
    for hit in (
        Hit(**fields, header="h"),
        JudgedHit(**fields, relevant=True, grade=2),
        Hit.model_construct(rank=1, score=1, text="t", doc_id="d", start=0, end=1),
    ):
        assert list(saved_hit(hit).items()) == list(hit.model_dump(exclude={"text"}).items())
