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
  endpoint and what to do, in place of a Rust panic inside ``pw.run``;
- checks every vector where it enters (NaN, infinite, all-zero, empty, not the index's width)
  before it is cached, and the embedder's width against each KNN index's before any chunk is
  embedded (:func:`check_endpoint`);
- ends a run in which Pathway's engine reported an error with one :class:`EngineError`
  (:func:`run_with`): no list of a broken index is scored or cached.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import logging
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, TypeVar, cast

from pydantic import BaseModel

from ragsweep.core import environment
from ragsweep.core.cache_files import SQLiteCacheFile, default_cache_dir, rows_for_keys
from ragsweep.core.errors import EngineError, StageError, VectorError
from ragsweep.core.keys import cache_key
from ragsweep.cost.calls import cost_text
from ragsweep.llm.errors import describe_error
from ragsweep.pipeline.arguments import ComponentArguments

if TYPE_CHECKING:
    import numpy as np
    import tiktoken

# numpy and the endpoint probe (with httpx) are imported where a component works: a run
# whose every list comes from the caches reads this module's records and needs none of them

_SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, npy BLOB)",)
# arguments that change how a component calls, never what it computes
NOT_IDENTITY = frozenset({"capacity", "retry_strategy", "cache_strategy", "batch_size", "async_mode", "api_key"})


class AppComponentError(RuntimeError):
    """An app component could not do its work; the message names it, its endpoint and the fix."""


def endpoint_of(component: object) -> str:
    """Where a component sends its requests: its own ``base_url``/``api_base``, else the
    ``OPENAI_BASE_URL`` the openai client reads, else OpenAI's."""
    given = ComponentArguments.of(getattr(component, "kwargs", None) or {})
    client = getattr(component, "client", None)
    for value in (given.base_url, given.api_base, getattr(client, "base_url", None)):
        if value:
            return str(value).rstrip("/")
    return environment.openai_base_url().rstrip("/")


def _advice(err: BaseException) -> str:
    import openai

    if isinstance(err, openai.RateLimitError):
        return "the endpoint kept rate-limiting (429) after the retries: lower the component's capacity or retry later"
    if isinstance(err, openai.AuthenticationError) or "credentials" in str(err) or "api_key" in str(err):
        return "check the API key it uses (OPENAI_API_KEY, or the component's api_key)"
    if isinstance(err, (openai.APIConnectionError, openai.APITimeoutError, ConnectionError, TimeoutError)):
        return "is the endpoint up and reachable? (set OPENAI_BASE_URL, or the component's base_url/api_base)"
    return "the error is the component's own, as its endpoint gave it"


def describe_failure(label: str, name: str, component: object, err: BaseException) -> str:
    """One line: ``$embedder: OpenAIEmbedder at http://...: connection error ...; what to do``."""
    return f"{label}: {name} at {endpoint_of(component)}: {describe_error(err)}; {_advice(err)}"


class VectorCache:
    """Vectors on disk by key, each stored as an ``.npy`` blob: dtype and shape come back as stored."""

    def __init__(self, path: Path | None):
        self._db = SQLiteCacheFile(path, _SCHEMA, what="app embedding") if path is not None else None

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        if self._db is None or not keys:
            return {}

        import numpy as np

        def read(conn) -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            for key, blob in rows_for_keys(conn, "SELECT key, npy FROM vectors", keys):
                try:
                    found[key] = np.load(io.BytesIO(blob), allow_pickle=False)
                except (ValueError, OSError, EOFError):  # a damaged row is a miss
                    continue
            return found

        return self._db.run(read, default={}, action="read")

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        if self._db is None or not items:
            return
        import numpy as np

        rows = []
        for key, vector in items.items():
            buffer = io.BytesIO()
            np.save(buffer, np.asarray(vector), allow_pickle=False)
            rows.append((key, buffer.getvalue()))

        def write(conn) -> None:
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
            conn.commit()

        self._db.run(write, action="write")


