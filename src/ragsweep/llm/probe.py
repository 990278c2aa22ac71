"""One look at an LLM endpoint before any work that needs it (``eval --llm``, the judge, ragas,
``generate``): a run whose every call would fail the same way ends here, in seconds, with one line,
instead of after asking every case.

The probe, once per endpoint and key in a process:

- OpenAI's own endpoint and no key: refused without a request (every call would be a 401);
- a host that does not resolve or a port where nothing listens (after one short second try,
  :func:`ragsweep.llm.endpoint.unreachable_reason`): refused;
- otherwise one ``GET {base_url}/models`` with the key: a 401 or 403 is refused, unless it says the key
  lacks a permission (a restricted key may chat without listing models); any other answer (an endpoint
  without that route included) lets the run go on, and so does a timeout (slow is not down: the client's
  retries are for that).
"""

from __future__ import annotations

import threading

import httpx

from ragsweep.core import environment
from ragsweep.core.keys import digest
from ragsweep.llm.client import EndpointUnreachable
from ragsweep.llm.endpoint import unreachable_reason
from ragsweep.llm.redact import mask
from ragsweep.llm.settings import LLMSettings

PROBE_TIMEOUT_S = 5.0
_REFUSED = (401, 403)
_NOT_THE_KEY = ("insufficient permission", "missing scope")  # a restricted key: refused this route only
_passed: set[tuple[str, str, bool]] = set()  # (base_url, key digest, key_too) already probed in this process
_lock = threading.Lock()
_OPENAI_HOST = httpx.URL(environment.OPENAI_URL).host


class EndpointRefused(EndpointUnreachable):
    """The endpoint answered, but refuses the key (or wants one): every call would get the same 401/403."""


def _needs_key(settings: LLMSettings) -> bool:
    return not settings.api_key.get_secret_value() and httpx.URL(settings.base_url).host == _OPENAI_HOST


def _key_problem(settings: LLMSettings) -> str | None:
    """A 401/403 from ``GET /models``, in one line (the key masked); None for any other outcome."""
    headers = {"Authorization": f"Bearer {settings.api_key_value()}"}
    timeout = min(settings.timeout, PROBE_TIMEOUT_S)
    try:
        reply = httpx.get(f"{settings.base_url}/models", headers=headers, timeout=timeout)
    except httpx.HTTPError:
        return None  # slow or odd is not refused: the run's own calls find out with their retries
    if not refuses_key(reply.status_code, reply.text):
        return None
    body = " ".join(reply.text.split())[:200].replace(settings.api_key.get_secret_value() or "\0", "***")
    return mask(f"http {reply.status_code}: {body}")


def refuses_key(status: int, body: str) -> bool:
    """Whether a ``GET /models`` reply says every call with this key would be refused."""
    return status in _REFUSED and not any(words in body.lower() for words in _NOT_THE_KEY)


def check_llm_endpoint(settings: LLMSettings, what: str = "LLM", key_too: bool = True) -> None:
    """Raise :class:`EndpointUnreachable` (or :class:`EndpointRefused`) when every call to the endpoint
    of ``settings`` would fail the same way; ``what`` names its user (``LLM``, ``judge``...). ``key_too``
    False: only whether it can be reached (an app's own LLM component, which may hold a key of its own)."""
    key = (settings.base_url, digest(settings.api_key.get_secret_value()), key_too)
    with _lock:
        if key in _passed:
            return
    where = f"the {what} endpoint {settings.base_url}"
    if key_too and _needs_key(settings):
        raise EndpointRefused(
            f"{where} needs an API key: set {settings.api_key_env} (or llm_base_url / OPENAI_BASE_URL for another "
            "endpoint); nothing was sent"
        )
    if (reason := unreachable_reason(settings.base_url)) is not None:
        raise EndpointUnreachable(
            f"{where} cannot be reached ({reason}); nothing was sent. Is the endpoint up? "
            "(set llm_base_url or OPENAI_BASE_URL)"
        )
    if key_too and (problem := _key_problem(settings)) is not None:
        raise EndpointRefused(f"{where} refuses the key ({problem}); check {settings.api_key_env}")
    with _lock:
        _passed.add(key)
