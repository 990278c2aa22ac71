"""``$route_docs``: a document-level Pathway DocumentStore ranks the documents, the chunks are
then retrieved inside the top N (ragsweep.pipeline.routing). Real Pathway, real tantivy.

The corpus makes routing matter: the question's words fill many chunks of a handbook, but
only the supply agreement's file name (its title) names what is asked about.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.config import PipelineConfig
from support import PIPELINE, ROOT

QUESTION = "What are the delivery terms of the widget supply agreement?"
RIGHT = "widget-supply-agreement.txt"
HANDBOOK = "employee-handbook.txt"
LEASE = "office-lease.txt"
EVIDENCE = "The Supplier ships the goods to the Buyer within thirty days of each purchase order"
TEXTS = {
    # its first chunk (what its document row holds) is a welcome page without the question's words
    HANDBOOK: "Welcome to the company. This booklet explains how the office works, who to call, and where "
    "things are kept. Read it during your first week.\n\n"
    + "".join(
        f"Section {i}. Staff in the warehouse handle the delivery terms of every widget supply agreement with "
        "care, and each widget supply agreement lists delivery terms for the team.\n\n"
        for i in range(12)
    ),
    RIGHT: f"Delivery. {EVIDENCE}, at its own cost.\n",
    LEASE: "The Tenant rents the premises on the second floor for five years. Rent is due on the first day "
    "of each month.\n",
}
KNOBS = {"retriever_mode": "bm25", "min_tokens": 20, "max_tokens": 40}


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("routing-docs")
    for name, text in TEXTS.items():
        (root / name).write_text(text)
    return root


@pytest.fixture(scope="module")
def corpus(docs, tmp_path_factory):
    from ragsweep.pipeline.corpus import parse_corpus

    return parse_corpus(docs, cache_dir=tmp_path_factory.mktemp("parse-cache"))


def _config(route_docs: int | None, **overrides) -> PipelineConfig:
    return PipelineConfig.load(PIPELINE, {**KNOBS, "route_docs": route_docs, **overrides})


def _asked():
    from ragsweep.pipeline.store import Query

    return [
        Query(QUESTION, 3),
        Query(QUESTION, 3, [LEASE]),  # a scope of one document
        Query(QUESTION, 3, [HANDBOOK, RIGHT]),  # a scope of two: routed among them
    ]


@pytest.fixture(scope="module")
def runs(corpus):
    """(retriever mode, route_docs) -> the store's run of :func:`_asked`."""
    from ragsweep.pipeline.store import RagStore

    return {
        (mode, n): RagStore(_config(n, retriever_mode=mode), corpus).run(_asked())
        for mode in ("bm25", "hybrid")
        for n in (None, 1, 2)
    }


def _docs(hits) -> list[str]:
    return [h.doc_id for h in hits]


# ------------------------------------------------------------------ what routing serves


@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_routing_finds_the_document_the_chunks_do_not(runs, mode):
    assert _docs(runs[(mode, None)].hits[0]) == [HANDBOOK] * 3  # its many chunks crowd the agreement out
    routed = runs[(mode, 1)].hits[0]
    assert _docs(routed) == [RIGHT] and EVIDENCE in routed[0].text
    # two documents: the agreement's chunk, and the handbook's best chunks after it in score order
    assert set(_docs(runs[(mode, 2)].hits[0])) <= {RIGHT, HANDBOOK}


@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_a_scoped_query_is_routed_inside_its_scope(runs, mode):
    unrouted = runs[(mode, None)].hits
    for n in (1, 2):  # a scope of one document: served exactly as without routing
        assert [h.model_dump() for h in runs[(mode, n)].hits[1]] == [h.model_dump() for h in unrouted[1]]
    assert _docs(unrouted[1]) == [LEASE]
    # a scope of two with route_docs 1: the intersection, the routed document of the two
    assert _docs(runs[(mode, 1)].hits[2]) == [RIGHT]
    # route_docs 2 over a scope of two documents: the scope wins
    assert [h.model_dump() for h in runs[(mode, 2)].hits[2]] == [h.model_dump() for h in unrouted[2]]


