"""Shared test setup: offline environment and a private cache folder per session."""

import os
import tempfile
from pathlib import Path

import pytest

from fake_openai import fake_server, llm_settings  # noqa: F401 - the fake OpenAI server's fixtures, for every file
from support import FIXTURES, PIPELINE


def _private_cache_dir() -> None:
    """A cache folder of the session's own, unless the caller named one; under pytest-xdist one per worker.

    A worker inherits the environment of the controller, which loaded this file first: the folder the
    controller made (marked in TESTS_OWN_CACHE_DIR) is replaced by the worker's own, so that no two
    processes fill one cache while a test counts what it parsed or embedded. The processes a test starts
    inherit the folder of their session, as they do without xdist.
    """
    if "RAGSWEEP_CACHE_DIR" not in os.environ:
        os.environ["RAGSWEEP_CACHE_DIR"] = tempfile.mkdtemp(prefix="ragsweep-test-cache-")
        os.environ["TESTS_OWN_CACHE_DIR"] = os.environ["RAGSWEEP_CACHE_DIR"]
    elif os.getenv("PYTEST_XDIST_WORKER") and os.environ.pop("TESTS_OWN_CACHE_DIR", None) == os.getenv(
        "RAGSWEEP_CACHE_DIR"
    ):
        os.environ["RAGSWEEP_CACHE_DIR"] = tempfile.mkdtemp(prefix="ragsweep-test-cache-")


_private_cache_dir()
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
