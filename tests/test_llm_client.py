"""The LLM client against the fake OpenAI server: retries, timeouts, malformed replies, cache, secrets."""

from __future__ import annotations

import json
import logging
import time

import pytest

from ragsweep.cost.calls import combine, count_message_tokens, count_tokens, encoding_name
from ragsweep.llm import LLMClient, LLMSettings
from ragsweep.llm.cache import ResponseCache, request_key
from ragsweep.llm.client import EndpointUnreachable

SECRET = "sk-test-SECRET-0123456789"


def _msgs(text: str) -> list[dict]:
    return [
        {
            "role": "user",
            "content": f"Below are several sources of information:\n------\n[1] {text}\n------\nQuery: q\nAnswer:",
        }
    ]


# ------------------------------------------------------------------ settings & secrets
def test_settings_from_mapping_env_and_prefix():
    env = {"OPENAI_BASE_URL": "http://x:1/v1/", "OPENAI_API_KEY": SECRET, "LOCAL_LLM_MODEL": "qwen"}
    # a whole config's scalars: the splitter's max_tokens and the embedder's model stay out
    scalars = {"top_k": 5, "max_tokens": 400, "model": "all-MiniLM", "llm_temperature": 0.2, "llm_timeout": 7}
    s = LLMSettings.from_mapping(scalars, env=env)
    assert s.base_url == "http://x:1/v1"
    assert s.model == "qwen"
    assert s.temperature == 0.2 and s.timeout == 7 and s.max_tokens == 512
    assert s.api_key.get_secret_value() == SECRET
    s2 = LLMSettings.from_mapping(
        {"llm": {"model": "m", "api_key_env": "MY_KEY"}, "llm_max_tokens": 64}, env={"MY_KEY": "k2"}
    )
    assert s2.model == "m" and s2.max_tokens == 64 and s2.api_key.get_secret_value() == "k2"
    s3 = LLMSettings.from_mapping({"model": "plain", "concurrency": 2}, env={}, prefix="")
    assert s3.model == "plain" and s3.concurrency == 2
    assert LLMSettings.from_mapping({}, env={}).api_key_value() == "no-key"
    with pytest.raises(ValueError):
        LLMSettings.from_mapping({"llm_concurrency": 0}, env={})


def test_secret_never_in_public_views(llm_settings, caplog):
    s = llm_settings
    caplog.set_level(logging.DEBUG)
    for text in (
        repr(s),
        str(s),
        json.dumps(s.public_dict()),
        s.model_dump_json(),
        repr(LLMClient(s)),
        s.fingerprint(),
    ):
        assert SECRET not in text
    assert s.public_dict()["api_key_set"] is True
    assert "api_key" not in s.public_dict()
    result = LLMClient(s).chat(_msgs("The term is five years."))
    assert result.ok
    assert SECRET not in caplog.text
    # the cache file holds request keys and reply bodies only
    raw = s.cache_path().read_bytes() + (s.cache_path().parent / "responses.sqlite-wal").read_bytes()
    assert SECRET.encode() not in raw


def test_error_text_is_scrubbed(llm_settings):
    from ragsweep.llm.client import describe_error

    assert SECRET not in describe_error(RuntimeError(f"bad key {SECRET}"), llm_settings)


# ------------------------------------------------------------------ behaviours
def test_normal_reply_usage_and_cost(fake_server, llm_settings):
    r = LLMClient(llm_settings).chat(_msgs("The term is five years. More."))
    assert r.ok and r.text == "The term is five years. [1]"
    assert r.usage_source == "reply" and r.prompt_tokens > 0 and r.completion_tokens > 0
    expected = r.prompt_tokens / 1000 * 0.5 + r.completion_tokens / 1000 * 1.5
    assert r.cost_usd == pytest.approx(expected)
    assert fake_server.requests == 1


@pytest.mark.parametrize("marker", ["#fail429", "#fail500"])
def test_transient_error_is_retried(fake_server, llm_settings, marker):
    r = LLMClient(llm_settings).chat(_msgs(f"{marker} The law is Delaware."))
    assert r.ok, r.error
    assert r.attempts == 2
    assert fake_server.requests == 2


def test_transient_error_without_retries_is_a_recorded_failure(fake_server, llm_settings):
    r = LLMClient(llm_settings.with_updates(max_retries=0)).chat(_msgs("#fail429 The law is Delaware."))
    assert not r.ok and r.error.startswith("http 429")
    assert fake_server.requests == 1


