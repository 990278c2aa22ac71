"""A `ragsweep` command run in the test's process, read as a finished process is read.

``main(argv)`` is the code path the console script runs; in the test's process it costs no new
interpreter importing Pathway, torch, the parsers and the embedding model again. Tests whose point is
the process (a kill, a signal, a fresh process, the served app, a wheel) keep a real one.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

import pytest

from ragsweep.cli import main
from support import ROOT


@dataclass
class Done:
    """What a command printed and returned, as a finished process's: rc, stdout, stderr."""

    returncode: int
    stdout: str
    stderr: str


def run_timed(argv: list[str], limit_s: float) -> int:
    """`ragsweep <argv>` in this process, its return code; a run longer than ``limit_s`` (the process's
    timeout) fails the test."""
    started = time.monotonic()
    code = main(argv)
    elapsed = time.monotonic() - started
    assert elapsed < limit_s, f"ragsweep {' '.join(argv)}: {elapsed:.0f} s, over the {limit_s:.0f} s allowed"
    return code


def run_here(
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    env: dict[str, str],
    limit_s: float,
    drop: tuple[str, ...] = (),
) -> Done:
    """`ragsweep <argv>` from the repository with the environment variables whose names start with one of
    ``drop`` removed and ``env`` set. What it printed is read from file descriptors 1 and 2 (a panic of
    Pathway's engine too); each log record that reached a handler is added to stderr as the command's
    own logging prints it (``LEVEL:logger:message``). A run longer than ``limit_s`` (the process's timeout)
    fails the test."""
    for name in [k for k in os.environ if drop and k.startswith(drop)]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(ROOT)
    capfd.readouterr()
    caplog.clear()
    code = run_timed(argv, limit_s)
    said = capfd.readouterr()
    logged = [f"{r.levelname}:{r.name}:{r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]
    return Done(code, said.out, "\n".join([said.err, *logged]))
