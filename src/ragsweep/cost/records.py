"""What a configuration's answers cost, as sweep.json holds it (:mod:`ragsweep.cost.configuration` computes it)."""

from __future__ import annotations

from pydantic import BaseModel, Field

NO_PRICE = "no price set"
USD_AXIS = "usd_per_1k_questions"
TOKEN_AXIS = "tokens_per_1k_questions"


class Prices(BaseModel):
    """USD per 1,000 tokens, as the pipeline sets them (None: not set)."""

    prompt: float | None = None
    completion: float | None = None
    embedding: float | None = None

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
        """``$0.0525 (339,500 tok)`` per 1,000 questions, or ``no price set (339,500 tok)``."""
        tokens = f" ({self.tokens_per_1k_questions:,.0f} tok)" if self.tokens_per_1k_questions is not None else ""
        if self.usd_per_1k_questions is None:
            return NO_PRICE + tokens
        return f"${self.usd_per_1k_questions:.4f}{tokens}"


class CostPareto(BaseModel):
    """sweep.json's ``cost``: the axis cost is measured on, and per quality measure the configurations
    no other beats on both quality and cost."""

    axis: str  # usd_per_1k_questions, or tokens_per_1k_questions where no price is set
    priced: bool
    fronts: dict[str, list[str]] = Field(default_factory=dict)
