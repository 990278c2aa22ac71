"""One process vs a local Ray cluster of 2 workers: the same eval and sweep, side by side in one run.

Each run is its own process with its own cold cache folder (parsed, embedded and queried from
nothing): ``ragsweep eval`` (and with ``--sweep`` a sweep of 8 configurations: chunking 2 x
retriever_mode 2 x top_k 2) in one process, then with ``--executor ray`` against a local Ray
cluster of two nodes on this machine, one worker process (one CPU) each, started by this script
for that run and stopped after it. Printed: wall seconds of each, whether their case lines,
report.json metrics and sweep.json are equal, each stage's Ray tasks (parse, embed, retrieve: count,
sum, median, max seconds, from the run's manifest), the driver's own seconds, and a projection to N
machines from those times: tasks per stage, the critical path, the driver's share, and the peak
memory of every process of each run (sampled): the eval process, its children, each Ray worker, the
raylets and the GCS. ``--warm`` runs each again on its own cache (parse and embeddings warm, every
query asked again).

    .venv/bin/python benchmarks/ray_scale.py --txt-dir ../shared/data/cuad/txt --limit 40 --sweep
    .venv/bin/python benchmarks/ray_scale.py --txt-dir ../shared/data/cuad/txt --limit 510 --warm
    .venv/bin/python benchmarks/ray_scale.py --dataset datasets/cuad   # the 40 PDFs: Docling parse tasks
    .venv/bin/python benchmarks/ray_scale.py --smoke --sweep --sweep-limit 20   # datasets/cuad-mini, 20 cases

``--txt-dir``: the CUAD release's ``txt/`` (its ``master_clauses.csv`` and ``category_descriptions.csv``
one folder up); ``--limit N``: the first N contracts of a fixed pseudo-random order. ``--smoke``: the
one-process eval reads the caller's ``RAGSWEEP_CACHE_DIR`` where it is set (warm), the Ray run its own
cold cache.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

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


@contextmanager
def ray_cluster(temp: str) -> Iterator[list[str]]:
    """Two Ray nodes on this machine, one CPU (one worker process) each, up only while a Ray run runs;
    yields the options that point ``ragsweep`` at it."""
    from ray.cluster_utils import Cluster

    # Ray writes the head's address to /tmp/ray/ray_current_cluster whatever temp_dir says, and does
    # not make that folder: on a fresh machine it is missing
    os.makedirs("/tmp/ray", exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "temp_dir": temp})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield ["--executor", "ray", "--ray-address", cluster.address]
    finally:
        cluster.shutdown()


SWEEP_GRID = """\
grid:
  chunking:
    - {min_tokens: 100, max_tokens: 200}
    - {min_tokens: 250, max_tokens: 600}
  retriever_mode: [bm25, hybrid]
  top_k: [3, 5]
baseline: {min_tokens: 250, max_tokens: 600, retriever_mode: hybrid, top_k: 5}
objectives: [recall@k, mrr@k]
ks: [1, 3, 5]
"""
# what differs between two sweeps besides the results: times, memory, where it ran
VOLATILE = {"seconds", "index_run_seconds", "latency_ms_per_query", "embedded_texts", "rss_mb", "rss_mb_before",
            "peak_rss_mb"}  # fmt: skip


def role(process: psutil.Process, eval_pid: int) -> str:
    """What a process of this benchmark is: the eval process, one of its children (Pathway, Docling's
    pool), a Ray worker (its title ``ray::...``), a raylet, the GCS, or another Ray process."""
    if process.pid == eval_pid:
        return "eval process"
    if eval_pid in {parent.pid for parent in process.parents()}:
        return "eval child"
    if process.name() in ("raylet", "gcs_server"):  # a raylet's arguments name the worker's script
        return process.name()
    title = " ".join(process.cmdline())
    return "ray worker" if title.startswith("ray::") or "default_worker.py" in title else "ray other"


class PeakMemory:
    """The peak RSS of every process this script started (and their children), sampled every 0.25 s
    while one run lasts: per process, and per role the peak of their sum at one instant."""

    def __init__(self, eval_pid: int) -> None:
        self.eval_pid, self.stop = eval_pid, threading.Event()
        self.peaks: dict[int, tuple[str, float]] = {}
        self.sums: dict[str, float] = {}
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        me = psutil.Process()
        while not self.stop.wait(0.25):
            now: dict[str, float] = {}
            for process in me.children(recursive=True):
                try:
                    rss, kind = process.memory_info().rss / 2**20, role(process, self.eval_pid)
                except psutil.Error:
                    continue
                now[kind] = now.get(kind, 0.0) + rss
                if rss > self.peaks.get(process.pid, ("", 0.0))[1]:
                    self.peaks[process.pid] = (kind, rss)
            for kind, total in now.items():
                self.sums[kind] = max(self.sums.get(kind, 0.0), total)

    def result(self) -> dict[str, Any]:
        self.stop.set()
        self.thread.join()
        roles: dict[str, Any] = {}
        for kind, rss in sorted(self.peaks.values()):
            entry = roles.setdefault(kind, {"processes": 0, "peak_mb": []})
            entry["processes"] += 1
            entry["peak_mb"].append(round(rss))
        for kind, entry in roles.items():
            entry["peak_mb"] = sorted(entry["peak_mb"], reverse=True)[:8]
            entry["peak_sum_mb"] = round(self.sums[kind])
        return roles


def run_cli(command: list[str], out: Path, name: str, cache: Path, extra: list[str]) -> tuple[float, Path, dict]:
    """One ``ragsweep`` command in a fresh process (its cache folder as given: cold the first time); its
    wall time, result folder and the peak memory of its processes and the Ray cluster's."""
    args = [sys.executable, "-m", "ragsweep.cli", *command, "--out", str(out), "--name", name, *extra]
    env = {**os.environ, "RAGSWEEP_CACHE_DIR": str(cache), "RAGSWEEP_SERVED_CACHE": "0"}
    started = time.perf_counter()
    with subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        memory = PeakMemory(child.pid)
        _, stderr = child.communicate(timeout=7200)
    wall = time.perf_counter() - started
    if child.returncode != 0:
        sys.exit(f"{name}: exit {child.returncode}\n{stderr[-3000:]}")
    return wall, out / name, memory.result()


