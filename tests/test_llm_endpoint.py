"""Endpoints that send too much or are slow: bounded replies, adaptive concurrency, retries that wait longer.

Against the loopback fake (``tests/fake_openai.py``): a fake proves the wiring, not how a real
endpoint behaves; the local model's numbers are in benchmarks/README.md.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from fake_openai import FakeOpenAI, huge_reply
from ragsweep.llm import LLMClient
from ragsweep.llm.cache import request_key, shared_cache
from ragsweep.llm.endpoint import ERROR_HEADER, AdaptiveLimit, read_capped, send_or_unreachable, unreachable_reason
from ragsweep.llm.replies import first_object
from support import ROOT

SECRET = "sk-test-SECRET-0123456789"


def _msgs(text: str) -> list[dict]:
    return [{"role": "user", "content": f"Sources:\n------\n[1] {text}\n------\nQuery: q\nAnswer:"}]


def _rows(cache_dir: Path, longer_than: int = -1) -> int:
    db = cache_dir / "responses.sqlite"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        query = "SELECT COUNT(*) FROM replies WHERE length(body) > ?"
        return int(conn.execute(query, (longer_than,)).fetchone()[0])


# ------------------------------------------------------------------ 4. bounded replies
def test_a_huge_reply_is_an_error_read_no_further_and_never_cached(fake_server, llm_settings):
    client = LLMClient(llm_settings.with_updates(timeout=5.0, max_retries=2))
    started = time.monotonic()
    first = client.chat(_msgs("#huge The law is Delaware."))
    assert first.error and first.error.startswith("oversized reply"), first.error
    assert "1000000 bytes" in first.error and first.text == ""
    assert fake_server.requests == 1, "an oversized reply is the endpoint's answer: not asked again"
    again = client.chat(_msgs("#huge The law is Delaware."))
    assert again.error and fake_server.requests == 2, "never served from the cache"
    assert _rows(Path(llm_settings.cache_dir)) == 0
    assert time.monotonic() - started < 10
    stats = client.stats()
    assert stats.failed == 2 and stats.errors == {"oversized reply": 2} and stats.endpoint.oversized == 2
    ok = client.chat(_msgs("The term is five years."))  # the cap is per reply: the next one is fine
    assert ok.ok and ok.text == "The term is five years. [1]"


def test_an_oversized_reply_an_older_version_cached_is_a_miss(fake_server, llm_settings):
    """An older ragsweep kept such replies: this one neither serves them nor keeps them."""
    client = LLMClient(llm_settings)
    messages = _msgs("The term is five years.")
    client.chat(messages)  # the request as the client sends it, to learn its cache key
    path, body = fake_server.log[-1]
    url = f"{fake_server.base_url}/chat/completions"
    key = request_key(url, json.dumps(body).encode())
    cache = shared_cache(llm_settings.cache_path())
    assert cache.get(key) is not None, "the fake's request body did not give the client's key"
    cache.put(key, url, huge_reply(2_000_000, body))
    r = LLMClient(llm_settings).chat(messages)
    assert r.ok and not r.cached and r.text == "The term is five years. [1]"
    assert fake_server.chat_requests() == 2


def test_the_async_client_caps_replies_too(fake_server, llm_settings):
    """ragas and an app's answerer talk through the async client."""
    import asyncio

    from ragsweep.llm.client import describe_error, make_async_openai

    async def ask() -> str:
        client = make_async_openai(llm_settings)
        try:
            await client.chat.completions.create(model="fake-model", messages=_msgs("#huge x"))
        except Exception as err:  # noqa: BLE001 - the error is what is checked
            return describe_error(err, llm_settings)
        finally:
            await client.close()
        return "no error"

    assert asyncio.run(ask()).startswith("oversized reply: the endpoint's reply passed 1000000 bytes")
    assert fake_server.requests == 1


def test_a_reply_without_a_length_is_read_up_to_the_cap():
    def body():
        for _ in range(100):
            yield b"x" * 10_000

    response = httpx.Response(200, content=body())  # chunked: no content-length to trust
    assert read_capped(response, 50_000) is None
    assert read_capped(httpx.Response(200, content=b"y" * 10), 50_000) == b"y" * 10


def test_usage_that_is_not_counts_falls_back_to_tiktoken(fake_server, llm_settings):
    class BadUsage(FakeOpenAI):
        def handle(self, path, raw, body, *rest):
            status, payload, headers = super().handle(path, raw, body, *rest)
            reply = json.loads(payload)
            reply["usage"] = {"prompt_tokens": "many", "completion_tokens": None}
            return status, json.dumps(reply).encode(), headers

    server = BadUsage().start()
    try:
        r = LLMClient(llm_settings.with_updates(base_url=server.base_url)).chat(_msgs("The term is five years."))
    finally:
        server.stop()
    assert r.ok and r.usage_source == "tiktoken" and r.prompt_tokens > 0 and r.completion_tokens > 0


