"""Token counting (tiktoken, offline) and cost estimates.

The tokenizer is ``tiktoken.encoding_for_model(model)`` when tiktoken knows the
model (o200k_base for gpt-4o / o-series / gpt-4.1+, cl100k_base for gpt-4 /
gpt-3.5), else cl100k_base. For a non-OpenAI model it is an estimate; the
``usage`` field of a reply, when present, always wins over the count.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, TypedDict

from pydantic import BaseModel

from ragsweep.core.offline import ensure_offline
from ragsweep.llm.settings import LLMSettings

if TYPE_CHECKING:
    import tiktoken

# per-message overhead of the chat format (OpenAI cookbook: 3 per message + 3 for the reply)
_TOKENS_PER_MESSAGE = 3
_TOKENS_PER_REPLY = 3


@functools.lru_cache(maxsize=16)
def _encoding(model: str) -> tiktoken.Encoding:
    ensure_offline()
    # deferred: tiktoken loads its encodings (~0.3 s); only token counting needs it
    import tiktoken

    try:
        return tiktoken.encoding_for_model(model)
    except KeyError:
        return tiktoken.get_encoding("cl100k_base")


def encoding_name(model: str) -> str:
    return _encoding(model).name


def count_tokens(text: str, model: str) -> int:
    return len(_encoding(model).encode(text or "", disallowed_special=()))


class Message(TypedDict):
    """One message of a chat request."""

    role: Literal["system", "user", "assistant"]
    content: str


def count_message_tokens(messages: Sequence[Message], model: str) -> int:
    total = _TOKENS_PER_REPLY
    for message in messages:
        total += _TOKENS_PER_MESSAGE
        for key, value in message.items():
            if isinstance(value, str):
                total += count_tokens(value, model)
    return total


NO_PRICE = "no price set ($llm_price_per_1k_prompt, $llm_price_per_1k_completion: USD per 1,000 tokens)"


def cost_usd(prompt_tokens: int, completion_tokens: int, settings: LLMSettings) -> float:
    """The calls' cost at the settings' prices (0 for a price not set: see :attr:`LLMSettings.priced`)."""
    return prompt_tokens / 1000.0 * (settings.price_per_1k_prompt or 0.0) + completion_tokens / 1000.0 * (
        settings.price_per_1k_completion or 0.0
    )


def cost_text(cost: float | None) -> str:
    """``$0.0123``, or :data:`NO_PRICE` (None): a cost without a price is never shown as $0."""
    return NO_PRICE if cost is None else f"${cost:.4f}"


class CallEstimate(BaseModel):
    """What a run would cost, computed without calling anything.

    ``completion_tokens`` is an upper bound for answers (``max_tokens`` per call)
    and an assumption for judge/ragas replies; ``cost_usd`` follows from both (None, with
    :data:`NO_PRICE` in the notes, when no price is set).
    """

    what: str
    model: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_calls: int = 0
    cost_usd: float | None = 0.0
    notes: list[str] = []

    def add(self, calls: int, prompt_tokens: int, completion_tokens: int) -> None:
        self.calls += calls
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens

    def priced(self, settings: LLMSettings) -> "CallEstimate":
        if not settings.priced:
            self.cost_usd = None
            self.notes = [*self.notes, NO_PRICE] if NO_PRICE not in self.notes else self.notes
            return self
        self.cost_usd = round(cost_usd(self.prompt_tokens, self.completion_tokens, settings), 6)
        return self


def combine(estimates: Sequence[CallEstimate], what: str = "total") -> CallEstimate:
    """The parts added up; the cost is None (:data:`NO_PRICE`) when a part has no price."""
    out = CallEstimate(what=what, model=",".join(sorted({e.model for e in estimates})))
    costs = [e.cost_usd for e in estimates]
    for e in estimates:
        out.add(e.calls, e.prompt_tokens, e.completion_tokens)
        out.embedding_calls += e.embedding_calls
        out.notes.extend(f"{e.what}: {n}" for n in e.notes if n != NO_PRICE)
    out.cost_usd = None if None in costs else round(sum(c for c in costs if c is not None), 6)
    if out.cost_usd is None:
        out.notes.append(NO_PRICE)
    return out