def run_eval(dataset: Path, out: Path, name: str, cache: Path, extra: list[str], limit: int | None) -> dict[str, Any]:
    command = ["eval", "--dataset", str(dataset), "--no-validate", *(["--limit", str(limit)] if limit else [])]
    wall, folder, memory = run_cli(command, out, name, cache, extra)
    report = json.loads((folder / "report.json").read_text())
    return {"wall": wall, "report": report, "cases": (folder / "cases.jsonl").read_text(), "memory": memory,
            "tasks": report["manifest"]["executor"].get("tasks", []), "stages": report["manifest"]["stage_seconds"]}  # fmt: skip


def run_sweep(dataset: Path, out: Path, name: str, cache: Path, extra: list[str], limit: int | None) -> dict[str, Any]:
    grid = out / "grid.yaml"
    out.mkdir(parents=True, exist_ok=True)
    grid.write_text(SWEEP_GRID)
    command = ["sweep", "--dataset", str(dataset), "--grid", str(grid), *(["--limit", str(limit)] if limit else [])]
    wall, folder, memory = run_cli(command, out, name, cache, extra)
    data = json.loads((folder / "sweep.json").read_text())
    manifest = data.pop("manifest")
    data.pop("pareto")  # recall against measured latency: a timing
    data["configs"] = [{k: v for k, v in c.items() if k not in VOLATILE} for c in data["configs"]]
    cases = {c["id"]: (folder / "configs" / c["id"] / "cases.jsonl").read_text() for c in data["configs"]}
    # the driver waited on the store once per index group (every configuration of a group has its wait)
    waits = {c["index_key"]: c["index_run_seconds"] for c in json.loads((folder / "sweep.json").read_text())["configs"]}
    return {"wall": wall, "sweep": data, "cases": cases, "tasks": manifest["executor"].get("tasks", []), "memory": memory,
            "parse_s": manifest["parse_seconds"], "store_wait_s": sum(waits.values()), "groups": len(waits)}  # fmt: skip


def same_lines(a: str, b: str) -> bool:
    """The same case lines: every field equal, each hit's score within 1e-6 (relative)."""

    def rows(text: str) -> tuple[list[dict[str, Any]], list[float]]:
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        return lines, [h.pop("score") for line in lines for h in line.get("hits", [])]

    (rows_a, scores_a), (rows_b, scores_b) = rows(a), rows(b)
    close = len(scores_a) == len(scores_b) and all(abs(x - y) <= 1e-6 * max(abs(x), abs(y), 1e-12)
                                                   for x, y in zip(scores_a, scores_b))  # fmt: skip
    return rows_a == rows_b and close


def stage_tasks(tasks: list[dict[str, Any]], stage: str) -> list[dict[str, Any]]:
    return [t for t in tasks if t["stage"] == stage]


