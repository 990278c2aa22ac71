"""`watch --serve`'s server and its clients: HEAD answers with the headers alone, a client that goes away
mid-reply is not an error (no traceback on the watch's stderr), and the page says when the watch has no
current evaluation."""

from __future__ import annotations

import http.client
import shutil
import socket
import struct
import time
from pathlib import Path

import pytest

from ragsweep.commands.watch_server import LiveServer
from ragsweep.report.html import write_html_report
from test_report_html import chromium  # noqa: F401 - a pytest fixture
from test_watch_live import DevTools


@pytest.fixture
def served(tmp_path: Path):
    run = tmp_path / "w" / "gen-0001"
    run.mkdir(parents=True)
    (run / "report.html").write_bytes(b"<p>" + b"x" * (32 << 20) + b"</p>")  # larger than any socket buffer
    server = LiveServer(run.parent, lambda: run, 0).start()
    yield server
    server.stop()


def test_head_gets_the_headers_of_get_and_no_body(served: LiveServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
    try:
        conn.request("HEAD", "/live.json")
        reply = conn.getresponse()
        assert reply.status == 200
        assert reply.getheader("Content-Type") == "application/json"
        assert int(reply.getheader("Content-Length") or 0) > 0
        assert reply.read() == b""
    finally:
        conn.close()


def test_a_client_that_goes_away_mid_reply_leaves_no_traceback(
    served: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(3):
        sock = socket.create_connection(("127.0.0.1", served.port), timeout=10)
        sock.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n\r\n".encode())
        sock.recv(1024)  # the reply has begun
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
        sock.close()
    time.sleep(1.0)  # the handler threads hit the closed socket
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
    conn.request("GET", "/live.json")
    assert conn.getresponse().status == 200  # still serving
    conn.close()
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err


def test_the_page_says_when_there_is_no_current_evaluation(chromium: Path, tmp_path: Path) -> None:
    """The watch withdraws ``current`` while its folder is gone (or an evaluation failed): the served page keeps
    the last report but its badge says it is not current, then live again once an evaluation is back."""
    run = tmp_path / "w" / "gen-0000"
    shutil.copytree(Path(__file__).parent / "fixtures" / "runs" / "eval", run)
    write_html_report(run, run / "report.html", live=True)
    current: list[Path | None] = [run]
    server = LiveServer(run.parent, lambda: current[0], 0).start()
    browser = DevTools(chromium, tmp_path / "profile")
    try:
        browser.open(server.url)
        badge = "(document.getElementById('live-badge') || {dataset: {}}).dataset.state"
        browser.until(f"{badge} === 'live'", 15)
        current[0] = None
        browser.until(f"{badge} === 'waiting'", 15)
        assert "not current" in str(browser.evaluate("document.getElementById('live-badge').textContent"))
        current[0] = run
        browser.until(f"{badge} === 'live'", 15)
        assert not browser.errors(), browser.errors()
    finally:
        browser.close()
        server.stop()
