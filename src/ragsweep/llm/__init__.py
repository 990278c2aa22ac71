"""The LLM path: endpoint settings, a retrying/caching openai client (token counts and costs:
:mod:`ragsweep.cost.calls`).

The package's names are loaded on first use: a module that needs only the costs or the settings does
not import the client and httpx with them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragsweep.llm.redact import register_env

if TYPE_CHECKING:
    from ragsweep.cost.calls import CallEstimate, combine, count_message_tokens, count_tokens
    from ragsweep.llm.client import ChatResult, LLMClient, make_async_openai, make_openai
    from ragsweep.llm.settings import LLMSettings

register_env()  # OPENAI_API_KEY is masked in every log record from the first import on

_WHERE = {
    "ChatResult": "client",
    "LLMClient": "client",
    "make_async_openai": "client",
    "make_openai": "client",
    "CallEstimate": "ragsweep.cost.calls",
    "combine": "ragsweep.cost.calls",
    "count_message_tokens": "ragsweep.cost.calls",
    "count_tokens": "ragsweep.cost.calls",
    "LLMSettings": "settings",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    where = _WHERE[name]
    return getattr(importlib.import_module(where if "." in where else f"{__name__}.{where}"), name)


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
