"""The openai client, configured to survive real endpoints.

- retries: the openai client's own ``max_retries`` (exponential backoff 0.5 s * 2^n,
  capped at 8 s, with jitter; honours ``Retry-After``/``retry-after-ms``) on
  timeouts, connection errors, 408, 409, 429 and every 5xx;
- ``timeout`` per attempt;
- adaptive concurrency and bounded replies under the openai client (:mod:`ragsweep.llm.endpoint`):
  each attempt waits for a slot of the client's AIMD limit, fewer after timeouts and 429s, more
  after quick successes, at most ``settings.concurrency``; a chat reply over
  ``settings.max_reply_bytes`` is not read further and is that call's error;
- a disk cache under the transport (:mod:`ragsweep.llm.cache`);
- any failure after retries, and any malformed or oversized reply, becomes ``ChatResult.error``:
  nothing here raises for one bad call;
- a refusal (OpenAI's ``message.refusal``, with ``content: null``) is a reply, not an
  error: ``ChatResult.refusal`` holds the model's reason;
- token counts from the reply's ``usage`` when present, else tiktoken;
- ``chat_batch``: bounded concurrency (``settings.concurrency`` threads, as many in flight as
  the limit allows), order kept;
- ``stats()``: the client's calls, failures and what the endpoint did (:class:`LLMCalls`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, NotRequired, TypedDict

import httpx
from pydantic import BaseModel

from ragsweep.core.errors import RunError
from ragsweep.cost.calls import Message, cost_usd, count_message_tokens, count_tokens
from ragsweep.llm.cache import CACHE_HEADER, AsyncCachingTransport, CachingTransport, shared_cache
from ragsweep.llm.call_stats import LLMCalls
from ragsweep.llm.endpoint import AdaptiveLimit, AsyncEndpointTransport, EndpointTransport
from ragsweep.llm.errors import UNREACHABLE, describe_error
from ragsweep.llm.redact import register_secret
from ragsweep.llm.settings import LLMSettings

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

Messages = list[Message]


class ResponseFormat(TypedDict):
    type: str


class ChatParams(TypedDict):
    """The keyword arguments of one ``chat.completions.create`` call (what the cache key hashes)."""

    model: str
    messages: Messages
    temperature: float
    max_tokens: int
    response_format: NotRequired[ResponseFormat]
    seed: NotRequired[int]


class ChatResult(BaseModel):
    text: str = ""
    error: str | None = None
    # the model declined (OpenAI's ``message.refusal``; ``text`` is then "" or what came with it)
    refusal: str | None = None
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_source: str = ""  # "reply" or "tiktoken"
    finish_reason: str | None = None
    attempts: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def _http_timeout(settings: LLMSettings) -> httpx.Timeout:
    return httpx.Timeout(settings.timeout, connect=min(settings.timeout, 10.0))


def make_openai(settings: LLMSettings, limit: AdaptiveLimit | None = None) -> openai.OpenAI:
    """A sync ``openai.OpenAI`` for these settings: its requests through ``limit`` (a new one when
    None) and the reply cap, the cache above them if enabled."""
    import openai

    register_secret(settings.api_key.get_secret_value())
    limit = limit or AdaptiveLimit(settings.concurrency, settings.timeout)
    transport: httpx.BaseTransport = EndpointTransport(limit, settings.max_reply_bytes, httpx.HTTPTransport())
    if settings.cache:
        transport = CachingTransport(shared_cache(settings.cache_path()), transport, settings.max_reply_bytes)
    http_client = httpx.Client(transport=transport, timeout=_http_timeout(settings))
    return openai.OpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key_value(),
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        http_client=http_client,
    )


def make_async_openai(settings: LLMSettings) -> openai.AsyncOpenAI:
    """An ``openai.AsyncOpenAI`` for these settings. Create one per event loop."""
    import openai

    register_secret(settings.api_key.get_secret_value())
    transport: httpx.AsyncBaseTransport = AsyncEndpointTransport(settings.max_reply_bytes, httpx.AsyncHTTPTransport())
    if settings.cache:
        transport = AsyncCachingTransport(shared_cache(settings.cache_path()), transport, settings.max_reply_bytes)
    http_client = httpx.AsyncClient(transport=transport, timeout=_http_timeout(settings))
    return openai.AsyncOpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key_value(),
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        http_client=http_client,
    )


def _usage(usage: object) -> tuple[int, int] | None:
    """(prompt, completion) tokens of a reply's ``usage``; None when absent or not counts (then tiktoken)."""
    try:
        prompt, completion = (
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
        )
    except (TypeError, ValueError):
        return None
    return (prompt, max(0, completion)) if prompt > 0 else None


_TRANSIENT = ("timeout", "connection error", "http 408", "http 409", "http 429", "http 5")


def transient(error: str | None) -> bool:
    """Whether a failed call may succeed when asked again later: a failure the openai client
    retries (timeouts, connection errors, 408, 409, 429, 5xx) that outlasted its retries."""
    return bool(error) and str(error).startswith(_TRANSIENT)


def error_kind(error: str) -> str:
    """The kind of a ``ChatResult.error``: its words before the first colon."""
    return error.split(":", 1)[0].strip() or "error"


