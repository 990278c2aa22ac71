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
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ragsweep.metrics.registry import lower_is_better
from ragsweep.pipeline.config import PipelineConfig

if TYPE_CHECKING:  # records holds these models: it imports this module
    from ragsweep.evaluation.records import CaseResult, ConfigResult

# the answer-quality measures a cost Pareto set is drawn for, those a run computed
QUALITY_METRICS = ("judge_correct", "ragas_llm_faithfulness", "abstention_f1")
FALLBACK_QUALITY = "token_f1"  # without the judge, ragas or unanswerable cases
NO_PRICE = "no price set"
USD_AXIS = "usd_per_1k_questions"
TOKEN_AXIS = "tokens_per_1k_questions"


class Prices(BaseModel):
    """USD per 1,000 tokens, as the pipeline sets them (None: not set)."""

    prompt: float | None = None
    completion: float | None = None
    embedding: float | None = None

    @classmethod
    def of(cls, config: PipelineConfig) -> "Prices":
        v = config.variables
        return cls(
            prompt=v.llm_price_per_1k_prompt,
            completion=v.llm_price_per_1k_completion,
            embedding=v.embedding_price_per_1k,
        )

    @property
    def llm_set(self) -> bool:
        return self.prompt is not None or self.completion is not None


class ConfigCost(BaseModel):
    """One configuration's answers: calls, tokens and price, in total and per 1,000 questions."""

    questions: int = 0  # the cases its answerer was asked (a dataset's given response costs nothing)
    calls: int = 0  # LLM calls its answerer made (an adaptive question answerer: up to max_iterations each)
    sent_calls: int = 0  # of them, those this sweep sent to the endpoint (the rest: cache, or shared)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    question_tokens: int = 0  # the questions as embedded for search (priced at $embedding_price_per_1k)
    prices: Prices = Field(default_factory=Prices)
    usd: float | None = None  # None: no price set
    usd_per_1k_questions: float | None = None
    tokens_per_1k_questions: float | None = None

    def shown(self) -> str:
        """``$0.0123 / 1k questions`` or ``no price set (1,234 tokens / 1k questions)``."""
        tokens = f"{self.tokens_per_1k_questions:,.0f} tokens / 1k questions" if self.tokens_per_1k_questions else ""
        if self.usd_per_1k_questions is None:
            return f"{NO_PRICE} ({tokens})" if tokens else NO_PRICE
        return f"${self.usd_per_1k_questions:.4f} / 1k questions ({tokens})"


def configuration_cost(config: PipelineConfig, cases: Sequence[CaseResult], answerer: object) -> ConfigCost:
    """What the answers of ``cases`` cost at the pipeline's prices."""
    # deferred: tiktoken loads its encodings (~0.3 s); a sweep without answers never counts
    from ragsweep.llm.cost import count_tokens

    answered = [c for c in cases if c.answer is not None and c.answer.answerer not in ("dataset", "extractive")]
    prices = Prices.of(config)
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


class CostPareto(BaseModel):
    """sweep.json's ``cost``: the axis cost is measured on, and per quality measure the configurations
    no other beats on both quality and cost."""

    axis: str  # usd_per_1k_questions, or tokens_per_1k_questions where no price is set
    priced: bool
    fronts: dict[str, list[str]] = Field(default_factory=dict)


def cost_pareto(rows: Sequence[ConfigResult]) -> CostPareto | None:
    """The cost-quality Pareto sets of a sweep's answered configurations (None: nothing was answered)."""
    costs = {r.id: r.cost for r in rows if r.cost is not None and r.cost.questions}
    if not costs:
        return None
    priced = all(c.usd_per_1k_questions is not None for c in costs.values())
    axis = USD_AXIS if priced else TOKEN_AXIS
    out = CostPareto(axis=axis, priced=priced)
    computed = [m for m in QUALITY_METRICS if any(r.metric(m) is not None for r in rows if r.id in costs)]
    for metric in computed or [FALLBACK_QUALITY]:
        points = []
        for r in rows:
            value, cost = r.metric(metric), getattr(costs.get(r.id), axis, None)
            if value is not None and cost is not None:
                points.append((r.id, value if not lower_is_better(metric) else -value, float(cost)))
        if points:
            out.fronts[metric] = _front(points)
    return out


def _front(points: list[tuple[str, float, float]]) -> list[str]:
    """Ids of the points no other has at least as good on both (higher quality, lower cost) and better on one."""
    return [pid for pid, q, c in points if not any(q2 >= q and c2 <= c and (q2 > q or c2 < c) for _, q2, c2 in points)]
