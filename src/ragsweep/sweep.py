"""`ragsweep sweep`: a grid of pipeline variables -> one scored run per configuration.

No work is done twice:

- every document is parsed once for the whole sweep (and cached on disk by content);
- every distinct chunk text is embedded once per embedder (the SQLite cache of
  :mod:`ragsweep.embedding`, shared with every other run);
- one Pathway index per (chunking, retriever) answers every top-k of the grid:
  the configurations that differ only in ``top_k`` share one graph run that
  fetches the largest k, and each one keeps its own prefix.

Each configuration's per-case scores are written as soon as it is done
(``configs/<id>/cases.jsonl`` then ``result.json``), so an interrupted sweep
resumes without recomputing a finished configuration.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from ragsweep.config import ConfigError, parse_overrides
from ragsweep.run import (JsonlWriter, RunError, RunInputs, git_commit, load_inputs, now, package_versions,
                          parse_documents, read_jsonl_tolerant, retrieve_cases, write_html)
from ragsweep.scoring import DEFAULT_KS, aggregate, answer_scores, judge_retrieval

AT_K = ("hit_rate", "recall", "precision", "mrr", "ndcg", "map")
DEFAULT_OBJECTIVES = ("recall@k", "mrr@k", "ndcg@k")


class SweepGrid(BaseModel):
    """``pipelines/sweep.yaml``: ``grid`` axes, a ``baseline`` and ``objectives``.

    An axis whose values are mappings sets several variables together, e.g.
    ``chunking: [{min_tokens: 100, max_tokens: 200}, ...]``.
    """

    grid: dict[str, list[Any]]
    baseline: dict[str, Any] = Field(default_factory=dict)
    objectives: list[str] = Field(default_factory=lambda: list(DEFAULT_OBJECTIVES))
    ks: list[int] = Field(default_factory=lambda: list(DEFAULT_KS))

    @classmethod
    def load(cls, path: str | Path) -> "SweepGrid":
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"grid file {str(p)!r} does not exist")
        data = yaml.safe_load(p.read_text()) or {}
        if "grid" not in data:
            raise ConfigError(f"{p}: needs a top-level 'grid' mapping")
        return cls(**data)

    def configurations(self) -> list[dict[str, Any]]:
        axes = list(self.grid.items())
        combos = []
        for values in itertools.product(*(v for _, v in axes)):
            params: dict[str, Any] = {}
            for (name, _), value in zip(axes, values):
                if isinstance(value, dict):
                    params.update(value)
                else:
                    params[name] = value
            combos.append(params)
        return combos


def config_id(params: dict[str, Any]) -> str:
    text = json.dumps(params, sort_keys=True)
    readable = "-".join(f"{k}={v}" for k, v in sorted(params.items()))
    return f"{readable[:80]}-{hashlib.sha256(text.encode()).hexdigest()[:6]}".replace("/", "_").replace(" ", "")


def add_at_k(metrics: dict[str, float | None], top_k: int) -> dict[str, float | None]:
    """``recall@k`` etc. at the configuration's own top-k, so configurations compare."""
    for base in AT_K:
        metrics[f"{base}@k"] = metrics.get(f"{base}@{top_k}")
    return metrics


def pareto_front(points: list[tuple[str, float, float]]) -> list[str]:
    """Ids not dominated on (quality: higher is better, cost: lower is better)."""
    front = []
    for pid, q, c in points:
        dominated = any((q2 >= q and c2 <= c) and (q2 > q or c2 < c) for _, q2, c2 in points)
        if not dominated:
            front.append(pid)
    return front


class SweepOptions(RunInputs):
    grid: str
    objectives: list[str] | None = None
    answers: bool = False


