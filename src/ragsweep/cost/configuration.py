"""What a configuration's answers cost, and which configurations give the most answer quality for it.

A configuration's cost is what serving it would cost: the prompt and completion tokens of every LLM
call its answerer made for the cases (a reply from ragsweep's cache counts: a deployed app would
have paid for it), priced at the pipeline's ``$llm_price_per_1k_prompt`` /
``$llm_price_per_1k_completion``, plus the questions' tokens at ``$embedding_price_per_1k`` (each
question is embedded to be searched). Without a price it is "no price set", never $0: the
cost-quality Pareto set is then drawn over tokens per 1,000 questions. What the sweep itself sent is
counted apart (``sent_calls``: calls the endpoint got, the rest came from the cache or from an
identical request of another configuration).
"""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.cost.records import NO_PRICE, TOKEN_AXIS, USD_AXIS, ConfigCost, CostPareto, Prices
from ragsweep.evaluation.records import CaseResult, ConfigResult
from ragsweep.metrics.registry import COST_QUALITY, FALLBACK_QUALITY, lower_is_better, spec
from ragsweep.pipeline.config import PipelineConfig


def configuration_cost(config: PipelineConfig, cases: Sequence[CaseResult], answerer: object) -> ConfigCost:
    """What the answers of ``cases`` cost at the pipeline's prices."""
    # deferred: tiktoken loads its encodings (~0.3 s); a sweep without answers never counts
    from ragsweep.cost.calls import count_tokens

    answered = [c for c in cases if c.answer is not None and c.answer.answerer not in ("dataset", "extractive")]
    prices = prices_of(config)
    cost = ConfigCost(questions=len(answered), prices=prices)
    cost.prompt_tokens = sum(c.answer.prompt_tokens for c in answered if c.answer is not None)
    cost.completion_tokens = sum(c.answer.completion_tokens for c in answered if c.answer is not None)
    cost.calls, cost.sent_calls = _calls(answerer, answered)
    if prices.embedding is not None:
        cost.question_tokens = sum(count_tokens(c.question, "text-embedding-3-small") for c in answered)
    if not answered:
        return cost
    per_1k = 1000 / len(answered)
    cost.tokens_per_1k_questions = round((cost.prompt_tokens + cost.completion_tokens) * per_1k, 1)
    if prices.llm_set:
        usd = cost.prompt_tokens / 1000 * (prices.prompt or 0.0) + cost.completion_tokens / 1000 * (
            prices.completion or 0.0
        )
        usd += cost.question_tokens / 1000 * (prices.embedding or 0.0)
        cost.usd, cost.usd_per_1k_questions = round(usd, 8), round(usd * per_1k, 6)
    return cost


def _calls(answerer: object, answered: Sequence[CaseResult]) -> tuple[int, int]:
    """(calls made, calls sent to the endpoint): the app's ledger, else ragsweep's client's counts."""
    ledger = getattr(answerer, "ledger", None)
    if ledger is not None:
        calls = ledger.calls
        return len(calls), sum(not c.cached and c.error is None for c in calls)
    stats = getattr(getattr(answerer, "client", None), "stats", None)
    if callable(stats):
        counted = stats()
        return counted.calls, counted.calls - counted.cached
    made = sum(1 for c in answered if c.answer is not None and (c.answer.prompt_tokens or c.answer.error))
    return made, sum(1 for c in answered if c.answer is not None and not c.answer.cached and c.answer.prompt_tokens)


def cost_pareto(rows: Sequence[ConfigResult], objectives: Sequence[str] = ()) -> CostPareto | None:
    """The cost-quality Pareto sets of a sweep's answered configurations (None: nothing was answered):
    over each answer objective of the sweep and each quality measure of
    :data:`~ragsweep.metrics.registry.COST_QUALITY` the run computed."""
    costs = {r.id: r.cost for r in rows if r.cost is not None and r.cost.questions}
    if not costs:
        return None
    priced = all(c.usd_per_1k_questions is not None for c in costs.values())
    axis = USD_AXIS if priced else TOKEN_AXIS
    out = CostPareto(axis=axis, priced=priced)
    asked = [m for m in objectives if spec(m).family not in ("retrieval", "cost")]
    candidates = list(dict.fromkeys([*asked, *COST_QUALITY]))
    answered = [r for r in rows if r.id in costs]
    computed = [m for m in candidates if any(r.metric(m) is not None for r in answered)]
    for metric in computed or [FALLBACK_QUALITY]:
        points = []
        for r in answered:
            value, cost = r.metric(metric), getattr(r.cost, axis, None)
            if value is not None and cost is not None:
                points.append((r.id, value if not lower_is_better(metric) else -value, float(cost)))
        if points:
            out.fronts[metric] = _front(points)
    return out


def _front(points: list[tuple[str, float, float]]) -> list[str]:
    """Ids of the points no other has at least as good on both (higher quality, lower cost) and better on one."""
    return [pid for pid, q, c in points if not any(q2 >= q and c2 <= c and (q2 > q or c2 < c) for _, q2, c2 in points)]


def prices_of(config: PipelineConfig) -> Prices:
    """The prices the pipeline sets (``$llm_price_per_1k_*``, ``$embedding_price_per_1k``)."""
    v = config.variables
    return Prices(
        prompt=v.llm_price_per_1k_prompt, completion=v.llm_price_per_1k_completion, embedding=v.embedding_price_per_1k
    )


__all__ = [
    "NO_PRICE",
    "TOKEN_AXIS",
    "USD_AXIS",
    "ConfigCost",
    "CostPareto",
    "Prices",
    "configuration_cost",
    "cost_pareto",
]