class EmbedderUsage(BaseModel):
    """What an app embedder sent to its endpoint (texts from the cache are not counted); tokens
    by tiktoken's cl100k_base, the encoding of OpenAI's embedding models."""

    component: str
    calls: int = 0
    texts: int = 0
    tokens: int = 0

    def add(self, texts: list[str]) -> None:
        tokens = sum(_count_tokens(t) for t in texts)
        with _USAGE_LOCK:
            self.calls += 1
            self.texts += len(texts)
            self.tokens += tokens


# one per component and identity, for the whole process: each build of a pipeline constructs the
# embedder anew, and a run adds up what all of them sent
_USAGE: dict[str, EmbedderUsage] = {}
_USAGE_LOCK = threading.Lock()


def usage_of(label: str, identity: str) -> EmbedderUsage:
    with _USAGE_LOCK:
        return _USAGE.setdefault(identity, EmbedderUsage(component=label))


def embedding_usage() -> dict[str, EmbedderUsage]:
    """A copy of what every app embedder of this process has sent so far, by identity."""
    with _USAGE_LOCK:
        return {k: v.model_copy() for k, v in _USAGE.items()}


EMBEDDING_NO_PRICE = "no price set ($embedding_price_per_1k: USD per 1,000 tokens)"


class EmbeddingSpend(BaseModel):
    """What the app's embedders sent to their endpoints during one run."""

    components: list[str]
    calls: int = 0
    texts: int = 0
    tokens: int = 0
    cost_usd: float | None = None  # None: no $embedding_price_per_1k given


class LLMSpend(BaseModel):
    """What the app's question answerer's LLM calls cost during one run (disk-cache hits are free)."""

    answerer: str
    model: str
    calls: int = 0
    from_cache: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None: no $llm_price_per_1k_prompt / _completion set


class Spent(BaseModel):
    """A run's calls to the app's endpoints: the manifest's ``spent`` and lines of the terminal summary."""

    embeddings: EmbeddingSpend | None = None
    app_llm: LLMSpend | None = None

    def lines(self) -> list[str]:
        out = []
        if self.embeddings is not None:
            e = self.embeddings
            cost = EMBEDDING_NO_PRICE if e.cost_usd is None else f"${e.cost_usd:.4f}"
            out.append(
                f"embeddings ({', '.join(e.components)}): {e.calls} call(s), {e.texts} text(s), "
                f"{e.tokens} token(s) sent; {cost} (vectors already cached cost nothing)"
            )
        if self.app_llm is not None:
            a = self.app_llm
            out.append(
                f"LLM ({a.answerer}, {a.model}): {a.calls} call(s), {a.from_cache} from ragsweep's cache, "
                f"{a.errors} failed; {a.prompt_tokens} prompt + {a.completion_tokens} completion tokens; {cost_text(a.cost_usd)}"
            )
        return out


def usage_since(before: dict[str, EmbedderUsage], price_per_1k: float | None = None) -> EmbeddingSpend | None:
    """What the app's embedders sent since ``before`` (None when the pipeline has no app embedder)."""
    now = embedding_usage()
    if not now:
        return None
    spent = EmbeddingSpend(components=sorted({u.component for u in now.values()}))
    for key, usage in now.items():
        old = before.get(key) or EmbedderUsage(component=usage.component)
        spent.calls += usage.calls - old.calls
        spent.texts += usage.texts - old.texts
        spent.tokens += usage.tokens - old.tokens
    if price_per_1k is not None:
        spent.cost_usd = round(spent.tokens / 1000 * price_per_1k, 6)
    return spent


