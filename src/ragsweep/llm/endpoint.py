"""What the client does about an endpoint that is slow, overloaded or sends too much.

One httpx transport under the openai client (and under the reply cache, so cache hits pass
neither the limit nor the cap), :class:`EndpointTransport`:

- **Bounded replies.** A chat reply is read (decoded) up to ``max_reply_bytes``; a bigger one
  is never read further: the transport answers for it with a 502 carrying ``x-should-retry: false``
  (the openai client obeys it: an oversized reply is the endpoint's, asking again gets the same)
  and :data:`ERROR_HEADER`, which :func:`ragsweep.llm.errors.describe_error` names. Being no 200,
  it is never cached. Embedding replies are not capped: their size follows the request.
- **Adaptive concurrency.** Every attempt to reach the endpoint (the openai client's retries
  included) takes a slot of the client's :class:`AdaptiveLimit`, an AIMD limit as TCP's
  congestion window: it starts at one call in flight, grows by one per quick success up to the
  first congestion (slow start), then by one per window of quick successes, up to
  ``settings.concurrency``; a timeout, a 429 or a 503 halves it (once per window: the attempts
  sent before a cut do not cut again). Quick: within a quarter of the timeout, so that a call
  four times as slow would still arrive. A server that answers one request at a time so gets
  about as many as it can answer within the timeout, and no queue of calls that time out.
- **No retries against nobody.** A refused connection or a host name that does not resolve is tried
  once more after half a second, then answered with a 502 carrying ``x-should-retry: false`` and
  :data:`ERROR_HEADER` ``unreachable`` (:func:`ragsweep.llm.errors.describe_error` names it, and the
  client ends the run): the openai client's retries would wait a minute per call for the same refusal.
- **Timeouts that back off.** The openai client retries a timeout after a short sleep (0.5 s x 2^n,
  up to 8 s; ``Retry-After`` honoured), with the same timeout: against an endpoint that needs
  longer than the timeout for one call, every attempt fails the same way. Here attempt n (its
  ``x-stainless-retry-count``) waits ``timeout x 2^n`` for the reply, at most
  :data:`MAX_TIMEOUT_FACTOR` x (as TCP backs off its retransmission timeout); connecting keeps
  the plain timeout, so an endpoint that is down fails as fast as before.

Waiting for a slot happens before the request is sent, so it never counts against the timeout;
the openai client's retries and their sleeps are its own, not repeated here.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import httpx

from ragsweep.core.environment import proxy_configured
from ragsweep.core.reachability import RETRY_S, unreachable
from ragsweep.llm.call_stats import EndpointStats
from ragsweep.llm.errors import ERROR_HEADER, MAX_TIMEOUT_FACTOR, OVERSIZED, UNREACHABLE

UNREACHABLE_RETRY_S = RETRY_S  # one short second try (a server restarting), not the openai client's backoff
QUICK_SHARE = 0.25  # a success within this share of the timeout is quick
RETRY_HEADER = "x-stainless-retry-count"  # the openai client's count of the attempts before this one
_CONGESTION = {429: "rate_limited", 503: "unavailable"}
_CAPPED_SUFFIXES = ("/chat/completions", "/completions")


class AdaptiveLimit:
    """How many calls may be in flight at once (AIMD; see the module docstring). Thread-safe."""

    def __init__(self, ceiling: int, timeout: float):
        self.ceiling = max(1, int(ceiling))
        self.quick_s = timeout * QUICK_SHARE
        self._limit = 1.0
        self._threshold = float(self.ceiling)  # slow start grows by one per success up to here
        self._epoch = 0  # bumped by each cut: attempts sent before it do not cut again
        self._in_flight = 0
        self._cond = threading.Condition()
        self.stats = EndpointStats(limit_high=1, limit_end=1, ceiling=self.ceiling)

    @property
    def limit(self) -> int:
        return max(1, min(self.ceiling, int(self._limit)))

    @contextmanager
    def slot(self) -> Iterator[int]:
        """Wait for room, hold it for one attempt; yields the epoch the attempt was sent in."""
        with self._cond:
            self._cond.wait_for(lambda: self._in_flight < self.limit)
            self._in_flight += 1
            self.stats.attempts += 1
            epoch = self._epoch
        try:
            yield epoch
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    def succeeded(self, seconds: float) -> None:
        if seconds > self.quick_s:
            return  # slow but fine: no more, no fewer
        with self._cond:
            step = 1.0 if self._limit < self._threshold else 1.0 / self._limit
            self._limit = min(float(self.ceiling), self._limit + step)
            self._settled()

    def congested(self, kind: str, epoch: int) -> None:
        """A timeout or an overloaded reply: half as many calls in flight (once per window)."""
        with self._cond:
            if kind == "timeout":
                self.stats.timeouts += 1
            else:
                self.stats.rate_limited += 1
            if epoch == self._epoch:
                self._epoch += 1
                self._threshold = max(1.0, self._limit / 2)
                self.stats.cuts += int(self._threshold < self._limit)  # one call in flight has no half
                self._limit = self._threshold
                self._settled()

    def oversized(self) -> None:
        with self._cond:
            self.stats.oversized += 1

    def _settled(self) -> None:
        self.stats.limit_end = self.limit
        self.stats.limit_high = max(self.stats.limit_high, self.limit)
        self._cond.notify_all()


def backed_off(request: httpx.Request) -> None:
    """Give a retry (see the module docstring) longer to read its reply: ``timeout x 2^retries``."""
    retries = request.headers.get(RETRY_HEADER, "0")
    factor = min(MAX_TIMEOUT_FACTOR, 2 ** int(retries)) if retries.isdigit() else 1
    timeout = request.extensions.get("timeout")
    if factor > 1 and isinstance(timeout, dict):
        scaled = {k: (v * factor if k in ("read", "write") and v is not None else v) for k, v in timeout.items()}
        request.extensions = {**request.extensions, "timeout": scaled}


def _capped(request: httpx.Request) -> bool:
    return request.url.path.endswith(_CAPPED_SUFFIXES)


def _declared_over(response: httpx.Response, cap: int | None) -> bool:
    """The reply says it is bigger than the cap (a compressed one's length says nothing of its text)."""
    declared = response.headers.get("content-length", "")
    return cap is not None and declared.isdigit() and int(declared) > cap and "content-encoding" not in response.headers


def read_capped(response: httpx.Response, cap: int | None) -> bytes | None:
    """The decoded body, or None when it passes ``cap`` bytes (then not read further)."""
    if _declared_over(response, cap):
        return None
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if cap is not None and size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def error_response(request: httpx.Request, kind: str, message: str) -> httpx.Response:
    """The transport's own answer for a reply it did not read to its end or an endpoint it could not
    reach: asking again gets the same, so the openai client is told not to retry (``x-should-retry``)."""
    return httpx.Response(
        502,
        headers={"content-type": "application/json", "x-should-retry": "false", ERROR_HEADER: kind},
        content=json.dumps({"error": {"message": message, "type": kind}}).encode(),
        request=request,
    )


def oversized_response(request: httpx.Request, cap: int) -> httpx.Response:
    message = f"the endpoint's reply passed {cap} bytes (llm_max_reply_bytes) and was not read further"
    return error_response(request, OVERSIZED, message)


def unreachable_response(request: httpx.Request, err: httpx.ConnectError) -> httpx.Response:
    """Nothing listens at the endpoint or its name does not resolve."""
    message = f"cannot connect to {request.url.scheme}://{request.url.netloc.decode()}: {err}"
    return error_response(request, UNREACHABLE, message)


def send_or_unreachable(send: Callable[[httpx.Request], httpx.Response], request: httpx.Request) -> httpx.Response:
    """``send(request)``; a refused connection or an unknown host is tried once more after
    :data:`UNREACHABLE_RETRY_S`, then answered by :func:`unreachable_response`."""
    try:
        return send(request)
    except httpx.ConnectError:
        time.sleep(UNREACHABLE_RETRY_S)
    try:
        return send(request)
    except httpx.ConnectError as err:
        return unreachable_response(request, err)


async def asend_or_unreachable(
    send: Callable[[httpx.Request], Awaitable[httpx.Response]], request: httpx.Request
) -> httpx.Response:
    """:func:`send_or_unreachable` for the async transports."""
    try:
        return await send(request)
    except httpx.ConnectError:
        await asyncio.sleep(UNREACHABLE_RETRY_S)
    try:
        return await send(request)
    except httpx.ConnectError as err:
        return unreachable_response(request, err)


def unreachable_reason(base_url: str, timeout: float = 3.0) -> str | None:
    """Why nothing can be sent to ``base_url``: its host does not resolve, or nothing listens at its port
    (:func:`ragsweep.core.reachability.unreachable`). None when a connection opens, when it only times out
    (slow is not down: the client's retries are for that) or behind a proxy."""
    if proxy_configured():
        return None
    url = httpx.URL(base_url)
    return unreachable(url.host, url.port or (443 if url.scheme == "https" else 80), timeout)


def _read_response(response: httpx.Response, request: httpx.Request, cap: int | None) -> httpx.Response:
    """The same response with its body read in (decoded: the headers saying otherwise dropped)."""
    try:
        body = read_capped(response, cap)
    finally:
        response.close()
    if body is None:
        assert cap is not None
        return oversized_response(request, cap)
    return _with_body(response, request, body)


def _with_body(response: httpx.Response, request: httpx.Request, body: bytes) -> httpx.Response:
    headers = [
        (k, v) for k, v in response.headers.multi_items() if k.lower() not in ("content-encoding", "content-length")
    ]
    return httpx.Response(
        response.status_code, headers=headers, content=body, request=request, extensions=response.extensions
    )


class EndpointTransport(httpx.BaseTransport):
    """Each POST through the limit, each chat reply through the cap (see the module docstring)."""

    def __init__(self, limit: AdaptiveLimit, max_reply_bytes: int, inner: httpx.BaseTransport | None = None):
        self.limit = limit
        self.max_reply_bytes = max_reply_bytes
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "POST":
            return self.inner.handle_request(request)
        cap = self.max_reply_bytes if _capped(request) else None
        backed_off(request)
        with self.limit.slot() as epoch:
            started = time.monotonic()
            try:
                response = _read_response(send_or_unreachable(self.inner.handle_request, request), request, cap)
            except httpx.TimeoutException:
                self.limit.congested("timeout", epoch)
                raise
            seconds = time.monotonic() - started
        if response.headers.get(ERROR_HEADER) == OVERSIZED:
            self.limit.oversized()
        elif response.status_code in _CONGESTION:
            self.limit.congested(_CONGESTION[response.status_code], epoch)
        elif response.status_code == 200:
            self.limit.succeeded(seconds)
        return response

    def close(self) -> None:
        self.inner.close()


class AsyncEndpointTransport(httpx.AsyncBaseTransport):
    """The cap and the retries' longer timeouts, for the async clients (ragas, an app's answerer),
    without the limit: they bound their own concurrency."""

    def __init__(self, max_reply_bytes: int, inner: httpx.AsyncBaseTransport | None = None):
        self.max_reply_bytes = max_reply_bytes
        self.inner = inner or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            backed_off(request)
        response = await asend_or_unreachable(self.inner.handle_async_request, request)
        if request.method != "POST" or not _capped(request):
            return response
        try:
            body = await _aread_capped(response, self.max_reply_bytes)
        finally:
            await response.aclose()
        if body is None:
            return oversized_response(request, self.max_reply_bytes)
        return _with_body(response, request, body)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _aread_capped(response: httpx.Response, cap: int) -> bytes | None:
    if _declared_over(response, cap):
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