def model_load(embed: list[dict[str, Any]]) -> float:
    """The seconds a worker's first embed task spends loading the model: measured by the task, or (tasks
    that do not say) its seconds less its texts at the rate of the tasks that came after a first one."""
    firsts = [t for t in embed if t.get("first")]
    if not firsts:
        return 0.0
    if all("load" in t for t in firsts):
        return max(t["load"] for t in firsts)
    later = [t for t in embed if not t.get("first")]
    rate = sum(t["seconds"] for t in later) / max(1, sum(t["texts"] for t in later)) if later else 0.0
    return max(0.0, min(t["seconds"] - rate * t["texts"] for t in firsts))


def projection(driver: float, tasks: list[dict[str, Any]], groups: int, machines: int) -> dict[str, Any]:
    """N machines, one stage after the other: parse tasks (one per document) divide by N, but the stage
    does not end before its longest task; embed tasks (batches of distinct texts) divide by N, less the
    model's load, which every machine pays once; each index group's retrieve
    shards all build that group's whole index from the cache (split + embed: a fixed cost per machine) and
    ask 1/N of its queries. The driver's part (reading, answering, scoring, writing) does not scale."""
    parse, embed, retrieve = (stage_tasks(tasks, s) for s in ("parse", "embed", "retrieve"))

    def spread(part: list[dict[str, Any]]) -> float:
        seconds = [t["seconds"] for t in part]
        return max(sum(seconds) / machines, max(seconds)) if seconds else 0.0

    # a worker's first embed task loads the model: that is paid once on every machine, the texts divide
    firsts = [t for t in embed if t.get("first")]
    load = model_load(embed)
    embed_s = (load + (sum(t["seconds"] for t in embed) - load * len(firsts)) / machines) if embed else 0.0
    build = sum(t["split"] + t["embed"] for t in retrieve) / max(1, len(retrieve)) * groups
    queries = sum(t["seconds"] - t["split"] - t["embed"] for t in retrieve)
    critical = spread(parse) + embed_s + build + queries / machines
    return {"machines": machines, "critical_path_s": critical, "total_s": driver + critical,
            "driver_share": driver / (driver + critical)}  # fmt: skip


def task_lines(label: str, tasks: list[dict[str, Any]]) -> None:
    for stage in ("parse", "embed", "retrieve"):
        part = stage_tasks(tasks, stage)
        if not part:
            continue
        seconds = sorted(t["seconds"] for t in part)
        extra = ""
        if stage == "embed":
            firsts = [round(t["seconds"], 1) for t in part if t.get("first")]
            extra = (f", texts {[t['texts'] for t in part]}, first in their worker {firsts} s, "
                     f"model load {model_load(part):.1f} s")  # fmt: skip
        if stage == "retrieve":
            extra = f", of which index build (split + embed) {sum(t['split'] + t['embed'] for t in part):.1f} s"
        print(f"RESULT {label} {stage} tasks: {len(part)}, sum {sum(seconds):.1f} s, "
              f"median {seconds[len(seconds) // 2]:.2f} s, max {seconds[-1]:.1f} s{extra}")  # fmt: skip


