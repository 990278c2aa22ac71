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


def cost_usd(prompt_tokens: int, completion_tokens: int, settings: LLMSettings) -> float:
    return (
        prompt_tokens / 1000.0 * settings.price_per_1k_prompt
        + completion_tokens / 1000.0 * settings.price_per_1k_completion
    )


class CallEstimate(BaseModel):
    """What a run would cost, computed without calling anything.

    ``completion_tokens`` is an upper bound for answers (``max_tokens`` per call)
    and an assumption for judge/ragas replies; ``cost_usd`` follows from both.
    """

    what: str
    model: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_calls: int = 0
    cost_usd: float = 0.0
    notes: list[str] = []

    def add(self, calls: int, prompt_tokens: int, completion_tokens: int) -> None:
        self.calls += calls
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens

    def priced(self, settings: LLMSettings) -> "CallEstimate":
        self.cost_usd = round(cost_usd(self.prompt_tokens, self.completion_tokens, settings), 6)
        return self


def combine(estimates: Sequence[CallEstimate], what: str = "total") -> CallEstimate:
    out = CallEstimate(what=what, model=",".join(sorted({e.model for e in estimates})))
    for e in estimates:
        out.add(e.calls, e.prompt_tokens, e.completion_tokens)
        out.embedding_calls += e.embedding_calls
        out.cost_usd += e.cost_usd
        out.notes.extend(f"{e.what}: {n}" for n in e.notes)
    out.cost_usd = round(out.cost_usd, 6)
    return out
