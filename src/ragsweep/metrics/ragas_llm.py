"""ragas 0.4.3's LLM metrics, computed by ragas itself on the configured endpoint.

Metrics (output key -> ragas class in ``ragas.metrics.collections``):

- ``ragas_llm_faithfulness``       -> ``Faithfulness`` (answer claims supported by the contexts)
- ``ragas_llm_answer_correctness`` -> ``AnswerCorrectness`` (statement F1 vs the reference,
  weighted with embedding similarity, ragas' default weights 0.75/0.25)
- ``ragas_llm_context_precision``  -> ``ContextPrecision`` (with reference; one call per context)
- ``ragas_llm_context_recall``     -> ``ContextRecall`` (reference statements found in the contexts)
- ``ragas_llm_answer_relevancy``   -> ``AnswerRelevancy`` (questions generated back from the
  answer vs the question, cosine on embeddings)

The LLM is ``ragas.llms.llm_factory(model, client=AsyncOpenAI(base_url=...))`` (instructor,
JSON mode) with the same retries, timeout and disk cache as the answerer (ragsweep's
``llm/responses.sqlite``, self-healing; ragas' own ``DiskCacheBackend`` is not used). Embeddings are
ragas' ``HuggingFaceEmbeddings`` over the offline all-MiniLM-L6-v2
(``settings.embeddings="minilm"``) or ragas' ``OpenAIEmbeddings`` on the endpoint
(``"endpoint"``, model ``settings.embedding_model``).

Every value is a :class:`MetricScore`: a float in [0, 1], or ``None`` with a ``reason``
(not applicable) or an ``error`` (ragas / the endpoint failed for this case). Never NaN,
never an exception for one case:

- failed answer                  -> every metric None ("answer failed");
- refusal                        -> faithfulness and answer relevancy None (not applicable);
                                    answer correctness 0.0 on an answerable case (as the judge);
- no reference (unanswerable)    -> answer correctness, context precision / recall None;
- no retrieved contexts          -> faithfulness, context precision / recall None;
- ragas returns NaN              -> None with the reason.

Replicates (``RagasLLMScorer(replicates=N)``): every metric is computed ``N`` times per case,
replicate ``r >= 1`` with OpenAI's ``seed=r`` (its own requests and cache entries, as the
judge's); the value is the mean of the valid replicates, ``sd`` their spread and
``replicates`` each value (None where that replicate failed).
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ragsweep.answer.llm import is_refusal
from ragsweep.core.offline import embedder_model_path, ensure_offline
from ragsweep.cost.calls import CallEstimate, count_tokens
from ragsweep.llm.errors import describe_error
from ragsweep.llm.settings import LLMSettings
from ragsweep.metrics.registry import RAGAS_LLM_METRICS

# the LLM client and its cache (with httpx) are imported where ragas is asked: a run without ragas' LLM
# metrics reads only this module's names
if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from ragas.embeddings.base import BaseRagasEmbedding
    from ragas.embeddings.huggingface_provider import HuggingFaceEmbeddings
    from ragas.llms.base import InstructorBaseRagasLLM
    from ragas.metrics.result import MetricResult
    from ragas.prompt.metrics.base_prompt import BasePrompt

log = logging.getLogger(__name__)

METRIC_NAMES = RAGAS_LLM_METRICS  # declared in the registry, in this order:
FAITHFULNESS, ANSWER_CORRECTNESS, CONTEXT_PRECISION, CONTEXT_RECALL, ANSWER_RELEVANCY = METRIC_NAMES

_RAGAS_MAX_TOKENS = 1024  # ragas' own default for structured replies
_INSTRUCTOR_REASKS = 1  # HTTP retries are the openai client's; this is for replies that do not parse


class MetricScore(BaseModel):
    value: float | None = None
    reason: str | None = None  # why not applicable
    error: str | None = None  # why it failed
    sd: float | None = None  # with replicates: the sample SD of the valid replicate values
    replicates: list[float | None] | None = None  # with replicates: each replicate's value


def combine_replicates(scores: Sequence[MetricScore]) -> MetricScore:
    """One case's metric from its replicates: the mean of the valid values, their SD, each value;
    with no valid value, the first replicate's reason or error."""
    import statistics

    values = [s.value for s in scores]
    valid = [v for v in values if v is not None]
    if not valid:
        first = scores[0]
        return MetricScore(reason=first.reason, error=first.error, replicates=values)
    return MetricScore(
        value=statistics.fmean(valid), sd=statistics.stdev(valid) if len(valid) >= 2 else None, replicates=values
    )


