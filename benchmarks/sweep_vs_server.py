"""ragsweep's in-process sweep vs. one Pathway REST server per configuration.

Measured side by side in ONE process run (see benchmarks/README.md):

(a) ``run_sweep`` over the grid with a fresh cache folder (cold), then the same
    sweep again with the same cache (warm).
(b) the way Pathway's rag_evals evaluates: for EACH configuration of the grid, a
    ``DocumentStoreServer`` in a subprocess on 127.0.0.1 (fresh, no embedding
    cache), documents read with ``pw.io.fs.read(..., format="binary",
    mode="streaming", with_metadata=True)`` from a folder of the *already parsed*
    texts written as ``.txt`` files (Pathway's default ``Utf8Parser`` reads them;
    Docling parsing is therefore NOT counted in (b)), wait until indexed, one
    ``POST /v1/retrieve`` per question, stop the server.
(u) unavoidable work: parse each document once (no cache), embed each distinct
    chunk text of the grid's chunkings and each distinct question once (one
    ``SentenceTransformer.encode``, batch 32), answer the queries by a numpy
    dot product (BM25 search time is not counted: a lower bound).

    python benchmarks/sweep_vs_server.py [--dataset datasets/cuad] [--limit 20] [--grid pipelines/sweep.yaml]
                                         [--documents N | --full-corpus]
    python benchmarks/sweep_vs_server.py --smoke

By default only the documents the selected cases refer to are indexed: a temporary copy of the
dataset holds them (copied), the cases that refer to nothing else, its dataset.yaml and a
README, so it is a valid dataset of its own; ``--documents N`` adds the next documents the dataset's
cases refer to, up to N. ``--smoke``: 3 cases of ``datasets/cuad-mini`` (1 contract, in a corpus of 2)
and a grid of 1 configuration (hybrid, 250-600 tokens, top_k 3; each configuration of
(b) is a server start, about 10 s; killed at the end, not stopped): the same three measurements, a check
that the script runs (``make test`` does it), not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LIMIT = 20  # 1 CUAD contract; (b) costs ~1 s per HTTP query on 2 cores
PIPELINE = ROOT / "pipelines" / "default.yaml"
SMOKE_LIMIT = 3
SMOKE_DOCUMENTS = 2  # the cases' contract and one more: --documents runs too
SMOKE_GRID = """grid:
  chunking:
    - {min_tokens: 250, max_tokens: 600}
  top_k: [3]
  retriever_mode: [hybrid]
