"""Evaluated = served (issue 10): the in-process store ranks what a real Pathway server serves.

Pathway's own ``DocumentStoreServer`` (tests/server_parity_app.py, a separate process on
127.0.0.1) serves ragsweep's ``DocumentStore`` (:mod:`ragsweep.pipeline.serving`: Pathway's, with
questions made safe for Tantivy only when they hold its query syntax), built from the same
pipeline file (``pipelines/default.yaml`` with ``retriever_mode`` = bm25 / knn / hybrid, hybrid
with ``chunk_header`` = title and title+heading, and bm25 and hybrid with ``route_docs``: the
document stage and the chunks inside its top documents, one ``/v1/retrieve`` call) over the same parsed documents (cuad-mini's
contracts and a Markdown handbook with a title and section headings): each parsed text
is written as UTF-8 bytes to a file named by its doc id and read with
``pw.io.fs.read(format="binary", with_metadata=True, mode="streaming")``, so Pathway's
default ``Utf8Parser`` decodes exactly the text the in-process store feeds; each document's
outline (title, headings) goes into its metadata on both sides, as the in-process store puts it.

Each question goes to ``POST /v1/retrieve`` as a client would send it (``{"query": q,
"k": k}``, no filter) and to ``RagStore(config, corpus).run([Query(q, k), ...])``; the
ranked (doc id, served chunk text: header included) lists must be equal at k = 1, 3, 5, 10. The only
normalisation, applied to both sides alike: items are sorted by (-score, doc id, start,
text), i.e. the order among exactly equal scores is made canonical (the order both sides
serve already, :mod:`ragsweep.pipeline.stable_order`; checked on the server's replies).
Membership (which chunks make the top k) is never normalised.

A mismatch is reported with its likely cause: the question is changed by the store's
``sanitize_query``, an exact score tie at the cut-off (which the pipeline's
``ragsweep.pipeline.fusion.HybridIndexFactory`` orders deterministically), or other.

Embeddings come from the pipeline's embedder cache (``RAGSWEEP_CACHE_DIR``, shared with the
server through the environment); the in-process runs happen before the documents are put
where the server reads them, so the server finds every chunk's vector in that cache.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from loopback import free_port, post_json, stop
from server_parity_app import overrides_of
from support import PIPELINE, ROOT

DOCS = ROOT / "datasets" / "cuad-mini" / "docs"
APP = Path(__file__).resolve().parent / "server_parity_app.py"

# retriever mode, or mode:chunk_header, either with @route_docs (tests/server_parity_app.py builds one server each)
MODES = ("bm25", "knn", "hybrid", "hybrid:title", "hybrid:title+heading", "bm25@1", "hybrid@2")
KS = (1, 3, 5, 10)
QUESTIONS = [
    # as a user types them: punctuation Tantivy parses reaches Pathway unchanged
    "Which state's law governs this agreement?",
    "What is the expiration date?",
    "Who are the parties to this agreement?",
    "Can a party terminate this contract without cause, and with how much notice?",
    # Tantivy query syntax: a stock server dies on these; ragsweep's store (both sides) makes them safe
    'Is "Change of Control" (or assignment) restricted: yes or no?',
    "Non-compete [any territory] + exclusivity?",
    # without punctuation
    "What is the effective date of the contract",
    "Is there a cap on liability or a limitation of damages",
    "Does the contract grant an exclusive territory or exclusive license",
    "What insurance must be maintained by one party for the benefit of the counterparty",
    # answered by a title or a heading (the Markdown handbook's)
    "Tenant handbook: what does the section on rent collection say?",
]
# a document several chunks long under a title and section headings: chunks start inside sections
SECTIONS = ("Rent collection", "Repairs and maintenance", "Noise and quiet hours", "Moving out")
HANDBOOK = "# Tenant handbook\n\n" + "".join(
    f"## {name}\n\n"
    + " ".join(f"Rule {n} about {name.lower()}: residents follow it in every building, every month." for n in range(40))
    + "\n\n"
    for name in SECTIONS
)
ALL_CHUNKS_K = 1000  # more than the corpus has: the probe query returns every chunk it matches
READY_TIMEOUT = 240.0  # seconds from start-up to a fully indexed server, on 2 busy cores
HTTP_WORKERS = 64  # concurrent requests: Pathway answers a commit's requests together (a round per commit)


# ------------------------------------------------------------------ comparison logic


def served_items(reply: list[dict]) -> list[tuple[float, str, int, str]]:
    """/v1/retrieve's reply as (score, doc id, start, text); score = -dist, as the store reads it."""
    return [
        (-float(r["dist"]), str(r["metadata"]["doc_id"]), int(r["metadata"].get("start", -1)), str(r["text"]))
        for r in reply
    ]