class RagasCase(BaseModel):
    question: str
    answer: str
    contexts: list[str] = []  # retrieved chunk texts, rank order
    reference: str = ""  # reference answer ("" for unanswerable cases)
    abstained: bool | None = None  # None -> detected from the answer text
    answer_error: str | None = None


_Scorer = Callable[[RagasCase], Awaitable["MetricResult"]]  # one ragas metric, asked about one case


def _ctx(case: RagasCase) -> list[str]:
    return [c for c in case.contexts if c.strip()]


def _na(reason: str) -> MetricScore:
    return MetricScore(reason=f"not applicable: {reason}")


def applicability(case: RagasCase, metric: str) -> MetricScore | None:
    """A fixed score for cases where the metric does not apply; None when ragas must run."""
    if case.answer_error:
        return _na("the answer failed")
    refused = case.abstained if case.abstained is not None else is_refusal(case.answer)
    has_ref = bool(case.reference.strip())
    has_ctx = any(c.strip() for c in case.contexts)
    if metric == FAITHFULNESS:
        if refused:
            return _na("the answer is a refusal")
        if not has_ctx:
            return _na("no retrieved contexts")
    elif metric == ANSWER_RELEVANCY:
        if refused:
            return _na("the answer is a refusal")
    elif metric == ANSWER_CORRECTNESS:
        if not has_ref:
            return _na("no reference answer (unanswerable case)")
        if refused:
            return MetricScore(value=0.0, reason="refusal on an answerable case")
    elif metric in (CONTEXT_PRECISION, CONTEXT_RECALL):
        if not has_ref:
            return _na("no reference answer (unanswerable case)")
        if not has_ctx:
            return _na("no retrieved contexts")
    return None


# ------------------------------------------------------------------ embeddings
_MINILM: HuggingFaceEmbeddings | None = None
_MINILM_LOCK = threading.Lock()


def minilm_embeddings() -> HuggingFaceEmbeddings:
    """ragas' HuggingFaceEmbeddings over the offline all-MiniLM-L6-v2 (one per process)."""
    global _MINILM
    with _MINILM_LOCK:
        if _MINILM is None:
            ensure_offline()
            from ragas.embeddings.huggingface_provider import HuggingFaceEmbeddings

            _MINILM = HuggingFaceEmbeddings(model=embedder_model_path(), device=None)  # None: cuda when torch sees one
        return _MINILM


from ragsweep.metrics.ragas_bridge import _run  # noqa: E402  (one sync-to-async bridge for both)


