"""Talking to a server a test started on 127.0.0.1: a free port for it, a JSON POST, stopping it."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post_json(port: int, path: str, payload: dict, timeout: float = 120.0) -> Any:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def stop(proc: subprocess.Popen) -> None:
    """A server process a test started: asked to stop, killed when it does not within 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=20)


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """This process's environment with ``values`` set (a server's address, a cache folder), put back after."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
