"""The app's own question answerer, built from its YAML and asked in-process: the answer it serves.

When a pipeline declares a ``question_answerer`` (``BaseRAGQuestionAnswerer``,
``AdaptiveRAGQuestionAnswerer``, a subclass of the user's...), ``--llm`` answers through it: its
class, LLM, prompt template, context processor, ``search_topk`` and reranker are the app's, and
its ``answer_query`` runs over the DocumentStore ragsweep built from the same YAML, in one Pathway
run for every question (documents first, then the questions, as ``/v2/answer`` would get them).

What ragsweep puts in: the LLM's requests go out through ragsweep's openai client (its retries,
timeout, disk cache and key masking) with exactly the parameters the app's ``OpenAIChat`` sends,
and each call's tokens, cost and failure are recorded. A failed call does not end the run: the
app gets no reply for it (as if the model said nothing) and that case's answer carries the error.

A sweep's configurations of one index that differ only in how they answer (prompt, model,
``search_topk``, the question answerer's own arguments) are asked in one Pathway run over one
DocumentStore (:func:`answer_together`): a request two of them send alike is sent once, and
together they keep one app's ``capacity`` of calls in flight.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel, Field

from ragsweep.answer.base import IDK, Answer
from ragsweep.answer.refusal import is_refusal
from ragsweep.cost.calls import cost_usd, count_message_tokens
from ragsweep.datasets.schema import Case
from ragsweep.llm.cache import CACHE_HEADER
from ragsweep.llm.client import make_async_openai
from ragsweep.llm.endpoint import unreachable_reason
from ragsweep.llm.errors import describe_error
from ragsweep.llm.settings import LLMSettings
from ragsweep.pipeline.app_components import AppComponentError, LLMSpend, check_endpoint, describe_failure, run_with
from ragsweep.pipeline.arguments import ComponentArguments
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus


@dataclass
class CallRecord:
    prompt: str  # the user message the app sent
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    error: str | None = None
    cost_usd: float = 0.0
    failure: BaseException | None = field(default=None, repr=False)  # what the error was raised as


class AppReply(BaseModel):
    """What the app's ``answer_query`` returns for a question (``/v2/answer``'s body)."""

    response: str | None = None
    context_docs: list[Any] = Field(default_factory=list)


@dataclass
class CallLedger:
    """Every LLM call the app's question answerer made, as it made them."""

    calls: list[CallRecord] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, record: CallRecord) -> None:
        with self.lock:
            self.calls.append(record)


def _user_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m["content"]) for m in messages)


class SharedCalls:
    """Requests identical to one already sent in this Pathway run (question answerers of several
    configurations asked together) get its reply instead of a call of their own, also while it is in
    flight, when ragsweep's disk cache does not hold it yet: a prompt two configurations share costs once."""

    def __init__(self, limit: int | None = None) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, concurrent.futures.Future[Any]] = {}
        # the calls in flight at once over every answerer of the run: one app's worth (its capacity)
        self._slots = threading.BoundedSemaphore(limit) if limit else None

    async def _sent(self, send: Callable[[], Awaitable[Any]]) -> Any:
        if self._slots is None:
            return await send()
        await asyncio.to_thread(self._slots.acquire)  # the answerers' event loops differ: a thread lock
        try:
            return await send()
        finally:
            self._slots.release()

    async def once(self, key: str, send: Callable[[], Awaitable[Any]]) -> tuple[Any, bool]:
        """(the reply, whether another call sent it)."""
        with self._lock:
            fresh: concurrent.futures.Future[Any] = concurrent.futures.Future()
            future = self._calls.setdefault(key, fresh)
            leader = future is fresh
        if not leader:
            return await asyncio.wrap_future(future), True
        try:
            reply = await self._sent(send)
        except BaseException as err:
            future.set_exception(err)
            with self._lock:
                self._calls.pop(key, None)  # a failure is not shared with later calls: they try again
            raise
        future.set_result(reply)
        return reply, False


