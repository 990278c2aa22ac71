"""Secrets never reach a log line: every record is masked before any handler sees it.

Endpoints sometimes echo the api key in an error body ("Incorrect API key provided:
sk-..."), and libraries log those bodies as they are (instructor's
``ERROR:instructor.v2.retry: API call failed ...``). ragsweep therefore masks the
configured keys (``OPENAI_API_KEY``, each :class:`~ragsweep.llm.settings.LLMSettings`'
key) in *every* log record, whichever library or handler it goes to:

- a :func:`logging.setLogRecordFactory` wrapper masks each record when it is created
  (its message with the args merged in, its traceback text, its stack text), so
  handlers added later by any library get masked records too;
- a :class:`SecretFilter` on the root logger's handlers does the same for records
  built without the factory (``logging.makeLogRecord``, records from a queue).

A secret is replaced by ``***``. Values shorter than :data:`MIN_SECRET_LENGTH`
characters and ragsweep's own ``no-key`` placeholder are not treated as secrets
(masking ``"x"`` everywhere would garble every log line).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable

MASK = "***"
MIN_SECRET_LENGTH = 6
_PLACEHOLDERS = {"no-key"}
DEFAULT_ENV_VARS = ("OPENAI_API_KEY",)

_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None
_lock = threading.Lock()
_formatter = logging.Formatter()


def register_secret(value: str | None) -> None:
    """Mask ``value`` in every log record from now on (and install the masking once)."""
    global _pattern
    if not isinstance(value, str):
        return
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH or value in _PLACEHOLDERS:
        return
    with _lock:
        if value not in _secrets:
            _secrets.add(value)
            ordered = sorted(_secrets, key=len, reverse=True)  # longest first: no partial leftovers
            _pattern = re.compile("|".join(re.escape(s) for s in ordered))
    install()


def register_env(names: Iterable[str] = DEFAULT_ENV_VARS) -> None:
    """Mask the values of these environment variables (``OPENAI_API_KEY`` by default)."""
    for name in names:
        register_secret(os.environ.get(name))


def mask(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``."""
    pattern = _pattern
    if pattern is None or not text:
        return text
    return pattern.sub(MASK, text)


def has_secret(text: str) -> bool:
    pattern = _pattern
    return bool(pattern is not None and text and pattern.search(text))


def mask_record(record: logging.LogRecord) -> logging.LogRecord:
    """Mask a record in place: message (args merged in when they hold a secret), traceback, stack."""
    if _pattern is None:
        return record
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a malformed record is logging's problem, not ours
        message = None
    if message is not None and has_secret(message):
        record.msg = mask(message)
        record.args = ()
    if record.exc_info and not record.exc_text:
        try:
            text = _formatter.formatException(record.exc_info)
        except Exception:  # noqa: BLE001
            text = ""
        if has_secret(text):
            record.exc_text = mask(text)  # formatters use exc_text as is when it is set
    elif record.exc_text and has_secret(record.exc_text):
        record.exc_text = mask(record.exc_text)
    if record.stack_info and has_secret(record.stack_info):
        record.stack_info = mask(record.stack_info)
    return record


class SecretFilter(logging.Filter):
    """A handler filter that masks the registered secrets; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        mask_record(record)
        return True


_FILTER = SecretFilter()


def install() -> None:
    """Wrap the log-record factory (once) and put the filter on the root logger's handlers.

    Idempotent; called on every :func:`register_secret`, so handlers configured after
    import (``logging.basicConfig`` in the CLI) get the filter as soon as a key is known.
    """
    with _lock:
        previous = logging.getLogRecordFactory()
        if not getattr(previous, "ragsweep_masking", False):  # again if someone replaced ours

            def masking_factory(*args: object, **kwargs: object) -> logging.LogRecord:
                return mask_record(previous(*args, **kwargs))

            masking_factory.ragsweep_masking = True  # type: ignore[attr-defined]
            logging.setLogRecordFactory(masking_factory)
    for handler in list(logging.getLogger().handlers):
        if not any(isinstance(f, SecretFilter) for f in handler.filters):
            handler.addFilter(_FILTER)
