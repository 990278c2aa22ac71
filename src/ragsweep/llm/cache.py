"""A disk cache of endpoint replies, plugged under the openai client as an httpx transport.

Keyed by the request URL (so the base_url) and the canonical JSON body (model,
messages, temperature, max_tokens, response_format, ...). Headers are not part
of the key, so the api key never reaches the cache. Only successful replies
with a well-formed chat-completion / embeddings envelope are stored: errors,
429s, 5xx and malformed bodies are never cached, so a re-run retries them. Nor is a
chat reply over the client's ``max_reply_bytes`` (the transport under this one answers
for it with an error; a body that big stored by an older ragsweep is a miss).

A reply served from the cache carries the header ``x-ragsweep-cache: hit``;
``LLMClient`` turns it into ``cached=True``. Any cache failure degrades to a
cache miss (a broken cache never fails a call); a corrupt cache file is moved aside
and rebuilt (:mod:`ragsweep.core.cache_files`). A stored body that is not a well-formed
reply any more is a miss too.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from ragsweep.core.cache_files import SQLiteCacheFile
from ragsweep.core.keys import cache_key

log = logging.getLogger(__name__)

_SCHEMA = ("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, url TEXT, body BLOB, created REAL)",)

CACHE_HEADER = "x-ragsweep-cache"
_CACHEABLE_SUFFIXES = ("/chat/completions", "/embeddings", "/completions")


def request_key(url: str, body: bytes) -> str | None:
    try:
        payload = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        return None
    return cache_key("llm-reply", url, payload)


def _well_formed(path: str, content: bytes, max_bytes: int | None = None) -> bool:
    if max_bytes is not None and len(content) > max_bytes and not path.endswith("/embeddings"):
        return False  # an oversized chat reply: never kept, never served (its text would stall a run)
    try:
        data = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return False
    if path.endswith("/embeddings"):
        match data:
            case {"data": [_, *_]}:
                return True
        return False
    match data:
        case {"choices": [{"text": str()}, *_]}:  # legacy /completions
            return True
        # text, or OpenAI's refusal shape (content null, refusal set): a reply worth keeping
        case {"choices": [{"message": {"content": str()}}, *_]} | {"choices": [{"message": {"refusal": str()}}, *_]}:
            return True
    return False


class ResponseCache:
    """sqlite file, thread-safe; ``get``/``put`` raw reply bodies by key.

    The file heals itself (:class:`~ragsweep.core.cache_files.SQLiteCacheFile`): a
    truncated, garbled or non-SQLite file, found on open or mid-run, is moved aside as
    ``responses.sqlite.corrupt-<timestamp>`` with a warning naming it, and a fresh
    cache takes its place. Any other failure is a miss (reads) or a skipped write.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = SQLiteCacheFile(self.path, _SCHEMA, what="LLM reply")
        self.hits = 0
        self.misses = 0

    def get(self, key: str, valid: Callable[[bytes], bool] | None = None) -> bytes | None:
        """The stored body, or ``None`` (a miss) when absent, damaged or rejected by ``valid``."""
        row = self._db.run(
            lambda conn: conn.execute("SELECT body FROM replies WHERE key=?", (key,)).fetchone(),
            action="read",
        )
        body = row[0] if row is not None else None
        if isinstance(body, str):
            body = body.encode()
        if isinstance(body, (bytearray, memoryview)):
            body = bytes(body)
        if not isinstance(body, bytes) or (valid is not None and not valid(body)):  # absent or damaged
            self.misses += 1
            return None
        self.hits += 1
        return body

    def put(self, key: str, url: str, body: bytes) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO replies (key, url, body, created) VALUES (?, ?, ?, ?)",
                (key, url, body, time.time()),
            )
            conn.commit()

        self._db.run(write, action="write")

    def __len__(self) -> int:
        return int(
            self._db.run(
                lambda conn: conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0], default=0, action="count"
            )
        )

    def __bool__(self) -> bool:  # a cache object is truthy, empty or not (and without a query)
        return True

    def close(self) -> None:
        self._db.close()


_CACHES: dict[str, ResponseCache] = {}
_CACHES_LOCK = threading.Lock()


def shared_cache(path: str | Path) -> ResponseCache:
    """One ResponseCache object per file in this process."""
    key = str(Path(path).resolve())
    with _CACHES_LOCK:
        if key not in _CACHES:
            _CACHES[key] = ResponseCache(key)
        return _CACHES[key]


def _cacheable(request: httpx.Request) -> bool:
    return request.method == "POST" and request.url.path.endswith(_CACHEABLE_SUFFIXES)


def _hit_response(request: httpx.Request, body: bytes) -> httpx.Response:
    return httpx.Response(
        200,
        headers={"content-type": "application/json", CACHE_HEADER: "hit"},
        content=body,
        request=request,
    )


def _cached_reply(
    cache: ResponseCache, request: httpx.Request, key: str | None, valid: Callable[[bytes], bool]
) -> httpx.Response | None:
    """The stored reply to ``request`` (None: not a cacheable request, or a miss)."""
    body = cache.get(key, valid=valid) if key is not None else None
    return _hit_response(request, body) if body is not None else None


class CachingTransport(httpx.BaseTransport):
    def __init__(
        self, cache: ResponseCache, inner: httpx.BaseTransport | None = None, max_body_bytes: int | None = None
    ):
        self.cache = cache
        self.inner = inner or httpx.HTTPTransport()
        self.max_body_bytes = max_body_bytes

    def _valid(self, request: httpx.Request) -> Callable[[bytes], bool]:
        return lambda body: _well_formed(request.url.path, body, self.max_body_bytes)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        key = request_key(str(request.url), request.read()) if _cacheable(request) else None
        if (hit := _cached_reply(self.cache, request, key, self._valid(request))) is not None:
            return hit
        response = self.inner.handle_request(request)
        if key is not None and response.status_code == 200:
            content = response.read()
            if self._valid(request)(content):
                self.cache.put(key, str(request.url), content)
        return response

    def close(self) -> None:
        self.inner.close()


class AsyncCachingTransport(httpx.AsyncBaseTransport):
    def __init__(
        self, cache: ResponseCache, inner: httpx.AsyncBaseTransport | None = None, max_body_bytes: int | None = None
    ):
        self.cache = cache
        self.inner = inner or httpx.AsyncHTTPTransport()
        self.max_body_bytes = max_body_bytes

    def _valid(self, request: httpx.Request) -> Callable[[bytes], bool]:
        return lambda body: _well_formed(request.url.path, body, self.max_body_bytes)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        key = request_key(str(request.url), await request.aread()) if _cacheable(request) else None
        if (hit := _cached_reply(self.cache, request, key, self._valid(request))) is not None:
            return hit
        response = await self.inner.handle_async_request(request)
        if key is not None and response.status_code == 200:
            content = await response.aread()
            if self._valid(request)(content):
                self.cache.put(key, str(request.url), content)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
