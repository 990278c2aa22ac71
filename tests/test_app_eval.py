"""A user's own Pathway app (tests/fixtures/apps/rag_evals_style.yaml, shaped like Pathway's
rag_evals app) evaluated as it serves: its OpenAIEmbedder and model, its search_topk, its
question answerer and prompt, against the deterministic fake OpenAI endpoint; and an endpoint
that is down, a missing key and a refused key, each one message that names the component."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from docx_dataset import docx_copy
from fake_openai import FakeOpenAI
from loopback import free_port
from ragsweep.cli import main
from ragsweep.report.runs import read_run
from support import ROOT

APP = ROOT / "tests" / "fixtures" / "apps" / "rag_evals_style.yaml"
# cuad-mini's contracts as DOCX: the app's parser is Pathway's DoclingParser, which parses DOCX here and
# fails on .txt (tests/docx_dataset.py); written once per test process
DATASET = docx_copy(ROOT / "datasets" / "cuad-mini", Path(tempfile.mkdtemp(prefix="app-eval-")) / "cuad-mini-docx")
LIMIT = 6
KEY = "sk-test-APPEVAL-SECRET-0123456789abcdef"
APP_EMBED_MODEL = "text-embedding-3-small"  # the YAML's $embedder model
APP_CHAT_MODEL = "gpt-4o-mini"  # the YAML's $llm model
TEMPLATE_START = "You answer questions about contracts"  # the YAML's $prompt_template
TOP_K = 8  # the YAML's question_answerer.search_topk
RAGSWEEP = Path(sys.executable).parent / "ragsweep"


# ---------------------------------------------------------------- helpers
def _point_at(mp: pytest.MonkeyPatch, base_url: str, cache: Path) -> None:
    mp.setenv("OPENAI_BASE_URL", base_url)
    mp.setenv("OPENAI_API_KEY", KEY)
    mp.setenv("RAGSWEEP_CACHE_DIR", str(cache))
    mp.delenv("RAGSWEEP_LLM_MODEL", raising=False)  # the app's OpenAIChat decides the model


def _eval(out: Path, name: str, *extra: str) -> int:
    argv = ["eval", "--pipeline", str(APP), "--dataset", str(DATASET), "--limit", str(LIMIT)]
    return main([*argv, "--out", str(out), "--name", name, *extra])


def _served(run) -> dict[str, list[tuple[str, int, int, str]]]:
    return {case.id: [(h.doc_id, h.start, h.end, h.text) for h in case.hits] for case in run.cases}


def _embedded_texts(log: list[tuple[str, dict]]) -> list[str]:
    texts: list[str] = []
    for path, body in log:
        if path.endswith("/embeddings"):
            inputs = body.get("input")
            texts.extend([inputs] if isinstance(inputs, str) else list(inputs or []))
    return texts


def _user_message(body: dict) -> str:
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    assert len(users) == 1, f"one user message expected, got {[m.get('role') for m in body.get('messages') or []]}"
    return users[0]["content"]


def _json_docs(prompt: str) -> list[dict]:
    """The documents Pathway's SimpleContextProcessor put in a prompt: ``{"text": ..., "path": ...}``
    objects, in their order."""
    decoder = json.JSONDecoder()
    docs, at = [], prompt.find('{"text": ')
    while at != -1:
        doc, end = decoder.raw_decode(prompt, at)
        docs.append(doc)
        at = prompt.find('{"text": ', end)
    return docs


def _chunks_per_doc(run_dir: Path) -> Counter:
    with open(run_dir / "chunks.jsonl", encoding="utf-8") as lines:
        return Counter(json.loads(line)["doc_id"] for line in lines if line.strip())


def _run_cli(
    tmp_path: Path, env: dict[str, str], timeout: float = 60.0, extra: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """The CLI run; its timeout is the guard against a retry storm that never ends."""
    out = tmp_path / "runs"
    argv = [str(RAGSWEEP), "eval", "--pipeline", str(APP), "--dataset", str(DATASET), "--limit", "2", *extra]
    return subprocess.run(
        [*argv, "--out", str(out), "--name", "failing"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _cli_env(tmp_path: Path, **values: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["RAGSWEEP_CACHE_DIR"] = str(tmp_path / "cache")
    env.pop("RAGSWEEP_LLM_MODEL", None)
    env.update({k: v for k, v in values.items() if v is not None})
    return env


def _assert_one_clean_message(done: subprocess.CompletedProcess, tmp_path: Path) -> None:
    assert done.returncode != 0, f"expected a failure, got rc 0\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert "panicked" not in done.stderr + done.stdout, done.stderr
    assert "$embedder: OpenAIEmbedder" in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower() and "$embedder" in line]
    assert len(errors) == 1, f"one message naming the component expected:\n{done.stderr}"
    runs = tmp_path / "runs"
    left = sorted(p.name for p in runs.iterdir()) if runs.exists() else []
    assert left == [], f"a run that failed before its first result left {left} in {runs}"


# ---------------------------------------------------------------- a retrieval run, shared
@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """The fixture app evaluated once, retrieval only, on an empty cache: the server, the run
    folder, the cache folder and what the fake received during that run."""
    base = tmp_path_factory.mktemp("app-eval")
    server = FakeOpenAI(slow_seconds=2.0).start()
    try:
        with pytest.MonkeyPatch.context() as mp:
            _point_at(mp, server.base_url, base / "cache")
            code = _eval(base / "runs", "first")
        yield {
            "server": server,
            "code": code,
            "run_dir": base / "runs" / "first",
            "out": base / "runs",
            "cache": base / "cache",
            "log": list(server.log),
        }
    finally:
        server.stop()


def test_the_users_app_is_evaluated_as_it_serves(first_run):
    assert first_run["code"] == 0
    run = read_run(first_run["run_dir"])
    assert run.top_k == TOP_K, f"the app serves search_topk={TOP_K}, the run says {run.top_k}"
    assert len(run.cases) == LIMIT

    embeddings = [body for path, body in first_run["log"] if path.endswith("/embeddings")]
    assert embeddings, "the app's OpenAIEmbedder sent nothing to the endpoint"
    assert {body.get("model") for body in embeddings} == {APP_EMBED_MODEL}
    embedded = set(_embedded_texts(first_run["log"]))
    for case in run.cases:  # the questions too go through the app's embedder (its KNN half)
        assert case.question in embedded, f"the question {case.question!r} was never embedded by the app's model"

    # what the run says it spent is what the endpoint received
    spent = run.manifest.model_dump()["spent"]["embeddings"]
    assert spent["components"] == ["$embedder"]
    assert spent["calls"] == len(embeddings) and spent["texts"] == len(_embedded_texts(first_run["log"]))
    assert run.manifest.embedder == f"$embedder: OpenAIEmbedder({APP_EMBED_MODEL})"

    per_doc = _chunks_per_doc(first_run["run_dir"])
    for case in run.cases:
        assert case.top_k == TOP_K
        candidates = sum(per_doc[d] for d in case.doc_scope) if case.doc_scope else sum(per_doc.values())
        assert len(case.hits) == min(TOP_K, candidates), (case.id, len(case.hits), candidates)
        if case.doc_scope:
            assert {h.doc_id for h in case.hits} <= set(case.doc_scope)
        assert all(h.text for h in case.hits)


def test_a_second_run_makes_no_embedding_call(first_run, monkeypatch):
    assert first_run["code"] == 0
    server = first_run["server"]
    server.reset()
    _point_at(monkeypatch, server.base_url, first_run["cache"])
    assert _eval(first_run["out"], "second", "--fresh-retrieval") == 0
    embedding_calls = [path for path, _ in server.log if path.endswith("/embeddings")]
    assert embedding_calls == [], f"{len(embedding_calls)} embedding request(s) on an unchanged re-run"

    first, second = read_run(first_run["run_dir"]), read_run(first_run["out"] / "second")
    assert second.manifest.spent.embeddings.calls == 0
    assert second.manifest.retrieval.asked_pathway > 0, second.manifest.retrieval
    assert second.manifest.retrieval.from_served_cache == 0, second.manifest.retrieval
    assert _served(second) == _served(first), "the vector cache changed what the app serves"


def test_dry_run_estimates_the_embedding_calls_without_one(first_run, tmp_path, monkeypatch, capsys):
    """--dry-run on a cold cache: the app's texts to embed, counted without a call; what the first
    run then really sent is that estimate."""
    server = first_run["server"]
    server.reset()
    _point_at(monkeypatch, server.base_url, tmp_path / "cold-cache")
    assert _eval(tmp_path / "runs", "dry", "--dry-run", "--llm") == 0
    assert server.requests == 0, "a dry run called the endpoint"
    estimate = json.loads(capsys.readouterr().out)
    spent = read_run(first_run["run_dir"]).manifest.model_dump()["spent"]["embeddings"]
    assert estimate["embeddings"]["texts"] == spent["texts"] and estimate["embeddings"]["tokens"] == spent["tokens"]
    embedding_requests = [path for path, _ in first_run["log"] if path.endswith("/embeddings")]
    assert estimate["embeddings"]["calls"] == spent["calls"] == len(embedding_requests), (estimate, spent)
    assert estimate["answer"]["calls"] == LIMIT
    assert not (tmp_path / "runs" / "dry").exists()


def test_dry_run_needs_no_key(first_run, tmp_path, monkeypatch, capsys):
    """The app's OpenAI components are built for a dry run, never called: no key is asked for."""
    server = first_run["server"]
    server.reset()
    _point_at(monkeypatch, server.base_url, tmp_path / "cold-cache")
    monkeypatch.delenv("OPENAI_API_KEY")
    assert _eval(tmp_path / "runs", "dry", "--dry-run", "--llm") == 0
    assert server.requests == 0 and server.probes == 0, "a dry run called the endpoint"
    assert json.loads(capsys.readouterr().out)["embeddings"]["calls"] > 0
    assert "OPENAI_API_KEY" not in os.environ, "the dry run's placeholder key outlived it"


