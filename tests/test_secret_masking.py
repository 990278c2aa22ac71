"""The api key never reaches stderr, even when an endpoint echoes it in an error body.

The fake server's ``#echokey`` / ``echo_key_status`` modes answer with an error whose body
holds the request's ``Authorization`` header, as some endpoints do. The ragas path (instructor
logs each failed attempt as ``ERROR:instructor.v2.retry: ... <the body>``) and the client path
run in a subprocess with logging configured as the CLI does (and at DEBUG), and the key is
grepped for in everything the process wrote.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest

from fake_openai import FakeOpenAI
from ragsweep.llm import redact

KEY = "sk-proj-ECHOED-Secret-4d1f9a7b2c3e"

_RAGAS_SCRIPT = """
import json, logging, os, sys
logging.basicConfig(level=getattr(logging, os.environ["LOG_LEVEL"]))
from ragsweep.llm.settings import LLMSettings
from ragsweep.metrics.ragas_llm import FAITHFULNESS, CONTEXT_RECALL, RagasLLMScorer

# the key comes from the environment, as in a real run
settings = LLMSettings.from_mapping({"llm_model": "fake-model", "llm_base_url": os.environ["BASE_URL"],
                                     "llm_timeout": 5, "llm_max_retries": 1, "llm_concurrency": 2})
scorer = RagasLLMScorer(settings, metrics=(FAITHFULNESS, CONTEXT_RECALL))
rows = scorer.score_batch([
    {"question": f"What is the term? {os.environ['MARKER']}", "answer": "The term is five years.",
     "contexts": ["The term is five years."], "reference": "five years"},
    {"question": f"Who pays? {os.environ['MARKER']}", "answer": "The buyer pays.",
     "contexts": ["The buyer pays all fees."], "reference": "the buyer"},
])
errors = [s.error for row in rows for s in row.values()]
print(json.dumps(errors))
"""

_CLIENT_SCRIPT = """
import json, logging, os, sys
logging.basicConfig(level=getattr(logging, os.environ["LOG_LEVEL"]))
from ragsweep.llm import LLMClient, LLMSettings

settings = LLMSettings(base_url=os.environ["BASE_URL"], model="fake-model", api_key=os.environ["MY_KEY"],
                       timeout=5, max_retries=1)
result = LLMClient(settings).chat([{"role": "user", "content": "Query: q " + os.environ["MARKER"]}])
log = logging.getLogger("some.library")
# a handler a library adds after the key is known, and ways a library may log a body
late = logging.StreamHandler(sys.stderr)
late.setFormatter(logging.Formatter("LATE %(name)s %(message)s"))
log.addHandler(late)
log.error("failed with %s", result.error)
log.error("raw body: %s", {"error": {"message": "bad key " + os.environ["MY_KEY"]}})
log.warning(f"f-string body: Bearer {os.environ['MY_KEY']}")
try:
    raise RuntimeError("Error code: 401 - Incorrect API key provided: " + os.environ["MY_KEY"])
except RuntimeError:
    log.exception("call failed")
print(json.dumps({"error": result.error}))
"""


@pytest.fixture
def echo_server():
    server = FakeOpenAI(slow_seconds=1.0, echo_key_status=400).start()
    try:
        yield server
    finally:
        server.stop()


def _run(script: str, tmp_path, env_extra: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAGSWEEP_CACHE_DIR": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1", **env_extra}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(tmp_path),
    )


@pytest.mark.parametrize("status,level", [(400, "WARNING"), (500, "DEBUG")])
def test_ragas_path_never_prints_the_key(tmp_path, status, level):
    server = FakeOpenAI(slow_seconds=1.0, echo_key_status=status).start()
    try:
        proc = _run(
            _RAGAS_SCRIPT,
            tmp_path,
            {"OPENAI_API_KEY": KEY, "BASE_URL": server.base_url, "LOG_LEVEL": level, "MARKER": ""},
        )
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert KEY not in proc.stderr and KEY not in proc.stdout
    # the leak path really ran: instructor logged the echoed body, masked
    assert "instructor" in proc.stderr and "Incorrect API key provided: ***" in proc.stderr, proc.stderr[-2000:]
    errors = json.loads(proc.stdout.strip().splitlines()[-1])
    assert errors and all(e and f"http {status}" in e and "***" in e for e in errors)


def test_client_path_and_late_handlers_never_print_the_key(tmp_path, echo_server):
    proc = _run(
        _CLIENT_SCRIPT,
        tmp_path,
        {"MY_KEY": KEY, "BASE_URL": echo_server.base_url, "LOG_LEVEL": "DEBUG", "MARKER": "#echokey"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert KEY not in proc.stderr and KEY not in proc.stdout
    assert "LATE some.library raw body" in proc.stderr and "bad key ***" in proc.stderr
    assert "f-string body: Bearer ***" in proc.stderr
    assert "Incorrect API key provided: ***" in proc.stderr  # the traceback of log.exception
    assert "http 400" in json.loads(proc.stdout.strip().splitlines()[-1])["error"]


def test_echo_mode_of_the_fake_server_echoes(echo_server):
    """The fixture really puts the key in the body (so the tests above test something)."""
    import httpx

    reply = httpx.post(
        f"{echo_server.base_url}/chat/completions", json={"messages": []}, headers={"Authorization": f"Bearer {KEY}"}
    )
    assert reply.status_code == 400 and KEY in reply.text


def test_mask_record_in_process(caplog):
    redact.register_secret("sk-inproc-0123456789abcdef")
    redact.register_secret("short")  # too short to be a secret: left alone
    redact.register_secret("no-key")  # ragsweep's own placeholder
    log = logging.getLogger("ragsweep.test.masking")
    caplog.set_level(logging.INFO)
    log.info("key=%s and %r", "sk-inproc-0123456789abcdef", {"k": "sk-inproc-0123456789abcdef"})
    log.info("a short word and no-key stay")
    record = logging.makeLogRecord({"msg": "made by hand: sk-inproc-0123456789abcdef", "args": ()})
    redact.SecretFilter().filter(record)
    assert "sk-inproc-0123456789abcdef" not in caplog.text
    assert "key=*** and {'k': '***'}" in caplog.text
    assert "a short word and no-key stay" in caplog.text
    assert record.getMessage() == "made by hand: ***"
    assert redact.mask("x sk-inproc-0123456789abcdef y") == "x *** y"


def test_settings_register_their_key():
    from ragsweep.llm import LLMSettings

    s = LLMSettings(api_key="sk-settings-registered-42")
    assert redact.mask("sk-settings-registered-42") == "***"
    s.with_updates(api_key="sk-updated-key-000042")
    assert redact.mask("sk-updated-key-000042") == "***"
