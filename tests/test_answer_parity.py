"""Answer parity: what ragsweep scores with ``--llm`` is the answer the user's app serves.

For BaseRAGQuestionAnswerer and AdaptiveRAGQuestionAnswerer apps (tests/fixtures/apps/parity_*.yaml),
the app itself runs for real (tests/answer_parity_app.py: Pathway's loader over the YAML, Pathway's
``QASummaryRestServer``), with its embedder and chat model pointed at the loopback fake
(tests/fake_openai.py), and is asked ``/v2/answer`` for 10 questions. ragsweep then evaluates the
same YAML in-process (``ragsweep.evaluate(..., llm=True)``) against the same fake. Asserted: the
same answer for every question, and the very same chat requests (every message, the model, the
temperature: the whole JSON body) reaching the endpoint from both.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI
from loopback import environment, free_port, post_json, stop
from support import MINI as DATASET
from support import ROOT

APP = ROOT / "tests" / "answer_parity_app.py"
APPS = {"base": "parity_base.yaml", "adaptive": "parity_adaptive.yaml"}
N_QUESTIONS = 10


def _questions() -> list[str]:
    """10 distinct cuad-mini questions that Tantivy's parser takes as they are (a question it
    would refuse is cleaned by ragsweep's store and would not reach a stock server unchanged)."""
    from ragsweep.datasets.pathway_limits import tantivy_safe

    seen: list[str] = []
    for line in (DATASET / "cases.jsonl").read_text().splitlines():
        question = json.loads(line)["question"]
        if question not in seen and tantivy_safe(question) == question:
            seen.append(question)
    assert len(seen) >= N_QUESTIONS
    # the fake LLM finds no answer to these in fewer than 2 or 4 chunks: an adaptive app asks again
    # with a larger context (1, then 2, then 4 chunks), a BaseRAG app with 4 chunks answers at once
    marked = [f"{q} #needs{n}" if n else q for q, n in zip(seen, [2, 4, 0, 0, 2] + [0] * N_QUESTIONS)]
    assert all(tantivy_safe(q) == q for q in marked)
    return marked[:N_QUESTIONS]


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    """cuad-mini's contracts as the folder both read: the text ragsweep parses is the file's bytes."""
    from ragsweep.pipeline.corpus import parse_corpus

    folder = tmp_path_factory.mktemp("parity") / "docs"
    shutil.copytree(DATASET / "docs", folder)
    # ragsweep reads a .txt through Docling's Markdown backend, which changes its white space: the
    # files are given text that it keeps as it is (lines without indentation, parsed until nothing
    # changes), so what ragsweep feeds its store is what the app's Utf8Parser reads from them
    for doc in parse_corpus(folder).documents:
        (folder / doc.doc_id).write_text("\n".join(line.strip() for line in doc.text.splitlines()))
    for _ in range(4):
        changed = [d for d in parse_corpus(folder).documents if (folder / d.doc_id).read_text() != d.text]
        for doc in changed:
            (folder / doc.doc_id).write_text(doc.text)
        if not changed:
            return folder
    raise AssertionError(f"ragsweep's parse of {[d.doc_id for d in changed]} does not settle")


@pytest.fixture(scope="module")
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def _chat_bodies(log: list[tuple[str, dict]]) -> list[str]:
    return sorted(json.dumps(body, sort_keys=True) for path, body in log if path.endswith("/chat/completions"))


@contextlib.contextmanager
def _pointed_at(fake: FakeOpenAI, cache: Path):
    """This process's openai clients at the fake, its caches in ``cache``."""
    with environment(
        {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-parity", "RAGSWEEP_CACHE_DIR": str(cache)}
    ):
        yield


def _chunk_count(app: Path, docs: Path) -> int:
    """How many chunks the app's index holds once every document is in (ragsweep's store, same YAML)."""
    from ragsweep.pipeline.store import RagStore

    return RagStore.from_folder(app, docs).index().chunks


def _serve_and_ask(app: Path, docs: Path, fake: FakeOpenAI, questions: list[str], workdir: Path) -> dict:
    """The app's real server: ask each question once its index holds every chunk (a document
    counted by /v1/statistics may still be on its way through the embedder)."""
    with _pointed_at(fake, workdir / "count-cache"):
        chunks = _chunk_count(app, docs)
    port = free_port()
    env = {
        **os.environ,
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "sk-parity",
        "RAGSWEEP_PARITY_DOCS": str(docs),
    }
    log_path = workdir / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, str(APP), str(app), str(port)], stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env=env
        )
        try:
            deadline = time.monotonic() + 180
            while True:
                assert proc.poll() is None, log_path.read_text()[-3000:]
                try:  # hybrid top-k for a large k: the KNN side returns every chunk of the index
                    if len(post_json(port, "/v1/retrieve", {"query": "agreement", "k": 1000}, timeout=5)) == chunks:
                        break
                except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                    pass
                assert time.monotonic() < deadline, "server not ready in 180 s:\n" + log_path.read_text()[-3000:]
                time.sleep(0.5)
            fake.reset()
            with ThreadPoolExecutor(len(questions)) as pool:  # Pathway answers a commit's requests together
                answers = list(pool.map(lambda q: post_json(port, "/v2/answer", {"prompt": q})["response"], questions))
            return {"answers": answers, "requests": _chat_bodies(fake.log)}
        finally:
            stop(proc)


def _evaluate_in_process(app: Path, docs: Path, fake: FakeOpenAI, questions: list[str], cache: Path) -> dict:
    import ragsweep
    from ragsweep.datasets.schema import Case

    with _pointed_at(fake, cache):
        fake.reset()
        cases = [Case(id=f"q{i}", question=q) for i, q in enumerate(questions)]
        report = ragsweep.evaluate(app, cases, docs=docs, llm=True, validate=False)  # no labels: answers only
        requests = _chat_bodies(fake.log)
    by_id = {c.id: c for c in report.cases}
    return {"answers": [by_id[c.id].answer for c in cases], "requests": requests}


@pytest.mark.parametrize("kind", sorted(APPS))
def test_answers_and_prompts_equal_the_apps_server(kind, docs, fake, tmp_path):
    app = ROOT / "tests" / "fixtures" / "apps" / APPS[kind]
    questions = _questions()
    served = _serve_and_ask(app, docs, fake, questions, tmp_path)
    evaluated = _evaluate_in_process(app, docs, fake, questions, tmp_path / "cache")

    qa_class = {"base": "BaseRAGQuestionAnswerer", "adaptive": "AdaptiveRAGQuestionAnswerer"}[kind]
    assert {a.answerer for a in evaluated["answers"]} == {f"app:{qa_class}"}
    assert all(a.error is None for a in evaluated["answers"])
    for question, got, want in zip(questions, evaluated["answers"], served["answers"], strict=True):
        assert got.text == (want or "").strip(), f"{kind}: {question!r}"
    # the whole request bodies, as the endpoint got them: the app's prompt, context, model, temperature
    assert served["requests"], "the app's server sent no chat request"
    assert evaluated["requests"] == served["requests"]
    prompts = [json.loads(r)["messages"][-1]["content"] for r in served["requests"]]
    assert all('{"text": ' in p for p in prompts)  # Pathway's SimpleContextProcessor, not ragsweep's [n] format
    if kind == "adaptive":  # the context grew for some question: more calls than questions
        assert len(served["requests"]) > len(questions)
        assert any(a.text == "" or a.abstained for a in evaluated["answers"]) or len(prompts) > len(questions)
    else:
        assert len(served["requests"]) == len(questions)