def run_sweep(options: SweepOptions) -> tuple[Path, dict[str, Any]]:
    started_at = now()
    grid = SweepGrid.load(options.grid)
    objectives = options.objectives or grid.objectives
    base_config, dataset, cases = load_inputs(options)
    combos = grid.configurations()
    configs = {}
    for params in combos:
        try:
            configs[config_id(params)] = (params, base_config.with_overrides(params))
        except ConfigError as err:
            raise RunError(f"{options.grid}: {err}") from err
    matches = [p for p in combos if all(p.get(k) == v for k, v in grid.baseline.items())]
    if not matches:
        raise RunError(f"{options.grid}: the baseline {grid.baseline} is not a point of the grid")
    baseline_id = config_id(matches[0])

    out = Path(options.out)
    state = {"grid": str(options.grid), "pipeline_hash": base_config.hash, "case_ids": [c.id for c in cases]}
    if options.resume:
        found = sorted(p.parent for p in out.glob("*/sweep-state.json"))
        sweep_dir = Path(options.resume) if options.resume != "latest" else (found[-1] if found else out / "?")
        if not (sweep_dir / "sweep-state.json").exists():
            raise RunError(f"--resume: {sweep_dir} is not a sweep folder (no sweep-state.json)")
        saved = json.loads((sweep_dir / "sweep-state.json").read_text())
        for key in ("pipeline_hash", "case_ids"):
            if saved.get(key) != state[key]:
                raise RunError(f"--resume {sweep_dir}: {key} differs from the interrupted sweep; start a new one")
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        sweep_dir = out / (options.name or f"{stamp}-sweep-{dataset.name}")
        sweep_dir.mkdir(parents=True, exist_ok=False)
        (sweep_dir / "sweep-state.json").write_text(json.dumps(state, indent=2))
    print(f"sweep folder: {sweep_dir}  ({len(configs)} configurations)", file=sys.stderr)

    # ---- parse once for the whole sweep
    t = time.perf_counter()
    corpus = parse_documents(dataset, options.progress)
    parse_seconds = time.perf_counter() - t
    texts = {d.doc_id: d.text for d in corpus.documents}

    # ---- one index per (chunking, retriever): group configurations by index key
    groups: dict[str, list[str]] = defaultdict(list)
    for cid, (_, cfg) in configs.items():
        groups[cfg.index_key].append(cid)

    results: dict[str, dict[str, Any]] = {}
    for cid in configs:
        result_file = sweep_dir / "configs" / cid / "result.json"
        if result_file.exists():
            results[cid] = json.loads(result_file.read_text())
    if results:
        print(f"resuming: {len(results)} configuration(s) already done", file=sys.stderr)

    embedded_total = 0
    for n_group, (index_key, members) in enumerate(groups.items(), start=1):
        todo = [cid for cid in members if cid not in results]
        if not todo:
            continue
        k_max = max(max(grid.ks), *(configs[cid][1].top_k for cid in members))
        config = configs[todo[0]][1]
        label = ", ".join(f"{k}={v}" for k, v in configs[todo[0]][0].items() if k != "top_k")
        print(f"[{n_group}/{len(groups)}] index {label}: {len(cases)} queries, top-k for {len(todo)} configuration(s)",
              file=sys.stderr)
        rss_before = _rss_mb()
        t = time.perf_counter()
        hits_by_case, run = retrieve_cases(config, corpus, cases, k_max, None, options.progress)
        group_seconds = time.perf_counter() - t
        embedded_total += run.embedded_texts
        for cid in todo:
            params, cfg = configs[cid]
            t = time.perf_counter()
            records = score_configuration(cases, hits_by_case, cfg.top_k, dataset, texts, grid.ks, options.answers)
            folder = sweep_dir / "configs" / cid
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "cases.jsonl").unlink(missing_ok=True)
            writer = JsonlWriter(folder / "cases.jsonl")
            for record in records:
                writer.write(record)
            writer.close()
            agg = aggregate(records, interval_metrics=[*objectives, *(f"{b}@k" for b in AT_K)])
            result = {
                "id": cid, "params": params, "config_hash": cfg.hash, "index_key": index_key,
                "metrics": agg["metrics"], "intervals": agg["intervals"], "counts": agg["counts"],
                "seconds": round(group_seconds / len(members) + time.perf_counter() - t, 3),
                "index_run_seconds": round(group_seconds, 3),
                "latency_ms_per_query": round(1000 * run.seconds / max(1, len(cases)), 3),
                "chunks": len(run.chunks), "embedded_texts": run.embedded_texts,
                "rss_mb": round(_rss_mb(), 1), "rss_mb_before": round(rss_before, 1), "peak_rss_mb": round(_peak_rss_mb(), 1),
            }
            (folder / "result.json").write_text(json.dumps(result, indent=2, default=str))
            results[cid] = result

    report = finish_sweep(sweep_dir, configs, results, baseline_id, objectives, grid, options)
    report["manifest"] = {
        "pipeline": base_config.manifest(), "dataset": {"path": options.dataset, "split": options.split,
                                                        "limit": options.limit, "cases": len(cases)},
        "corpus": {"hash": corpus.content_hash, "documents": len(corpus.documents), "pdf_pipeline": corpus.pdf_pipeline},
        "parse_seconds": round(parse_seconds, 3), "embedded_texts_this_run": embedded_total,
        "packages": package_versions(), "git_commit": git_commit(),
        "timestamps": {"started": started_at, "finished": now()},
    }
    (sweep_dir / "sweep.json").write_text(json.dumps(report, indent=2, default=str))
    write_html(sweep_dir)
    return sweep_dir, report