def evaluated_items(hits) -> list[tuple[float, str, int, str]]:
    return [(float(h.score), h.doc_id, int(h.start), h.served_text) for h in hits]


def canonical(items: list[tuple[float, str, int, str]]) -> list[tuple[float, str, int, str]]:
    """The one normalisation: order among exactly equal scores by (doc id, start, text)."""
    return sorted(items, key=lambda r: (-r[0], r[1], r[2], r[3]))


def ranked(items) -> list[tuple[str, str]]:
    return [(doc, text) for _, doc, _, text in canonical(items)]


def differs(served, evaluated) -> bool:
    """True when the ranked (document, chunk text) lists are not the same."""
    return ranked(served) != ranked(evaluated)


def cause(question: str, served, evaluated) -> str:
    """Why two lists differ: a tie at the cut-off (equal above the cut, equal cut scores,
    only tied chunks differ), the question's rewriting by sanitize_query, or other."""
    from ragsweep.pipeline.store import sanitize_query

    s, e = canonical(served), canonical(evaluated)
    changed = sanitize_query(question) != question
    if s and e and len(s) == len(e) and s[-1][0] == e[-1][0]:
        cut = s[-1][0]
        if [(d, t) for sc, d, _, t in s if sc != cut] == [(d, t) for sc, d, _, t in e if sc != cut]:
            return "exact score tie at the cut-off" + (" (question also changed by sanitize_query)" if changed else "")
    return "question changed by sanitize_query" if changed else "other"


def describe(items) -> str:
    return "[" + ", ".join(f"({sc:.6f}, {d[:12]}, {st})" for sc, d, st, _ in canonical(items)) + "]"


def probe_query(chunk_texts: list[str]) -> str:
    """A question BM25 matches in every chunk: one word from each chunk."""
    from ragsweep.pipeline.store import sanitize_query

    words = []
    for text in chunk_texts:
        found = re.findall(r"[A-Za-z]{4,}", text)
        if found:
            words.append(found[0].lower())
    return sanitize_query(" ".join(sorted(set(words))))


# ------------------------------------------------------------------ the evaluated side


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    import shutil

    from ragsweep.pipeline.corpus import parse_corpus

    docs = tmp_path_factory.mktemp("parity-docs")
    for path in DOCS.iterdir():
        shutil.copy(path, docs / path.name)
    (docs / "handbook.md").write_text(HANDBOOK)
    parsed = parse_corpus(docs)
    assert len(parsed.documents) == 4, parsed.skipped
    assert len(next(d for d in parsed.documents if d.doc_id == "handbook.md").headings) == len(SECTIONS)
    return parsed


