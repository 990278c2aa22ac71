"""One process vs a local Ray cluster of 2 workers: the same eval, side by side in one run (issue 25).

Each run is its own process with its own cold cache folder (parsed, embedded and queried from
nothing): (a) ``ragsweep eval`` in one process, (b) ``ragsweep eval --executor ray`` against a
local Ray cluster of two nodes on this machine, one worker process (one CPU) each, started by this
script and stopped after it. Printed: wall seconds of each, whether their cases.jsonl and
report.json metrics are equal, each Ray task's seconds (from the run's manifest), and a projection
to N machines from those times: tasks per stage, the critical path, the driver's share.

    .venv/bin/python benchmarks/ray_scale.py --txt-dir ../shared/data/cuad/txt --limit 3
    .venv/bin/python benchmarks/ray_scale.py --smoke      # datasets/cuad-mini, 20 cases

``--txt-dir``: the CUAD release's ``txt/`` (its ``master_clauses.csv`` and ``category_descriptions.csv``
one folder up); ``--limit N``: the first N contracts of a fixed pseudo-random order.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "datasets" / "cuad-mini"
DATASET_YAML = (MINI.parent / "cuad" / "dataset.yaml").read_text().replace("name: cuad", "name: {name}")


def build_slice(txt_dir: Path, limit: int, out: Path) -> Path:
    """The first ``limit`` contracts (a fixed order: SHA-256 of the name) as a dataset folder."""
    from ragsweep.datasets.cuad import import_cuad

    names = sorted(p.name for p in txt_dir.iterdir() if p.suffix == ".txt")
    chosen = sorted(names, key=lambda n: (hashlib.sha256(n.encode()).hexdigest(), n))[:limit]
    release = txt_dir.parent
    import_cuad(release / "master_clauses.csv", release / "category_descriptions.csv", out, txt_dir, chosen)
    (out / "dataset.yaml").write_text(DATASET_YAML.format(name=f"cuad-{limit}"))
    (out / "README.md").write_text(f"# {limit} CUAD v1 contracts, built by benchmarks/ray_scale.py (scratch)\n")
    return out


def start_cluster(temp: str) -> Any:
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "temp_dir": temp})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    return cluster


def run_eval(dataset: Path, out: Path, name: str, cache: Path, extra: list[str], limit: int | None) -> dict[str, Any]:
    """One ``ragsweep eval`` in a fresh process with a cold cache; its wall time and run folder."""
    args = [sys.executable, "-m", "ragsweep.cli", "eval", "--dataset", str(dataset), "--out", str(out)]
    args += ["--name", name, "--no-validate", *(["--limit", str(limit)] if limit else []), *extra]
    env = {**os.environ, "RAGSWEEP_CACHE_DIR": str(cache), "RAGSWEEP_SERVED_CACHE": "0"}
    started = time.perf_counter()
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{name}: exit {done.returncode}\n{done.stderr[-3000:]}")
    report = json.loads((out / name / "report.json").read_text())
    return {"wall": wall, "report": report, "cases": (out / name / "cases.jsonl").read_text()}


def projection(driver: float, embeds: list[dict[str, Any]], tasks: list[dict[str, Any]], machines: int) -> dict:
    """N machines: the embed tasks' seconds divide by N (batches of distinct texts); every retrieve shard
    builds the whole index from the cache (its split + embed, a fixed cost) and asks 1/N of the queries;
    the driver's part does not scale."""
    embed = sum(t["seconds"] for t in embeds)
    index = max(t["split"] + t["embed"] for t in tasks)
    queries = sum(t["seconds"] - t["split"] - t["embed"] for t in tasks)
    critical = embed / machines + index + queries / machines
    return {"machines": machines, "critical_path_s": critical, "total_s": driver + critical,
            "driver_share": driver / (driver + critical)}  # fmt: skip


def report_lines(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    same_cases = a["cases"] == b["cases"]
    same_metrics = a["report"]["metrics"] == b["report"]["metrics"]
    every = b["report"]["manifest"]["executor"]["tasks"]
    embeds = [t for t in every if t["stage"] == "embed"]
    tasks = [t for t in every if t["stage"] == "retrieve"]
    stages = b["report"]["manifest"]["stage_seconds"]
    # the driver alone: parse, answer + score, aggregate, and what the run spends outside its stages
    driver = b["wall"] - stages["retrieve"]
    print(f"RESULT one process: {a['wall']:.1f} s wall; Ray, 2 workers: {b['wall']:.1f} s wall")
    print(f"RESULT same cases.jsonl: {same_cases}; same report.json metrics: {same_metrics}")
    print(f"RESULT ray embed tasks: {len(embeds)} (distinct chunk texts the cache lacked, a batch each)")
    for t in embeds:
        print(f"RESULT   embed task pid {t['pid']}: {t['texts']} texts, {t['seconds']:.1f} s")
    print(f"RESULT ray tasks: {len(tasks)} (retrieve, a shard of cases each)")
    for t in tasks:
        print(f"RESULT   task pid {t['pid']}: {t['cases']} cases, {t['seconds']:.1f} s "
              f"(split {t['split']:.1f}, embed {t['embed']:.1f})")  # fmt: skip
    print(f"RESULT driver (parse, answer+score, start-up, writing): {driver:.1f} s of {b['wall']:.1f} s")
    rows = [projection(driver, embeds, tasks, n) for n in (1, 2, 4, 8, 16)]
    for r in rows:
        print(f"RESULT projection {r['machines']:>2} machine(s): critical path {r['critical_path_s']:.1f} s, "
              f"total {r['total_s']:.1f} s, driver share {100 * r['driver_share']:.0f}%")  # fmt: skip
    return {"same_cases": same_cases, "same_metrics": same_metrics, "walls": [a["wall"], b["wall"]],
            "embed_tasks": embeds, "tasks": tasks, "driver_s": driver, "projection": rows}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--txt-dir", type=Path, help="the CUAD release's txt/ folder")
    p.add_argument("--limit", type=int, default=3, help="contracts of the slice")
    p.add_argument("--smoke", action="store_true", help="datasets/cuad-mini, 20 cases")
    a = p.parse_args()
    if not a.smoke and a.txt_dir is None:
        p.error("--txt-dir is required (or --smoke)")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="rsray-", dir="/tmp") as tmp:
        work = Path(tmp)
        if a.smoke:
            print("SMOKE RUN: datasets/cuad-mini, 20 cases; the numbers are not measurements")
            dataset, limit = MINI, 20
        else:
            dataset, limit = build_slice(a.txt_dir, a.limit, work / "dataset"), None
        print(f"load average before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
        local = run_eval(dataset, work / "runs", "local", work / "cache-local", [], limit)
        cluster = start_cluster(str(work / "ray"))
        try:
            extra = ["--executor", "ray", "--ray-address", cluster.address]
            on_ray = run_eval(dataset, work / "runs", "ray", work / "cache-ray", extra, limit)
        finally:
            cluster.shutdown()
        summary = report_lines(local, on_ray)
    summary.update(smoke=a.smoke, cases=len(local["cases"].splitlines()), load=load)
    print("JSON " + json.dumps(summary))
    return 0 if summary["same_cases"] and summary["same_metrics"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