class RagasLLMScorer:
    """``score_batch(cases) -> [{metric key: MetricScore}]`` through ragas on the endpoint."""

    def __init__(
        self,
        settings: LLMSettings,
        metrics: Sequence[str] = METRIC_NAMES,
        embeddings: BaseRagasEmbedding | None = None,
        answer_correctness_weights: tuple[float, float] = (0.75, 0.25),
        relevancy_strictness: int = 3,
        replicates: int = 1,
        seed: int | None = None,
    ):
        if replicates < 1:
            raise ValueError(f"replicates must be >= 1, got {replicates}")
        self.replicates = replicates
        self.seed = seed  # sent as OpenAI's seed (part of the cache key); None: no seed
        unknown = set(metrics) - set(METRIC_NAMES)
        if unknown:
            raise ValueError(f"unknown ragas LLM metrics {sorted(unknown)}; known: {METRIC_NAMES}")
        self.settings = settings
        self.metrics = tuple(metrics)
        self._embeddings = embeddings
        self.weights = list(answer_correctness_weights)
        self.strictness = relevancy_strictness
        self.last_stats: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"RagasLLMScorer({self.settings}, metrics={self.metrics})"

    def _needs_embeddings(self) -> bool:
        return ANSWER_RELEVANCY in self.metrics or (ANSWER_CORRECTNESS in self.metrics and self.weights[1] > 0)

    def _build(self, client: AsyncOpenAI) -> dict[str, _Scorer]:
        """Each asked metric as a scorer of one case, bound to this event loop's client."""
        ensure_offline()
        from ragas.llms import llm_factory

        make_llm = partial(
            llm_factory,
            self.settings.model,
            client=client,
            temperature=self.settings.temperature,
            max_tokens=max(self.settings.max_tokens, _RAGAS_MAX_TOKENS),
            max_retries=_INSTRUCTOR_REASKS,  # instructor: re-asks after an unparsable reply
        )
        llm = make_llm() if self.seed is None else make_llm(seed=self.seed)  # the seed goes with the request
        emb: BaseRagasEmbedding | None = None
        if self._needs_embeddings():
            if self._embeddings is not None:
                emb = self._embeddings
            elif self.settings.embeddings == "endpoint":
                from ragas.embeddings.openai_provider import OpenAIEmbeddings

                emb = OpenAIEmbeddings(client=client, model=self.settings.embedding_model)
            else:
                emb = minilm_embeddings()
        return {name: self._scorer(name, llm, emb) for name in self.metrics}

    def _scorer(self, name: str, llm: InstructorBaseRagasLLM, emb: BaseRagasEmbedding | None) -> _Scorer:
        """ragas' metric ``name`` and the arguments its ``ascore`` takes from a case."""
        from ragas.metrics.collections import (
            AnswerCorrectness,
            AnswerRelevancy,
            ContextPrecision,
            ContextRecall,
            Faithfulness,
        )

        if name == FAITHFULNESS:
            faithfulness = Faithfulness(llm=llm)
            return lambda c: faithfulness.ascore(user_input=c.question, response=c.answer, retrieved_contexts=_ctx(c))
        if name == ANSWER_CORRECTNESS:
            correctness = AnswerCorrectness(llm=llm, embeddings=emb, weights=self.weights)
            return lambda c: correctness.ascore(user_input=c.question, response=c.answer, reference=c.reference)
        if name == CONTEXT_PRECISION:
            precision = ContextPrecision(llm=llm)
            return lambda c: precision.ascore(user_input=c.question, reference=c.reference, retrieved_contexts=_ctx(c))
        if name == CONTEXT_RECALL:
            recall = ContextRecall(llm=llm)
            return lambda c: recall.ascore(user_input=c.question, reference=c.reference, retrieved_contexts=_ctx(c))
        assert emb is not None  # _needs_embeddings() holds whenever answer relevancy is asked for
        relevancy = AnswerRelevancy(llm=llm, embeddings=emb, strictness=self.strictness)
        return lambda c: relevancy.ascore(user_input=c.question, response=c.answer)

    async def _one(self, scorer: _Scorer, name: str, case: RagasCase, sem: asyncio.Semaphore) -> MetricScore:
        async with sem:
            try:
                result = await scorer(case)
            except Exception as err:  # noqa: BLE001 - recorded per case
                cause = err.__cause__ or err
                log.debug("ragas %s failed", name, exc_info=True)
                return MetricScore(error=describe_error(cause, self.settings))
        value = result.value
        try:
            value = float(value)
        except (TypeError, ValueError):
            return MetricScore(error=f"ragas returned a non-number: {value!r}"[:300])
        if math.isnan(value) or math.isinf(value):
            return MetricScore(reason="ragas returned NaN (no statements could be extracted or judged)")
        return MetricScore(value=min(1.0, max(0.0, value)))

    async def ascore_batch(self, cases: Sequence[RagasCase]) -> list[dict[str, MetricScore]]:
        from ragsweep.llm.client import make_async_openai  # deferred: httpx

        client = make_async_openai(self.settings)
        try:
            built = self._build(client)
            sem = asyncio.Semaphore(self.settings.concurrency)
            out: list[dict[str, MetricScore]] = [{} for _ in cases]
            jobs, where = [], []
            for i, case in enumerate(cases):
                for name in self.metrics:
                    fixed = applicability(case, name)
                    if fixed is not None:
                        out[i][name] = fixed
                    else:
                        jobs.append(self._one(built[name], name, case, sem))
                        where.append((i, name))
            for (i, name), score in zip(where, await asyncio.gather(*jobs)):
                out[i][name] = score
            return [{name: row[name] for name in self.metrics} for row in out]
        finally:
            await client.close()

    def score_batch(self, cases: Sequence[RagasCase | Mapping[str, object]]) -> list[dict[str, MetricScore]]:
        """Scores in input order; bounded by ``settings.concurrency`` metric computations at a time."""
        from ragsweep.llm.cache import shared_cache  # deferred: httpx

        items = [c if isinstance(c, RagasCase) else RagasCase.model_validate(c) for c in cases]
        cache = shared_cache(self.settings.cache_path()) if self.settings.cache else None
        # `is not None`, never the cache's truthiness: that would query (and could trip on) the file
        before = (cache.hits, cache.misses) if cache is not None else (0, 0)
        if self.replicates == 1:
            result = _run(lambda: self.ascore_batch(items))
        else:
            runs: list[list[dict[str, MetricScore]]] = []
            for r in range(self.replicates):
                one = RagasLLMScorer(
                    self.settings,
                    self.metrics,
                    self._embeddings,
                    (self.weights[0], self.weights[1]),
                    self.strictness,
                    seed=None if r == 0 else r,
                )
                runs.append(_run(partial(one.ascore_batch, items)))
            result = [
                {name: combine_replicates([run[i][name] for run in runs]) for name in self.metrics}
                for i in range(len(items))
            ]
        if cache is not None:
            self.last_stats = {"cache_hits": cache.hits - before[0], "cache_misses": cache.misses - before[1]}
        return result

    def score(
        self,
        question: str,
        answer: str,
        contexts: Sequence[str],
        reference: str = "",
        abstained: bool | None = None,
        answer_error: str | None = None,
    ) -> dict[str, MetricScore]:
        case = RagasCase(
            question=question,
            answer=answer,
            contexts=list(contexts),
            reference=reference or "",
            abstained=abstained,
            answer_error=answer_error,
        )
        return self.score_batch([case])[0]

    def estimate(
        self, cases: Sequence[tuple[str, Sequence[str], str]], assumed_answer_tokens: int = 64
    ) -> CallEstimate:
        return estimate_ragas_calls(cases, self.settings, self.metrics, assumed_answer_tokens, self.strictness)


