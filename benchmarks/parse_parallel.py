"""Parse stage: serial vs. a pool of worker processes.

Each pass runs in a fresh Python process with the parse cache off, so each one
pays what ``ragsweep eval``/``index`` pays: Docling's import and converter
set-up (in this process for the serial pass, in every worker for the pool) plus
the parsing. The serial pass also reports its parse time without that start-up.

    .venv/bin/python benchmarks/parse_parallel.py [--docs datasets/cuad/docs] [--workers 2] [--smoke]

Prints ``RESULT`` lines and a final ``JSON {...}`` line. On a shared machine the
ratio is noisy: run it more than once before drawing conclusions.

``--smoke``: the same two passes over ``tests/fixtures/corpus`` (one PDF, DOCX, HTML, Markdown and
text file each): a check that the script runs (``make test`` does it), not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cpu_seconds() -> float:
    """User + system time of this process and of its finished children (the workers)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def one_pass(docs: str, workers: int) -> dict:
    """Parse ``docs`` once, cache off, in this (fresh) process."""
    from ragsweep.core.offline import ensure_offline

    ensure_offline()
    from ragsweep.pipeline import corpus as corpus_mod

    started, cpu = time.perf_counter(), _cpu_seconds()
    startup = 0.0
    if workers == 1:  # time Docling's import and converter apart from the parse itself
        corpus_mod._converter(corpus_mod.layout_models_available())
        startup = time.perf_counter() - started
    corpus = corpus_mod.parse_corpus(docs, use_cache=False, workers=workers)
    seconds = time.perf_counter() - started
    return {
        "workers": workers,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(_cpu_seconds() - cpu, 2),
        "startup_seconds": round(startup, 2),
        "parsed": len(corpus.documents),
        "skipped": len(corpus.skipped),
        "content_hash": corpus.content_hash,
        "skips": [(s.doc_id, s.reason) for s in corpus.skipped],
        "load_average": os.getloadavg(),
    }


def run_pass(docs: str, workers: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--one-pass", "--docs", docs, "--workers", str(workers)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="datasets/cuad/docs")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="tests/fixtures/corpus: does it run (not a measurement)")
    parser.add_argument("--one-pass", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.docs = "tests/fixtures/corpus"
        print(f"SMOKE RUN: {args.docs} (5 small files), {args.workers} workers; not a measurement", flush=True)
    if args.one_pass:
        print(json.dumps(one_pass(args.docs, args.workers)))
        return 0

    serial = run_pass(args.docs, 1)
    print(
        f"RESULT serial (1 process): {serial['seconds']} s "
        f"(Docling start-up {serial['startup_seconds']} s, parsing {serial['seconds'] - serial['startup_seconds']:.2f} s); "
        f"CPU {serial['cpu_seconds']} s; {serial['parsed']} parsed, {serial['skipped']} skipped; "
        f"load average {serial['load_average']}",
        flush=True,
    )
    parallel = run_pass(args.docs, args.workers)
    print(
        f"RESULT parallel ({args.workers} workers): {parallel['seconds']} s (workers' start-up included); "
        f"CPU {parallel['cpu_seconds']} s; {parallel['parsed']} parsed, {parallel['skipped']} skipped; "
        f"load average {parallel['load_average']}"
    )
    same = (serial["content_hash"], serial["skips"]) == (parallel["content_hash"], parallel["skips"])
    ratio = serial["seconds"] / parallel["seconds"]
    print(f"RESULT serial / parallel: {ratio:.2f}x (target on 2 cores: >= 1.7); same texts and skips: {same}")
    print(
        "JSON "
        + json.dumps(
            {
                "smoke": args.smoke,
                "docs": args.docs,
                "cores": os.cpu_count(),
                "serial": serial,
                "parallel": parallel,
                "ratio": round(ratio, 3),
                "same_result": same,
            }
        )
    )
    return 0 if same else 1


if __name__ == "__main__":
    from lib.process_exit import exit_now

    exit_now(main())
