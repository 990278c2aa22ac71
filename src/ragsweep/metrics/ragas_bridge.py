"""ragas's own non-LLM metrics (ragas 0.4.3), computed by ragas itself.

Metrics (output key -> ragas class):

- ``ragas_context_precision`` -> ``NonLLMContextPrecisionWithReference`` (legacy metric; 0.4.3
  has no collections equivalent). Each retrieved context is relevant when its best
  Levenshtein similarity to a reference context is >= 0.5; the score is average precision
  ``sum_k(precision@k * rel_k) / (sum_k rel_k + 1e-10)``.
- ``ragas_context_recall`` -> ``NonLLMContextRecall`` (legacy): share of reference contexts
  whose best Levenshtein similarity to a retrieved context is > 0.5.
- ``ragas_string_similarity`` -> ``collections.NonLLMStringSimilarity`` (1 - normalised
  Levenshtein distance between reference answer and response).
- ``ragas_bleu`` -> ``collections.BleuScore`` (sacrebleu corpus BLEU / 100, both texts split
  on ". " -- ragas's own quirky sentence pairing).
- ``ragas_rouge`` -> ``collections.RougeScore`` (rougeL F-measure, with stemming).

A value is ``None`` when an input it needs is missing (no reference answer, no reference
contexts, no answer) or when ragas fails / returns NaN on that input; callers count it as
missing. An empty (but given) ``retrieved_contexts`` list scores 0.0 for both context metrics
(nothing relevant was retrieved; ragas itself would raise on ``max([])`` for recall).

ragas is imported lazily (after :func:`ragsweep.core.offline.ensure_offline`) and the metric objects
are built once per process. :func:`ragas_nonllm_scores_batch` scores many cases inside a single
event loop (use it for a whole run); :func:`ragas_nonllm_scores` is the one-case sync form.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, NamedTuple, Protocol, SupportsFloat, TypeGuard, TypeVar

from ragsweep.core.offline import ensure_offline
from ragsweep.metrics import registry
from ragsweep.metrics.registry import RAGAS_ANSWER_METRICS, RAGAS_ID_CONTEXT_METRICS, RAGAS_METRICS

if TYPE_CHECKING:
    from ragas.dataset_schema import SingleTurnSample

log = logging.getLogger(__name__)

METRIC_NAMES = RAGAS_METRICS  # the keys of ragas_nonllm_scores, declared in the registry

_LOCK = threading.Lock()
_T = TypeVar("_T")


class _Scored(Protocol):
    """What a ragas metric's ``ascore`` returns."""

    @property
    def value(self) -> SupportsFloat | None: ...


class _ContextMetric(Protocol):
    """ragas' legacy single-turn metrics: a sample's retrieved contexts against its reference contexts."""

    def single_turn_ascore(self, sample: SingleTurnSample) -> Awaitable[float]: ...


class _AnswerMetric(Protocol):
    """ragas' collections metrics: a response against its reference."""

    def ascore(self, *, reference: str, response: str) -> Awaitable[_Scored]: ...


class _Metrics(NamedTuple):
    context: dict[str, _ContextMetric]
    answer: dict[str, _AnswerMetric]


_METRICS: _Metrics | None = None


def load_metrics() -> None:
    """Import ragas and build its metric objects now, ahead of the first case to score."""
    _metrics()


def _metrics() -> _Metrics:
    """Build ragas metric objects once per process."""
    global _METRICS
    if _METRICS is None:
        with _LOCK:
            if _METRICS is None:
                ensure_offline()
                # The non-LLM context metrics only exist as legacy metrics in 0.4.3; importing
                # them from their modules avoids the (misleading) deprecation warning of
                # ``ragas.metrics.<Name>`` which points to collections that lack them.
                from ragas.metrics._context_precision import NonLLMContextPrecisionWithReference
                from ragas.metrics._context_recall import NonLLMContextRecall
                from ragas.metrics.collections import BleuScore, NonLLMStringSimilarity, RougeScore

                _METRICS = _Metrics(
                    context={
                        "ragas_context_precision": NonLLMContextPrecisionWithReference(),
                        "ragas_context_recall": NonLLMContextRecall(),
                    },
                    answer={
                        "ragas_string_similarity": NonLLMStringSimilarity(),
                        "ragas_bleu": BleuScore(),
                        "ragas_rouge": RougeScore(rouge_type="rougeL", mode="fmeasure"),
                    },
                )
    return _METRICS