@pytest.fixture(scope="module")
def evaluated(corpus):
    """variant -> {(question, k): hits} from the in-process store, its every chunk (as served),
    and a probe question that reaches every chunk in every unrouted variant; ``ready``: what the
    probe gets in each variant (a routed one: the chunks of its top documents), the server's
    readiness check."""
    from ragsweep.datasets.schema import Case
    from ragsweep.pipeline import retrieval
    from ragsweep.pipeline.config import PipelineConfig
    from ragsweep.pipeline.store import Query, RagStore

    started = time.perf_counter()
    cases = [Case(id=f"q{i}", question=q) for i, q in enumerate(QUESTIONS)]
    texts = {d.doc_id: d.text for d in corpus.documents}
    out: dict[str, dict] = {}
    chunks: dict[str, list[tuple[str, str]]] = {}
    probe = None
    ready: dict[str, list[tuple[str, str]]] = {}
    for mode in ("knn", *(m for m in MODES if m != "knn")):  # knn first: its chunks give the probe
        config = PipelineConfig.load(PIPELINE, overrides_of(mode))
        # what eval scores: the retrieve stage (bm25/knn: prefixes of one query; hybrid: a query per k)
        retrieved = retrieval.retrieve(config, corpus, cases, KS)
        out[mode] = {(c.question, k): retrieved.served[c.id][k] for c in cases for k in KS}
        if probe is None:  # the chunk table of the retrieve stage's run gives the probe
            every = retrieved.candidates(None)
            chunks[mode] = sorted((c.doc_id, c.header + texts[c.doc_id][c.start : c.end]) for c in every)
            probe = probe_query([t for _, t in chunks[mode]])
            ready[mode] = chunks[mode]
        else:  # the probe reaches every chunk in process, so the server is ready when it does
            run = RagStore(config, corpus).run([Query(probe, ALL_CHUNKS_K)])
            chunks[mode] = sorted((c.doc_id, c.header + texts[c.doc_id][c.start : c.end]) for c in run.chunks)
            ready[mode] = sorted((h.doc_id, h.served_text) for h in run.hits[-1])
            if "@" not in mode:
                assert ready[mode] == chunks[mode], f"{mode}: probe misses chunks"
            else:  # routed: every chunk of its top documents
                routed = {d for d, _ in ready[mode]}
                assert 0 < len(routed) <= int(mode.partition("@")[2]), mode
                assert ready[mode] == [(d, t) for d, t in chunks[mode] if d in routed], mode
    assert chunks["bm25"] == chunks["knn"] == chunks["hybrid"] == chunks["bm25@1"] == chunks["hybrid@2"]
    assert chunks["hybrid:title"] != chunks["hybrid"] != chunks["hybrid:title+heading"] != chunks["hybrid:title"]
    print(
        f"\nin process: {len(MODES)} variants x {len(QUESTIONS)} questions x {len(KS)} k "
        f"in {time.perf_counter() - started:.1f}s"
    )
    return {"hits": out, "chunks": chunks, "probe": probe, "ready": ready}


# ------------------------------------------------------------------ the served side


@pytest.fixture(scope="module")
def server(tmp_path_factory, corpus):
    """One process, one DocumentStoreServer per variant; yields {variant: port}; killed at the end.

    Started first (its imports overlap the in-process runs) on an empty folder; the
    documents are moved in by ``feed`` once the in-process runs are done.
    """
    from ragsweep.pipeline.store import outline_metadata

    root = tmp_path_factory.mktemp("server-parity")
    watched, staging = root / "texts", root / "staging"
    watched.mkdir()
    staging.mkdir()
    ports = {mode: free_port() for mode in MODES}
    outlines = root / "outlines.json"  # what the in-process store puts in each document's metadata
    outlines.write_text(json.dumps({d.doc_id: outline_metadata(d) for d in corpus.documents}))
    log_path = root / "server.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [sys.executable, str(APP), str(watched), str(PIPELINE), json.dumps(ports), str(outlines)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=str(root),  # anything Pathway writes stays in the temporary folder
        env={**os.environ},  # RAGSWEEP_CACHE_DIR: the embedding cache of the in-process runs
    )

    def feed():
        for doc in corpus.documents:
            staged = staging / doc.doc_id
            staged.parent.mkdir(parents=True, exist_ok=True)
            staged.write_bytes(doc.text.encode("utf-8"))  # the bytes RagStore feeds Pathway
            target = watched / doc.doc_id
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, target)  # whole files only: never a half-written one

    def log_tail() -> str:
        log.flush()
        return "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])

    try:
        yield {"ports": ports, "proc": proc, "feed": feed, "log_tail": log_tail, "started": time.perf_counter()}
    finally:
        stop(proc)
        log.close()


