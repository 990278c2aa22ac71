"""`ragsweep watch` as a real process on a copy of cuad-mini: a clause reworded, a contract deleted, a new
one added; after each, the watched numbers equal a fresh `ragsweep eval` over the folder as it stands, also
when a change is made while an update runs.
A watch SIGKILLed mid-update leaves a whole ``current`` and a new watch continues the folder."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import MINI, ROOT
from support.in_process import run_timed

RAGSWEEP = [sys.executable, "-m", "ragsweep.cli"]
PIPELINE = str(ROOT / "pipelines" / "default.yaml")
CASES = "60"  # the first two contracts' cases and some of the third's


def _dataset(tmp_path: Path) -> Path:
    data = tmp_path / "ds"
    shutil.copytree(MINI, data)
    return data


def _watch(data: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*RAGSWEEP, "watch", "--pipeline", PIPELINE, "--dataset", str(data), "--out", str(out), "--name", "w",
         "--limit", CASES, "--poll", "0.2", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip


def _history(out: Path) -> list[dict]:
    path = out / "w" / "history.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _wait_for(out: Path, generations: int, proc: subprocess.Popen[str], timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        history = _history(out)
        if len(history) >= generations:
            return history[-1]
        if proc.poll() is not None:
            raise AssertionError(f"watch ended early (rc {proc.returncode}):\n{proc.stderr.read()[-3000:]}")
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"no evaluation {generations} within {timeout} s:\n{proc.stderr.read()[-3000:]}")


def _replace(path: Path, text: str) -> None:
    """As an editor saves: the new content written beside, then renamed over the file."""
    tmp = path.parent.parent / f".{path.name}.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _wait_until_update_2_begins(out: Path) -> None:
    deadline = time.monotonic() + 120
    while not (out / "w" / "gen-0002").exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def _fresh_eval(data: Path, out: Path, cases: str = CASES, limit_s: float = 600) -> Path:
    """`ragsweep eval` over the folder as it stands, in this process: the command's own code path, without
    a new interpreter loading Pathway and the embedding model again (the watch is the process under test)."""
    argv = ["eval", "--pipeline", PIPELINE, "--dataset", str(data), "--out", str(out), "--name", "fresh"]
    assert run_timed([*argv, "--limit", cases, "--no-validate"], limit_s) == 0
    return out / "fresh"


def _same_numbers(watched: Path, fresh: Path) -> None:
    a, b = json.loads((watched / "report.json").read_text()), json.loads((fresh / "report.json").read_text())
    for section in ("metrics", "counts", "intervals", "baselines"):
        assert a[section] == b[section], section
    assert (watched / "cases.jsonl").read_text() == (fresh / "cases.jsonl").read_text()
    assert (watched / "chunks.jsonl").read_text() == (fresh / "chunks.jsonl").read_text()


def test_each_change_gives_the_numbers_of_a_fresh_eval(tmp_path: Path) -> None:
    data, out = _dataset(tmp_path), tmp_path / "runs"
    docs = sorted((data / "docs").iterdir())
    proc = _watch(data, out, "--max-updates", "3")
    try:
        _wait_for(out, 1, proc)
        text = docs[0].read_text(encoding="utf-8")
        assert "Agreement" in text
        _replace(docs[0], text.replace("Agreement", "Contract", 3))  # one clause reworded
        modified = _wait_for(out, 2, proc)
        fresh_dir = _fresh_eval(data, tmp_path / "fresh-1")
        _same_numbers(out / "w" / modified["run"], fresh_dir)

        held = tmp_path / docs[1].name
        shutil.move(docs[1], held)  # a contract deleted: its cases' evidence is in no parsed document
        deleted = _wait_for(out, 3, proc)
        _same_numbers(out / "w" / deleted["run"], _fresh_eval(data, tmp_path / "fresh-2"))

        shutil.copy(held, data / "docs" / "added contract.txt")  # a new contract no case names
        added = _wait_for(out, 4, proc)
        _same_numbers(out / "w" / added["run"], _fresh_eval(data, tmp_path / "fresh-3"))
        assert proc.wait(timeout=120) == 0  # --max-updates 3
    finally:
        proc.kill()
    stdout = proc.stdout.read() if proc.stdout else ""
    assert modified["change"]["modified"] == [docs[0].name] and f"{docs[0].name} modified:" in stdout
    assert deleted["change"]["deleted"] == [docs[1].name] and f"{docs[1].name} deleted:" in stdout
    assert added["change"]["added"] == ["added contract.txt"]
    # the deleted contract's cases are left out as unlocated, not scored as misses
    assert deleted["now_unlocated"] and not set(deleted["now_unlocated"]) & set(deleted["hit_to_miss"])
    assert (out / "w" / "current").resolve().name == added["run"]
    # report.html draws the watched metrics over the four evaluations and lists each change
    page = (out / "w" / "current" / "report.html").read_text(encoding="utf-8")
    history = page.split('<section id="history">', 1)[1].split("</section>", 1)[0]
    assert history.count("<tr><td>") == 4 and "added contract.txt added" in history
    assert f"{docs[1].name} deleted" in history and "<svg" in history


def test_a_change_made_while_an_update_runs_is_not_lost(tmp_path: Path) -> None:
    data, out = _dataset(tmp_path), tmp_path / "runs"
    docs = sorted((data / "docs").iterdir())
    proc = _watch(data, out, "--max-updates", "2")
    try:
        _wait_for(out, 1, proc)
        _replace(docs[0], docs[0].read_text(encoding="utf-8").replace("Agreement", "Contract", 3))
        _wait_until_update_2_begins(out)
        assert len(_history(out)) == 1, "the update ended before the second change could be made during it"
        _replace(docs[1], docs[1].read_text(encoding="utf-8").replace("Agreement", "Contract", 3))
        last = _wait_for(out, 3, proc)
        assert proc.wait(timeout=120) == 0  # --max-updates 2
    finally:
        proc.kill()
    # the change made during update 2 is evaluated by update 3, whether update 2 read it or not
    assert docs[1].name in last["change"]["modified"]
    _same_numbers(out / "w" / last["run"], _fresh_eval(data, tmp_path / "fresh"))


@pytest.mark.parametrize("moment", ["mid-update"])
def test_a_killed_watch_leaves_a_whole_current_and_a_new_one_continues(tmp_path: Path, moment: str) -> None:
    data, out = _dataset(tmp_path), tmp_path / "runs"
    docs = sorted((data / "docs").iterdir())
    proc = _watch(data, out)
    try:
        first = _wait_for(out, 1, proc)
        _replace(docs[0], docs[0].read_text(encoding="utf-8").replace("Agreement", "Contract", 3))
        _wait_until_update_2_begins(out)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    current = out / "w" / "current"
    assert json.loads((current / "report.json").read_text())["metrics"]  # whole: the last complete evaluation
    assert current.resolve().name in {first["run"], "gen-0002"}
    again = _watch(data, out, "--max-updates", "0")
    try:
        assert again.wait(timeout=300) == 0, again.stderr.read()[-3000:] if again.stderr else ""
    finally:
        again.kill()
    history = _history(out)
    assert history[-1]["generation"] > first["generation"]  # the folder continued, not restarted
    _same_numbers(out / "w" / history[-1]["run"], _fresh_eval(data, tmp_path / "fresh"))


class _SendsCtrlC:
    """A finalizer that receives Ctrl-C: the KeyboardInterrupt its handler raises there is ignored by Python."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler runs here, inside the finalizer


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the ignored KeyboardInterrupt
def test_a_ctrl_c_that_lands_in_a_finalizer_still_stops_the_watch(tmp_path: Path) -> None:
    import gc
    import threading

    from ragsweep.commands.watch import StopRequest, settled_change, snapshot

    docs = tmp_path / "docs"
    docs.mkdir()
    late = threading.Timer(2.0, lambda: (docs / "late.txt").write_text("x"))  # without the flag: a change, no stop
    with StopRequest() as stop:
        one, other = _SendsCtrlC(), _SendsCtrlC()
        one.other, other.other = other, one  # a cycle: only a collection runs their finalizers
        del one, other
        gc.collect()  # the watch collects after each evaluation; the Ctrl-C lands in a finalizer and is ignored
        late.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                settled_change(docs, snapshot(docs), 0.05, stop)
        finally:
            late.cancel()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler before it is back


