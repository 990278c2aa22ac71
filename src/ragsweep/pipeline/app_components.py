"""The app's own components (its embedder, its LLM) kept as they are, with what ragsweep adds.

An app config declares Pathway components that call an endpoint (``OpenAIEmbedder``,
``LiteLLMEmbedder``, ``OpenAIChat``...). ragsweep builds and uses them unchanged; this module

- caches every vector the app's embedder computes on disk (``app_embeddings.sqlite``), keyed by
  the component (its class and the YAML arguments that decide the vectors) and the text. The
  vector comes back exactly as the embedder returned it (dtype and shape kept), so the cache
  cannot change what the app serves; an unchanged re-run makes 0 embedding calls;
- counts what went to the endpoint (calls, texts, tokens) for the manifest and the terminal;
- turns an endpoint failure (down, 401, 429 after retries, no key) into one
  :class:`AppComponentError` that names the component (``$embedder: OpenAIEmbedder``), the
  endpoint and what to do, in place of a Rust panic inside ``pw.run``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import io
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragsweep.pipeline.cache_files import SQLiteCacheFile, default_cache_dir

_SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, npy BLOB)",)
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
# arguments that change how a component calls, never what it computes
NOT_IDENTITY = frozenset({"capacity", "retry_strategy", "cache_strategy", "batch_size", "async_mode", "api_key"})


class AppComponentError(RuntimeError):
    """An app component could not do its work; the message names it, its endpoint and the fix."""


def endpoint_of(component: Any) -> str:
    """Where a component sends its requests: its own ``base_url``/``api_base``, else the
    ``OPENAI_BASE_URL`` the openai client reads, else OpenAI's."""
    kwargs = getattr(component, "kwargs", None) or {}
    client = getattr(component, "client", None)
    for value in (kwargs.get("base_url"), kwargs.get("api_base"), getattr(client, "base_url", None)):
        if value:
            return str(value).rstrip("/")
    return os.environ.get("OPENAI_BASE_URL", DEFAULT_OPENAI_URL).rstrip("/")


def _advice(err: BaseException) -> str:
    import openai

    if isinstance(err, openai.AuthenticationError) or "credentials" in str(err) or "api_key" in str(err):
        return "check the API key it uses (OPENAI_API_KEY, or the component's api_key)"
    if isinstance(err, openai.RateLimitError):
        return "the endpoint kept rate-limiting (429) after the retries: lower the component's capacity or retry later"
    if isinstance(err, (openai.APIConnectionError, openai.APITimeoutError, ConnectionError, TimeoutError)):
        return "is the endpoint up and reachable? (set OPENAI_BASE_URL, or the component's base_url/api_base)"
    return "see the error above; the run was stopped before any result was written from it"


def describe_failure(label: str, name: str, component: Any, err: BaseException) -> str:
    """One line: ``$embedder: OpenAIEmbedder at http://...: connection error ...; what to do``."""
    from ragsweep.llm.client import describe_error

    return f"{label}: {name} at {endpoint_of(component)}: {describe_error(err)}; {_advice(err)}"


class VectorCache:
    """Vectors on disk by key, each stored as an ``.npy`` blob: dtype and shape come back as stored."""

    def __init__(self, path: Path | None):
        self._db = SQLiteCacheFile(path, _SCHEMA, what="app embedding") if path is not None else None

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        if self._db is None or not keys:
            return {}

        def read(conn) -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                marks = ",".join("?" * len(part))
                for key, blob in conn.execute(f"SELECT key, npy FROM vectors WHERE key IN ({marks})", part):
                    try:
                        found[key] = np.load(io.BytesIO(blob), allow_pickle=False)
                    except (ValueError, OSError, EOFError):  # a damaged row is a miss
                        continue
            return found

        return self._db.run(read, default={}, action="read")

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        if self._db is None or not items:
            return
        rows = []
        for key, vector in items.items():
            buffer = io.BytesIO()
            np.save(buffer, np.asarray(vector), allow_pickle=False)
            rows.append((key, buffer.getvalue()))

        def write(conn) -> None:
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
            conn.commit()

        self._db.run(write, action="write")


class EmbedderUsage:
    """What an app embedder sent to its endpoint (texts from the cache are not counted)."""

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0
        self.tokens = 0

    def add(self, texts: list[str]) -> None:
        self.calls += 1
        self.texts += len(texts)
        self.tokens += sum(_count_tokens(t) for t in texts)