def test_the_chunk_table_is_the_unrouted_one(runs):
    assert runs[("bm25", 1)].chunks == runs[("bm25", None)].chunks == runs[("hybrid", 2)].chunks


def test_null_serves_what_a_file_without_the_knob_serves(runs, corpus, tmp_path):
    from ragsweep.pipeline.store import RagStore

    text = PIPELINE.read_text()
    without = "\n".join(line for line in text.splitlines() if "route_docs" not in line)
    assert without != text
    path = tmp_path / "no-knob.yaml"
    path.write_text(without)
    config = PipelineConfig.load(path, KNOBS)
    assert config.index_key == _config(None).index_key
    run = RagStore(config, corpus).run(_asked())
    assert [[h.model_dump() for h in hits] for hits in run.hits] == [
        [h.model_dump() for h in hits] for hits in runs[("bm25", None)].hits
    ]


def test_a_document_row_is_its_title_and_first_chunk():
    from ragsweep.pipeline.chunking import OffsetTokenCountSplitter
    from ragsweep.pipeline.routing import DocumentRows

    text = "First part of the text. " * 10 + "Later part. " * 20
    for header in ("none", "title"):  # the pipeline's own chunk header is not doubled
        splitter = OffsetTokenCountSplitter(min_tokens=5, max_tokens=20, chunk_header=header)
        first = OffsetTokenCountSplitter(min_tokens=5, max_tokens=20).chunk(text, {})[0][0]
        ((row, meta),) = DocumentRows(splitter).chunk(text, {"doc_id": "deals/acme.txt", "headings": [[0, "x"]]})
        assert row == "acme\n\n" + first and meta == {"doc_id": "deals/acme.txt", "start": 0, "end": len(first)}
    ((row, _),) = DocumentRows(splitter).chunk(text, {"doc_id": "a.txt", "title": "Supply Agreement"})
    assert row.startswith("Supply Agreement\n\n")


# ------------------------------------------------------------------ the knob and the caches


@pytest.mark.parametrize("value", [0, -2, 2.5, True, "three"])
def test_a_bad_value_is_one_line_naming_the_knob(value):
    with pytest.raises(ConfigError) as err:
        _config(value)  # type: ignore[arg-type]
    message = str(err.value)
    assert "\n" not in message and "$route_docs = " in message
    assert "must be an integer >= 1 (chunks are retrieved inside the top N documents), or null" in message


def test_every_cache_keys_on_route_docs(corpus, tmp_path):
    from ragsweep.pipeline import served_cache
    from ragsweep.pipeline.served_cache import ServedCache
    from ragsweep.pipeline.store import RagStore

    configs = {n: _config(n) for n in (None, 1, 3)}
    assert len({c.index_key for c in configs.values()}) == 3  # a sweep runs one index group each
    assert len({c.chunking_key for c in configs.values()}) == 1
    assert len({served_cache.index_fingerprint(c, corpus) for c in configs.values()}) == 3
    # one cache file, routed and unrouted lists of the same questions never mixed
    cache = ServedCache(tmp_path / "served.sqlite")
    first = {n: RagStore(configs[n], corpus).run(_asked(), cache=cache) for n in (None, 1)}
    again = {n: RagStore(configs[n], corpus).run(_asked(), cache=cache) for n in (None, 1)}
    cache.close()
    for n in (None, 1):
        assert first[n].from_cache == 0 and again[n].from_cache == len(_asked())
        assert again[n].hits == first[n].hits
    assert _docs(again[None].hits[0]) != _docs(again[1].hits[0]) == [RIGHT]


# ------------------------------------------------------------------ eval and sweep