def test_the_python_watch_is_the_commands(tmp_path: Path) -> None:
    import ragsweep

    data, out = _dataset(tmp_path), tmp_path / "runs"
    code = ragsweep.watch(PIPELINE, data, out=out, name="w", max_updates=0, limit=20, validate=False)
    assert code == 0
    (line,) = _history(out)
    watched = json.loads((out / "w" / "current" / "report.json").read_text())
    assert line["run"] == (out / "w" / "current").resolve().name
    assert watched["metrics"] == ragsweep.evaluate(PIPELINE, data, limit=20, validate=False).metrics
    with pytest.raises(ValueError, match="poll"):
        ragsweep.watch(PIPELINE, data, out=out, poll=0)


def test_llm_answers_and_verdicts_are_asked_again_only_for_the_cases_that_changed(
    fake_server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    import threading

    import ragsweep

    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-watch")
    monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "fake-model")
    data, out = _dataset(tmp_path), tmp_path / "runs"
    second = sorted((data / "docs").iterdir())[1]
    before_update: list[int] = []

    def edit_after_the_first_evaluation() -> None:
        deadline = time.monotonic() + 300
        while not _history(out) and time.monotonic() < deadline:
            time.sleep(0.05)
        before_update.append(fake_server.requests)
        _replace(second, second.read_text(encoding="utf-8").replace("Agreement", "Contract", 3))

    editor = threading.Thread(target=edit_after_the_first_evaluation)
    editor.start()
    code = ragsweep.watch(PIPELINE, data, out=out, name="w", max_updates=1, limit=int(CASES), poll=0.2,
                          llm=True, judge=True, validate=False)  # fmt: skip
    editor.join()
    assert code == 0 and before_update and before_update[0] > 0
    first, update = _history(out)
    asked = fake_server.requests - before_update[0]
    changed = update["cases_changed"]
    # an answer and a verdict per case whose context changed, at most; the others from the reply cache
    assert 0 < asked <= 2 * len(changed) < 2 * int(CASES)
