"""How fast `ragsweep.evaluate()` answers inside a user's pytest.

    .venv/bin/python benchmarks/api_speed.py [--dataset datasets/cuad-mini] [--repeat 3] [--limit N] [--smoke]

Prints, in one process: a cold-cache call (a fresh RAGSWEEP_CACHE_DIR: parse + embed),
the first call with warm disk caches (imports, model load, graph build), then the later
calls (what each further evaluate() in the same pytest session costs), with each call's
stage times, then a final ``JSON {...}`` line. Never a timed assertion: a table to read.

``--smoke``: the same calls on 10 cases of ``datasets/cuad-mini``, one later call: a check that
the script runs (``make test`` does it), not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=str(ROOT / "datasets" / "cuad-mini"))
    parser.add_argument("--pipeline", default=str(ROOT / "pipelines" / "default.yaml"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, help="only the first N cases (default: all)")
    parser.add_argument("--cold", action="store_true", help="start from an empty cache dir (parse + embed)")
    parser.add_argument("--smoke", action="store_true", help="10 cases, 2 calls: does it run (not a measurement)")
    args = parser.parse_args()
    if args.smoke:
        args.dataset, args.repeat, args.limit = str(ROOT / "datasets" / "cuad-mini"), 1, args.limit or 10
        print("SMOKE RUN: 10 cases of datasets/cuad-mini, 2 calls; the numbers below are not measurements", flush=True)
    if args.cold:
        os.environ["RAGSWEEP_CACHE_DIR"] = tempfile.mkdtemp(prefix="ragsweep-bench-")
    t0 = time.perf_counter()
    import ragsweep
    import ragsweep.api  # noqa: F401 - the import cost a user's test session pays once

    imported = time.perf_counter() - t0

    rows = []
    for i in range(args.repeat + 1):
        started = time.perf_counter()
        report = ragsweep.evaluate(args.pipeline, args.dataset, limit=args.limit)
        wall = time.perf_counter() - started
        stages = dict(report.manifest.stage_seconds)
        label = ("cold caches" if args.cold else "first call, warm caches") if i == 0 else f"call {i + 1}"
        rows.append((label, wall, stages, len(report.cases), report.metrics.get(f"recall@{report.top_k}")))
    print(f"dataset {args.dataset}; importing ragsweep.api: {imported:.2f} s")
    print(f"{'call':<24} {'wall s':>7} {'cases':>6} {'recall@k':>9}  stages (s)")
    for label, wall, stages, n, recall in rows:
        detail = ", ".join(f"{k} {v:.2f}" for k, v in stages.items())
        shown = "n/a" if recall is None else f"{recall:.4f}"
        print(f"{label:<24} {wall:>7.2f} {n:>6} {shown:>9}  {detail}")
    later = [r[1] for r in rows[1:]]
    if later:
        print(
            f"RESULT later calls: mean {sum(later) / len(later):.2f} s; "
            f"first/later = {rows[0][1] / (sum(later) / len(later)):.2f}"
        )
    summary = {
        "smoke": args.smoke,
        "dataset": args.dataset,
        "limit": args.limit,
        "import_seconds": round(imported, 3),
        "calls": [
            {"label": label, "wall_s": round(wall, 3), "cases": n, "recall_at_k": recall, "stages_s": stages}
            for label, wall, stages, n, recall in rows
        ],
    }
    print("JSON " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    from lib.process_exit import exit_now

    exit_now(main())