# ------------------------------------------------------------------ dry run
_PROMPT_OVERHEAD: dict[str, int] = {}


def _prompt_tokens(kind: str, model: str, **inputs: str | list[str]) -> int:
    """Tokens of ragas' real prompt for these inputs (+ instructor's JSON-schema message)."""
    ensure_offline()
    from ragas.metrics.collections.answer_correctness import util as ac
    from ragas.metrics.collections.answer_relevancy import util as ar
    from ragas.metrics.collections.context_precision import util as cp
    from ragas.metrics.collections.context_recall import util as cr
    from ragas.metrics.collections.faithfulness import util as fa

    table: dict[str, tuple[type[BasePrompt[Any, Any]], type[BaseModel], type[BaseModel]]] = {
        "statements": (fa.StatementGeneratorPrompt, fa.StatementGeneratorInput, fa.StatementGeneratorOutput),
        "nli": (fa.NLIStatementPrompt, fa.NLIStatementInput, fa.NLIStatementOutput),
        "classify": (ac.CorrectnessClassifierPrompt, ac.CorrectnessClassifierInput, ac.ClassificationWithReason),
        "precision": (cp.ContextPrecisionPrompt, cp.ContextPrecisionInput, cp.ContextPrecisionOutput),
        "recall": (cr.ContextRecallPrompt, cr.ContextRecallInput, cr.ContextRecallOutput),
        "relevance": (ar.AnswerRelevancePrompt, ar.AnswerRelevanceInput, ar.AnswerRelevanceOutput),
    }
    prompt_cls, input_cls, output_cls = table[kind]
    if kind not in _PROMPT_OVERHEAD:
        import json

        _PROMPT_OVERHEAD[kind] = count_tokens(json.dumps(output_cls.model_json_schema(), indent=2), model) + 60
    text = prompt_cls().to_string(input_cls(**inputs))
    return count_tokens(text, model) + _PROMPT_OVERHEAD[kind] + 10