# ---------------------------------------------------------------- --llm
def test_llm_answers_come_from_the_apps_question_answerer(fake_server, tmp_path, monkeypatch):  # noqa: F811
    _point_at(monkeypatch, fake_server.base_url, tmp_path / "cache")
    assert _eval(tmp_path / "runs", "llm", "--llm") == 0
    run = read_run(tmp_path / "runs" / "llm")
    assert len(run.cases) == LIMIT
    for case in run.cases:
        assert case.answer is not None and case.answer.error is None, case.answer
        assert case.answer.answerer == "app:BaseRAGQuestionAnswerer"
        assert case.answer.text

    chats = [body for path, body in fake_server.log if path.endswith("/chat/completions")]
    assert len(chats) == len(run.cases), f"{len(chats)} chat requests for {len(run.cases)} cases"
    asked = Counter()
    for body in chats:
        prompt = _user_message(body)
        assert prompt.startswith(TEMPLATE_START), prompt[:200]
        assert body.get("model") == APP_CHAT_MODEL
        assert body.get("temperature") == 0
        docs = _json_docs(prompt)
        assert docs and all(set(doc) >= {"text", "path"} for doc in docs), prompt[:500]
        matching = [case for case in run.cases if f"Question: {case.question}\n" in prompt]
        assert len(matching) == 1, prompt[:500]
        asked[matching[0].id] += 1
    assert asked == Counter(case.id for case in run.cases), "exactly one chat request per case"

    fake_server.reset()
    assert _eval(tmp_path / "runs", "llm-again", "--llm") == 0
    assert fake_server.chat_requests() == 0, "a re-run must be answered from ragsweep's LLM cache"
    again = read_run(tmp_path / "runs" / "llm-again")

    def answers(result) -> dict[str, dict]:
        return {case.id: case.answer.model_dump(exclude={"cached"}) for case in result.cases}

    assert answers(again) == answers(run)