@pytest.fixture(scope="module")
def dataset(docs, tmp_path_factory) -> Path:
    import shutil

    root = tmp_path_factory.mktemp("routing-dataset")
    shutil.copytree(docs, root / "docs")
    case = {"id": "w", "question": QUESTION, "evidence": [{"doc_id": RIGHT, "text": EVIDENCE}]}
    (root / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (root / "README.md").write_text("Written by tests/test_routing.py; no licence needed.\n")
    return root


def test_eval_and_a_sweep_axis_over_route_docs(dataset, tmp_path, monkeypatch):
    import ragsweep

    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    overrides = {**KNOBS, "top_k": 3}
    report = ragsweep.evaluate(PIPELINE, dataset, overrides={**overrides, "route_docs": 1}, ks=[3])
    assert report.metrics["recall@3"] == 1.0

    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  route_docs: [null, 1]\nbaseline: {route_docs: null}\nobjectives: [recall@k]\nks: [3]\n")
    sweep = ragsweep.sweep(PIPELINE, dataset, grid, overrides=overrides, out=tmp_path / "sweeps")
    by_route = {c.params["route_docs"]: c for c in sweep.configs}
    assert sorted(by_route, key=str) == sorted([None, 1], key=str)
    assert len({c.index_key for c in by_route.values()}) == 2  # one index group each
    assert {n: c.metrics["recall@k"] for n, c in by_route.items()} == {None: 0.0, 1: 1.0}


def test_a_reranker_reranks_the_routed_candidates(dataset, tmp_path, monkeypatch):
    import ragsweep

    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    rerank = {**KNOBS, "top_k": 3, "reranker": "encoder", "rerank_candidates": 6}
    plain = ragsweep.evaluate(PIPELINE, dataset, overrides=rerank, ks=[3])
    routed = ragsweep.evaluate(PIPELINE, dataset, overrides={**rerank, "route_docs": 1}, ks=[3])
    assert {h.doc_id for h in plain.cases[0].hits} == {HANDBOOK}
    assert [h.doc_id for h in routed.cases[0].hits] == [RIGHT] and routed.metrics["recall@3"] == 1.0


def test_an_apps_question_answerer_answers_from_the_routed_documents(dataset, tmp_path, monkeypatch):
    """A user's app (no ``$route_docs`` in its file; Pathway's TokenCountSplitter, OpenAI embedder
    and chat model, against the fake endpoint) with ``--set route_docs=1``: its question answerer
    asks the routed store, so each prompt holds the chunks of one document (unrouted, its 8 chunks
    would come from every document: the corpus has fewer than 8 chunks)."""
    from docx_dataset import docx_copy
    from fake_openai import FakeOpenAI
    from ragsweep.cli import main
    from ragsweep.report.runs import read_run

    server = FakeOpenAI().start()
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-ROUTING-0123456789abcdef")
        monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.delenv("RAGSWEEP_LLM_MODEL", raising=False)
        app = ROOT / "tests" / "fixtures" / "apps" / "rag_evals_style.yaml"  # its DoclingParser reads DOCX
        docx = docx_copy(dataset, tmp_path / "docx-dataset")
        argv = ["eval", "--pipeline", str(app), "--dataset", str(docx), "--set", "route_docs=1", "--llm"]
        assert main([*argv, "--out", str(tmp_path / "runs"), "--name", "routed"]) == 0
        chats = [body for path, body in server.log if path.endswith("/chat/completions")]
    finally:
        server.stop()
    run = read_run(tmp_path / "runs" / "routed")
    (case,) = run.cases
    assert case.answer is not None and case.answer.error is None and case.answer.answerer.startswith("app:")
    assert len({h.doc_id for h in case.hits}) == 1 and len(case.hits) >= 1
    (chat,) = chats
    prompt = next(m["content"] for m in chat["messages"] if m["role"] == "user")
    decoder, paths, at = json.JSONDecoder(), set(), prompt.find('{"text": ')
    while at != -1:  # the documents Pathway's context processor put in the prompt
        doc, end = decoder.raw_decode(prompt, at)
        paths.add(doc["path"])
        at = prompt.find('{"text": ', end)
    assert len(paths) == 1, paths
