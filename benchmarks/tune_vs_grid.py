"""Search, not grid: ``ragsweep tune`` against the full grid of the same sub-space, side by side in one run.

For each dataset (dev/test splits), in one process:

1. the **sub-space** (at most 100 configurations) as a grid, through ``ragsweep.sweep``: every configuration on
   every dev case. Its best dev value and that value's 95% CI are the target;
2. ``ragsweep.tune`` over the same sub-space, with pruning, once per seed: the trials it needed before a
   complete trial's dev value lay within the grid best's CI, and what they cost: dev cases evaluated, distinct
   embedding passes (a chunking the knn or hybrid index embeds), wall seconds; the median over the seeds;
   the saving from pruning (cases evaluated of trials x dev cases);
3. ``ragsweep.tune`` over the **large space** (at least 500 configurations, whose grid is too costly here): the
   best found against trials and cases evaluated, and each knob's importance;
4. ``--ray``: one configuration family of cuad-open tuned in one process and on a local Ray cluster of 2 workers
   (``--executor ray``): the same trials must give the same numbers.

The grid's cost is every configuration on every dev case; the target is a tune within the grid best's CI at
no more than 25% of it. Caches: the run uses the session's cache folder (parse, embeddings, served lists):
what one step cached, the next reads, so wall seconds say what each step took here, not a cold cost; cases
evaluated and embedding passes do not depend on the caches.

    .venv/bin/python benchmarks/tune_vs_grid.py                       # datasets/cuad and datasets/cuad-open
    .venv/bin/python benchmarks/tune_vs_grid.py --datasets datasets/cuad-open --seeds 3 --no-ray
    .venv/bin/python benchmarks/tune_vs_grid.py --smoke               # cuad-mini, 4 configurations, 2 trials
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PIPELINE = ROOT / "pipelines" / "default.yaml"
OBJECTIVE = "recall@5"
TARGET_SHARE = 0.25  # of the grid's dev cases evaluated

# 2 chunkings x 3 retrievers x 2 headers x 2 routings = 24 configurations, 4 chunkings to embed
SUB_SPACE = f"""grid:
  chunking:
    - {{min_tokens: 100, max_tokens: 200}}
    - {{min_tokens: 250, max_tokens: 600}}
  retriever_mode: [bm25, knn, hybrid]
  chunk_header: [none, title]
  route_docs: [null, 3]
  top_k: [5]
baseline: {{min_tokens: 250, max_tokens: 600, retriever_mode: hybrid, chunk_header: none, route_docs: null, top_k: 5}}
objectives: [{OBJECTIVE}]
ks: [1, 3, 5]
"""
# the same 4 chunkings, the other knobs wider: 2 chunkings x 2 headers x 6 routings x 3 retrievers x 40 values of
# rrf_k = 2,880 points, 1,008 distinct configurations (rrf_k changes only hybrid); its size is in the query-stage
# knobs, each a query pass, not an embedding pass (a chunk-size range costs an embedding pass a value: minutes
# each on 2 shared cores)
LARGE_SPACE = f"""grid:
  chunking:
    - {{min_tokens: 100, max_tokens: 200}}
    - {{min_tokens: 250, max_tokens: 600}}
  retriever_mode: [bm25, knn, hybrid]
  rrf_k: {{low: 5, high: 200, step: 5}}
  chunk_header: [none, title]
  route_docs: [null, 1, 2, 3, 4, 5]
  top_k: [5]
baseline: {{min_tokens: 250, max_tokens: 600, retriever_mode: hybrid, rrf_k: 60, chunk_header: none, route_docs: null,
  top_k: 5}}
objectives: [{OBJECTIVE}]
ks: [1, 3, 5]
"""
# one cuad-open family for the Ray check: the default chunking, 3 retrievers x 2 headers x 2 routings
RAY_SPACE = SUB_SPACE.replace("    - {min_tokens: 100, max_tokens: 200}\n", "").replace(
    "  chunking:\n    - {min_tokens: 250, max_tokens: 600}\n", "  min_tokens: [250]\n  max_tokens: [600]\n"
)
# smoke: bm25 only (nothing to embed), 2 headers x 2 depths = 4 configurations from 2 indexes
SMOKE_SPACE = f"""grid:
  retriever_mode: [bm25]
  chunk_header: [none, title]
  top_k: [5, 10]