def test_a_reply_of_nested_braces_is_no_object_and_no_crash():
    started = time.monotonic()
    assert first_object('{"a": ' * 20_000) is None  # deeper than the parser goes
    assert first_object("{ " * 200_000) is None
    assert first_object('noise {"is_correct": true} more') == {"is_correct": True}
    assert time.monotonic() - started < 10


def test_answerer_and_judge_name_an_oversized_reply(fake_server, llm_settings):
    from ragsweep.answer.llm import LLMAnswerer
    from ragsweep.core.hits import Hit
    from ragsweep.judge.metric import LLMJudge

    hits = [Hit(rank=1, score=1.0, text="#huge The term is five years.", doc_id="d", start=0, end=10)]
    answer = LLMAnswerer(llm_settings).answer("What is the term?", hits)
    assert answer.error and answer.error.startswith("oversized reply") and answer.text == ""
    verdict = LLMJudge(llm_settings).judge("What is the term? #huge", "five years", reference="five years")
    assert verdict.is_correct is None and verdict.failure == "oversized_reply"


def test_eval_with_huge_replies_finishes_and_caches_none_of_them(tmp_path, monkeypatch, capsys):
    """The reported run: ``--llm --set llm_timeout=5`` against an endpoint whose replies are 10 MB."""
    from ragsweep.cli import main
    from ragsweep.llm.settings import default_llm_cache_dir

    server = FakeOpenAI(reply_bytes=10_000_000).start()
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "fake-model")
        started = time.monotonic()
        code = main(
            ["eval", "--dataset", str(ROOT / "datasets" / "cuad-mini"), "--limit", "3", "--llm"]
            + ["--set", "llm_timeout=5", "--out", str(tmp_path / "runs"), "--name", "huge"]
        )
        seconds = time.monotonic() - started
    finally:
        server.stop()
    out = capsys.readouterr().out
    assert code == 1, "no answer succeeded"
    assert "answer_error: 3 of 3 answers failed (3x oversized reply" in out
    assert "LLM answer: 3 calls, 3 failed (100.0%: 3x oversized reply)" in out
    report = json.loads((tmp_path / "runs" / "huge" / "report.json").read_text())
    assert report["answers"]["failed"] == 3
    assert report["manifest"]["llm_calls"]["answer"]["endpoint"]["oversized"] == 3
    assert server.chat_requests() == 3, "not retried"
    assert _rows(Path(default_llm_cache_dir()), longer_than=1_000_000) == 0  # the session's cache
    assert seconds < 120


# ------------------------------------------------------------------ 5. slow endpoints
def test_adaptive_limit_grows_on_quick_successes_and_halves_once_per_window():
    limit = AdaptiveLimit(ceiling=8, timeout=4.0)  # quick: within 1 s
    assert limit.limit == 1
    for expected in (2, 3, 4, 5):  # slow start: one more per quick success
        limit.succeeded(0.1)
        assert limit.limit == expected
    limit.succeeded(2.0)  # slow but fine: unchanged
    assert limit.limit == 5
    with limit.slot() as sent_before:
        pass
    limit.congested("timeout", sent_before)
    assert limit.limit == 2  # 5 / 2
    limit.congested("rate_limited", sent_before)  # sent before the cut: no second cut
    assert limit.limit == 2 and limit.stats.cuts == 1
    for _ in range(2):  # past the first cut: one more per window of quick successes
        limit.succeeded(0.1)
    assert limit.limit == 3
    for _ in range(40):
        limit.succeeded(0.1)
    assert limit.limit == 8 and limit.stats.limit_high == 8
    s = limit.stats
    assert (s.timeouts, s.rate_limited, s.cuts) == (1, 1, 1)
    floor = AdaptiveLimit(ceiling=4, timeout=4.0)
    with floor.slot() as epoch:
        pass
    floor.congested("timeout", epoch)  # at one call in flight: nothing to halve
    assert floor.limit == 1 and floor.stats.cuts == 0 and floor.stats.timeouts == 1


def test_a_server_answering_one_call_at_a_time_gets_one_call_at_a_time(llm_settings):
    """The reported failure: 4 calls in flight at a server that answers one at a time, each
    near the timeout, so calls queue past it and time out, retries and all."""
    server = FakeOpenAI(serial_seconds=0.3).start()
    try:
        settings = llm_settings.with_updates(base_url=server.base_url, timeout=0.8, max_retries=1, concurrency=4)
        client = LLMClient(settings)
        out = client.chat_batch([_msgs(f"Fact number {i} holds.") for i in range(6)])
    finally:
        server.stop()
    assert [r.error for r in out] == [None] * 6
    assert [r.text for r in out] == [f"Fact number {i} holds. [1]" for i in range(6)]
    assert server.in_flight_high == 1
    stats = client.stats()
    assert stats.failure_rate == 0.0 and stats.endpoint.limit_high == 1