def test_timeout_is_recorded_after_retries(fake_server, llm_settings):
    started = time.monotonic()
    r = LLMClient(llm_settings).chat(_msgs("#timeout The law is Delaware."))
    assert r.error and r.error.startswith("timeout")
    assert fake_server.requests == 2  # first attempt + max_retries=1
    assert time.monotonic() - started < 5


def test_malformed_reply_is_recorded(fake_server, llm_settings):
    r = LLMClient(llm_settings).chat(_msgs("#malformed The law is Delaware."))
    assert r.error and r.error.startswith("malformed reply")


def test_connection_refused_ends_the_run_without_the_clients_retries(llm_settings):
    s = llm_settings.with_updates(base_url="http://127.0.0.1:9/v1", max_retries=5)
    client = LLMClient(s)
    with pytest.raises(EndpointUnreachable, match=r"http://127.0.0.1:9/v1 cannot be reached .*Connection refused"):
        client.chat(_msgs("x"))
    stats = client.stats()
    # one request through the transport (its one short second try inside), not 1 + max_retries
    assert stats.endpoint.attempts == 1 and stats.failed == 1 and stats.errors == {"unreachable": 1}


def test_a_host_that_does_not_resolve_is_unreachable_too(llm_settings):
    s = llm_settings.with_updates(base_url="http://no-such-host.invalid/v1", max_retries=5)
    with pytest.raises(EndpointUnreachable, match="no-such-host.invalid"):
        LLMClient(s).chat(_msgs("x"))


def test_cache_second_run_makes_no_calls(fake_server, llm_settings):
    batch = [_msgs(f"Fact number {i}.") for i in range(6)]
    first = LLMClient(llm_settings).chat_batch(batch)
    assert all(r.ok and not r.cached for r in first)
    assert fake_server.requests == 6
    second = LLMClient(llm_settings).chat_batch(batch)  # a fresh client: the cache is on disk
    assert fake_server.requests == 6
    assert all(r.cached and r.cost_usd == 0 for r in second)
    assert [r.text for r in first] == [r.text for r in second]
    # other parameters are other keys
    LLMClient(llm_settings.with_updates(temperature=0.5)).chat(batch[0])
    assert fake_server.requests == 7


def test_failures_are_not_cached(fake_server, llm_settings):
    c = LLMClient(llm_settings)
    c.chat(_msgs("#malformed x"))
    c.chat(_msgs("#malformed x"))
    assert fake_server.requests == 2


def test_cache_disabled(fake_server, llm_settings):
    c = LLMClient(llm_settings.with_updates(cache=False))
    c.chat(_msgs("a"))
    c.chat(_msgs("a"))
    assert fake_server.requests == 2


def test_batch_keeps_order_with_concurrency(fake_server, llm_settings):
    batch = [_msgs(f"Sentence {i} here.") for i in range(12)]
    out = LLMClient(llm_settings.with_updates(concurrency=5)).chat_batch(batch)
    assert [r.text for r in out] == [f"Sentence {i} here. [1]" for i in range(12)]


def test_cache_keys_and_broken_cache(tmp_path):
    k1 = request_key("http://h/v1/chat/completions", b'{"a": 1, "b": 2}')
    assert k1 == request_key("http://h/v1/chat/completions", b'{"b": 2, "a": 1}')
    assert k1 != request_key("http://other/v1/chat/completions", b'{"a": 1, "b": 2}')
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", "u", b"body")
    assert cache.get("k") == b"body" and len(cache) == 1
    broken = ResponseCache(tmp_path / "not-a-dir" / "x")
    (tmp_path / "not-a-dir").write_text("file, not a folder")
    assert broken.get("k") is None  # degrades to a miss


# ------------------------------------------------------------------ tokens
def test_token_counting_offline():
    assert encoding_name("gpt-4o-mini") == "o200k_base"
    assert encoding_name("gpt-4") == "cl100k_base"
    assert encoding_name("qwen2.5-1.5b-instruct") == "cl100k_base"
    assert count_tokens("hello world", "gpt-4o") == 2
    assert count_message_tokens([{"role": "user", "content": "hello world"}], "gpt-4o") == 2 + 1 + 3 + 3


def test_combine_estimates():
    from ragsweep.cost.calls import CallEstimate

    a = CallEstimate(what="a", model="m", calls=2, prompt_tokens=10, completion_tokens=5, cost_usd=0.1)
    b = CallEstimate(what="b", model="m", calls=1, prompt_tokens=4, completion_tokens=1, cost_usd=0.2)
    total = combine([a, b])
    assert (total.calls, total.prompt_tokens, total.completion_tokens) == (3, 14, 6)
    assert total.cost_usd == pytest.approx(0.3)
