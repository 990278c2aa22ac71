"""One line for a failed LLM or embedding call, and the marks the endpoint transport puts on the failures
it makes itself. Without httpx: a module that only names a failure (an app component's, a ragas metric's)
imports this, not the client."""

from __future__ import annotations

import json

from ragsweep.llm.redact import mask
from ragsweep.llm.settings import LLMSettings

ERROR_HEADER = "x-ragsweep-error"  # on a response the transport made: why it sent no request or read no reply
OVERSIZED = "oversized"
UNREACHABLE = "unreachable"
MAX_TIMEOUT_FACTOR = 4  # a retry waits at most this many timeouts for its reply


def describe_error(err: BaseException, settings: LLMSettings | None = None) -> str:
    """One line, no secret."""
    import openai

    transport_error = err.response.headers.get(ERROR_HEADER) if isinstance(err, openai.APIStatusError) else None
    if isinstance(err, openai.APIStatusError) and transport_error in (OVERSIZED, UNREACHABLE):
        body = err.body if isinstance(err.body, dict) else {}
        text = f"{'oversized reply' if transport_error == OVERSIZED else UNREACHABLE}: {body.get('message') or err.message}"
    elif isinstance(err, (json.JSONDecodeError, openai.APIResponseValidationError)):
        text = f"malformed reply: {type(err).__name__}: {err}"
    elif isinstance(err, openai.APITimeoutError):
        text = f"timeout: no reply within the timeout after retries (each waited longer, up to {MAX_TIMEOUT_FACTOR}x)"
    elif isinstance(err, openai.APIConnectionError):
        text = f"connection error after retries: {err.__cause__ or err}"
    elif isinstance(err, openai.APIStatusError):
        text = f"http {err.status_code}: {err.message}"
    else:
        text = f"{type(err).__name__}: {err}"
    text = " ".join(str(text).split())[:500]
    if settings is not None:
        secret = settings.api_key.get_secret_value()
        if secret:
            text = text.replace(secret, "***")
    return mask(text)