def _clean(value: SupportsFloat | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _has_text(value: str | None) -> TypeGuard[str]:
    return value is not None and bool(value.strip())


def _nonblank(values: Sequence[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [v for v in values if v is not None and v.strip()]


async def _safe(name: str, coro: Awaitable[SupportsFloat | None]) -> float | None:
    try:
        return _clean(await coro)
    except Exception as exc:  # one bad input must not kill a 1600-case run
        log.warning("ragas metric %s failed: %s", name, exc)
        return None


async def ragas_nonllm_ascores(
    question: str | None,
    answer: str | None,
    retrieved_contexts: Sequence[str] | None,
    reference: str | None,
    reference_contexts: Sequence[str] | None,
) -> dict[str, float | None]:
    """Async form of :func:`ragas_nonllm_scores`."""
    from ragas.dataset_schema import SingleTurnSample

    m = _metrics()
    out: dict[str, float | None] = dict.fromkeys(METRIC_NAMES)

    retrieved = _nonblank(retrieved_contexts)
    refs = _nonblank(reference_contexts)
    if retrieved is not None and refs:
        if not retrieved:
            out["ragas_context_precision"] = 0.0
            out["ragas_context_recall"] = 0.0
        else:
            sample = SingleTurnSample(
                user_input=question or None, retrieved_contexts=retrieved, reference_contexts=refs
            )
            for key, metric in m.context.items():
                out[key] = await _safe(key, metric.single_turn_ascore(sample))

    if answer is not None and _has_text(reference):
        for key, scorer in m.answer.items():
            out[key] = await _safe(key, _value(scorer.ascore(reference=reference, response=answer)))
    return out


async def _value(coro: Awaitable[_Scored]) -> SupportsFloat | None:
    return (await coro).value


def _run(coro_factory: Callable[[], Coroutine[object, object, _T]]) -> _T:
    """Run a coroutine to completion from sync code, even if a loop is already running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_factory())
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(coro_factory())).result()


def ragas_nonllm_scores(
    question: str | None,
    answer: str | None,
    retrieved_contexts: Sequence[str] | None,
    reference: str | None,
    reference_contexts: Sequence[str] | None,
) -> dict[str, float | None]:
    """ragas's non-LLM metrics for one case (sync, no network).

    ``answer`` is the system's response text, ``retrieved_contexts`` the retrieved chunk texts in
    rank order, ``reference`` the reference answer, ``reference_contexts`` the gold evidence
    texts. Returns the keys of :data:`METRIC_NAMES`; context metrics are ``None`` without
    ``reference_contexts`` (or with ``retrieved_contexts=None``), answer metrics are ``None``
    without ``reference`` or ``answer``.
    """
    return _run(lambda: ragas_nonllm_ascores(question, answer, retrieved_contexts, reference, reference_contexts))


class RagasRow(NamedTuple):
    """The arguments of :func:`ragas_nonllm_scores` for one case (a missing one: None)."""

    question: str | None = None
    answer: str | None = None
    retrieved_contexts: Sequence[str] | None = None
    reference: str | None = None
    reference_contexts: Sequence[str] | None = None


def ragas_nonllm_scores_batch(rows: Sequence[RagasRow]) -> list[dict[str, float | None]]:
    """:func:`ragas_nonllm_scores` over many cases in one event loop.

    Each row holds the arguments of :func:`ragas_nonllm_scores`. Results are in row order.
    """

    async def _all() -> list[dict[str, float | None]]:
        results = []
        for row in rows:
            results.append(
                await ragas_nonllm_ascores(
                    row.question, row.answer, row.retrieved_contexts, row.reference, row.reference_contexts
                )
            )
        return results

    return _run(_all)


# ---------------------------------------------------------------- what eval and sweep report
# The string-similarity context metrics above compare whole ~600-token chunks with short
# evidence spans and are 0 on every CUAD case, so runs do not report them; they report
# ragas' ID-based context metrics over the chunk ids the dataset's rule judges relevant.

ANSWER_METRIC_NAMES = RAGAS_ANSWER_METRICS
ID_CONTEXT_METRIC_NAMES = RAGAS_ID_CONTEXT_METRICS


def id_based_context_scores(retrieved_ids: Sequence[str], reference_ids: Sequence[str]) -> dict[str, float | None]:
    """ragas' ``IDBasedContextPrecision`` / ``IDBasedContextRecall`` (0.4.3) for one case.

    Both are set arithmetic over the ids as strings, written out here as ragas' own
    ``_single_turn_ascore`` does it (``hits / total``, the same float): importing ragas costs
    seconds of every warm run. ``tests/test_ragas_id_metrics.py`` checks these values against
    ragas' metric objects, so the two cannot drift apart.

    precision = |retrieved ∩ reference| / |retrieved|; recall = |retrieved ∩ reference| /
    |reference|; None where ragas gives NaN (nothing retrieved, no reference id).
    """
    out: dict[str, float | None] = dict.fromkeys(ID_CONTEXT_METRIC_NAMES)
    if not retrieved_ids or not reference_ids:  # ragas: NaN; nothing served of something relevant: recall 0
        out["ragas_id_context_recall"] = 0.0 if reference_ids else None
        return out
    retrieved = {str(i) for i in retrieved_ids}
    reference = {str(i) for i in reference_ids}
    out["ragas_id_context_precision"] = sum(1 for i in retrieved if i in reference) / len(retrieved)
    out["ragas_id_context_recall"] = sum(1 for i in reference if i in retrieved) / len(reference)
    return out


def ragas_answer_scores_batch(pairs: Sequence[tuple[str | None, str | None]]) -> list[dict[str, float | None]]:
    """ragas' non-LLM answer metrics (string similarity, BLEU, ROUGE-L) for many
    ``(answer, reference)`` pairs in one event loop; None where either text is missing."""
    m = _metrics()

    async def _all() -> list[dict[str, float | None]]:
        results = []
        for answer, reference in pairs:
            out: dict[str, float | None] = dict.fromkeys(ANSWER_METRIC_NAMES)
            if answer is not None and _has_text(reference):
                for key in ANSWER_METRIC_NAMES:
                    out[key] = await _safe(key, _value(m.answer[key].ascore(reference=reference, response=answer)))
            results.append(out)
        return results

    return _run(_all)


_EXTRACTIVE = "the sentence's length, not its correctness, sets the"
for _name, _what in zip(RAGAS_METRICS, ("", "", "similarity", "n-gram precision", "ROUGE F-measure"), strict=True):
    registry.register(
        registry.MetricSpec(
            _name,
            "ragas",
            0,
            summary=False,
            says_nothing_for={"extractive": f"{_EXTRACTIVE} {_what}"} if _what else {},
        )
    )
