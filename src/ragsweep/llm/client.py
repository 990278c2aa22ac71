"""The openai client, configured to survive real endpoints.

- retries: the openai client's own ``max_retries`` (exponential backoff 0.5 s * 2^n,
  capped at 8 s, with jitter; honours ``Retry-After``/``retry-after-ms``) on
  timeouts, connection errors, 408, 409, 429 and every 5xx;
- ``timeout`` per attempt;
- a disk cache under the transport (:mod:`ragsweep.llm.cache`);
- any failure after retries, and any malformed reply, becomes ``ChatResult.error``:
  nothing here raises for one bad call;
- a refusal (OpenAI's ``message.refusal``, with ``content: null``) is a reply, not an
  error: ``ChatResult.refusal`` holds the model's reason;
- token counts from the reply's ``usage`` when present, else tiktoken;
- ``chat_batch``: bounded concurrency (``settings.concurrency`` threads), order kept.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from pydantic import BaseModel

from ragsweep.llm.cache import CACHE_HEADER, AsyncCachingTransport, CachingTransport, shared_cache
from ragsweep.llm.cost import cost_usd, count_message_tokens, count_tokens
from ragsweep.llm.redact import mask, register_secret
from ragsweep.llm.settings import LLMSettings

log = logging.getLogger(__name__)

Messages = list[dict[str, Any]]


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


def make_openai(settings: LLMSettings):
    """A sync ``openai.OpenAI`` for these settings (cache under the transport if enabled)."""
    import openai

    register_secret(settings.api_key.get_secret_value())
    transport: httpx.BaseTransport = httpx.HTTPTransport()
    if settings.cache:
        transport = CachingTransport(shared_cache(settings.cache_path()), transport)
    http_client = httpx.Client(transport=transport, timeout=_http_timeout(settings))
    return openai.OpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key_value(),
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        http_client=http_client,
    )


def make_async_openai(settings: LLMSettings):
    """An ``openai.AsyncOpenAI`` for these settings. Create one per event loop."""
    import openai

    register_secret(settings.api_key.get_secret_value())
    transport: httpx.AsyncBaseTransport = httpx.AsyncHTTPTransport()
    if settings.cache:
        transport = AsyncCachingTransport(shared_cache(settings.cache_path()), transport)
    http_client = httpx.AsyncClient(transport=transport, timeout=_http_timeout(settings))
    return openai.AsyncOpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key_value(),
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        http_client=http_client,
    )


def describe_error(err: BaseException, settings: LLMSettings | None = None) -> str:
    """One line, no secret."""
    import openai

    if isinstance(err, (json.JSONDecodeError, openai.APIResponseValidationError)):
        text = f"malformed reply: {type(err).__name__}: {err}"
    elif isinstance(err, openai.APITimeoutError):
        text = "timeout: no reply within the timeout after retries"
    elif isinstance(err, openai.APIConnectionError):
        text = f"connection error after retries: {err.__cause__ or err}"
    elif isinstance(err, openai.APIStatusError):
        text = f"http {err.status_code}: {err.message}"
    else:
        text = f"{type(err).__name__}: {err}"
    text = " ".join(str(text).split())[:500]
    if settings is not None:
        secret = settings.api_key.get_secret_value()
        if secret:
            text = text.replace(secret, "***")
    return mask(text)


class LLMClient:
    def __init__(self, settings: LLMSettings):
        self.settings = settings
        self._client = None

    @property
    def client(self):
        if self._client is None:
            self._client = make_openai(self.settings)
        return self._client

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
        params: dict[str, Any] = {
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
        return result

    def _call(self, params: dict[str, Any]) -> ChatResult:
        try:
            raw = self.client.chat.completions.with_raw_response.create(**params)
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
        result = ChatResult(
            text=text, refusal=refusal, cached=cached, attempts=attempts, finish_reason=choice.finish_reason
        )
        usage = getattr(completion, "usage", None)
        if usage is not None and getattr(usage, "prompt_tokens", None):
            result.prompt_tokens = int(usage.prompt_tokens)
            result.completion_tokens = int(usage.completion_tokens or 0)
            result.usage_source = "reply"
        else:
            result.completion_tokens = count_tokens(text or refusal or "", self.settings.model)
            result.usage_source = "tiktoken"
        return result

    # ------------------------------------------------------------------ batches
    def chat_batch(self, batch: Sequence[Messages], **kwargs: Any) -> list[ChatResult]:
        """Many calls, at most ``settings.concurrency`` at a time; results in input order."""
        if not batch:
            return []
        if self.settings.concurrency == 1 or len(batch) == 1:
            return [self.chat(m, **kwargs) for m in batch]
        with ThreadPoolExecutor(max_workers=self.settings.concurrency, thread_name_prefix="llm") as pool:
            return list(pool.map(lambda m: self.chat(m, **kwargs), batch))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