class RecordingChatClient:
    """Stands where Pathway's ``OpenAIChat`` keeps its ``openai.AsyncOpenAI``: ragsweep's client
    (one per event loop), each call's usage and failure recorded in the ledger."""

    def __init__(self, settings: LLMSettings, ledger: CallLedger, shared: SharedCalls | None = None):
        self.settings = settings
        self.ledger = ledger
        self.shared = shared or SharedCalls()
        self.chat = self.completions = self  # client.chat.completions.create(...)
        self._clients: dict[int, Any] = {}

    def _client(self) -> Any:
        loop = id(asyncio.get_running_loop())
        if loop not in self._clients:
            self._clients[loop] = make_async_openai(self.settings)
        return self._clients[loop]

    async def create(self, **params: Any) -> Any:
        messages = params["messages"]  # what OpenAIChat always sends
        record = CallRecord(prompt=_user_text(messages))
        key = json.dumps([self.settings.base_url, params], sort_keys=True, default=str)
        try:
            raw, shared = await self.shared.once(
                key, lambda: self._client().chat.completions.with_raw_response.create(**params)
            )
            completion = raw.parse()
        except Exception as err:  # noqa: BLE001 - one failed call is that case's error, not the run's end
            record.error, record.failure = describe_error(err, self.settings), err
            record.prompt_tokens = count_message_tokens(messages, self.settings.model)
            self.ledger.add(record)
            return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=None))])
        usage = getattr(completion, "usage", None)
        record.cached = shared or raw.headers.get(CACHE_HEADER) == "hit"
        record.prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        record.completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        if not record.cached:
            record.cost_usd = cost_usd(record.prompt_tokens, record.completion_tokens, self.settings)
        self.ledger.add(record)
        return completion


def app_llm_settings(config: PipelineConfig, llm: Any) -> LLMSettings:
    """ragsweep's LLM settings (``$llm_*`` knobs, environment) for the app's chat model: its endpoint,
    key and model are the app's own."""
    settings = LLMSettings.from_mapping(config.scalars())
    client = getattr(llm, "client", None)
    changes: dict[str, Any] = {"model": str(ComponentArguments.of(llm.kwargs).model or settings.model)}
    base_url, api_key = getattr(client, "base_url", None), getattr(client, "api_key", None)
    if base_url:
        changes["base_url"] = str(base_url).rstrip("/")
    if api_key:
        changes["api_key"] = api_key
    return settings.with_updates(**changes)


def _attribute(ledger: CallLedger, questions: Sequence[str]) -> list[list[CallRecord]]:
    """Each call to the question whose text its prompt holds (the longest such question: one may
    be part of another); the app's prompt always holds the question it answers."""
    order = sorted(range(len(questions)), key=lambda i: -len(questions[i]))
    out: list[list[CallRecord]] = [[] for _ in questions]
    for record in ledger.calls:
        for i in order:
            if questions[i] and questions[i] in record.prompt:
                out[i].append(record)
                break
    return out


