"""Every environment variable ragsweep reads, each defined once: its name, default and check.

Read at each call, not at import: a test's ``monkeypatch.setenv`` and the pytest plugin's
``RAGSWEEP_CACHE_DIR`` apply to whatever runs after them. (Variables named at run time, such as
an LLM endpoint's ``api_key_env``, are read where that name is known.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

CACHE_DIR = "RAGSWEEP_CACHE_DIR"
MODELS_DIR = "RAGSWEEP_MODELS_DIR"
SERVED_CACHE = "RAGSWEEP_SERVED_CACHE"
SCORED_CACHE = "RAGSWEEP_SCORED_CACHE"
CONFIG_FACTS = "RAGSWEEP_CONFIG_FACTS"
PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
QUERIES_PER_RUN = "RAGSWEEP_QUERIES_PER_RUN"
DOCLING_ARTIFACTS_PATH = "DOCLING_ARTIFACTS_PATH"
OPENAI_BASE_URL = "OPENAI_BASE_URL"
OPENAI_API_KEY = "OPENAI_API_KEY"
PLACEHOLDER_KEY = "sk-placeholder-nothing-is-sent"

DEFAULT_CACHE_DIR = ".cache/ragsweep"
DEFAULT_QUERIES_PER_RUN = 8192
OPENAI_URL = "https://api.openai.com/v1"  # where the openai client goes without OPENAI_BASE_URL
_OFF = ("0", "false", "no", "off")


def _read(name: str) -> str | None:
    """The variable's value; None when it is not set."""
    return os.environ.get(name)


def cache_dir_setting() -> str | None:
    """``$RAGSWEEP_CACHE_DIR`` as set (None: unset), for what saves and restores it."""
    return _read(CACHE_DIR)


def cache_dir() -> Path:
    """``$RAGSWEEP_CACHE_DIR`` (unless empty: an empty path would be the working directory), else
    ``.cache/ragsweep``: the parse, embedding, served-list and LLM caches."""
    return Path(cache_dir_setting() or DEFAULT_CACHE_DIR)


def models_dir() -> Path:
    """Where assembled models live: ``$RAGSWEEP_MODELS_DIR`` (unless empty), else ``<cache dir>/models``."""
    return Path(_read(MODELS_DIR) or cache_dir() / "models")


def served_cache_enabled() -> bool:
    """False when ``RAGSWEEP_SERVED_CACHE`` is 0/false/no/off (any case, spaces around)."""
    value = _read(SERVED_CACHE)
    return value is None or value.strip().lower() not in _OFF


def config_facts_enabled() -> bool:
    """False when ``RAGSWEEP_CONFIG_FACTS`` is 0/false/no/off: every load runs Pathway's YAML loader."""
    value = _read(CONFIG_FACTS)
    return value is None or value.strip().lower() not in _OFF


def scored_cache_enabled() -> bool:
    """False when ``RAGSWEEP_SCORED_CACHE`` is 0/false/no/off (any case, spaces around)."""
    value = _read(SCORED_CACHE)
    return value is None or value.strip().lower() not in _OFF


def proxy_configured() -> bool:
    """Whether an HTTP(S) proxy is set (httpx then connects through it, not to the endpoint itself)."""
    return any(_read(name) for name in PROXIES)


def queries_per_run() -> int:
    """Most queries asked in one Pathway run (``RAGSWEEP_QUERIES_PER_RUN``, default 8192)."""
    value = _read(QUERIES_PER_RUN)
    if value is None:
        return DEFAULT_QUERIES_PER_RUN
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"{QUERIES_PER_RUN}={value!r}: must be a whole number >= 1") from None
    if n < 1:
        raise ValueError(f"{QUERIES_PER_RUN}={value!r}: must be a whole number >= 1")
    return n


def docling_artifacts_path() -> str | None:
    """``$DOCLING_ARTIFACTS_PATH``, Docling's model folder (None: unset or empty)."""
    return _read(DOCLING_ARTIFACTS_PATH) or None


def openai_base_url() -> str:
    """Where the openai client sends requests: ``$OPENAI_BASE_URL`` as set (even empty), else OpenAI's."""
    value = _read(OPENAI_BASE_URL)
    return OPENAI_URL if value is None else value


@contextmanager
def placeholder_openai_key() -> Iterator[None]:
    """``$OPENAI_API_KEY`` set to a placeholder while it is unset, for building components that are never
    called (a dry run): the openai client refuses to be built without a key. Unset again afterwards."""
    if _read(OPENAI_API_KEY):
        yield
        return
    before = _read(OPENAI_API_KEY)
    os.environ[OPENAI_API_KEY] = PLACEHOLDER_KEY
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(OPENAI_API_KEY, None)
        else:
            os.environ[OPENAI_API_KEY] = before


@lru_cache(maxsize=1)
def cuda_available() -> bool:
    """Whether torch sees a CUDA device. A ``+cpu`` build of torch sees none: known from its
    version without importing torch (seconds saved on every run whose embeddings are cached)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        if "+cpu" in version("torch"):
            return False
    except PackageNotFoundError:
        return False
    import torch

    return bool(torch.cuda.is_available())