def estimate_ragas_calls(
    cases: Sequence[tuple[str, Sequence[str], str]],
    settings: LLMSettings,
    metrics: Sequence[str] = METRIC_NAMES,
    assumed_answer_tokens: int = 64,
    relevancy_strictness: int = 3,
) -> CallEstimate:
    """Dry run for ``(question, contexts, reference)`` triples: ragas' prompts rendered, not sent.

    The answer is unknown before the run: it counts as ``assumed_answer_tokens`` and as
    3 statements; structured replies are assumed ~150 tokens (NLI / classification ~300).
    Refusals (not applicable metrics) are not predicted, so this is an upper bound.
    """
    est = CallEstimate(what="ragas_llm", model=settings.model)
    model = settings.model
    answer = " ".join(["word"] * assumed_answer_tokens)
    statements = [answer[: len(answer) // 3]] * 3
    relevancy_calls = relevancy_strictness if (settings.temperature > 0 or not settings.cache) else 1
    for question, contexts, reference in cases:
        ctx = [c for c in contexts if c.strip()]
        joined = "\n".join(ctx)
        has_ref = bool((reference or "").strip())
        if FAITHFULNESS in metrics and ctx:
            est.add(1, _prompt_tokens("statements", model, question=question, answer=answer), 150)
            est.add(1, _prompt_tokens("nli", model, context=joined, statements=statements), 300)
        if ANSWER_CORRECTNESS in metrics and has_ref:
            est.add(1, _prompt_tokens("statements", model, question=question, answer=answer), 150)
            est.add(1, _prompt_tokens("statements", model, question=question, answer=reference), 150)
            est.add(
                1, _prompt_tokens("classify", model, question=question, answer=statements, ground_truth=statements), 300
            )
            est.embedding_calls += 2
        if CONTEXT_PRECISION in metrics and has_ref:
            for c in ctx:
                est.add(1, _prompt_tokens("precision", model, question=question, context=c, answer=reference), 100)
        if CONTEXT_RECALL in metrics and has_ref and ctx:
            est.add(1, _prompt_tokens("recall", model, question=question, context=joined, answer=reference), 200)
        if ANSWER_RELEVANCY in metrics:
            est.add(
                relevancy_calls,
                relevancy_calls * _prompt_tokens("relevance", model, response=answer),
                relevancy_calls * 60,
            )
            est.embedding_calls += 2
    est.notes.append(
        f"answers assumed {assumed_answer_tokens} tokens; reply sizes assumed; refusals not predicted (upper bound)"
    )
    if relevancy_calls == 1 and ANSWER_RELEVANCY in metrics:
        est.notes.append(
            f"answer relevancy: {relevancy_strictness} identical requests at temperature 0, 2 of them cache hits"
        )
    return est.priced(settings)
