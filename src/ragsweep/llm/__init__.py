"""The LLM path: endpoint settings, a retrying/caching openai client, token counts and costs."""

from ragsweep.llm.client import ChatResult, LLMClient, make_async_openai, make_openai
from ragsweep.llm.cost import CallEstimate, combine, count_message_tokens, count_tokens
from ragsweep.llm.redact import register_env
from ragsweep.llm.settings import LLMSettings

register_env()  # OPENAI_API_KEY is masked in every log record from the first import on

__all__ = [
    "CallEstimate",
    "ChatResult",
    "LLMClient",
    "LLMSettings",
    "combine",
    "count_message_tokens",
    "count_tokens",
    "make_async_openai",
    "make_openai",
]