def test_a_retry_waits_longer_than_the_attempt_before_it(llm_settings):
    """One call needs 1 s, the timeout is 0.6 s: the openai client's retries alone would time out
    again and again; waiting 2 x and 4 x 0.6 s for the retries' replies gets it."""
    server = FakeOpenAI(serial_seconds=1.0).start()
    try:
        settings = llm_settings.with_updates(base_url=server.base_url, timeout=0.6, max_retries=2)
        client = LLMClient(settings)
        r = client.chat(_msgs("The law is Delaware."))
    finally:
        server.stop()
    assert r.ok, r.error
    assert r.attempts >= 2 and client.stats().endpoint.timeouts == r.attempts - 1


def test_429s_halve_the_calls_in_flight_and_quick_calls_bring_them_back(llm_settings):
    server = FakeOpenAI(slow_seconds=0.1, max_in_flight=2).start()  # "#timeout" below: 0.1 s per reply
    try:
        settings = llm_settings.with_updates(base_url=server.base_url, timeout=2.0, max_retries=3, concurrency=4)
        client = LLMClient(settings)
        out = client.chat_batch([_msgs(f"#timeout Fact {i} holds.") for i in range(24)])
    finally:
        server.stop()
    assert all(r.ok for r in out), [r.error for r in out if r.error]
    e = client.stats().endpoint
    assert e.rate_limited >= 1 and e.cuts >= 1, e
    assert e.limit_high >= 3 and e.attempts == 24 + e.rate_limited


def test_a_quick_endpoint_gets_every_call_the_settings_allow(fake_server, llm_settings):
    fake_server.slow_seconds = 0.05
    client = LLMClient(llm_settings.with_updates(concurrency=4, timeout=2.0))
    out = client.chat_batch([_msgs(f"#timeout Fact {i} holds.") for i in range(24)])
    assert all(r.ok for r in out)
    e = client.stats().endpoint
    assert e.limit_high == 4 and e.cuts == 0
    assert fake_server.in_flight_high >= 2


@pytest.mark.parametrize("concurrency", [1, 3])
def test_cache_hits_take_no_slot(fake_server, llm_settings, concurrency):
    batch = [_msgs(f"Fact number {i} holds.") for i in range(5)]
    LLMClient(llm_settings).chat_batch(batch)
    client = LLMClient(llm_settings.with_updates(concurrency=concurrency))
    assert all(r.cached for r in client.chat_batch(batch))
    assert client.stats().endpoint.attempts == 0 and client.stats().cached == 5


def test_a_sweep_prints_its_llm_calls_and_failure_rate(fake_server, tmp_path, monkeypatch):
    from ragsweep.commands.sweep import SweepOptions, run_sweep
    from ragsweep.report.terminal import sweep_table

    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "fake-model")
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  top_k: [3, 5]\nbaseline: {top_k: 5}\nobjectives: [recall@k]\nks: [3, 5]\n")
    options = SweepOptions(
        pipeline=str(ROOT / "pipelines" / "default.yaml"),
        dataset=str(ROOT / "datasets" / "cuad-mini"),
        limit=2,
        out=str(tmp_path / "runs"),
        progress=False,
        ragas_nonllm=False,
        grid=str(grid),
        answers=True,
        use_llm=True,
    )
    _, report = run_sweep(options)
    for config in report.configs:
        assert config.llm_calls["answer"]["calls"] >= 1 and config.llm_calls["answer"]["failure_rate"] == 0.0
    calls = sum(c.llm_calls["answer"]["calls"] for c in report.configs)
    assert f"LLM answer (over 2 configurations): {calls} calls, 0 failed (0.0%)" in sweep_table(report)


# ------------------------------------------------------------------ no retries against nobody
def test_a_refused_connection_is_tried_once_more_then_answered_unreachable():
    sent: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = send_or_unreachable(refuse, request)
    assert len(sent) == 2  # the short second try, nothing more
    assert response.status_code == 502 and response.headers["x-should-retry"] == "false"
    assert response.headers[ERROR_HEADER] == "unreachable"
    assert json.loads(response.content)["error"]["message"] == (
        "cannot connect to http://127.0.0.1:9: [Errno 111] Connection refused"
    )


def test_a_second_try_that_connects_is_the_answer():
    calls = []

    def once_refused(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json={"ok": True}, request=request)

    response = send_or_unreachable(once_refused, httpx.Request("POST", "http://127.0.0.1:9/v1/embeddings"))
    assert response.status_code == 200 and len(calls) == 2


def test_unreachable_reason_names_a_closed_port_and_passes_a_listening_one(fake_server):  # noqa: F811
    assert "nothing listens at 127.0.0.1:9" in (unreachable_reason("http://127.0.0.1:9/v1") or "")
    assert "does not resolve" in (unreachable_reason("http://no-such-host.invalid/v1") or "")
    assert unreachable_reason(fake_server.base_url) is None