@pytest.fixture(scope="module")
def served(server, evaluated, corpus):
    """Every (mode, question, k) asked over HTTP once every mode's server has every chunk."""
    ports, proc = server["ports"], server["proc"]
    server["feed"]()
    fed = time.perf_counter()
    probe, chunks, ready = evaluated["probe"], evaluated["chunks"], evaluated["ready"]
    deadline = time.monotonic() + READY_TIMEOUT
    seen: dict[str, int] = {}
    for mode, port in ports.items():
        while True:
            if proc.poll() is not None:
                pytest.fail(f"server exited ({proc.returncode}) before it was ready:\n{server['log_tail']()}")
            if time.monotonic() > deadline:
                pytest.fail(
                    f"server not fully indexed after {READY_TIMEOUT:.0f}s (chunks seen per mode: {seen}, "
                    f"expected {len(ready[mode])}):\n{server['log_tail']()}"
                )
            try:
                reply = post_json(port, "/v1/retrieve", {"query": probe, "k": ALL_CHUNKS_K}, timeout=30)
                seen[mode] = len(reply)
                if "@" in mode:  # routed: its documents are known once the document index is complete
                    if sorted((d, t) for _, d, _, t in served_items(reply)) == ready[mode]:
                        break
                elif len(reply) >= len(chunks[mode]):
                    # byte-identical input: the server split it into exactly the in-process chunks
                    assert sorted((d, t) for _, d, _, t in served_items(reply)) == chunks[mode], mode
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
                pass
            time.sleep(0.5)
    stats = {mode: post_json(port, "/v1/statistics", {}) for mode, port in ports.items()}
    assert all(s["file_count"] == len(corpus.documents) for s in stats.values()), stats
    ready, after_feed = time.perf_counter() - server["started"], time.perf_counter() - fed

    requests = [(mode, q, k) for mode in MODES for q in QUESTIONS for k in KS]
    started = time.perf_counter()
    with ThreadPoolExecutor(HTTP_WORKERS) as pool:
        replies = list(pool.map(lambda r: post_json(ports[r[0]], "/v1/retrieve", {"query": r[1], "k": r[2]}), requests))
    print(
        f"\nserver: start -> fully indexed {ready:.1f}s (documents fed -> indexed {after_feed:.1f}s); "
        f"{len(requests)} requests in "
        f"{time.perf_counter() - started:.1f}s; {len(chunks['knn'])} chunks"
    )
    return {req: served_items(reply) for req, reply in zip(requests, replies)}


# ------------------------------------------------------------------ the tests


@pytest.mark.parametrize("mode", MODES)
def test_served_equals_evaluated(mode, served, evaluated):
    failures = []
    per_k: Counter = Counter()
    causes: Counter = Counter()
    for q in QUESTIONS:
        for k in KS:
            s, e = served[(mode, q, k)], evaluated_items(evaluated["hits"][mode][(q, k)])
            if differs(s, e):
                per_k[k] += 1
                why = cause(q, s, e)
                causes[why] += 1
                failures.append(f"{mode} k={k} {q!r} [{why}]\n  served:    {describe(s)}\n  evaluated: {describe(e)}")
    summary = ", ".join(f"k={k}: {len(QUESTIONS) - per_k[k]}/{len(QUESTIONS)} equal" for k in KS)
    print(f"\n{mode}: {summary}; causes of mismatches: {dict(causes) or '-'}")
    assert not failures, (
        f"{mode}: served != evaluated for {len(failures)} of {len(QUESTIONS) * len(KS)} (question, k) "
        f"({summary}); causes: {dict(causes)}\n" + "\n".join(failures)
    )


