"""`ragsweep watch --serve PORT`: the watched folder's newest report.html on 127.0.0.1, for a page that follows.

Three routes, GET (and HEAD: its headers alone) only: ``/`` (and ``/report.html``), the report.html of the newest complete evaluation
(``current`` resolved at each request); ``/live.json``, which evaluation that is; nothing else (404). The
page's own script (report/live.py) polls ``/live.json`` and swaps the new report in without a reload.
Bound to 127.0.0.1 only, and a request must name that host (a page elsewhere cannot rebind a name to it).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ragsweep.report.live import LIVE_JSON

HOST = "127.0.0.1"
REPORT_PATHS = {"/", "/report.html"}
WAITING_PAGE = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="1">'
    "<title>ragsweep watch</title></head><body><p>ragsweep watch: no evaluation of the documents folder as it "
    "stands yet (one is running, or the folder is gone); this page opens its report when there is one.</p>"
    "</body></html>\n"
).encode()


class LiveServer(ThreadingHTTPServer):
    """The HTTP server, in a daemon thread; ``current`` gives the newest complete run folder (or None)."""

    daemon_threads = True

    def __init__(self, root: Path, current: Callable[[], Path | None], port: int = 0):
        self.root = root.resolve()
        self.current = current
        super().__init__((HOST, port), _Handler)
        self.port = int(self.server_address[1])
        self.hosts = {f"{HOST}:{self.port}", f"localhost:{self.port}"}
        self._thread = threading.Thread(target=self.serve_forever, name="ragsweep-live", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def start(self) -> LiveServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that went away mid-reply (a closed tab, a reload) is not an error; others are one line."""
        err = sys.exc_info()[1]
        if isinstance(err, ConnectionError):
            return
        print(f"ragsweep: watch --serve: a request failed: {type(err).__name__}: {err}", file=sys.stderr, flush=True)

    def newest(self) -> Path | None:
        """The current run folder, if it is one of the watch folder's own (never a path outside it)."""
        run = self.current()
        if run is None or run.resolve().parent != self.root:
            return None
        return run.resolve()


def generation_of(run: Path) -> int | None:
    match = re.fullmatch(r"gen-(\d+)", run.name)
    return int(match.group(1)) if match else None


def _read(path: Path) -> bytes | None:
    """The file's bytes; None if it is gone (a folder pruned between resolving ``current`` and reading it)."""
    try:
        return path.read_bytes()
    except OSError:
        return None


class _Handler(BaseHTTPRequestHandler):
    server: LiveServer
    server_version = "ragsweep-watch"

    def do_GET(self) -> None:
        if self.headers.get("Host", "") not in self.server.hosts:
            return self._send(403, b"forbidden host\n", "text/plain; charset=utf-8")
        path = self.path.split("?", 1)[0]
        run = self.server.newest()
        if path in REPORT_PATHS:
            page = _read(run / "report.html") if run is not None else None
            if page is None:  # no evaluation yet
                return self._send(503, WAITING_PAGE, "text/html; charset=utf-8")
            return self._send(200, page, "text/html; charset=utf-8")
        if path == "/" + LIVE_JSON:
            state = {"generation": generation_of(run), "run": run.name} if run is not None else {"generation": None}
            return self._send(200, json.dumps(state).encode(), "application/json")
        return self._send(404, b"not found\n", "text/plain; charset=utf-8")

    def _refuse(self) -> None:
        self._send(405, b"only GET and HEAD\n", "text/plain; charset=utf-8", allow=True)

    do_HEAD = do_GET  # `_send` leaves the body out
    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def _send(self, status: int, body: bytes, kind: str, allow: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        if allow:
            self.send_header("Allow", "GET, HEAD")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the watch's own lines are what its stderr is for."""