baseline: {min_tokens: 250, max_tokens: 600, top_k: 3, retriever_mode: hybrid}
objectives: [recall@k, mrr@k]
ks: [1, 3]
"""


# --------------------------------------------------------------------- (b): the server side


def serve(texts_dir: str, port: int, params_json: str) -> None:
    """Subprocess entry point: one DocumentStoreServer for one configuration."""
    from ragsweep.core.offline import ensure_offline

    ensure_offline()
    import pathway as pw
    from pathway.xpacks.llm.servers import DocumentStoreServer

    from ragsweep.pipeline.config import PipelineConfig
    from ragsweep.pipeline.embedding_base import EmbeddingCache
    from ragsweep.pipeline.serving import DocumentStore  # what ragsweep evaluates (tests/test_server_parity.py)

    built = PipelineConfig.load(str(PIPELINE), json.loads(params_json)).build()
    if built.embedder is not None:  # a fresh server has no embedding cache
        built.embedder.cache = EmbeddingCache(None)

    docs = pw.io.fs.read(texts_dir, format="binary", mode="streaming", with_metadata=True)

    def with_doc_id(meta):
        d = meta.as_dict()
        d["doc_id"] = Path(str(d["path"])).name[: -len(".txt")]
        return pw.Json(d)

    docs = docs.select(data=pw.this.data, _metadata=pw.apply_with_type(with_doc_id, pw.Json, pw.this._metadata))
    store = DocumentStore(docs, retriever_factory=built.retriever_factory, splitter=built.splitter)
    server = DocumentStoreServer("127.0.0.1", port, store)
    server.run(threaded=False, with_cache=False)


def _post(port: int, path: str, payload: dict, timeout: float = 120.0):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_server_config(
    texts_dir: Path,
    n_docs: int,
    params: dict,
    queries: list[tuple[str, int, str | None]],
    log_dir: Path,
    ready_timeout: float = 900.0,
    graceful: bool = True,
) -> tuple[dict, list]:
    """Start a server, wait until indexed, ask every query, stop it (``graceful``: SIGTERM, else SIGKILL).
    Returns timings and answers."""
    port = _free_port()
    t0 = time.perf_counter()
    log = open(log_dir / f"server-{port}.log", "w")
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--_serve", str(texts_dir), str(port), json.dumps(params)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "RAGSWEEP_CACHE_DIR": str(log_dir / "unused-cache")},
    )
    try:
        deadline = time.monotonic() + ready_timeout
        count = -1
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited early ({proc.returncode}); see {log.name}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not ready after {ready_timeout}s (file_count={count})")
            try:
                stats = _post(port, "/v1/statistics", {}, timeout=10)
                count = int((stats or {}).get("file_count") or 0)
                if count >= n_docs:
                    probe = _post(port, "/v1/retrieve", {"query": "agreement", "k": 1}, timeout=60)
                    if probe:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
                pass
            time.sleep(0.2)
        t_ready = time.perf_counter()
        answers = []
        for text, k, flt in queries:
            answers.append(_post(port, "/v1/retrieve", {"query": text, "k": k, "metadata_filter": flt}))
        t_done = time.perf_counter()
    finally:
        if graceful:
            proc.terminate()
        else:
            proc.kill()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    t_stop = time.perf_counter()
    return {"start_to_ready": t_ready - t0, "queries": t_done - t_ready, "total": t_stop - t0}, answers


# --------------------------------------------------------------------- helpers


def peak_rss_mb(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def line(label: str, value) -> None:
    print(f"{label:<48} {value}", flush=True)


def scoped_copy(dataset, cases, target: Path, documents: int | None = None) -> list[str]:
    """A dataset folder holding only the documents ``cases`` refer to (copied: a symlink out of the
    documents folder is not indexed), the source's cases
    that refer to nothing else (in its order), its dataset.yaml and a README; returns the doc ids.

    ``documents``: at least this many documents, those of ``cases`` first, then the next ones the
    dataset's cases refer to, in their order (a corpus of that size queried by the same cases)."""
    from ragsweep.datasets.loader import write_cases

    keep = {d for c in cases for d in (c.doc_scope or [])}
    for case in dataset.cases:
        if documents is None or len(keep) >= documents:
            break
        keep.update(case.doc_scope or [])
    scoped = sorted(keep)
    (target / "docs").mkdir(parents=True)
    for d in scoped:
        shutil.copy2(Path(dataset.docs_dir) / d, target / "docs" / d)
    source = Path(dataset.root)
    if (source / "dataset.yaml").is_file():
        shutil.copy(source / "dataset.yaml", target / "dataset.yaml")

    def named(case) -> set[str]:
        return set(case.doc_scope or []) | {e.doc_id for e in case.evidence or [] if getattr(e, "doc_id", None)}

    kept = [c for c in dataset.cases if c.doc_scope and named(c) <= keep]
    write_cases(target / "cases.jsonl", kept)
    (target / "README.md").write_text(
        f"A temporary copy of {source} made by benchmarks/sweep_vs_server.py: its {len(scoped)} document(s) that "
        f"the first cases refer to, and the {len(kept)} case(s) that refer only to them. Provenance and licence: "
        f"{source / 'README.md'}.\n",
        encoding="utf-8",
    )
    return scoped