class EndpointUnreachable(RunError):
    """Nothing listens at the endpoint or its host name does not resolve (after one short second try):
    every further call would fail the same way, so the run ends with this message instead."""


class LLMClient:
    def __init__(self, settings: LLMSettings):
        self.settings = settings
        self._client: openai.OpenAI | None = None
        self.limit = AdaptiveLimit(settings.concurrency, settings.timeout)  # shared by every call of this client
        self._calls = LLMCalls()
        self._lock = threading.Lock()

    @property
    def client(self) -> openai.OpenAI:
        if self._client is None:
            self._client = make_openai(self.settings, self.limit)
        return self._client

    def stats(self) -> LLMCalls:
        with self._lock:
            return self._calls.model_copy(update={"endpoint": self.limit.stats.model_copy()}, deep=True)

    def _count(self, result: ChatResult) -> None:
        with self._lock:
            self._calls.calls += 1
            self._calls.cached += int(result.cached)
            if result.error:
                self._calls.failed += 1
                kind = error_kind(result.error)
                self._calls.errors = dict(Counter(self._calls.errors) + Counter({kind: 1}))

    def __repr__(self) -> str:
        return f"LLMClient({self.settings})"

    # ------------------------------------------------------------------ one call
    def chat(
        self,
        messages: Messages,
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> ChatResult:
        """One call. ``seed`` is sent as OpenAI's ``seed`` (and so is part of the cache key):
        the judge's replicates 2..N carry one each, so each replicate is its own request."""
        s = self.settings
        params: ChatParams = {
            "model": s.model,
            "messages": messages,
            "temperature": s.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or s.max_tokens,
        }
        if json_mode:
            params["response_format"] = {"type": "json_object"}
        if seed is not None:
            params["seed"] = seed
        started = time.monotonic()
        result = self._call(params)
        if (
            json_mode
            and result.error
            and result.error.startswith("http 400")
            and "response_format" in result.error.lower()
        ):
            # endpoint without JSON mode: ask again without it (the prompt asks for JSON anyway)
            params.pop("response_format")
            result = self._call(params)
        result.latency_s = round(time.monotonic() - started, 3)
        if not result.prompt_tokens:
            result.prompt_tokens = count_message_tokens(messages, s.model)
            result.usage_source = result.usage_source or "tiktoken"
        result.cost_usd = round(
            0.0 if result.cached else cost_usd(result.prompt_tokens, result.completion_tokens, s), 8
        )
        self._count(result)
        if result.error and error_kind(result.error) == UNREACHABLE:
            raise EndpointUnreachable(
                f"the LLM endpoint {s.base_url} cannot be reached ({result.error}); nothing more is sent to it. "
                "Replies already received are in the reply cache: once it is up, run again (eval --resume "
                "continues a run folder)"
            )
        return result

    def _call(self, params: ChatParams) -> ChatResult:
        try:
            # openai's message and format parameters are unions of TypedDicts with wider items than ours
            raw = self.client.chat.completions.with_raw_response.create(**params)  # type: ignore[arg-type]
            cached = raw.headers.get(CACHE_HEADER) == "hit"
            attempts = int(getattr(raw, "retries_taken", 0)) + 1
            completion = raw.parse()
        except Exception as err:  # noqa: BLE001 - every failure is recorded, never raised
            return ChatResult(error=describe_error(err, self.settings))
        try:
            choice = completion.choices[0]
            text = choice.message.content
            refusal = getattr(choice.message, "refusal", None)
            refusal = refusal.strip() if isinstance(refusal, str) and refusal.strip() else None
            if refusal is not None and not isinstance(text, str):
                text = ""  # a refusal: content is null, the reason is in message.refusal
            if not isinstance(text, str):
                raise TypeError("reply has no text content")
        except Exception as err:  # noqa: BLE001
            return ChatResult(
                error=f"malformed reply: {type(err).__name__}: {str(err)[:200]}",
                cached=cached,
                attempts=attempts,
            )
        limit = self.settings.max_reply_bytes
        if len(text) + len(refusal or "") > limit:  # the transport caps bytes; this, any way a text came in
            return ChatResult(error=f"oversized reply: its text passed {limit} characters", attempts=attempts)
        result = ChatResult(
            text=text, refusal=refusal, cached=cached, attempts=attempts, finish_reason=choice.finish_reason
        )
        used = _usage(getattr(completion, "usage", None))
        if used is not None:
            result.prompt_tokens, result.completion_tokens = used
            result.usage_source = "reply"
        else:
            result.completion_tokens = count_tokens(text or refusal or "", self.settings.model)
            result.usage_source = "tiktoken"
        return result

    # ------------------------------------------------------------------ batches
    def chat_batch(
        self,
        batch: Sequence[Messages],
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> list[ChatResult]:
        """Many calls, at most ``settings.concurrency`` at a time; results in input order."""

        def one(messages: Messages) -> ChatResult:
            return self.chat(messages, json_mode=json_mode, max_tokens=max_tokens, temperature=temperature, seed=seed)

        if not batch:
            return []
        if self.settings.concurrency == 1 or len(batch) == 1:
            return [one(m) for m in batch]
        with ThreadPoolExecutor(max_workers=self.settings.concurrency, thread_name_prefix="llm") as pool:
            return list(pool.map(one, batch))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