@functools.cache
def _encoding() -> tiktoken.Encoding:
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def _count_tokens(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


class KeptEmbedder(Protocol):
    """An app embedder once :func:`keep_and_cache` has put the cache and the counters in front of it."""

    __wrapped__: Callable[..., Any]
    failure: AppComponentError | None  # the first failure of the run, raised after ``pw.run``
    usage: EmbedderUsage
    component: str  # its label, as the manifest names it
    embedded_count: int
    seconds: float
    on_progress: Callable[[int], object] | None
    expected_width: int | None  # the index's width once checked (None: each batch's most common)

    def not_cached(self, texts: list[str]) -> list[str]: ...

    def cached_vector(self, text: str) -> np.ndarray | None: ...


def is_kept(embedder: object) -> TypeGuard[KeptEmbedder]:
    """An app embedder :func:`keep_and_cache` has wrapped (ragsweep's own carry no ``usage``)."""
    return hasattr(embedder, "usage")


def is_app_embedder(embedder: object) -> bool:
    """A Pathway embedder of the app's (not one of ragsweep's, which cache themselves)."""
    return embedder is not None and not hasattr(embedder, "embedded_count") and hasattr(embedder, "__wrapped__")


PROBE_TEXT = "."  # what Pathway itself embeds to learn a dimension


def check_endpoint(embedder: object, retriever_factory: object = None) -> None:
    """Embed one short text through an app embedder before ``pw.run`` (cached: one call ever per
    component), so an endpoint that is down, refuses the key, keeps rate-limiting or returns broken
    vectors is an :class:`AppComponentError` here, in Python, rather than a panic of Pathway's engine
    mid-run; then, given the retriever factory, the embedder's width against each KNN index's
    (:func:`check_vectors_fit`)."""
    if is_kept(embedder) and embedder.not_cached([PROBE_TEXT]):
        from ragsweep.llm.endpoint import unreachable_reason  # deferred: httpx

        if (reason := unreachable_reason(endpoint_of(embedder))) is not None:  # not the client's minute of retries
            failure = describe_failure(embedder.component, type(embedder).__name__, embedder, ConnectionError(reason))
            raise AppComponentError(failure)
        _embed_probe(embedder)
    if retriever_factory is not None:
        check_vectors_fit(embedder, retriever_factory)


def _embed_probe(embedder: KeptEmbedder) -> list[Any]:
    """The app embedder's vectors of ``[PROBE_TEXT]``, through its cache."""
    client = getattr(embedder, "client", None)
    result = embedder.__wrapped__([PROBE_TEXT])
    if asyncio.iscoroutine(result):
        result = asyncio.run(result)
        if hasattr(embedder, "client"):  # made on this probe's event loop, which is closed now: Pathway's makes its own
            setattr(embedder, "client", client)  # noqa: B010 (an attribute KeptEmbedder does not declare)
    return list(result)


def knn_factories(factory: object) -> list[Any]:
    """The KNN index factories inside a retriever factory (a hybrid's parts, a wrapper's inner one)."""
    from pathway.stdlib.indexing.nearest_neighbors import KnnIndexFactory

    if isinstance(factory, KnnIndexFactory):
        return [factory]
    children = [*(getattr(factory, "retriever_factories", None) or []), getattr(factory, "inner", None)]
    return [knn for child in children if child is not None for knn in knn_factories(child)]


def output_width(embedder: object) -> int:
    """How wide the vectors an embedder returns are: an app embedder's probe vector (cached), else what
    ragsweep's own embedder says of its model."""
    if is_kept(embedder):
        import numpy as np

        # from the cache where it is (no event loop of its own: a notebook's may be running)
        vector = embedder.cached_vector(PROBE_TEXT)
        return int(np.asarray(vector if vector is not None else _embed_probe(embedder)[0]).size)
    return int(cast(Any, embedder).get_embedding_dimension())


def check_vectors_fit(embedder: object, retriever_factory: object) -> None:
    """Each KNN index's width against the vectors of the embedder it indexes with, before any chunk is
    embedded: a USearch index (whose engine refuses a vector of another width, row by row) that does not
    fit is a :class:`VectorError` naming both widths and what sets each. Each embedder checked is told
    its width, so a later vector of another width is refused where it enters."""
    from pathway.stdlib.indexing.nearest_neighbors import UsearchKnnFactory

    for factory in knn_factories(retriever_factory):
        used = factory.embedder if factory.embedder is not None else embedder
        enforced = isinstance(factory, UsearchKnnFactory)
        if used is None or not (enforced or is_kept(used)):  # ragsweep's own: its model is not loaded for it
            continue
        width = output_width(used)
        if enforced and factory.dimensions != width:
            raise VectorError(_width_message(used, width, factory))
        setattr(used, "expected_width", width)  # noqa: B010 (Pathway's embedder classes do not declare it)


def _embedder_name(embedder: object) -> str:
    """``$embedder: OpenAIEmbedder(text-embedding-3-small)``, or ``embedder ...`` for ragsweep's own."""
    given = ComponentArguments.of(getattr(embedder, "kwargs", None) or {})
    model = getattr(embedder, "model_name", None) or given.model
    label = getattr(embedder, "component", None)
    name = type(embedder).__name__ + (f"({model})" if model else "")
    return f"{label}: {name}" if label else f"embedder {name}"


def _width_message(embedder: object, width: int, factory: Any) -> str:
    from pathway.xpacks.llm.embedders import OPENAI_EMBEDDERS_DIMENSIONS

    given = ComponentArguments.of(getattr(embedder, "kwargs", None) or {})
    model = given.model
    if model in OPENAI_EMBEDDERS_DIMENSIONS and given.dimensions is None:
        source = (
            f"its dimensions; where the YAML gives none, Pathway takes {factory.dimensions} from the model name {model}"
        )
    else:
        source = f"its dimensions: {factory.dimensions}"
    return (
        f"{_embedder_name(embedder)} returns vectors {width} wide, but its {type(factory).__name__} expects "
        f"{factory.dimensions} ({source}): give the index dimensions: {width}, or use an embedder (model, "
        f"endpoint) whose vectors are {factory.dimensions} wide"
    )


def estimate_embeddings(
    embedder: object, chunks: list[str], questions: list[str], price_per_1k: float | None
) -> EmbeddingSpend | None:
    """What embedding ``chunks`` and ``questions`` through an app embedder would send, without a call:
    the texts its vector cache lacks (each once), their tokens, and its calls: the probe of
    :func:`check_endpoint` when that is not cached either, then batches of its batch size, the chunks'
    and the questions' apart (the index embeds the chunks, the queries' run the questions)."""
    if not is_kept(embedder):
        return None
    missing = embedder.not_cached(list(dict.fromkeys([PROBE_TEXT, *chunks, *questions])))
    batch = int(getattr(embedder, "max_batch_size", None) or 1)
    chunk_texts = set(chunks)
    new_chunks = [t for t in missing if t in chunk_texts and t != PROBE_TEXT]
    new_questions = [t for t in missing if t not in chunk_texts and t != PROBE_TEXT]
    spend = EmbeddingSpend(
        components=[embedder.component],
        calls=int(PROBE_TEXT in missing) + -(-len(new_chunks) // batch) + -(-len(new_questions) // batch),
        texts=len(missing),
        tokens=sum(_count_tokens(t) for t in missing),
    )
    if price_per_1k is not None:
        spend.cost_usd = round(spend.tokens / 1000 * price_per_1k, 6)
    return spend


class _DropComponentErrors(logging.Filter):
    """Once an embedder has failed, Pathway's engine logs every row that failure reached (the row
    itself, each operator it flows into): the run ends with one message instead."""

    def __init__(self, embedder: object):
        super().__init__()
        self.embedder = embedder

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name.startswith("pathway_engine") and getattr(self.embedder, "failure", None) is not None)


class _EngineErrors(logging.Handler):
    """The error records of Pathway's engine during one run (each row an operator failed on): kept
    here, and kept off the terminal, where the run's one message replaces them."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.count = 0
        self.first: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if self.first is None:
            self.first = " ".join(record.getMessage().split())


def _hide_engine_errors(record: logging.LogRecord) -> bool:
    """A filter for the root's handlers while :class:`_EngineErrors` keeps the engine's error records."""
    return not (record.name.startswith("pathway_engine") and record.levelno >= logging.ERROR)


def factory_name(factory: object) -> str:
    """``HybridIndexFactory(BruteForceKnnFactory, TantivyBM25Factory)``: a retriever factory and its parts."""
    parts = [*(getattr(factory, "retriever_factories", None) or []), getattr(factory, "inner", None)]
    inner = ", ".join(factory_name(p) for p in parts if p is not None)
    return type(factory).__name__ + (f"({inner})" if inner else "")


def _engine_failure(errors: _EngineErrors, retriever_factory: object, err: BaseException | None = None) -> EngineError:
    what = f" ({factory_name(retriever_factory)})" if retriever_factory is not None else ""
    message = errors.first if err is None else describe_error(err)
    return EngineError(
        f"Pathway's engine reported {max(errors.count, 1)} error(s) while indexing or answering{what}: {message}; "
        "no list of this run was scored or cached"
    )


def _stage_error_in(err: BaseException) -> StageError | None:
    """A ragsweep error a UDF raised (a broken vector), found in the chain Pathway's run raised."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if isinstance(current, StageError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


@contextlib.contextmanager
def run_with(embedder: object, retriever_factory: object = None) -> Iterator[dict[str, bool]]:
    """Around a ``pw.run``: the run's options (a failing row is logged by the engine, not a panic of it)
    and, after it, the first failure raised as one line: the embedder's (an app's
    :class:`AppComponentError`, a broken vector of ragsweep's own :class:`VectorError`), else any error
    Pathway's engine reported (:class:`EngineError`, naming ``retriever_factory``): a run the engine
    failed in is never taken as whole, and its lists are neither scored nor cached."""
    if embedder is not None:
        setattr(embedder, "failure", None)  # noqa: B010 (set on ragsweep's own embedders too)
    errors = _EngineErrors()
    engine_log = logging.getLogger("pathway_engine")
    engine_log.addHandler(errors)
    drop = _DropComponentErrors(embedder)
    engine_log.addFilter(drop)
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(drop)
        handler.addFilter(_hide_engine_errors)  # kept by ``errors``, said once below
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="terminate_on_error=False")
            yield {"terminate_on_error": False}
    except Exception as err:
        if (failure := getattr(embedder, "failure", None)) is not None:  # what the run's own error came from
            raise failure from None
        if (stage := _stage_error_in(err)) is not None:
            raise stage from None
        if type(err).__module__.startswith("pathway") or errors.count:
            raise _engine_failure(errors, retriever_factory, err) from err
        raise
    finally:
        engine_log.removeHandler(errors)
        engine_log.removeFilter(drop)
        for handler in handlers:
            handler.removeFilter(drop)
            handler.removeFilter(_hide_engine_errors)
    if (failure := getattr(embedder, "failure", None)) is not None:
        raise failure
    if errors.count:
        raise _engine_failure(errors, retriever_factory)


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
            waiting = cached.share(plan)
            try:
                if plan.missing:
                    plan.computed = await cached.guard(original(plan.request, **kwargs))
                    cached.check(plan)
            except BaseException as err:
                cached.release(plan, err)
                raise
            cached.release(plan)
            for key, future in waiting.items():
                plan.found[key] = await future
            return cached.finish(plan)

    else:

        @functools.wraps(original)
        def wrapped(inputs: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            plan = cached.plan(inputs, kwargs)
            if plan.missing:
                plan.computed = cached.guard_sync(lambda: original(plan.request, **kwargs))
                cached.check(plan)
            return cached.finish(plan)

    embedder.__wrapped__ = wrapped
    embedder.func = embedder._wrap_function()
    kept = cast(KeptEmbedder, embedder)  # what the lines below make of it
    kept.not_cached = cached.not_cached  # type: ignore[method-assign]
    kept.cached_vector = cached.cached_vector  # type: ignore[method-assign]
    kept.usage = cached.usage
    kept.component = label
    kept.embedded_count = 0
    kept.seconds = 0.0
    kept.on_progress = None
    kept.expected_width = None


_T = TypeVar("_T")


class _Plan:
    """One call: what was asked, what the cache holds, what goes to the endpoint."""

    def __init__(self, inputs: Any, keys: list[str], found: dict[str, np.ndarray], missing: list[str], request: Any):
        self.inputs, self.keys, self.found, self.missing, self.request = inputs, keys, found, missing, request
        self.computed: Any = None
        self.started = time.perf_counter()


class _CachedEmbedding:
    """The cache-then-call steps around one app embedder; its sync and async wrappers share them."""

    def __init__(self, embedder: Any, label: str, identity: str, cache: VectorCache):
        # the embedder keep_and_cache is making a KeptEmbedder of (its counters set before any call)
        self.embedder: KeptEmbedder = embedder
        self.label, self.identity, self.cache = label, identity, cache
        self.usage = usage_of(label, identity)
        self.lock = threading.Lock()
        # per event loop: text key -> its vector
        self.in_flight: dict[int, dict[str, asyncio.Future[np.ndarray]]] = {}

    def key(self, kind: str, text: str) -> str:
        return cache_key("app-embedding", self.identity, kind, text)

    def share(self, plan: _Plan) -> dict[str, asyncio.Future[np.ndarray]]:
        """Texts that another call on this event loop is embedding right now are awaited from it, not
        asked again (Pathway sends one question asked at several depths in several batches at once);
        the plan keeps the rest, which this call announces for the others."""
        if isinstance(plan.inputs, str) or not plan.keys or not plan.missing:
            return {}
        loop = asyncio.get_running_loop()
        in_flight = self.in_flight.setdefault(id(loop), {})  # release() finds it there
        waiting: dict[str, asyncio.Future[np.ndarray]] = {}
        mine = []
        for text in plan.missing:
            key = self.key("text", text)
            if key in in_flight:
                waiting[key] = in_flight[key]
            else:
                in_flight[key] = loop.create_future()
                mine.append(text)
        plan.missing = plan.request = mine
        return waiting

    def release(self, plan: _Plan, err: BaseException | None = None) -> None:
        """The vectors (or the failure) of the texts this call announced, to the calls awaiting them."""
        if isinstance(plan.inputs, str) or not plan.keys or not plan.missing:
            return
        import numpy as np

        in_flight = self.in_flight[id(asyncio.get_running_loop())]
        for i, text in enumerate(plan.missing):
            future = in_flight.pop(self.key("text", text), None)
            if future is None or future.done():
                continue
            if err is not None:
                future.set_exception(err)
                future.exception()  # seen: no "never retrieved" log when no other call awaits it
            else:
                future.set_result(np.asarray(plan.computed[i]))

    def cached_vector(self, text: str) -> np.ndarray | None:
        """``text``'s vector as the cache holds it (None: not there)."""
        return self.cache.get_many([self.key("text", text)]).get(self.key("text", text))

    def not_cached(self, texts: list[str]) -> list[str]:
        """Those of ``texts`` whose vector the cache lacks."""
        found = self.cache.get_many([self.key("text", t) for t in texts])
        return [t for t in texts if self.key("text", t) not in found]

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

    async def guard(self, pending: Awaitable[_T]) -> _T:
        try:
            return await pending
        except Exception as err:
            raise self.failed(err) from err

    def guard_sync(self, call: Callable[[], _T]) -> _T:
        try:
            return call()
        except Exception as err:
            raise self.failed(err) from err

    def failed(self, err: Exception) -> AppComponentError:
        """The error naming the component; the first one is kept on the embedder for after ``pw.run``."""
        failure = AppComponentError(describe_failure(self.label, type(self.embedder).__name__, self.embedder, err))
        if getattr(self.embedder, "failure", None) is None:
            self.embedder.failure = failure
        return failure

    def check(self, plan: _Plan) -> None:
        """The vectors the endpoint returned, checked before anything keeps them (the cache, a call
        awaiting them): a broken one ends the run with one :class:`AppComponentError` naming the
        component, the count and the first text."""
        from ragsweep.pipeline.embedding_base import vector_problem  # deferred: numpy

        if not plan.keys:  # passed through, as the app asked
            return
        one = isinstance(plan.inputs, str)
        vectors = [plan.computed] if one else list(plan.computed)
        texts = [plan.inputs] if one else plan.missing
        problem = vector_problem(vectors, texts, self.embedder.expected_width)
        if problem is None and len(vectors) != len(texts):
            problem = f"{len(vectors)} vector(s) for {len(texts)} text(s)"
        if problem is not None:
            name = f"{type(self.embedder).__name__} at {endpoint_of(self.embedder)}"
            failure = AppComponentError(f"{self.label}: {name} returned vectors the index cannot use: {problem}")
            if getattr(self.embedder, "failure", None) is None:
                self.embedder.failure = failure
            raise failure

    def finish(self, plan: _Plan) -> Any:
        import numpy as np

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