# ---------------------------------------------------------------- failures, named
def test_endpoint_down_is_one_message_naming_the_component(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"  # nobody listens there
    done = _run_cli(tmp_path, _cli_env(tmp_path, OPENAI_BASE_URL=url, OPENAI_API_KEY=KEY))
    _assert_one_clean_message(done, tmp_path)
    assert f"$embedder: OpenAIEmbedder at {url}" in done.stderr, done.stderr
    assert KEY not in done.stderr + done.stdout
    assert "parse:" not in done.stderr, "the documents were parsed before the endpoint was probed"


def test_missing_key_names_the_component(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = _run_cli(tmp_path, _cli_env(tmp_path, OPENAI_BASE_URL=url))
    _assert_one_clean_message(done, tmp_path)
    assert "check the API key" in done.stderr, done.stderr


def test_a_401_names_the_component_and_the_key(tmp_path):
    server = FakeOpenAI(embeddings_status=401).start()
    try:
        env = _cli_env(tmp_path, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY)
        done = _run_cli(tmp_path, env)
    finally:
        server.stop()
    assert any(path.endswith("/embeddings") for path, _ in server.log), "the 401 was never asked for"
    assert not any(path.endswith("/chat/completions") for path, _ in server.log)
    _assert_one_clean_message(done, tmp_path)
    assert f"$embedder: OpenAIEmbedder at {server.base_url}" in done.stderr, done.stderr
    assert "check the API key" in done.stderr, done.stderr
    assert KEY not in done.stderr + done.stdout, "the API key appeared in the output"
    assert KEY[8:] not in done.stderr + done.stdout, "the API key (past its prefix) appeared in the output"


def test_a_429_storm_mid_run_is_one_message(tmp_path):
    """The endpoint answers the probe, then rate-limits every batch of chunks, inside Pathway's run:
    after the app's own retries, one message naming the component, not a panic of Pathway's engine."""
    server = FakeOpenAI(embeddings_status=429, embeddings_ok_first=1).start()
    try:
        env = _cli_env(tmp_path, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY)
        done = _run_cli(tmp_path, env)
    finally:
        server.stop()
    embedding_requests = [body for path, body in server.log if path.endswith("/embeddings")]
    assert embedding_requests[0]["input"] == ["."] and len(embedding_requests) > 2, "no storm inside the run"
    _assert_one_clean_message(done, tmp_path)
    assert f"$embedder: OpenAIEmbedder at {server.base_url}: http 429" in done.stderr, done.stderr
    assert "rate-limiting" in done.stderr, done.stderr


def test_an_llm_that_refuses_the_key_is_one_message_naming_it(tmp_path):
    """The embedder is served, the app's chat model gets 401 on every call: `--llm` ends with one
    message naming `$llm: OpenAIChat` and its endpoint, the key masked, no traceback."""
    server = FakeOpenAI(echo_key_status=401).start()
    try:
        env = _cli_env(tmp_path, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY)
        done = _run_cli(tmp_path, env, extra=("--llm",))
    finally:
        server.stop()
    assert done.returncode != 0
    assert server.chat_requests() > 0
    assert "Traceback" not in done.stderr and "panicked" not in done.stderr, done.stderr
    messages = [line for line in done.stderr.splitlines() if line.startswith("ragsweep: error:")]
    assert len(messages) == 1, done.stderr
    assert f"$llm: OpenAIChat at {server.base_url}: http 401" in messages[0]
    assert "check the API key" in messages[0]
    assert KEY not in done.stderr + done.stdout and KEY[8:] not in done.stderr + done.stdout
