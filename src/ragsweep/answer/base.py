"""The answer record every answerer returns."""

from __future__ import annotations

from pydantic import BaseModel, Field

IDK = "I don't know."


class Answer(BaseModel):
    text: str
    abstained: bool = False
    # 1-based numbers of the retrieved chunks the answer cites (chunk i = hits[i-1])
    cited: list[int] = Field(default_factory=list)
    answerer: str = ""  # "extractive" or "llm:<model>"
    error: str | None = None  # a failure recorded for this case (endpoint error, timeout, bad reply)
    # why the model declined, when it did (OpenAI's message.refusal, or a safety refusal
    # such as "I'm sorry, I can't help with that."); such an answer has abstained=True
    refusal: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    # what its LLM calls cost at the pipeline's $llm_price_per_1k_* (None: no price set, never $0)
    cost_usd: float | None = None