def score_configuration(cases, hits_by_case, top_k, dataset, texts, ks, with_answers: bool) -> list[dict[str, Any]]:
    answerer = None
    if with_answers:
        from ragsweep.answer.extractive import ExtractiveAnswerer

        answerer = ExtractiveAnswerer()
    ks = sorted(set(ks) | {top_k})
    records = []
    for case in cases:
        hits = hits_by_case.get(case.id, [])
        answer = answerer.answer(case.question, hits[:top_k]) if answerer else None
        marked, metrics, _rule = judge_retrieval(case, hits, dataset.relevance, texts, ks,
                                                 cited=(answer.cited or None) if answer else None)
        add_at_k(metrics, top_k)
        if answer is not None:
            metrics.update(answer_scores(case, answer))
        records.append({
            "id": case.id, "question": case.question, "type": case.type, "doc_scope": case.doc_scope,
            "unanswerable": case.unanswerable, "reference_answer": case.reference_answer,
            "hits": marked[:top_k], "answer": answer.model_dump() if answer else None, "metrics": metrics,
            "judge": None,
        })
    return records


def finish_sweep(sweep_dir: Path, configs, results, baseline_id, objectives, grid, options) -> dict[str, Any]:
    """Paired tests against the baseline (Holm across configurations), best, Pareto, CSV."""
    from ragsweep.metrics.stats import holm, paired_test

    def per_case(cid: str) -> dict[str, dict[str, float | None]]:
        rows = read_jsonl_tolerant(sweep_dir / "configs" / cid / "cases.jsonl")
        return {r["id"]: r["metrics"] for r in rows}

    base_cases = per_case(baseline_id)
    p_values: dict[str, dict[str, float | None]] = defaultdict(dict)
    for cid in configs:
        if cid == baseline_id:
            continue
        other = per_case(cid)
        for metric in objectives:
            pairs = [(base_cases[i].get(metric), other[i].get(metric)) for i in base_cases if i in other]
            pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
            p_values[metric][cid] = paired_test([a for a, _ in pairs], [b for _, b in pairs]) if len(pairs) >= 2 else None
    adjusted: dict[str, dict[str, float | None]] = {}
    for metric, by_cid in p_values.items():
        present = {cid: p for cid, p in by_cid.items() if p is not None}
        adj = holm(present) if present else {}
        adjusted[metric] = {cid: adj.get(cid) for cid in by_cid}

    rows = []
    for cid, (params, _cfg) in configs.items():
        result = results[cid]
        rows.append({
            **result,
            "p_values": {m: p_values[m].get(cid) for m in objectives},
            "p_adjusted": {m: adjusted.get(m, {}).get(cid) for m in objectives},
            "significant": {m: (adjusted.get(m, {}).get(cid) is not None and adjusted[m][cid] < 0.05) for m in objectives},
            "delta_vs_baseline": {
                m: (None if result["metrics"].get(m) is None or results[baseline_id]["metrics"].get(m) is None
                    else result["metrics"][m] - results[baseline_id]["metrics"][m]) for m in objectives},
        })
    best = {}
    for metric in objectives:
        scored = [r for r in rows if r["metrics"].get(metric) is not None]
        if scored:
            best[metric] = max(scored, key=lambda r: (r["metrics"][metric], -r["latency_ms_per_query"]))["id"]
    main_metric = objectives[0]
    pareto = pareto_front([(r["id"], r["metrics"].get(main_metric) or 0.0, r["latency_ms_per_query"]) for r in rows])
    report = {"baseline": baseline_id, "grid": grid.grid, "objectives": objectives, "configs": rows,
              "best": best, "pareto": pareto, "pareto_axes": [main_metric, "latency_ms_per_query"]}
    write_csv(sweep_dir / "sweep.csv", rows, objectives)
    return report


