"""Pathway's own workers on the query stage: 1 process, ``PATHWAY_THREADS=2``, ``pathway spawn -n 2``.

Each run is a fresh process (or, for spawn, two cooperating ones) asking one DocumentStore every
case at every scored depth, as eval does, on the warm caches (parse and embeddings; no
served-list cache). Printed: each run's seconds for the Pathway run alone (build + queries), and
whether its lists (doc id and chunk text per rank) equal the one-process lists. Under spawn each
process writes what its ``pw.io.subscribe`` saw; the lists compared are the union.

    .venv/bin/python benchmarks/pathway_workers.py [--dataset datasets/cuad-mini] [--limit 123] [--repeat 3]
    .venv/bin/python benchmarks/pathway_workers.py --smoke    # 20 cases, once each, the modes side by side
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATHWAY = Path(sys.executable).parent / "pathway"
MODES = ("threads-1", "threads-2", "spawn-2")  # the first one's lists are the reference

# Runs in each process: one Pathway run over every (case, k), its raw answers written by qid.
CHILD = r"""
import json, os, sys, time
from ragsweep.commands.eval import DEFAULT_KS, EvalOptions
from ragsweep.commands.inputs import load_inputs
from ragsweep.evaluation.loop import scored_ks
from ragsweep.pipeline.retrieval import parse_documents, parsed_scopes
from ragsweep.pipeline.store import Query, RagStore
if __name__ == "__main__":
    dataset, limit, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    config, ds, cases = load_inputs(EvalOptions(dataset=dataset, progress=False, limit=limit, validate_dataset=False))
    corpus = parse_documents(ds, workers=1)
    depths = scored_ks(list(DEFAULT_KS), config.top_k)
    scopes = parsed_scopes(cases, {d.doc_id for d in corpus.documents})
    queries = [Query(c.question, k, s or None, ()) for c, s in zip(cases, scopes) for k in depths]
    started = time.perf_counter()
    answers, chunks, _, _ = RagStore(config, corpus)._serve(queries, {d.doc_id: d for d in corpus.documents}, False)
    seconds = time.perf_counter() - started
    lists = {str(q): [[h["metadata"]["doc_id"], h["text"]] for h in a] for q, a in answers.items()}
    with open(f"{out}.{os.environ.get('PATHWAY_PROCESS_ID', '0')}.json", "w") as f:
        json.dump({"seconds": seconds, "queries": len(queries), "lists": lists}, f)
"""


def run(mode: str, dataset: str, limit: int, work: Path, child: Path) -> dict:
    out = work / mode
    args = [sys.executable, str(child), dataset, str(limit), str(out)]
    env = {**os.environ, "PATHWAY_THREADS": "2" if mode == "threads-2" else "1"}
    if mode == "spawn-2":
        args = [str(PATHWAY), "spawn", "-n", "2", *args]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        sys.exit(f"{mode}: exit {done.returncode}\n{done.stderr[-3000:]}")
    parts = [json.loads(p.read_text()) for p in sorted(work.glob(f"{mode}.*.json"))]
    for p in work.glob(f"{mode}.*.json"):
        p.unlink()
    lists: dict = {}
    for part in parts:
        lists.update(part["lists"])
    return {"seconds": max(p["seconds"] for p in parts), "queries": parts[0]["queries"], "lists": lists,
            "per_process": [len(p["lists"]) for p in parts]}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="datasets/cuad-mini")
    p.add_argument("--limit", type=int, default=123)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--smoke", action="store_true")
    a = p.parse_args()
    if a.smoke:
        print("SMOKE RUN: datasets/cuad-mini, 20 cases, once each; the numbers are not measurements")
        a.dataset, a.limit, a.repeat = "datasets/cuad-mini", 20, 1
    load = os.getloadavg()
    print(f"load average before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    summary: dict = {"smoke": a.smoke, "load": load, "modes": {}}
    with tempfile.TemporaryDirectory(prefix="rs-pwworkers-") as tmp:
        work = Path(tmp)
        child = work / "child.py"
        child.write_text(CHILD)
        reference = None
        # a smoke run's timings are not measurements: its three modes (one run each) run side by side
        with ThreadPoolExecutor(len(MODES) if a.smoke else 1) as pool:
            started = {mode: [pool.submit(run, mode, a.dataset, a.limit, work, child) for _ in range(a.repeat)]
                       for mode in MODES}  # fmt: skip
            for mode, results in started.items():
                runs = [r.result() for r in results]
                reference = reference or runs[0]["lists"]
                same = all(r["lists"] == reference for r in runs)
                seconds = sorted(r["seconds"] for r in runs)
                print(f"RESULT {mode}: {runs[0]['queries']} queries, Pathway run {seconds[len(seconds) // 2]:.2f} s "
                      f"(median of {len(runs)}; all {', '.join(f'{s:.2f}' for s in seconds)}), lists per process "
                      f"{runs[0]['per_process']}, same lists as threads-1: {same}", flush=True)  # fmt: skip
                summary["modes"][mode] = {"seconds": seconds, "same": same, "per_process": runs[0]["per_process"]}
    print("JSON " + json.dumps(summary))
    return 0 if all(m["same"] for m in summary["modes"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
