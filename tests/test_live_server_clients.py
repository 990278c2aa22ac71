"""`watch --serve`'s server and its clients: HEAD answers with the headers alone, and a client that goes away
mid-reply is not an error (no traceback on the watch's stderr)."""

from __future__ import annotations

import http.client
import socket
import struct
import time
from pathlib import Path

import pytest

from ragsweep.commands.watch_server import LiveServer


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
