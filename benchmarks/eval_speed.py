"""`make eval`, cold and warm, stage by stage: this tree against an older commit, in one run.

Each eval runs as its own process, exactly the command `make eval` runs
(`ragsweep eval --pipeline pipelines/default.yaml --dataset datasets/cuad`), with its own
cache folder (``RAGSWEEP_CACHE_DIR``): "cold" starts from an empty one (parse, embed and
every Pathway query paid), "warm" runs the same command again on the caches the cold run
left. ``--before REV`` checks REV out in a temporary git worktree and runs the same two
evals with its code (``PYTHONPATH``) beside this tree's, so both are measured on the same
machine in the same minutes.

    .venv/bin/python benchmarks/eval_speed.py [--before 6fc3235] [--dataset datasets/cuad] [--smoke]

Prints per run: wall seconds, CPU seconds (user + sys of the eval process), peak RSS, the
stage times of report.json's manifest, "other" (wall minus the stages: interpreter
start-up, imports, writing report.json and report.html), the answer+score rate, and the
size of each run-folder file; then ``RESULT`` ratios and a final ``JSON {...}`` line. On a
machine shared with other jobs the walls are noisy: read them with the CPU seconds and
the load average printed beside them.

``--smoke``: the same two evals (cold, warm) on 10 cases of ``datasets/cuad-mini`` with the BM25
retriever (``--limit 10 --set retriever_mode=bm25``), no ``--before`` unless given: a check that
the script runs (``make test`` does it), not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _children_usage() -> tuple[float, int]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def run_eval(code: Path, dataset: str, cache: Path, out: Path, name: str, extra: list[str]) -> dict:
    """One eval in its own process (``extra``: more arguments of ``ragsweep eval``); the measurements of it."""
    env = {**os.environ, "PYTHONPATH": str(code / "src"), "RAGSWEEP_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    command = [
        sys.executable,
        "-m",
        "ragsweep.cli",
        "eval",
        "--pipeline",
        str(code / "pipelines" / "default.yaml"),
        "--dataset",
        str(code / dataset),
        "--out",
        str(out),
        "--name",
        name,
        *extra,
    ]
    cpu_before, _ = _children_usage()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=code, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    cpu_after, max_rss_kb = _children_usage()
    folder = out / name
    # 1: a gate failed, the run itself is complete (its report.json is there)
    if done.returncode not in (0, 1) or not (folder / "report.json").is_file():
        raise SystemExit(f"eval failed ({done.returncode}) in {code}:\n{done.stderr[-3000:]}")
    report = json.loads((folder / "report.json").read_text())
    stages = report["manifest"].get("stage_seconds", {})
    counted = sum(v for k, v in stages.items() if k not in ("split", "embed"))  # both inside retrieve
    files = {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")}
    cases = report.get("n_cases") or 0
    score_seconds = stages.get("answer_and_score") or 0.0
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu_after - cpu_before, 2),
        "peak_rss_mb_max_so_far": round(max_rss_kb / 1024),  # RUSAGE_CHILDREN: the largest child yet
        "load_before": round(load, 2),
        "stages_s": stages,
        "other_s": round(wall - counted, 2),
        "cases": cases,
        "answer_score_cases_per_s": round(cases / score_seconds) if score_seconds else None,
        "retrieval": report["manifest"].get("retrieval"),
        "files_bytes": files,
        "folder_bytes": sum(files.values()),
        "metrics": {k: report["metrics"].get(k) for k in ("recall@5", "mrr@5", "ndcg@5")},
    }


def _print(label: str, r: dict) -> None:
    stages = ", ".join(f"{k} {v:.2f}" for k, v in r["stages_s"].items())
    files = ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in r["files_bytes"].items())
    print(
        f"RESULT {label}: wall {r['wall_s']} s, CPU {r['cpu_s']} s, load {r['load_before']}; stages [s]: {stages}; "
        f"other {r['other_s']} s; answer+score {r['answer_score_cases_per_s']} cases/s; "
        f"retrieval {r['retrieval']}; folder {r['folder_bytes'] / 1e6:.2f} MB ({files}); metrics {r['metrics']}",
        flush=True,
    )


def measure(code: Path, dataset: str, work: Path, label: str, extra: list[str]) -> dict:
    cache, out = work / f"cache-{label}", work / f"runs-{label}"
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    results = {}
    for name in ("cold", "warm"):
        results[name] = run_eval(code, dataset, cache, out, name, extra)
        _print(f"{label} {name}", results[name])
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="datasets/cuad")
    parser.add_argument("--before", metavar="REV", help="also measure this commit, in a temporary worktree")
    parser.add_argument("--work", help="folder for caches and run folders (default: a temporary one)")
    parser.add_argument("--limit", type=int, help="only the first N cases (ragsweep eval --limit)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="ragsweep eval --set")
    parser.add_argument(
        "--smoke", action="store_true", help="10 cuad-mini cases, BM25: does it run (not a measurement)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.dataset, args.limit = "datasets/cuad-mini", args.limit or 10
        args.set = args.set or ["retriever_mode=bm25"]
        print(
            f"SMOKE RUN: {args.limit} cases of {args.dataset}, --set {' '.join(args.set)}; "
            "the numbers below are not measurements",
            flush=True,
        )
    extra = [*(["--limit", str(args.limit)] if args.limit else []), *(x for v in args.set for x in ("--set", v))]
    work = Path(args.work or tempfile.mkdtemp(prefix="ragsweep-eval-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    report: dict = {
        "smoke": args.smoke,
        "dataset": args.dataset,
        "eval_args": extra,
        "cores": os.cpu_count(),
        "work": str(work),
    }
    worktree = None
    try:
        if args.before:
            worktree = work / "before-tree"
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(worktree), args.before],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
            report["before"] = {"rev": args.before, **measure(worktree, args.dataset, work, "before", extra)}
        report["after"] = {"rev": "working tree", **measure(ROOT, args.dataset, work, "after", extra)}
    finally:
        if worktree is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)
    if "before" in report:
        for name in ("cold", "warm"):
            b, a = report["before"][name], report["after"][name]
            print(
                f"RESULT {name}: before / after wall {b['wall_s'] / a['wall_s']:.2f}x, "
                f"CPU {b['cpu_s'] / a['cpu_s']:.2f}x, folder {b['folder_bytes'] / a['folder_bytes']:.1f}x smaller"
            )
    after = report["after"]
    print(f"RESULT after: warm / cold wall {after['warm']['wall_s'] / after['cold']['wall_s']:.2f}")
    print("JSON " + json.dumps(report))
    if args.smoke and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
