"""What one query costs the DocumentStore as the corpus grows: scoped to one document vs not.

    .venv/bin/python benchmarks/scoped_queries.py [--dataset datasets/cuad] [--sizes 10,20,40]
                                                  [--modes bm25,knn] [--queries 400] [--smoke]

Every CUAD case is scoped to its contract (``doc_scope``), which reaches Pathway as a JMESPath
``metadata_filter``. The same questions (the cases of the first 10 documents, ``k = 5``) are
asked of corpora made of the first N documents (each holding those 10), once without a scope
and once scoped, in one graph run each; a run with a single query is subtracted, so what is
left is the queries' own cost. Embeddings come from the cache after the first run.

Prints ``RESULT`` lines and a final ``JSON {...}`` line. Never a timed assertion.

``--smoke``: corpora of 2 and 3 documents of ``datasets/cuad-mini``, 20 questions, bm25 and knn: a
check that the script runs (``make test`` does it), not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=str(ROOT / "datasets" / "cuad"))
    parser.add_argument("--pipeline", default=str(ROOT / "pipelines" / "default.yaml"))
    parser.add_argument("--sizes", default="10,20,40", help="numbers of documents in the corpus")
    parser.add_argument("--modes", default="bm25,knn", help="retriever modes")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument(
        "--smoke", action="store_true", help="cuad-mini, 2 and 3 documents: does it run (not a measurement)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.dataset, args.sizes, args.modes, args.queries = str(ROOT / "datasets" / "cuad-mini"), "2,3", "bm25,knn", 20
        print(
            "SMOKE RUN: datasets/cuad-mini, corpora of 2 and 3 documents, 20 questions; not a measurement", flush=True
        )

    from ragsweep.core.offline import ensure_offline

    ensure_offline()
    from ragsweep.datasets.loader import load_dataset
    from ragsweep.pipeline.config import PipelineConfig
    from ragsweep.pipeline.corpus import parse_corpus
    from ragsweep.pipeline.store import Query, RagStore

    dataset = load_dataset(args.dataset)
    corpus = parse_corpus(dataset.docs_dir, progress=False)
    docs = sorted(corpus.documents, key=lambda d: d.doc_id)
    sizes = sorted(int(x) for x in args.sizes.split(","))
    if sizes[-1] > len(docs):
        parser.error(f"--sizes: {sizes[-1]} documents asked, {len(docs)} parsed")
    first = {d.doc_id for d in docs[: min(10, sizes[0])]}
    cases = [c for c in dataset.cases if c.doc_scope and len(c.doc_scope) == 1 and c.doc_scope[0] in first]
    cases = cases[: args.queries]
    print(
        f"{len(cases)} questions scoped to {len(first)} documents; corpora of {sizes} documents; "
        f"load {os.getloadavg()}",
        flush=True,
    )

    rows = []
    for mode in args.modes.split(","):
        config = PipelineConfig.load(args.pipeline, {"retriever_mode": mode})
        for n in sizes:
            store = RagStore(config, corpus.model_copy(update={"documents": docs[:n]}))
            store.run([Query("index", 1)])  # model load, first graph build, embeddings into the cache
            row = {"mode": mode, "documents": n}
            for scoped in (False, True):
                queries = [Query(c.question, 5, c.doc_scope if scoped else None) for c in cases]
                started = time.perf_counter()
                run = store.run(queries)
                seconds = time.perf_counter() - started
                started = time.perf_counter()
                store.run([Query("index", 1)])
                one = time.perf_counter() - started
                row["chunks"] = len(run.chunks)
                row["scoped" if scoped else "unscoped"] = {
                    "run_seconds": round(seconds, 3),
                    "one_query_run_seconds": round(one, 3),
                    "ms_per_query": round(1000 * max(0.0, seconds - one) / len(queries), 3),
                    "empty_answers": sum(1 for h in run.hits if not h),
                }
            rows.append(row)
            print(
                f"RESULT {mode:<6} {n:>4} documents ({row['chunks']} chunks): unscoped "
                f"{row['unscoped']['ms_per_query']:.2f} ms/query, scoped {row['scoped']['ms_per_query']:.2f} "
                f"ms/query; load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
    for mode in args.modes.split(","):
        mine = [r for r in rows if r["mode"] == mode]
        lo, hi = mine[0], mine[-1]
        growth = {
            k: (hi[k]["ms_per_query"] / lo[k]["ms_per_query"]) if lo[k]["ms_per_query"] else None
            for k in ("unscoped", "scoped")
        }
        print(
            f"RESULT {mode}: per-query cost x{hi['documents'] / lo['documents']:.1f} documents -> unscoped "
            + (f"x{growth['unscoped']:.2f}" if growth["unscoped"] else "n/a")
            + ", scoped "
            + (f"x{growth['scoped']:.2f}" if growth["scoped"] else "n/a")
        )
    print("JSON " + json.dumps({"smoke": args.smoke, "dataset": args.dataset, "questions": len(cases), "rows": rows}))
    return 0


if __name__ == "__main__":
    from lib.process_exit import exit_now

    exit_now(main())