def write_csv(path: Path, rows: list[dict[str, Any]], objectives: list[str]) -> None:
    import csv

    params = sorted({k for r in rows for k in r["params"]})
    metric_names = sorted({k for r in rows for k in r["metrics"] if "@k" in k or k in objectives})
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", *params, *metric_names,
                    *[f"{m}_{s}" for m in objectives for s in ("ci_low", "ci_high", "p", "p_holm", "significant")],
                    "seconds", "latency_ms_per_query", "peak_rss_mb"])
        for r in rows:
            w.writerow([
                r["id"], *[r["params"].get(p) for p in params], *[r["metrics"].get(m) for m in metric_names],
                *[v for m in objectives for v in (*(r["intervals"].get(m) or [None, None]), r["p_values"].get(m),
                                                  r["p_adjusted"].get(m), r["significant"].get(m))],
                r["seconds"], r["latency_ms_per_query"], r["peak_rss_mb"],
            ])


def _rss_mb() -> float:
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:
        return 0.0


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sweep_table(report: dict[str, Any]) -> str:
    objectives = report["objectives"]
    lines = [f"{'configuration':<62} " + " ".join(f"{m:>16}" for m in objectives) + f" {'ms/query':>9}"]
    for r in sorted(report["configs"], key=lambda r: -(r["metrics"].get(objectives[0]) or 0)):
        cells = []
        for m in objectives:
            v = r["metrics"].get(m)
            mark = "*" if r["significant"].get(m) else (" " if r["id"] != report["baseline"] else "=")
            cells.append(f"{'n/a' if v is None else f'{v:.4f}'}{mark}".rjust(16))
        label = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        lines.append(f"{label[:62]:<62} " + " ".join(cells) + f" {r['latency_ms_per_query']:>9.2f}")
    lines.append("= baseline; * differs from the baseline (paired randomization test, Holm-adjusted p < 0.05)")
    lines.append("best: " + ", ".join(f"{m}: {cid}" for m, cid in report["best"].items()))
    lines.append(f"Pareto set ({' vs '.join(report['pareto_axes'])}): " + ", ".join(report["pareto"]))
    return "\n".join(lines)


def run_sweep_cli(args) -> int:
    options = SweepOptions(
        pipeline=args.pipeline, dataset=args.dataset, grid=args.grid, split=args.split, limit=args.limit,
        out=args.out, name=args.name, resume=args.resume, objectives=args.objective, answers=args.answers,
        overrides=parse_overrides(args.set),
    )
    try:
        sweep_dir, report = run_sweep(options)
    except RunError as err:
        print(f"ragsweep: error: {err}", file=sys.stderr)
        return 2
    print(sweep_table(report))
    if getattr(args, "mlflow", False):
        from ragsweep.report.mlflow_log import log_to_mlflow

        print(f"MLflow run: {log_to_mlflow(sweep_dir, tracking_uri=args.mlflow_uri, pipeline_path=args.pipeline)}")
    print(f"\nsweep: {sweep_dir / 'sweep.json'}  {sweep_dir / 'sweep.csv'}")
    return 0
