"""Only regular files are read from a documents folder: a FIFO, a socket, a device reached through
--follow-symlinks and a symlink loop are skipped, each with its reason, in `eval` (a real process, bounded:
a read that blocks fails the test) and in `watch`, which also waits for a deleted folder to come back and
stops quietly on Ctrl-C while it waits."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from test_watch import MINI, PIPELINE, RAGSWEEP, _fresh_eval, _history, _same_numbers, _wait_for

CASES = "12"  # the first contract's cases: each evaluation takes seconds


def _hostile_docs(tmp_path: Path) -> Path:
    """cuad-mini with a FIFO named as a PDF, a socket, a symlink loop and a symlink to a device."""
    data = tmp_path / "ds"
    shutil.copytree(MINI, data)
    docs = data / "docs"
    os.mkfifo(docs / "pipe.pdf")
    os.symlink("loop-b", docs / "loop-a")
    os.symlink("loop-a", docs / "loop-b")
    os.symlink("/dev/zero", docs / "zero.txt")
    here = os.getcwd()
    os.chdir(docs)  # a socket's path is limited to ~100 bytes: bind it by its name alone
    try:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind("sock.txt")
        sock.close()
    finally:
        os.chdir(here)
    return data


def _skipped(run: Path) -> dict[str, str]:
    corpus = json.loads((run / "report.json").read_text())["manifest"]["corpus"]
    return {s["doc_id"]: s["reason"] for s in corpus["skipped"]}


def test_eval_skips_what_is_not_a_regular_file_and_never_blocks(tmp_path: Path) -> None:
    data, out = _hostile_docs(tmp_path), tmp_path / "runs"
    done = subprocess.run(
        [*RAGSWEEP, "eval", "--pipeline", PIPELINE, "--dataset", str(data), "--out", str(out), "--name", "e",
         "--limit", CASES, "--no-validate", "--follow-symlinks"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    skipped = _skipped(out / "e")
    assert skipped == {
        "loop-a": "a symlink loop: not read",
        "loop-b": "a symlink loop: not read",
        "pipe.pdf": "a FIFO (named pipe), not a regular file: not read",
        "sock.txt": "a socket, not a regular file: not read",
        "zero.txt": "a device, not a regular file: not read",
    }
    for name, reason in skipped.items():
        assert f"skipped document {name}: {reason}" in done.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _live(port: int) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/live.json")
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def test_a_watch_skips_them_too_and_waits_for_its_folder_to_come_back(tmp_path: Path) -> None:
    data, out, port = _hostile_docs(tmp_path), tmp_path / "runs", _free_port()
    (data / "docs" / "zero.txt").unlink()  # not followed by default: skipped as outside the folder
    proc = subprocess.Popen(
        [*RAGSWEEP, "watch", "--pipeline", PIPELINE, "--dataset", str(data), "--out", str(out), "--name", "w",
         "--limit", CASES, "--poll", "0.2", "--no-validate", "--serve", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        first = _wait_for(out, 1, proc, timeout=120)
        assert set(_skipped(out / "w" / first["run"])) == {"loop-a", "loop-b", "pipe.pdf", "sock.txt"}
        time.sleep(3)  # the warm-up (a parse of one of the folder's files) runs while the watch waits
        away = tmp_path / "docs-away"
        os.rename(data / "docs", away)  # the folder deleted
        time.sleep(2.5)  # a dozen looks at no folder
        assert proc.poll() is None, "the watch ended when its folder went away"
        assert len(_history(out)) == 1  # no evaluation of no folder
        # and no numbers a fresh eval would not give: no current, the live page says so
        assert not (out / "w" / "current").exists() and _live(port) == {"generation": None}
        first_doc = sorted(p for p in away.iterdir() if p.suffix == ".txt" and p.is_file())[0]
        first_doc.write_text(first_doc.read_text(encoding="utf-8").replace("Agreement", "Contract"), encoding="utf-8")
        os.rename(away, data / "docs")  # back, with one document changed
        back = _wait_for(out, 2, proc, timeout=120)
        assert back["change"]["modified"] == [first_doc.name]
        _same_numbers(out / "w" / back["run"], _fresh_eval(data, out, CASES, limit_s=180))
        assert _live(port)["generation"] == 2 and (out / "w" / "current").resolve().name == back["run"]
        time.sleep(0.5)  # waiting for the next change
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0  # Ctrl-C on a waiting watch is how it ends, not an error
    finally:
        proc.kill()
    err = proc.stderr.read() if proc.stderr else ""
    assert "is gone: waiting for it to come back" in err and "is back" in err
    assert "watch: stopped;" in err and "error" not in err and "Traceback" not in err, err
    assert "could not load" not in err, err  # the warm-up reads no FIFO and stats no loop either