@functools.cache
def _encoding() -> Any:
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def _count_tokens(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


def is_app_embedder(embedder: Any) -> bool:
    """A Pathway embedder of the app's (not one of ragsweep's, which cache themselves)."""
    return embedder is not None and not hasattr(embedder, "embedded_count") and hasattr(embedder, "__wrapped__")


PROBE_TEXT = "."  # what Pathway itself embeds to learn a dimension


def check_endpoint(embedder: Any) -> None:
    """Embed one short text through an app embedder before ``pw.run`` (cached: one call ever per
    component), so an endpoint that is down, refuses the key or keeps rate-limiting is an
    :class:`AppComponentError` here, in Python, rather than a panic of Pathway's engine mid-run."""
    if not hasattr(embedder, "usage"):
        return
    result = embedder.__wrapped__([PROBE_TEXT])
    if asyncio.iscoroutine(result):
        asyncio.run(result)


def keep_and_cache(embedder: Any, label: str, identity: str, cache_dir: str | Path | None = None) -> None:
    """Put the vector cache, the counters and the error naming in front of ``embedder.__wrapped__``
    (and rebuild the UDF's function from it: Pathway wraps ``__wrapped__`` once, at construction)."""
    cached = _CachedEmbedding(
        embedder, label, identity, VectorCache(Path(cache_dir or default_cache_dir()) / "app_embeddings.sqlite")
    )
    original = embedder.__wrapped__
    if asyncio.iscoroutinefunction(original):

        @functools.wraps(original)  # Pathway reads the return type from the signature
        async def wrapped(inputs: Any, **kwargs: Any) -> Any:
            plan = cached.plan(inputs, kwargs)
            if plan.missing:
                plan.computed = await cached.guard(original(plan.request, **kwargs))
            return cached.finish(plan)

    else:

        @functools.wraps(original)
        def wrapped(inputs: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            plan = cached.plan(inputs, kwargs)
            if plan.missing:
                plan.computed = cached.guard_sync(lambda: original(plan.request, **kwargs))
            return cached.finish(plan)

    embedder.__wrapped__ = wrapped
    embedder.func = embedder._wrap_function()
    embedder.usage = cached.usage
    embedder.component = label
    embedder.embedded_count = 0
    embedder.seconds = 0.0
    embedder.on_progress = None


class _Plan:
    """One call: what was asked, what the cache holds, what goes to the endpoint."""

    def __init__(self, inputs: Any, keys: list[str], found: dict[str, Any], missing: list[str], request: Any):
        self.inputs, self.keys, self.found, self.missing, self.request = inputs, keys, found, missing, request
        self.computed: Any = None
        self.started = time.perf_counter()


class _CachedEmbedding:
    """The cache-then-call steps around one app embedder; its sync and async wrappers share them."""

    def __init__(self, embedder: Any, label: str, identity: str, cache: VectorCache):
        self.embedder, self.label, self.identity, self.cache = embedder, label, identity, cache
        self.usage = EmbedderUsage()
        self.lock = threading.Lock()

    def key(self, kind: str, text: str) -> str:
        return hashlib.sha256(f"{self.identity}\0{kind}\0{text}".encode()).hexdigest()

    def plan(self, inputs: Any, kwargs: dict[str, Any]) -> _Plan:
        if kwargs or not isinstance(inputs, (list, tuple, str)):  # per-row arguments: passed through, uncached
            return _Plan(inputs, [], {}, ["*"], inputs)
        if isinstance(inputs, str):  # the dimension probe: the embedder's answer for one str, kept as is
            keys = [self.key("probe-list", inputs), self.key("probe-array", inputs)]
            found = self.cache.get_many(keys)
            return _Plan(inputs, keys, found, [] if found else [inputs], inputs)
        texts = list(inputs)
        keys = [self.key("text", t) for t in texts]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in found))
        return _Plan(texts, keys, found, missing, missing)

    async def guard(self, pending: Any) -> Any:
        try:
            return await pending
        except Exception as err:
            raise AppComponentError(
                describe_failure(self.label, type(self.embedder).__name__, self.embedder, err)
            ) from err

    def guard_sync(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception as err:
            raise AppComponentError(
                describe_failure(self.label, type(self.embedder).__name__, self.embedder, err)
            ) from err

    def finish(self, plan: _Plan) -> Any:
        if not plan.keys:  # passed through
            return plan.computed
        if isinstance(plan.inputs, str):  # a list of vectors (OpenAIEmbedder's) or one vector, as returned
            list_key, array_key = plan.keys
            if plan.missing:
                self.usage.add(plan.missing)
                is_list = isinstance(plan.computed, list)
                self.cache.put_many({list_key if is_list else array_key: np.asarray(plan.computed)})
                return plan.computed
            return list(plan.found[list_key]) if list_key in plan.found else plan.found[array_key]
        if plan.missing:
            fresh = {self.key("text", t): np.asarray(v) for t, v in zip(plan.missing, plan.computed, strict=True)}
            with self.lock:
                self.usage.add(plan.missing)
                self.embedder.embedded_count += len(plan.missing)
            self.cache.put_many(fresh)
            plan.found.update(fresh)
        self.embedder.seconds += time.perf_counter() - plan.started
        if self.embedder.on_progress is not None:
            self.embedder.on_progress(len(plan.inputs))
        return [plan.found[k] for k in plan.keys]
