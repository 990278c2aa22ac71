"""A disk cache of endpoint replies, plugged under the openai client as an httpx transport.

Keyed by the request URL (so the base_url) and the canonical JSON body (model,
messages, temperature, max_tokens, response_format, ...). Headers are not part
of the key, so the api key never reaches the cache. Only successful replies
with a well-formed chat-completion / embeddings envelope are stored: errors,
429s, 5xx and malformed bodies are never cached, so a re-run retries them.

A reply served from the cache carries the header ``x-ragsweep-cache: hit``;
``LLMClient`` turns it into ``cached=True``. Any cache failure degrades to a
cache miss (a broken cache never fails a call).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path

import httpx

log = logging.getLogger(__name__)

CACHE_HEADER = "x-ragsweep-cache"
_CACHEABLE_SUFFIXES = ("/chat/completions", "/embeddings", "/completions")


def request_key(url: str, body: bytes) -> str | None:
    try:
        payload = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        return None
    canonical = json.dumps({"url": url, "body": payload}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _well_formed(path: str, content: bytes) -> bool:
    try:
        data = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return False
    if not isinstance(data, dict):
        return False
    if path.endswith("/embeddings"):
        return isinstance(data.get("data"), list) and bool(data["data"])
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    if isinstance(choices[0].get("text"), str):  # legacy /completions
        return True
    message = choices[0].get("message")
    return isinstance(message, dict) and isinstance(message.get("content"), str)


class ResponseCache:
    """sqlite file, thread-safe; ``get``/``put`` raw reply bodies by key."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, url TEXT, body BLOB, created REAL)"
            )
            conn.commit()
            self._conn = conn
        return self._conn

    def get(self, key: str) -> bytes | None:
        try:
            with self._lock:
                row = self._connect().execute("SELECT body FROM replies WHERE key=?", (key,)).fetchone()
        except (sqlite3.Error, OSError) as err:  # a broken cache is a miss
            log.warning("LLM cache read failed: %s", err)
            return None
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return bytes(row[0])

    def put(self, key: str, url: str, body: bytes) -> None:
        try:
            with self._lock:
                conn = self._connect()
                conn.execute(
                    "INSERT OR REPLACE INTO replies (key, url, body, created) VALUES (?, ?, ?, ?)",
                    (key, url, body, time.time()),
                )
                conn.commit()
        except (sqlite3.Error, OSError) as err:
            log.warning("LLM cache write failed: %s", err)

    def __len__(self) -> int:
        with self._lock:
            return self._connect().execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


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


class CachingTransport(httpx.BaseTransport):
    def __init__(self, cache: ResponseCache, inner: httpx.BaseTransport | None = None):
        self.cache = cache
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        key = request_key(str(request.url), request.read()) if _cacheable(request) else None
        if key is not None:
            body = self.cache.get(key)
            if body is not None:
                return _hit_response(request, body)
        response = self.inner.handle_request(request)
        if key is not None and response.status_code == 200:
            content = response.read()
            if _well_formed(request.url.path, content):
                self.cache.put(key, str(request.url), content)
        return response

    def close(self) -> None:
        self.inner.close()


class AsyncCachingTransport(httpx.AsyncBaseTransport):
    def __init__(self, cache: ResponseCache, inner: httpx.AsyncBaseTransport | None = None):
        self.cache = cache
        self.inner = inner or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        key = request_key(str(request.url), await request.aread()) if _cacheable(request) else None
        if key is not None:
            body = self.cache.get(key)
            if body is not None:
                return _hit_response(request, body)
        response = await self.inner.handle_async_request(request)
        if key is not None and response.status_code == 200:
            content = await response.aread()
            if _well_formed(request.url.path, content):
                self.cache.put(key, str(request.url), content)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
