"""`ragsweep watch --serve 0`: the page follows the watch in a real browser, without a reload.

A real watch process on a copy of cuad-mini serves its newest report.html on 127.0.0.1; headless Chromium,
driven over the DevTools protocol, opens it and a sentinel is set on ``window``. A clause is reworded: the
page must come to show the new evaluation (its badge and its history's newest row) with the sentinel still
there and no navigation. Once the watch is stopped, the page says so, and the same report.html opened as a
file is the static report, with no badge and no error. The server itself serves nothing but its routes.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from ragsweep.commands.watch_server import LiveServer
from ragsweep.report.html import write_html_report
from test_report_html import FLAGS, chromium, dump_dom  # noqa: F401 - chromium: pytest fixture
from test_watch import _dataset, _replace, _wait_for, _watch

LIVE_FLAGS = [f for f in FLAGS if not f.startswith("--virtual-time-budget")]  # the page's timers run in real time


class DevTools:
    """One headless Chromium page, driven over the DevTools protocol; the events it sent are kept."""

    def __init__(self, chromium: Path, profile: Path):
        # deferred: a test dependency only this file needs
        from websockets.sync.client import connect

        self.proc = subprocess.Popen(
            [str(chromium), *LIVE_FLAGS, "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        port_file, deadline = profile / "DevToolsActivePort", time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as reply:
            page = next(t for t in json.load(reply) if t["type"] == "page")
        self.ws = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        self.events: list[dict] = []
        self.last_id = 0
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")

    def send(self, method: str, **params: object) -> dict:
        self.last_id += 1
        self.ws.send(json.dumps({"id": self.last_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=60))
            if message.get("id") == self.last_id:
                assert "error" not in message, message
                return message.get("result", {})
            self.events.append(message)

    def evaluate(self, expression: str) -> object:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def open(self, url: str) -> None:
        self.events.clear()
        self.send("Page.navigate", url=url)
        self.until("document.readyState === 'complete' && document.body.dataset.js === 'ready'", 60)

    def until(self, expression: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            assert time.monotonic() < deadline, f"not within {timeout} s: {expression}"
            time.sleep(0.2)

    def count(self, method: str) -> int:
        return sum(e.get("method") == method for e in self.events)

    def errors(self) -> list[dict]:
        """Uncaught exceptions, console errors and the browser's own error entries (CSP, network) so far."""
        return [
            e for e in self.events
            if e.get("method") == "Runtime.exceptionThrown"
            or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
            or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")
        ]  # fmt: skip

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.kill()
            self.proc.wait(timeout=30)


def _url_from(proc: subprocess.Popen[str], lines: list[str], timeout: float = 120) -> str:
    """The watch's stderr, read in a thread (kept in ``lines``); the live report's URL it printed first."""
    threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True).start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := re.search(r"watch: live report at (http://127\.0\.0\.1:\d+/)", "".join(lines)):
            return found.group(1)
        assert proc.poll() is None, "".join(lines)[-3000:]
        time.sleep(0.05)
    raise AssertionError("no live report URL on stderr:\n" + "".join(lines)[-3000:])


PAGE_STATE = """JSON.stringify({
  kept: window.__kept === 1,
  badge: (document.getElementById("live-badge") || {}).textContent || null,
  state: (document.getElementById("live-badge") || {dataset: {}}).dataset.state || null,
  generation: document.documentElement.dataset.liveGeneration || null,
  newest: (document.querySelector("#history table tr:nth-child(2) td") || {}).textContent || null,
  rows: document.querySelectorAll("#history table tr").length - 1,
  filtered: (document.getElementById("cases") || {dataset: {}}).dataset.filter || null,
  y: Math.round(window.scrollY),
})"""


def _state(browser: DevTools) -> dict:
    return json.loads(str(browser.evaluate(PAGE_STATE)))