def report_lines(kind: str, a: dict[str, Any], b: dict[str, Any], driver: float, groups: int) -> dict[str, Any]:
    if kind.startswith("eval"):
        same, same_metrics = a["cases"] == b["cases"], a["report"]["metrics"] == b["report"]["metrics"]
    else:  # a BM25 hit's raw score is tantivy's float32: it may move in its last place (tests/test_ray_executor.py)
        same = all(same_lines(a["cases"][cid], b["cases"][cid]) for cid in a["cases"])
        same_metrics = a["sweep"] == b["sweep"]
    print(f"RESULT {kind}: one process {a['wall']:.1f} s wall; Ray, 2 workers: {b['wall']:.1f} s wall")
    print(f"RESULT {kind}: same case lines: {same}; same {'report' if kind.startswith('eval') else 'sweep'}.json metrics: "
          f"{same_metrics}")  # fmt: skip
    for label, run in (("one process", a), ("Ray", b)):
        for name, entry in run["memory"].items():
            print(f"RESULT {kind} memory, {label}: {name}: {entry['processes']} process(es), peak RSS "
                  f"{entry['peak_mb']} MB, at most {entry['peak_sum_mb']} MB together")  # fmt: skip
    task_lines(kind, b["tasks"])
    print(f"RESULT {kind} driver alone (not waiting on tasks): {driver:.1f} s of {b['wall']:.1f} s")
    rows = [projection(driver, b["tasks"], groups, n) for n in (1, 2, 4, 8, 16)]
    for r in rows:
        print(f"RESULT {kind} projection {r['machines']:>2} machine(s): critical path {r['critical_path_s']:.1f} s, "
              f"total {r['total_s']:.1f} s, driver share {100 * r['driver_share']:.0f}%")  # fmt: skip
    return {"same": same and same_metrics, "walls": [a["wall"], b["wall"]], "tasks": b["tasks"],
            "driver_s": driver, "projection": rows, "memory": [a["memory"], b["memory"]]}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--txt-dir", type=Path, help="the CUAD release's txt/ folder")
    p.add_argument("--limit", type=int, default=3, help="contracts of the slice")
    p.add_argument("--dataset", type=Path, help="a dataset folder as it is (e.g. datasets/cuad: PDFs), not a slice")
    p.add_argument("--warm", action="store_true", help="then each eval again on its own cache")
    p.add_argument("--smoke", action="store_true", help="datasets/cuad-mini, 20 cases")
    p.add_argument("--sweep", action="store_true", help="also a sweep of 8 configurations, one process vs Ray")
    p.add_argument("--sweep-limit", type=int, help="the sweep's first N cases (default: all)")
    p.add_argument("--no-eval", action="store_true", help="the sweep alone")
    a = p.parse_args()
    if not a.smoke and a.txt_dir is None and a.dataset is None:
        p.error("--txt-dir or --dataset is required (or --smoke)")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="rsray-", dir="/tmp") as tmp:
        work = Path(tmp)
        if a.smoke:
            print("SMOKE RUN: datasets/cuad-mini, 20 cases; the numbers are not measurements")
            dataset, limit = MINI, 20
        elif a.dataset is not None:
            dataset, limit = a.dataset.resolve(), None
        else:
            dataset, limit = build_slice(a.txt_dir, a.limit, work / "dataset"), None
        print(f"load average before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
        summary: dict[str, Any] = {}
        # a smoke run's one-process eval may read its caller's warm caches (the make test session's): the
        # comparison holds whatever its cache; the Ray run stays cold (its parse and embed tasks are the point)
        shared = os.environ.get("RAGSWEEP_CACHE_DIR") if a.smoke else None
        local_cache = Path(shared) if shared else work / "cache-local"
        if not a.no_eval:
            local = run_eval(dataset, work / "runs", "local", local_cache, [], limit)
            with ray_cluster(str(work / "ray")) as extra:
                on_ray = run_eval(dataset, work / "runs", "ray", work / "cache-ray", extra, limit)
            # the driver alone: the run's wall less its waits on parse and retrieve tasks
            driver = on_ray["wall"] - on_ray["stages"]["parse"] - on_ray["stages"]["retrieve"]
            summary["eval"] = report_lines("eval", local, on_ray, driver, 1)
            summary["cases"] = len(local["cases"].splitlines())
            if a.warm:
                local_w = run_eval(dataset, work / "runs", "local-warm", local_cache, [], limit)
                with ray_cluster(str(work / "ray-warm")) as extra:
                    ray_w = run_eval(dataset, work / "runs", "ray-warm", work / "cache-ray", extra, limit)
                driver = ray_w["wall"] - ray_w["stages"]["parse"] - ray_w["stages"]["retrieve"]
                summary["eval_warm"] = report_lines("eval warm", local_w, ray_w, driver, 1)
                summary["eval_warm"]["same_as_cold"] = local_w["cases"] == local["cases"]
                print(f"RESULT eval warm: same case lines as the cold runs: {summary['eval_warm']['same_as_cold']}")
        if a.sweep:
            local_s = run_sweep(dataset, work / "sweeps", "local", work / "sweep-cache-local", [], a.sweep_limit)
            with ray_cluster(str(work / "ray-sweep")) as extra:
                ray_s = run_sweep(dataset, work / "sweeps", "ray", work / "sweep-cache-ray", extra, a.sweep_limit)
            driver = ray_s["wall"] - ray_s["parse_s"] - ray_s["store_wait_s"]
            summary["sweep"] = report_lines("sweep", local_s, ray_s, driver, ray_s["groups"])
    summary.update(smoke=a.smoke, load=load, load_after=os.getloadavg())
    print(f"load average after: {' '.join(f'{x:.1f}' for x in summary['load_after'])}")
    print("JSON " + json.dumps(summary))
    return (
        0
        if all(part["same"] for part in (summary.get("eval"), summary.get("eval_warm"), summary.get("sweep")) if part)
        else 1
    )


if __name__ == "__main__":
    raise SystemExit(main())