baseline: {{retriever_mode: bm25, chunk_header: none, top_k: 5}}
objectives: [{OBJECTIVE}]
ks: [1, 5]
"""
EMBEDDED_BY = ("knn", "hybrid")
DEFAULT_MODE = "hybrid"  # the default pipeline's $retriever_mode


def embedding_passes(params: list[dict[str, Any]]) -> int:
    """Distinct chunkings among configurations whose index embeds: each is one embedding pass of the corpus."""
    from ragsweep.pipeline.knobs import knobs_affecting

    chunk_knobs = knobs_affecting("chunks")
    return len(
        {
            tuple(json.dumps(p.get(k)) for k in chunk_knobs)
            for p in params
            if p.get("retriever_mode", DEFAULT_MODE) in EMBEDDED_BY
        }
    )


def flat(params: dict[str, Any]) -> dict[str, Any]:
    """A grid configuration's params with a group (``chunking``) opened into its knobs."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        out.update(v if isinstance(v, dict) else {k: v})
    return out


def count_dev(dataset: str) -> int:
    """The dataset's dev cases: what the grid evaluates each configuration on."""
    lines = (Path(dataset) / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return sum(1 for line in lines if line.strip() and json.loads(line).get("split") == "dev")


def run_grid(dataset: str, space: Path, out: Path) -> dict[str, Any]:
    """The sub-space's full grid on dev: its best, the best's CI, and what it cost."""
    import ragsweep

    t0 = time.perf_counter()
    sweep = ragsweep.sweep(PIPELINE, dataset, space, out=out)
    seconds = time.perf_counter() - t0
    if sweep.failed:
        raise SystemExit(f"grid: {len(sweep.failed)} configuration(s) failed: {sweep.failed[0]}")
    best = next(c for c in sweep.configs if c.id == sweep.best[OBJECTIVE])
    dev_cases = count_dev(dataset)
    low, high = best.interval(OBJECTIVE)
    within = [c.id for c in sweep.configs if (v := c.metric(OBJECTIVE)) is not None and v >= low]
    return {
        "configurations": len(sweep.configs),
        "best": best.id,
        "best_params": best.params,
        "best_value": best.metric(OBJECTIVE),
        "ci": [low, high],
        "within_ci": len(within),
        "dev_cases": dev_cases,
        "cases_evaluated": dev_cases * len(sweep.configs),
        "embedding_passes": embedding_passes([flat(c.params) for c in sweep.configs]),
        "seconds": round(seconds, 1),
    }


def run_tune(dataset: str, space: Path, out: Path, trials: int, seed: int, **options: Any) -> tuple[Any, float]:
    """One study (with pruning unless ``prune=False``): its TuneReport and its wall seconds."""
    from ragsweep import tune

    t0 = time.perf_counter()
    report = tune(PIPELINE, dataset, space, trials=trials, seed=seed, out=out, **{"prune": True, **options})
    return report, time.perf_counter() - t0


def reached(report: Any, low: float) -> dict[str, Any]:
    """The first trial (in trial order) whose complete dev value lies within the grid best's CI, and the
    cost of the study up to and with it; ``trials`` (distinct configurations, as a study counts its trials)
    None where no trial reached it."""
    spent, seconds, seen = 0, 0.0, {}
    cost: dict[str, Any] = {"cases": 0, "passes": 0, "seconds": 0.0}
    for t in sorted(report.trials, key=lambda t: t.number):
        spent += t.cases_evaluated
        seconds += t.seconds
        seen[t.config_id] = t.params
        value = t.values.get(OBJECTIVE)
        cost = {"cases": spent, "passes": embedding_passes(list(seen.values())), "seconds": seconds}
        if t.state == "complete" and value is not None and value >= low:
            return {"trials": len(seen), **cost}
    return {"trials": None, **cost}


def sub_space(dataset: str, space: Path, out: Path, seeds: int, trials: int, prune: bool = True) -> dict[str, Any]:
    name = Path(dataset).name
    grid = run_grid(dataset, space, out / f"{name}-grid")
    print(
        f"RESULT {name} grid: {grid['configurations']} configurations, best {OBJECTIVE} {grid['best_value']:.3f} "
        f"[{grid['ci'][0]:.3f}, {grid['ci'][1]:.3f}] ({grid['within_ci']} configurations within it); "
        f"{grid['cases_evaluated']} dev cases evaluated, {grid['embedding_passes']} embedding passes, "
        f"{grid['seconds']:.0f} s"
    )
    runs = []
    for seed in range(seeds):
        report, seconds = run_tune(dataset, space, out / f"{name}-tune-{seed}", trials, seed, prune=prune)
        hit = reached(report, grid["ci"][0])
        hit.update(seed=seed, wall=round(seconds, 1), evaluated=report.cases_evaluated, possible=report.cases_possible)
        runs.append(hit)
        share = hit["cases"] / grid["cases_evaluated"]
        print(
            f"RESULT {name} tune seed {seed}: within the CI after {hit['trials'] or 'no'} trial(s) of {trials}, "
            f"{hit['cases']} dev cases ({share:.1%} of the grid's), {hit['passes']} embedding passes; "
            f"pruning saved {1 - report.cases_evaluated / report.cases_possible:.0%}; {seconds:.0f} s"
        )
    return {"grid": grid, "tune": runs, **_medians(runs, grid)}


def _medians(runs: list[dict[str, Any]], grid: dict[str, Any]) -> dict[str, Any]:
    """The seeds' medians; a seed that never reached the CI counts as more than any that did."""
    needed = [r["trials"] if r["trials"] is not None else float("inf") for r in runs]
    cases = [r["cases"] if r["trials"] is not None else float("inf") for r in runs]
    median_cases = statistics.median(cases)
    saving = 1 - sum(r["evaluated"] for r in runs) / max(1, sum(r["possible"] for r in runs))
    return {
        "median_trials": statistics.median(needed),
        "median_cases": median_cases,
        "median_share": median_cases / grid["cases_evaluated"],
        "median_passes": statistics.median(r["passes"] for r in runs),
        "pruning_saving": saving,
        "target_met": median_cases <= TARGET_SHARE * grid["cases_evaluated"],
    }


def large_space(dataset: str, space: Path, out: Path, trials: int) -> dict[str, Any]:
    name = Path(dataset).name
    report, seconds = run_tune(dataset, space, out / f"{name}-large", trials, 0)
    from ragsweep.report.tune_html import best_so_far

    trace = [{"trial": n, "cases": c, "best": b} for n, c, b in best_so_far(report)]
    for point in trace:
        print(
            f"RESULT {name} large space: after trial {point['trial']}: {point['cases']} dev cases, best {point['best']}"
        )
    shares = ", ".join(f"{k} {v:.2f}" for k, v in sorted(report.importance.items(), key=lambda kv: -kv[1]))
    print(
        f"RESULT {name} large space: {report.space_size} configurations, {len(report.trials)} trials, "
        f"{seconds:.0f} s; importance: {shares or 'none'}"
    )
    best = report.best
    return {
        "space_size": report.space_size,
        "trace": trace,
        "importance": report.importance,
        "best": None if best is None else {"params": best.params, "dev": best.dev, "test": best.test},
        "seconds": round(seconds, 1),
        "pruning_saving": 1 - report.cases_evaluated / max(1, report.cases_possible),
    }


def ray_check(dataset: str, space: Path, out: Path, trials: int) -> dict[str, Any]:
    """One study in one process and on a local Ray cluster of 2 workers: the same trials, the same values."""
    from ray_scale import ray_cluster

    local, local_s = run_tune(dataset, space, out / "ray-local", trials, 0)
    with tempfile.TemporaryDirectory(prefix="ragsweep-ray-") as temp, ray_cluster(temp) as flags:
        on_ray, ray_s = run_tune(dataset, space, out / "ray", trials, 0, executor="ray", ray_address=flags[-1])

    def numbers(report: Any) -> list[tuple[Any, ...]]:
        return [(t.number, t.config_id, t.state, t.values, t.cases_evaluated) for t in report.trials]

    same = numbers(local) == numbers(on_ray)
    print(f"RESULT ray: {trials} trials, same trial numbers: {same}; one process {local_s:.0f} s, Ray {ray_s:.0f} s")
    return {"same": same, "local_seconds": round(local_s, 1), "ray_seconds": round(ray_s, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["datasets/cuad", "datasets/cuad-open"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--trials", type=int, default=8, help="trials per seed on the sub-space")
    parser.add_argument("--large-trials", type=int, default=10)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="keep the run folders here")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ragsweep-tune-vs-grid-") as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        spaces = {}
        for key, text in (
            ("sub", SMOKE_SPACE if args.smoke else SUB_SPACE),
            ("large", LARGE_SPACE),
            ("ray", RAY_SPACE),
        ):
            spaces[key] = out / f"{key}-space.yaml"
            spaces[key].write_text(text)
        if args.smoke:
            print(
                "SMOKE RUN: cuad-mini, a 4-configuration space (bm25, 2 indexes), 2 trials of 1 seed, no pruning "
                "(82 dev cases: nothing to prune); not a measurement"
            )
            result = {"cuad-mini": sub_space(str(ROOT / "datasets/cuad-mini"), spaces["sub"], out, 1, 2, prune=False)}
            print("JSON " + json.dumps({"smoke": True, "results": result}, default=str))
            return 0
        results: dict[str, Any] = {}
        for dataset in args.datasets:
            name = Path(dataset).name
            results[name] = sub_space(dataset, spaces["sub"], out, args.seeds, args.trials)
            results[name]["large"] = large_space(dataset, spaces["large"], out, args.large_trials)
        if not args.no_ray:
            results["ray"] = ray_check("datasets/cuad-open", spaces["ray"], out, 6)
    print("JSON " + json.dumps({"smoke": False, "results": results}, default=str))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # ray_scale's local cluster
    sys.exit(main())
