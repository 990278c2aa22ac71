"""Shared test setup: offline environment and a private cache folder per session."""

import os
import tempfile
from pathlib import Path

import pytest

from fake_openai import fake_server, llm_settings  # noqa: F401 - the fake OpenAI server's fixtures, for every file
from support import FIXTURES, PIPELINE

os.environ.setdefault("RAGSWEEP_CACHE_DIR", tempfile.mkdtemp(prefix="ragsweep-test-cache-"))
# every test asks Pathway itself; tests/test_served_cache.py turns the served-list cache on
os.environ.setdefault("RAGSWEEP_SERVED_CACHE", "0")
# and scores every case itself; tests/test_scored_cache.py turns the scored-case cache on
os.environ.setdefault("RAGSWEEP_SCORED_CACHE", "0")

from ragsweep.core.offline import ensure_offline  # noqa: E402

ensure_offline()


@pytest.fixture(scope="session")
def fixture_corpus_dir() -> Path:
    return FIXTURES / "corpus"


@pytest.fixture(scope="session")
def default_pipeline() -> Path:
    return PIPELINE