class AppAnswerer:
    """``answer_cases(cases) -> [Answer]`` through the app's own question answerer, in-process."""

    def __init__(self, config: PipelineConfig, corpus: Corpus | None = None):
        self.config = config
        self.corpus = corpus
        _, node = config.question_answerer_ref() or ("", None)
        self.kind = node.name if node is not None else ""
        self.settings: LLMSettings | None = None
        self.ledger = CallLedger()
        self.name = f"app:{self.kind}"
        self.prepared: dict[str, Answer] = {}  # answers asked together with other configurations'

    def __repr__(self) -> str:
        return f"AppAnswerer({self.kind}, {self.config.path})"

    def answer_cases(self, cases: Sequence[Case], scopes: Sequence[list[str] | None]) -> list[Answer]:
        """Every case asked of the app in one Pathway run; a case whose scope holds no parsed
        document is not asked (the app would search the whole corpus for it)."""
        if cases and all(c.id in self.prepared for c in cases):
            return [self.prepared[c.id] for c in cases]
        return answer_together([self], cases, scopes)[0]

    def _collect(
        self, cases: Sequence[Case], asked: list[int], replies: list[AppReply | None], before: int
    ) -> list[Answer]:
        """Each case's answer from the app's replies and the calls made since ``before``."""
        calls = CallLedger(calls=self.ledger.calls[before:])
        if calls.calls and all(c.failure is not None for c in calls.calls):
            raise self._llm_down(calls.calls[-1].failure or RuntimeError(calls.calls[-1].error))
        per_question = _attribute(calls, [cases[i].question for i in asked])
        answers = [Answer(text=IDK, abstained=True, answerer=self.name) for _ in cases]
        for j, i in enumerate(asked):
            answers[i] = self._answer(replies[j], per_question[j])
        self.prepared.update((c.id, a) for c, a in zip(cases, answers))
        return answers

    def _llm_down(self, failure: BaseException) -> Exception:
        """The app's LLM cannot answer (its endpoint unreachable, every call failed, its key refused): one
        message naming it."""
        label, name = self.config.question_answerer_llm()
        assert self.settings is not None
        endpoint = SimpleNamespace(kwargs={"base_url": self.settings.base_url})
        return AppComponentError(describe_failure(label, name, endpoint, failure))

    def _answer(self, reply: AppReply | None, calls: list[CallRecord]) -> Answer:
        text = (reply.response or "").strip() if reply is not None else ""
        errors = [c.error for c in calls if c.error]
        prompt_tokens = sum(c.prompt_tokens for c in calls)
        completion_tokens = sum(c.completion_tokens for c in calls)
        return Answer(
            text=text,
            abstained=not errors and is_refusal(text),
            answerer=self.name,
            error=errors[-1] if errors and not text else None,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cached=bool(calls) and all(c.cached for c in calls),
            cost_usd=answer_price(self.config, prompt_tokens, completion_tokens),
        )

    def _ask(
        self, store: Any, questions: list[str], scopes: list[list[str] | None], shared: SharedCalls
    ) -> list[AppReply | None]:
        """This configuration's question answerer over ``store``, asked ``questions`` in the graph being
        built; the list returned is filled by the Pathway run."""
        import pathway as pw

        # deferred: store imports pathway (~1 s); importing this module (the API, via answering) must not
        from ragsweep.pipeline.store import QUERIES_TIME, scope_filter

        qa = self.config.build_question_answerer(store)
        self._record_llm(qa, shared)
        if self.settings is not None and (reason := unreachable_reason(self.settings.base_url)) is not None:
            raise self._llm_down(ConnectionError(reason))  # before a Pathway run of calls that all fail
        schema = qa.AnswerQuerySchema
        model = schema.default_values()["model"]  # what /v2/answer puts in when a request names none
        rows = [
            (i, q, scope_filter(s), model, True, QUERIES_TIME, 1) for i, (q, s) in enumerate(zip(questions, scopes))
        ]
        queries = pw.debug.table_from_rows(
            pw.schema_from_types(qid=int, prompt=str, filters=str | None, model=str | None, return_context_docs=bool),
            rows,
            is_stream=True,
        )
        answered = qa.answer_query(queries.without(pw.this.qid))
        results = queries.select(pw.this.qid, result=answered.with_universe_of(queries).result)
        replies: list[AppReply | None] = [None] * len(questions)

        def on_result(key: Any, row: dict[str, Any], time: int, is_addition: bool) -> None:
            if is_addition:
                value = row["result"]
                replies[int(row["qid"])] = AppReply.model_validate(
                    value.as_dict() if hasattr(value, "as_dict") else value
                )

        pw.io.subscribe(results, on_change=on_result)
        return replies

    def _record_llm(self, qa: Any, shared: SharedCalls) -> None:
        """The app's OpenAI chat model sends through ragsweep's client (the app's retry strategy
        gives way to the client's retries: one policy, not two multiplied)."""
        import pathway as pw

        llm = getattr(qa, "llm", None)
        if llm is None or not hasattr(getattr(llm, "client", None), "chat"):
            return  # another kind of chat model: used as it is
        self.settings = self.settings or app_llm_settings(self.config, llm)
        llm.client = RecordingChatClient(self.settings, self.ledger, shared)
        llm.retry_strategy = pw.udfs.NoRetryStrategy()

    def usage(self) -> LLMSpend:
        """What the app's LLM calls cost so far (calls from ragsweep's disk cache cost nothing)."""
        calls = self.ledger.calls
        return LLMSpend(
            answerer=self.name,
            model=self.settings.model if self.settings is not None else "",
            calls=len(calls),
            from_cache=sum(c.cached for c in calls),
            errors=sum(c.error is not None for c in calls),
            prompt_tokens=sum(c.prompt_tokens for c in calls),
            completion_tokens=sum(c.completion_tokens for c in calls),
            cost_usd=round(sum(c.cost_usd for c in calls), 6)
            if self.settings is not None and self.settings.priced
            else None,
        )


