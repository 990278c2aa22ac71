"""Dry run of a whole LLM run: answer + judge + ragas LLM metrics, nothing sent.

It sums the estimates of the answerer (:mod:`ragsweep.answer.llm`) and of the LLM metrics
(:mod:`ragsweep.judge.metric`, :mod:`ragsweep.metrics.ragas_llm`), so it sits in the metrics' layer,
above both; :mod:`ragsweep.llm` and :mod:`ragsweep.cost.calls` (the client, settings and token counts)
import neither.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.answer.llm import estimate_answer_calls
from ragsweep.core.hits import Hit
from ragsweep.cost.calls import CallEstimate, combine
from ragsweep.judge.metric import estimate_judge_calls
from ragsweep.llm.settings import LLMSettings
from ragsweep.metrics.ragas_llm import METRIC_NAMES, estimate_ragas_calls


def estimate_llm_run(
    items: Sequence[tuple[str, Sequence[Hit]]],
    settings: LLMSettings,
    *,
    prompt_template: str | None = None,
    references: Sequence[str] | None = None,
    unanswerable: Sequence[bool] | None = None,
    judge: bool = True,
    ragas_metrics: Sequence[str] | None = None,
    judge_settings: LLMSettings | None = None,
    ragas_settings: LLMSettings | None = None,
    assumed_answer_tokens: int = 64,
    replicates: int = 1,
) -> dict[str, CallEstimate]:
    """Calls, tokens and cost a run would make, keyed ``answer``, ``judge``, ``ragas_llm``, ``total``.

    ``items`` are the (question, hits) pairs the answerer would get; ``references`` and
    ``unanswerable`` (per item) feed the judge / ragas estimates. ``ragas_metrics=None``
    means all of :data:`ragsweep.metrics.ragas_llm.METRIC_NAMES`; pass ``()`` to skip ragas.
    ``replicates`` (``--judge-replicates``) multiplies the judge's calls.
    """
    refs = list(references) if references is not None else [""] * len(items)
    unans = list(unanswerable) if unanswerable is not None else [not r.strip() for r in refs]
    out: dict[str, CallEstimate] = {"answer": estimate_answer_calls(items, settings, prompt_template)}
    if judge:
        out["judge"] = estimate_judge_calls(
            [(q, r, u) for (q, _), r, u in zip(items, refs, unans)],
            judge_settings or settings,
            assumed_answer_tokens,
            replicates=replicates,
        )
    if ragas_metrics is None or len(ragas_metrics) > 0:
        out["ragas_llm"] = estimate_ragas_calls(
            [(q, [h.served_text for h in hits], r) for (q, hits), r in zip(items, refs)],
            ragas_settings or settings,
            METRIC_NAMES if ragas_metrics is None else ragas_metrics,
            assumed_answer_tokens,
        )
    out["total"] = combine(list(out.values()))
    return out
