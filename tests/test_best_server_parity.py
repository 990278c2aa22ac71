"""What ``ragsweep sweep --write-best`` writes is what the sweep scored, served: Pathway's own
``DocumentStoreServer`` (tests/server_parity_app.py, a separate process on 127.0.0.1) built from the
written file alone serves, for every question the winner was scored on, at the winner's depth, the
ranked list the sweep scored for it (the comparison of tests/test_server_parity.py: (document, chunk
text) lists, the order among exactly equal scores made canonical)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from loopback import free_port, post_json, stop
from server_parity_app import AS_WRITTEN
from support import ROOT
from test_server_parity import ALL_CHUNKS_K, HTTP_WORKERS, probe_query, ranked, served_items

DOCS = ROOT / "datasets" / "cuad-mini" / "docs"
APP = Path(__file__).resolve().parent / "server_parity_app.py"
READY_TIMEOUT = 240.0  # seconds from start-up to a fully indexed server, on 2 busy cores

GRID = """\
grid:
  top_k: [1, 3]
  retriever_mode: [bm25, hybrid]
baseline: {top_k: 1, retriever_mode: bm25}
objectives: [recall@k]
ks: [1, 3]
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A small sweep over cuad-mini's dev cases, its best written back: (written file, winner's cases)."""
    from ragsweep.commands.sweep import SweepOptions, run_sweep
    from ragsweep.report.runs import read_cases

    root = tmp_path_factory.mktemp("best-served")
    (root / "grid.yaml").write_text(GRID)
    best = root / "best.yaml"
    sweep_dir, report = run_sweep(
        SweepOptions(
            pipeline=str(ROOT / "pipelines" / "default.yaml"), dataset=str(ROOT / "datasets" / "cuad-mini"),
            grid=str(root / "grid.yaml"), out=str(root / "runs"), progress=False, split="dev", limit=16,
            write_best=str(best),
        )
    )  # fmt: skip
    winner = report.config(report.best["recall@k"])
    assert winner.top_k != 5  # the written file differs from the pipeline it came from (top_k 5)
    return best, winner, read_cases(sweep_dir / "configs" / winner.id / "cases.jsonl")


def test_pathways_server_built_from_the_written_file_serves_the_scored_lists(written, tmp_path):
    from ragsweep.pipeline.config import PipelineConfig
    from ragsweep.pipeline.corpus import parse_corpus
    from ragsweep.pipeline.store import Query, RagStore, outline_metadata

    best, winner, cases = written
    corpus = parse_corpus(DOCS)
    config = PipelineConfig.load(best)
    assert config.top_k == winner.top_k  # the depth a client of the app asks at: the file's
    texts = {d.doc_id: d.text for d in corpus.documents}
    watched = tmp_path / "texts"
    watched.mkdir()
    outlines = tmp_path / "outlines.json"
    outlines.write_text(json.dumps({d.doc_id: outline_metadata(d) for d in corpus.documents}))
    port = free_port()
    log_path = tmp_path / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, str(APP), str(watched), str(best), json.dumps({AS_WRITTEN: port}), str(outlines)],
            stdout=log, stderr=subprocess.STDOUT, cwd=str(tmp_path), env={**os.environ},
        )  # fmt: skip
        try:  # the in-process run while the server starts (its imports overlap it), before any document is there
            every = RagStore(config, corpus).run([Query("agreement", 1)]).chunks
            probe = probe_query([texts[c.doc_id][c.start : c.end] for c in every])  # BM25 matches every chunk with it
            for doc in corpus.documents:  # the bytes the in-process store feeds, whole files only
                staged = tmp_path / f"{doc.doc_id}.part"
                staged.write_bytes(doc.text.encode("utf-8"))
                os.replace(staged, watched / doc.doc_id)
            _indexed(port, proc, log_path, probe, len(every))
            with ThreadPoolExecutor(HTTP_WORKERS) as pool:  # Pathway answers a commit's requests together
                replies = pool.map(lambda c: post_json(port, "/v1/retrieve", _request(c, config.top_k)), cases)
                served = {c["id"]: reply for c, reply in zip(cases, replies, strict=True)}
        finally:
            stop(proc)
    print(f"\nserved from {best.name}: {len(cases)} questions at k={config.top_k} over {len(every)} chunks")
    differing = []
    for case in cases:
        scored = [(h["score"], h["doc_id"], h["start"], h["text"]) for h in case["hits"]]
        got = served_items(served[case["id"]])
        if ranked(got) != ranked(scored):
            differing.append(f"{case['id']}\n  served: {_short(got)}\n  scored: {_short(scored)}")
    assert len(cases) > 5 and not differing, "served != scored for\n" + "\n".join(differing)


def _short(items: list) -> str:
    return (
        "[" + ", ".join(f"({score:.5f}, {doc[:12]}, {start}, {text[:20]!r})" for score, doc, start, text in items) + "]"
    )


def _request(case: dict, k: int) -> dict:
    """A case's question as a client sends it: with its documents' filter when it is scoped to them."""
    from ragsweep.pipeline.store import scope_filter

    return {"query": case["question"], "k": k, "metadata_filter": scope_filter(case.get("doc_scope"))}


def _indexed(port: int, proc: subprocess.Popen, log_path: Path, probe: str, chunks: int) -> None:
    """Wait until the server serves every chunk the in-process store made of the documents."""
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        if proc.poll() is not None:
            pytest.fail(f"server exited ({proc.returncode}):\n{log_path.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"server not indexed after {READY_TIMEOUT:.0f}s:\n{log_path.read_text()[-3000:]}")
        try:
            if len(post_json(port, "/v1/retrieve", {"query": probe, "k": ALL_CHUNKS_K}, timeout=30)) >= chunks:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
            pass
        time.sleep(0.5)