@pytest.mark.parametrize("mode", MODES)
def test_the_server_serves_equal_scores_in_the_documented_order(mode, served):
    """What the comparison normalises is what the server already does: each reply is in
    (-score, doc id, start, text) order (ragsweep.pipeline.stable_order), not in Pathway's order
    among equal scores. Hybrid replies hold exact RRF ties (a chunk ranked r-th by one retriever
    only scores 1/(60 + r)), so this is not vacuous."""
    replies = [served[(mode, q, k)] for q in QUESTIONS for k in KS]
    unordered = [r for r in replies if r != canonical(r)]
    tied = sum(len(r) - len({sc for sc, *_ in r}) for r in replies)
    print(f"\n{mode}: {tied} served items share their score with another of their reply")
    assert not unordered, f"{len(unordered)} replies not in the documented order, first: {describe(unordered[0])}"


def test_routing_changes_what_is_served(evaluated):
    """The routed variants are not their unrouted lists under another name: at some depth the
    top documents leave out chunks the whole corpus would serve, and no list holds more
    documents than route_docs."""
    for routed, plain in (("bm25@1", "bm25"), ("hybrid@2", "hybrid")):
        limit = int(routed.partition("@")[2])
        hits, base = evaluated["hits"][routed], evaluated["hits"][plain]
        changed = [key for key in hits if differs(evaluated_items(hits[key]), evaluated_items(base[key]))]
        print(f"\n{routed}: {len(changed)} of {len(hits)} (question, k) lists differ from {plain}")
        assert changed
        assert all(len({h.doc_id for h in listed}) <= limit for listed in hits.values())


def test_a_deeper_hybrid_query_is_not_the_top_k(evaluated, served):
    """Why the store asks Pathway for exactly k: RRF fuses each retriever's top k, so the top k of a
    deeper hybrid query is generally not the k answer. Some question of the fixture shows it, and for
    every question and k the in-process list is the server's answer to that k, not the deeper prefix."""
    hybrid = evaluated["hits"]["hybrid"]
    deepest = max(KS)
    prefixes = {(q, k): evaluated_items(hybrid[(q, deepest)][:k]) for q in QUESTIONS for k in KS if k < deepest}
    differing = [(q, k) for (q, k), prefix in prefixes.items() if differs(prefix, evaluated_items(hybrid[(q, k)]))]
    print(f"\nhybrid: the top k of k={deepest} differs from k for {len(differing)} of {len(prefixes)} (question, k)")
    assert differing, f"every hybrid top k is the prefix of k={deepest}: the fixture no longer shows why"
    for q, k in prefixes:
        assert not differs(served[("hybrid", q, k)], evaluated_items(hybrid[(q, k)])), (q, k)
    for q, k in differing:  # the server, asked for k, does not serve the deeper list's prefix either
        assert differs(served[("hybrid", q, k)], prefixes[(q, k)]), (q, k)


def test_the_comparison_catches_a_wrong_list(evaluated):
    """Negative control: the comparison the parity test uses fails on deliberately wrong lists
    and accepts only a reordering among exactly equal scores."""
    right = evaluated_items(evaluated["hits"]["knn"][(QUESTIONS[0], 5)])
    assert len(right) == 5 and len({sc for sc, *_ in right}) == 5
    assert not differs(list(right), right)
    assert not differs(list(reversed(right)), right)  # input order is not the ranking: scores are

    swapped = [(right[1][0], *right[0][1:]), (right[0][0], *right[1][1:])] + right[2:]  # ranks 1 and 2 exchanged
    other = next((d, t) for d, t in evaluated["chunks"]["knn"] if (d, t) not in {(x[1], x[3]) for x in right})
    replaced = right[:-1] + [(right[-1][0], other[0], 0, other[1])]  # a chunk that was not served
    edited = right[:2] + [(right[2][0], right[2][1], right[2][2], right[2][3] + " ")] + right[3:]  # one byte more
    for wrong in (swapped, replaced, edited, right[:-1], right + [replaced[-1]]):
        assert differs(wrong, right)

    tied = [(0.5, "b.txt", 0, "x"), (0.5, "a.txt", 9, "y"), (0.25, "a.txt", 0, "z")]
    assert not differs(tied, [tied[1], tied[0], tied[2]])  # equal scores: order normalised
    assert differs(tied[:2], [tied[0], tied[2]])  # but which tied chunk made the cut is not