def sweep_once(dataset: str, grid: str, limit: int, out: Path) -> tuple[Path, dict]:
    """One ``ragsweep.sweep`` in this process into ``out`` (a fresh folder); its folder and sweep.json."""
    import ragsweep

    ragsweep.sweep(str(PIPELINE), dataset, grid, limit=limit, out=out)
    (report,) = out.glob("*/sweep.json")  # out holds this one sweep
    return report.parent, json.loads(report.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="datasets/cuad")
    ap.add_argument("--limit", type=int, default=DEFAULT_LIMIT)
    ap.add_argument("--grid", default="pipelines/sweep.yaml")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument(
        "--full-corpus",
        action="store_true",
        help="index the dataset's whole docs/ folder (40 PDFs for CUAD: far beyond 25 minutes on 2 cores); "
        "default: only the documents the selected cases refer to (a temporary copy of the dataset)",
    )
    ap.add_argument(
        "--documents",
        type=int,
        help="index this many documents: those the cases refer to, then the next ones of the dataset "
        "(a corpus between the cases' own documents and --full-corpus)",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE_LIMIT} cases of datasets/cuad-mini, 1 configuration: does it run (not a measurement)",
    )
    ap.add_argument(
        "--no-server",
        action="store_true",
        help="skip (b), the one-server-per-configuration way (about 15 minutes): (a) and the unavoidable work only",
    )
    ap.add_argument("--_serve", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._serve:
        serve(args._serve[0], int(args._serve[1]), args._serve[2])
        return 0

    tmp = Path(tempfile.mkdtemp(prefix="ragsweep-bench-"))
    cache_dir = tmp / "cache"
    os.environ["RAGSWEEP_CACHE_DIR"] = str(cache_dir)  # before any ragsweep import
    os.chdir(ROOT)
    if args.smoke:
        args.dataset, args.limit, args.full_corpus = "datasets/cuad-mini", SMOKE_LIMIT, False
        args.documents = SMOKE_DOCUMENTS
        args.grid = str(tmp / "smoke-grid.yaml")
        Path(args.grid).write_text(SMOKE_GRID)
        print(
            f"SMOKE RUN: {args.limit} cases of {args.dataset}, 1 configuration (hybrid); "
            "the numbers below are not measurements",
            flush=True,
        )

    from ragsweep.core.offline import ensure_offline

    ensure_offline()
    # heavy imports outside every timing (each side would otherwise pay them once); Docling parses none of
    # the smoke's .txt documents
    if not args.smoke:
        import docling.document_converter  # noqa: F401
    import numpy as np
    import pathway  # noqa: F401
    import sentence_transformers  # noqa: F401

    import ragsweep.api  # noqa: F401 - ragsweep.sweep's imports, outside (a) too
    from ragsweep.datasets.loader import load_dataset
    from ragsweep.pipeline import corpus as corpus_mod
    from ragsweep.pipeline import embedding as emb_mod
    from ragsweep.pipeline.chunking import OffsetTokenCountSplitter
    from ragsweep.pipeline.store import scope_filter
    from ragsweep.report.runs import read_cases

    dataset = load_dataset(args.dataset)
    cases = list(dataset.cases)[: args.limit]
    if not args.full_corpus:
        copy = tmp / "dataset" / Path(args.dataset).name
        scoped = scoped_copy(dataset, cases, copy, args.documents)
        whose = "referenced by the" if args.documents is None else "(--documents): those of the"
        line(
            "corpus",
            f"scoped (default; --full-corpus to index all): {len(scoped)} documents {whose} {len(cases)} "
            f"cases (copy in {copy})",
        )
        args.dataset = str(copy)
        dataset = load_dataset(args.dataset)
        scoped_cases = list(dataset.cases)[: args.limit]
        if [c.id for c in scoped_cases] != [c.id for c in cases]:
            raise SystemExit("the scoped copy does not start with the same cases: use --full-corpus")
        cases = scoped_cases
    line("dataset", f"{args.dataset}: {len(cases)} cases (--limit {args.limit}), grid {args.grid}")
    line("temp folder", tmp)

    def reset_models():
        corpus_mod._converter.cache_clear()
        emb_mod.load_sentence_transformer.cache_clear()

    # ---------------------------------------------------------------- (a) cold, then warm
    reset_models()
    t = time.perf_counter()
    cold_dir, cold_report = sweep_once(args.dataset, args.grid, args.limit, tmp / "runs-cold")
    a_cold = time.perf_counter() - t
    line("(a) ragsweep sweep, cold cache [s]", f"{a_cold:.1f}")
    line("    embedded texts (cold)", cold_report["manifest"]["embedded_texts_this_run"])
    t = time.perf_counter()
    _, warm_report = sweep_once(args.dataset, args.grid, args.limit, tmp / "runs-warm")
    a_warm = time.perf_counter() - t
    line("(a) ragsweep sweep, warm cache [s]", f"{a_warm:.1f}")
    line("    embedded texts (warm)", warm_report["manifest"]["embedded_texts_this_run"])
    rss_a = peak_rss_mb()
    configs = [(row["id"], row["params"]) for row in cold_report["configs"]]  # the grid's configurations
    line("configurations", len(configs))

    # ---------------------------------------------------------------- (u) unavoidable work
    reset_models()
    t = time.perf_counter()
    corpus = corpus_mod.parse_corpus(dataset.docs_dir, use_cache=False)
    u_parse = time.perf_counter() - t
    texts = {d.doc_id: d.text for d in corpus.documents}
    chunkings = sorted({(p.get("min_tokens", 250), p.get("max_tokens", 600)) for _, p in configs})
    t = time.perf_counter()
    chunk_texts_by_chunking = {}
    for mn, mx in chunkings:
        sp = OffsetTokenCountSplitter(min_tokens=mn, max_tokens=mx, encoding_name="cl100k_base")
        chunk_texts_by_chunking[(mn, mx)] = [piece for d in corpus.documents for piece, _ in sp.chunk(d.text)]
    u_split = time.perf_counter() - t
    distinct_chunks = list(dict.fromkeys(x for v in chunk_texts_by_chunking.values() for x in v))
    questions = list(dict.fromkeys(c.question for c in cases))
    t = time.perf_counter()
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(emb_mod.embedder_model_path(), device="cpu")
    u_load = time.perf_counter() - t
    t = time.perf_counter()
    vecs = model.encode(distinct_chunks + questions, batch_size=32, convert_to_numpy=True, normalize_embeddings=True)
    u_embed = time.perf_counter() - t
    # answer: dense top-k by dot product, per chunking, within each case's scope (BM25 not counted)
    t = time.perf_counter()
    index_of = {x: i for i, x in enumerate(distinct_chunks)}
    qvec = {q: vecs[len(distinct_chunks) + i] for i, q in enumerate(questions)}
    for key, chunk_list in chunk_texts_by_chunking.items():
        mat = vecs[[index_of[x] for x in chunk_list]]
        for c in cases:
            scores = mat @ qvec[c.question]
            np.argsort(-scores)[:10]
    u_search = time.perf_counter() - t
    unavoidable = u_parse + u_split + u_load + u_embed + u_search
    line("(u) unavoidable: parse once, no cache [s]", f"{u_parse:.1f}  ({len(corpus.documents)} documents)")
    line(f"(u) unavoidable: split {len(chunkings)} chunking(s) [s]", f"{u_split:.1f}")
    line("(u) unavoidable: load embedder [s]", f"{u_load:.1f}")
    line(
        "(u) unavoidable: embed distinct texts once [s]",
        f"{u_embed:.1f}  ({len(distinct_chunks)} chunks + {len(questions)} questions)",
    )
    line("(u) unavoidable: dense search (numpy) [s]", f"{u_search:.2f}")
    line("(u) unavoidable total [s]", f"{unavoidable:.1f}")
    del model, vecs

    # ---------------------------------------------------------------- (b) one server per configuration
    b_total: float | None = None
    b_rows: list[dict] = []
    agree_num = agree_den = 0
    if args.no_server:
        line("(b) one Pathway server per configuration", "skipped (--no-server)")
    else:
        texts_dir = tmp / "texts"
        texts_dir.mkdir()
        for doc_id, text in texts.items():
            (texts_dir / f"{doc_id}.txt").write_text(text)
        log_dir = tmp / "server-logs"
        log_dir.mkdir()
        known = set(texts)
        queries_base = []
        for c in cases:
            scope = [d for d in (c.doc_scope or []) if d in known] or None
            queries_base.append((c.question, scope_filter(scope)))
        b_total = 0.0
        cold_hits = {}
        for cid, _ in configs:
            rows = read_cases(cold_dir / "configs" / cid / "cases.jsonl")  # hit texts from the sweep's chunk table
            cold_hits[cid] = {r["id"]: [h.get("text") for h in r["hits"]] for r in rows}
        for n, (cid, params) in enumerate(configs, start=1):
            k = int(params.get("top_k", 5))
            # a smoke run's server is killed: its graceful stop (seconds of Pathway's shutdown) is not what it checks
            timing, answers = run_server_config(
                texts_dir, len(texts), params, [(q, k, f) for q, f in queries_base], log_dir, graceful=not args.smoke
            )
            b_total += timing["total"]
            for c, ans in zip(cases, answers):
                if cid in cold_hits and c.id in cold_hits[cid]:
                    agree_den += 1
                    agree_num += int(sorted(x.get("text") for x in ans) == sorted(cold_hits[cid][c.id]))
            b_rows.append({"params": params, **{k2: round(v, 2) for k2, v in timing.items()}})
            line(
                f"(b) [{n}/{len(configs)}] {json.dumps(params)}",
                f"start->indexed {timing['start_to_ready']:.1f}s, {len(answers)} queries {timing['queries']:.1f}s, "
                f"total {timing['total']:.1f}s",
            )
        line(
            "(b) one Pathway server per configuration [s]",
            f"{b_total:.1f}  (measured, all {len(configs)} configurations)",
        )
        line("(b) vs (a) same hit texts (fraction of queries)", f"{agree_num / max(1, agree_den):.3f}")

    # ---------------------------------------------------------------- summary
    summary = {
        "smoke": args.smoke,
        "dataset": args.dataset,
        "limit": args.limit,
        "cases": len(cases),
        "documents": len(corpus.documents),
        "configurations": len(configs),
        "grid": args.grid,
        "a_cold_s": round(a_cold, 2),
        "a_warm_s": round(a_warm, 2),
        "a_embedded_texts_cold": cold_report["manifest"]["embedded_texts_this_run"],
        "a_embedded_texts_warm": warm_report["manifest"]["embedded_texts_this_run"],
        "b_s": round(b_total, 2) if b_total is not None else None,
        "b_extrapolated": False,
        "unavoidable_s": round(unavoidable, 2),
        "unavoidable_parts_s": {
            "parse": round(u_parse, 2),
            "split": round(u_split, 2),
            "load_embedder": round(u_load, 2),
            "embed": round(u_embed, 2),
            "dense_search": round(u_search, 3),
        },
        "distinct_chunks": len(distinct_chunks),
        "distinct_questions": len(questions),
        "ratio_b_over_a_cold": round(b_total / a_cold, 2) if b_total is not None else None,
        "ratio_a_cold_over_unavoidable": round(a_cold / unavoidable, 2),
        "ratio_warm_over_cold": round(a_warm / a_cold, 3),
        "b_a_hit_agreement": round(agree_num / max(1, agree_den), 3) if agree_den else None,
        "b_a_hit_agreement_queries": agree_den,
        "peak_rss_mb_main_after_a": round(rss_a, 1),
        "peak_rss_mb_main": round(peak_rss_mb(), 1),
        "peak_rss_mb_largest_server": round(peak_rss_mb(resource.RUSAGE_CHILDREN), 1),
        "b_per_config": b_rows,
    }
    print()
    line("RESULT (a) cold [s]", summary["a_cold_s"])
    line("RESULT (a) warm [s]", summary["a_warm_s"])
    line("RESULT (b) servers, all configs measured [s]", summary["b_s"])
    line("RESULT unavoidable [s]", summary["unavoidable_s"])
    line("RESULT ratio (b)/(a cold)   (target >= 10)", summary["ratio_b_over_a_cold"])
    line("RESULT ratio (a cold)/unavoidable (target <= 1.2)", summary["ratio_a_cold_over_unavoidable"])
    line("RESULT ratio warm/cold", summary["ratio_warm_over_cold"])
    line(
        "RESULT peak RSS main / largest server [MB]",
        f"{summary['peak_rss_mb_main']} / {summary['peak_rss_mb_largest_server']}",
    )
    print("JSON " + json.dumps(summary), flush=True)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from lib.process_exit import exit_now

    exit_now(main())