def answer_price(config: PipelineConfig, prompt_tokens: int, completion_tokens: int) -> float | None:
    """What a question's LLM calls cost at the pipeline's ``$llm_price_per_1k_*`` (None: no price set)."""
    prompt_price = config.variables.llm_price_per_1k_prompt
    completion_price = config.variables.llm_price_per_1k_completion
    if prompt_price is None and completion_price is None:
        return None
    return round(prompt_tokens / 1000 * (prompt_price or 0.0) + completion_tokens / 1000 * (completion_price or 0.0), 8)


def answer_together(
    answerers: Sequence[AppAnswerer], cases: Sequence[Case], scopes: Sequence[list[str] | None]
) -> list[list[Answer]]:
    """Each answerer's answers to ``cases``, all asked in one Pathway run over one DocumentStore: the
    configurations of one index (chunking, retriever, parser) that differ only in how they answer
    (prompt, model, ``search_topk``, the question answerer's arguments) share its index and embeddings,
    and a request two of them send alike is sent once (:class:`SharedCalls`)."""
    import pathway as pw
    from pathway.internals.parse_graph import G

    # deferred: store imports pathway (~1 s); importing this module (the API, via answering) must not
    from ragsweep.pipeline.store import document_store

    first = answerers[0]
    if first.corpus is None:
        raise ValueError("AppAnswerer needs the parsed corpus its DocumentStore indexes")
    asked = [i for i, scope in enumerate(scopes) if scope != []]
    befores = [len(a.ledger.calls) for a in answerers]
    replies: list[list[AppReply | None]] = [[] for _ in answerers]
    if asked:
        pipeline = first.config.build()
        check_endpoint(pipeline.embedder, pipeline.retriever_factory)
        G.clear()
        store = document_store(first.corpus, pipeline)
        shared = SharedCalls(limit=llm_capacity(first.config) if len(answerers) > 1 else None)
        questions, asked_scopes = [cases[i].question for i in asked], [scopes[i] for i in asked]
        replies = [a._ask(store, questions, asked_scopes, shared) for a in answerers]
        with run_with(pipeline.embedder, pipeline.retriever_factory) as options:
            pw.run(monitoring_level=pw.MonitoringLevel.NONE, default_logging=False, **options)
    return [a._collect(cases, asked, got, before) for a, got, before in zip(answerers, replies, befores)]


def llm_capacity(config: PipelineConfig) -> int | None:
    """The ``capacity`` of the app's chat model (the calls it keeps in flight), None where it sets none."""
    spec = config.spec
    found = spec.question_answerer_ref()
    llm = spec.llm_ref(*found)[1] if found is not None else None
    _, capacity = spec.follow(ComponentArguments.of(getattr(llm, "kwargs", None) or {}).capacity, "capacity")
    return capacity if isinstance(capacity, int) and not isinstance(capacity, bool) and capacity > 0 else None