def test_the_served_page_follows_the_watch_without_a_reload(chromium: Path, tmp_path: Path) -> None:
    data, out = _dataset(tmp_path), tmp_path / "runs"
    docs = sorted((data / "docs").iterdir())
    proc, stderr = _watch(data, out, "--serve", "0"), []
    browser = None
    try:
        url = _url_from(proc, stderr)
        _wait_for(out, 1, proc)
        browser = DevTools(chromium, tmp_path / "profile")
        browser.open(url)
        browser.until("document.documentElement.dataset.liveGeneration === '1'", 10)
        browser.evaluate("window.__kept = 1; window.scrollTo(0, 600); 1")
        before, navigations = _state(browser), browser.count("Page.frameNavigated")
        entries = len(browser.send("Page.getNavigationHistory")["entries"])
        assert before["newest"] == "1" and before["rows"] == 1 and before["badge"].startswith("live · evaluation 1")

        _replace(docs[0], docs[0].read_text(encoding="utf-8").replace("Agreement", "Contract", 3))
        touched = time.monotonic()
        browser.until("document.documentElement.dataset.liveGeneration === '2'", 180)
        followed = time.monotonic()
        after = _state(browser)
        assert after["kept"], "the page was reloaded: the sentinel set on window is gone"
        assert browser.count("Page.frameNavigated") == navigations, "the page navigated"
        assert len(browser.send("Page.getNavigationHistory")["entries"]) == entries
        assert after["newest"] == "2" and after["rows"] == 2 and after["badge"].startswith("live · evaluation 2")
        assert after["filtered"], "the page's own script did not run over the new content"
        assert after["y"] == before["y"] == 600, "the scroll position moved"
        assert not browser.errors(), browser.errors()
        print(
            f"\nthe served page showed the new evaluation {followed - touched:.1f} s after the edit, without a reload"
        )

        proc.send_signal(signal.SIGINT)  # the watch stops: its server with it
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError("no stop within 60 s of Ctrl-C; the watch said:\n" + "".join(stderr)[-3000:]) from None
        browser.until("document.getElementById('live-badge').dataset.state === 'stopped'", 15)
        assert _state(browser)["kept"] and _state(browser)["newest"] == "2"

        page = out / "w" / "current" / "report.html"  # the same page, as a file
        browser.open(page.as_uri())
        assert _state(browser) | {"y": 0} == {
            "kept": False, "badge": None, "state": None, "generation": None, "newest": "2", "rows": 2,
            "filtered": after["filtered"], "y": 0,
        }  # fmt: skip
        assert not browser.errors(), browser.errors()
        dom = dump_dom(chromium, tmp_path, page)
        assert 'data-js="ready"' in dom and 'id="live-badge"' not in dom and "data-live-generation" not in dom
    finally:
        if browser is not None:
            browser.close()
        proc.kill()
        proc.wait(timeout=30)


def _get(port: int, path: str, host: str | None = None, method: str = "GET") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host or f"127.0.0.1:{port}")
        conn.endheaders()
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def test_the_server_serves_its_routes_and_nothing_else(tmp_path: Path) -> None:
    root, outside = tmp_path / "w", tmp_path / "outside"
    (root / "gen-0003").mkdir(parents=True)
    (root / "gen-0003" / "report.html").write_text("<p>evaluation 3</p>", encoding="utf-8")
    (root / "gen-0003" / "report.json").write_text("{}", encoding="utf-8")
    (root / "history.jsonl").write_text("{}\n", encoding="utf-8")
    outside.mkdir()
    (outside / "report.html").write_text("secret", encoding="utf-8")
    current: list[Path | None] = [None]
    server = LiveServer(root, lambda: current[0], 0).start()
    try:
        port = server.port
        assert server.url == f"http://127.0.0.1:{port}/"
        assert _get(port, "/")[0] == 503  # no complete evaluation yet: a page that waits for it
        assert json.loads(_get(port, "/live.json")[1]) == {"generation": None}
        current[0] = root / "gen-0003"
        assert _get(port, "/") == (200, b"<p>evaluation 3</p>") == _get(port, "/report.html?x=1")
        assert json.loads(_get(port, "/live.json")[1]) == {"generation": 3, "run": "gen-0003"}
        for path in ("/history.jsonl", "/gen-0003/report.json", "/../history.jsonl", "/%2e%2e/history.jsonl",
                     "/..%2f..%2fetc%2fpasswd", "/../../../../etc/passwd", "//etc/passwd", "/current/report.html"):  # fmt: skip
            assert _get(port, path)[0] == 404, path
        assert _get(port, "/", host="attacker.example:80")[0] == 403  # a name rebound to 127.0.0.1
        assert _get(port, "/", method="POST")[0] == 405
        current[0] = outside  # ``current`` pointing outside the watch folder is not served
        assert _get(port, "/")[0] == 503 and b"secret" not in _get(port, "/")[1]
        os.symlink(outside, root / "gen-0004")
        current[0] = root / "gen-0004"
        assert _get(port, "/")[0] == 503
    finally:
        server.stop()
    shutil.rmtree(outside)


def test_only_a_watch_page_carries_the_script(tmp_path: Path) -> None:
    """An eval's page is as it was; a watch's differs by the script and the right to fetch from its server."""
    run = tmp_path / "eval"
    shutil.copytree(Path(__file__).parent / "fixtures" / "runs" / "eval", run)
    static = write_html_report(run).read_text(encoding="utf-8")
    assert 'id="live"' not in static and "connect-src" not in static
    live = write_html_report(run, tmp_path / "live.html", live=True).read_text(encoding="utf-8")
    script = live[live.index('<script id="live" data-generation="0">') : live.index("</body>")]
    unstamped = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    assert unstamped.sub("", live.replace(script, "").replace("; connect-src 'self'", "")) == unstamped.sub("", static)
