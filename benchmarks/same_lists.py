"""Same input, same lists: every served list of `ragsweep eval`, asked in two fresh processes.

Each run is its own process with its own cache folder (``RAGSWEEP_CACHE_DIR``: parsed again,
embedded again, no served-list cache), the first with ``PATHWAY_THREADS=1``, the second with
``PATHWAY_THREADS=2`` (what ``--pathway-threads`` sets). Each asks the store what eval asks
(:func:`ragsweep.pipeline.retrieval.retrieve`, every case at every scored depth) for each
retriever mode and writes every list as (doc id, start, end) per rank. Printed: per mode, how
many lists are identical, and each list that differs (mode, case, k, both lists).

    .venv/bin/python benchmarks/same_lists.py                          # datasets/cuad, hybrid
    .venv/bin/python benchmarks/same_lists.py --modes bm25,knn,hybrid --dataset datasets/cuad-mini
    .venv/bin/python benchmarks/same_lists.py --smoke                  # cuad-mini, 30 cases, hybrid, side by side

Exit status 1 when any list differs. Scores are not compared: a KNN distance computed from
embeddings of another batch differs in its last digits; which chunks are served, in which
order, is what the metrics see.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs in each fresh process: every mode's lists, as eval asks them.
CHILD = r"""
import json, sys
from ragsweep.commands.eval import DEFAULT_KS, EvalOptions
from ragsweep.commands.inputs import load_inputs
from ragsweep.evaluation.loop import scored_ks
from ragsweep.pipeline.retrieval import parse_documents, retrieve, serve, store_depths
if __name__ == "__main__":
    dataset, pipeline, modes, limit, out = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), sys.argv[5]
    lists = {}
    corpus = None
    for mode in modes:
        options = EvalOptions(dataset=dataset, pipeline=pipeline, overrides={"retriever_mode": mode},
                              progress=False, limit=limit or None, validate_dataset=False)
        config, ds, cases = load_inputs(options)
        corpus = corpus or parse_documents(ds)
        depths = scored_ks(list(DEFAULT_KS), config.top_k)
        served = serve(config, retrieve(config, corpus, cases, store_depths(config, depths), fresh=True), cases, depths)
        lists[mode] = {c: {str(k): [[h.doc_id, h.start, h.end] for h in hits] for k, hits in by_k.items()}
                       for c, by_k in served.items()}
    json.dump(lists, open(out, "w"))
"""


def run_child(work: Path, name: str, threads: int, args: argparse.Namespace) -> tuple[dict, float]:
    """One fresh process: its own cache folder, ``threads`` Pathway workers."""
    cache = work / f"cache-{name}"
    env = {
        **os.environ,
        "RAGSWEEP_CACHE_DIR": str(cache),
        "RAGSWEEP_SERVED_CACHE": "0",
        "PATHWAY_THREADS": str(threads),
    }
    if args.shared_cache:  # the caller's parse and embedding caches: its RAGSWEEP_CACHE_DIR ("": the default folder)
        env["RAGSWEEP_CACHE_DIR"] = os.environ.get("RAGSWEEP_CACHE_DIR", "")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = work / f"{name}.json"
    started = time.perf_counter()
    cmd = [sys.executable, str(work / "child.py"), args.dataset, args.pipeline, args.modes, str(args.limit), str(out)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"run {name} failed (rc {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(out.read_text()), time.perf_counter() - started


def differing(first: dict, second: dict) -> list[dict]:
    """Every (mode, case, k) whose list is not the same in both runs."""
    out = []
    for mode in first:
        for case, by_k in first[mode].items():
            for k, hits in by_k.items():
                other = second.get(mode, {}).get(case, {}).get(k)
                if other != hits:
                    out.append({"mode": mode, "case": case, "k": int(k), "first": hits, "second": other})
    return out


def describe(hits: list | None) -> str:
    if hits is None:
        return "(missing)"
    return "[" + ", ".join(f"{d[:24]}@{s}" for d, s, _ in hits) + "]"


def report(first: dict, second: dict) -> list[dict]:
    differ = differing(first, second)
    for mode in first:
        total = sum(len(by_k) for by_k in first[mode].values())
        bad = [d for d in differ if d["mode"] == mode]
        cases = len({d["case"] for d in bad})
        print(f"RESULT {mode}: {total - len(bad)} of {total} lists identical ({cases} case(s) differ)")
    for d in differ:
        print(
            f"DIFFERS {d['mode']} {d['case']} k={d['k']}\n  run 1: {describe(d['first'])}\n  run 2: {describe(d['second'])}"
        )
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="datasets/cuad")
    parser.add_argument("--pipeline", default="pipelines/default.yaml")
    parser.add_argument("--modes", default="hybrid", help="comma-separated retriever modes (default hybrid)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N cases (0: all)")
    parser.add_argument(
        "--shared-cache", action="store_true", help="both runs use the caller's parse and embedding caches"
    )
    parser.add_argument("--smoke", action="store_true", help="cuad-mini, 30 cases, hybrid: the path, not a finding")
    args = parser.parse_args()
    if args.smoke:
        args.dataset, args.limit, args.modes, args.shared_cache = "datasets/cuad-mini", 30, "hybrid", True
        print("SMOKE RUN: cuad-mini, 30 cases, hybrid, the warm caches (not a measurement)")
    with tempfile.TemporaryDirectory(prefix="ragsweep-same-lists-") as tmp:
        work = Path(tmp)
        (work / "child.py").write_text(CHILD)
        if args.smoke:  # its timings are not measurements: the two processes run side by side
            with ThreadPoolExecutor(2) as pool:
                runs = [pool.submit(run_child, work, name, threads, args) for name, threads in (("1", 1), ("2", 2))]
                (first, s1), (second, s2) = (run.result() for run in runs)
        else:
            first, s1 = run_child(work, "1", 1, args)
            second, s2 = run_child(work, "2", 2, args)
    print(f"RESULT runs: {s1:.0f} s (PATHWAY_THREADS=1), {s2:.0f} s (PATHWAY_THREADS=2)")
    differ = report(first, second)
    print(
        f"RESULT {args.dataset} ({args.modes}): "
        + ("the same lists" if not differ else f"{len(differ)} list(s) DIFFER")
    )
    summary = {"dataset": args.dataset, "modes": args.modes.split(","), "smoke": args.smoke}
    summary |= {"lists": sum(len(b) for m in first.values() for b in m.values()), "differ": differ}
    print("JSON " + json.dumps(summary))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
