"""The LLM path: endpoint settings, a retrying/caching openai client, token counts and costs.

The package's names are loaded on first use: a module that needs only the costs or the settings does
not import the client and httpx with them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragsweep.llm.redact import register_env

if TYPE_CHECKING:
    from ragsweep.llm.client import ChatResult, LLMClient, make_async_openai, make_openai
    from ragsweep.llm.cost import CallEstimate, combine, count_message_tokens, count_tokens
    from ragsweep.llm.settings import LLMSettings

register_env()  # OPENAI_API_KEY is masked in every log record from the first import on

_WHERE = {
    "ChatResult": "client",
    "LLMClient": "client",
    "make_async_openai": "client",
    "make_openai": "client",
    "CallEstimate": "cost",
    "combine": "cost",
    "count_message_tokens": "cost",
    "count_tokens": "cost",
    "LLMSettings": "settings",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


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
