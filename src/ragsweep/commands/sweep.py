"""`ragsweep sweep`: a grid of pipeline variables -> one scored run per configuration.

Each configuration is scored on exactly what it serves:

- every depth k of a configuration is asked of its DocumentStore as its own query
  (one query row per question and k), because a hybrid top-3 is not the prefix of
  a hybrid top-10; a depth deeper than the configuration's top_k is reported as
  missing for it, never computed from ranks it does not return;
- MRR, MAP, R-precision and the first relevant rank are over its own top_k
  (``mrr@k`` etc. name the metrics at the configuration's own top_k);
- "best" and the Pareto set respect each objective's direction (the registry's).

No work is done twice: every document is parsed once for the whole sweep (and
cached on disk by content); every distinct chunk text is embedded once per
embedder (the SQLite cache of :mod:`ragsweep.pipeline.embedding`); one Pathway index per
(chunking, retriever) answers every configuration's depths in one graph run.

Each configuration's per-case results are written as soon as it is done, so an
interrupted sweep resumes without recomputing a finished configuration. The sweep
folder (layout :data:`~ragsweep.evaluation.runfolder.SWEEP_LAYOUT_VERSION`):

- ``sweep-state.json``         what this sweep is (layout, grid, pipeline hash, ks, case ids)
- ``chunks.jsonl``             the text of every chunk any configuration served, once (a chunk
                               shared by several configurations is one line), appended before
                               the case lines that refer to it
- ``configs/<id>/cases.jsonl`` one compact :class:`~ragsweep.evaluation.records.CaseResult` per case
                               (:func:`~ragsweep.evaluation.records.compact`: hits refer to the chunk table
                               by doc id and offsets); read in full by
                               :func:`ragsweep.report.runs.read_cases`
- ``configs/<id>/result.json`` the configuration's aggregate, written last: it marks it done
- ``sweep.json``, ``sweep.csv``, ``report.html``
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

from ragsweep.evaluation import stages
from ragsweep.evaluation.records import compact
from ragsweep.evaluation.runfolder import (
    SWEEP_LAYOUT_VERSION,
    JsonlWriter,
    RunError,
    RunLock,
    append_chunks,
    check_resumable,
    find_resume_dir,
    git_commit,
    make_dir,
    new_run_dir,
    now,
    package_versions,
    read_jsonl,
    write_json,
)
from ragsweep.evaluation.scoring import aggregate
from ragsweep.evaluation.stages import RunInputs, load_inputs
from ragsweep.metrics.registry import AT_K_FAMILIES, at_own_k, best_of, lower_is_better
from ragsweep.pipeline.config import ConfigError, parse_overrides
from ragsweep.pipeline.rerank import build_reranker, rerank_at_depths, rerank_candidates
from ragsweep.report import write_html

DEFAULT_KS = (1, 3, 5, 10)
DEFAULT_OBJECTIVES = ("recall@k", "mrr@k", "ndcg@k")
ALPHA = 0.05


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


def served_depths(ks: list[int], top_k: int) -> tuple[list[int], list[int]]:
    """(depths a configuration serves and is scored at, reported depths it does not serve)."""
    return sorted({k for k in ks if k <= top_k} | {top_k}), sorted(k for k in ks if k > top_k)


def pareto_front(points: list[tuple[str, float, float]], higher_is_better: bool = True) -> list[str]:
    """Ids not dominated on (quality, cost): cost lower is better, quality in its own direction."""
    sign = 1.0 if higher_is_better else -1.0
    pts = [(pid, sign * q, c) for pid, q, c in points]
    front = []
    for pid, q, c in pts:
        dominated = any((q2 >= q and c2 <= c) and (q2 > q or c2 < c) for _, q2, c2 in pts)
        if not dominated:
            front.append(pid)
    return front


class SweepOptions(RunInputs):
    grid: str
    objectives: list[str] | None = None
    ks: list[int] | None = None
    answers: bool = False


def run_sweep(options: SweepOptions) -> tuple[Path, dict[str, Any]]:
    started_at = now()
    try:
        grid = SweepGrid.load(options.grid)
    except ConfigError as err:
        raise RunError(str(err)) from err
    objectives = options.objectives or grid.objectives
    ks = sorted(set(options.ks or grid.ks))
    base_config, dataset, cases = load_inputs(options)
    holdout: list = []
    if options.split is None and {"dev", "test"} <= {c.split for c in cases}:
        # seed 001's discipline: choose on dev, give the verdict on test
        holdout = [c for c in cases if c.split == "test"]
        cases = [c for c in cases if c.split == "dev"]
        print(
            f"sweep: choosing on {len(cases)} dev case(s); the choice is then scored on {len(holdout)} test case(s)",
            file=sys.stderr,
        )
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
    state = {
        "layout": SWEEP_LAYOUT_VERSION,
        "grid": str(options.grid),
        "pipeline_hash": base_config.hash,
        "ks": ks,
        "case_ids": [c.id for c in cases],
    }
    if options.resume:
        sweep_dir = find_resume_dir(out, options.resume, "sweep-state.json")
        lock = RunLock(sweep_dir)
        try:
            check_resumable(
                sweep_dir,
                json.loads((sweep_dir / "sweep-state.json").read_text()),
                state,
                ("pipeline_hash", "ks", "case_ids"),
            )
        except BaseException:
            lock.release()
            raise
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        sweep_dir = new_run_dir(out, options.name, f"{stamp}-sweep-{dataset.name}")
        make_dir(sweep_dir)
        lock = RunLock(sweep_dir)
        write_json(sweep_dir / "sweep-state.json", state)
    print(f"sweep folder: {sweep_dir}  ({len(configs)} configurations)", file=sys.stderr)
    try:
        return _run_sweep(
            options,
            grid,
            objectives,
            ks,
            base_config,
            dataset,
            cases,
            configs,
            baseline_id,
            sweep_dir,
            started_at,
            holdout,
        )
    finally:
        lock.release()


def _run_sweep(
    options, grid, objectives, ks, base_config, dataset, cases, configs, baseline_id, sweep_dir, started_at, holdout
) -> tuple[Path, dict[str, Any]]:
    # ---- parse once for the whole sweep
    t = time.perf_counter()
    try:
        corpus = stages.parse_documents(dataset, options.progress, options.workers)
    except stages.StageError as err:
        raise RunError(str(err)) from err
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
            try:
                results[cid] = json.loads(result_file.read_text())
            except ValueError:
                print(f"warning: {result_file} is unreadable: configuration computed again", file=sys.stderr)
    if results:
        print(f"resuming: {len(results)} configuration(s) already done", file=sys.stderr)

    # the chunk table, shared by every configuration; read_jsonl drops a line a kill tore
    chunks_file = sweep_dir / "chunks.jsonl"
    known_chunks = {row["id"] for row in read_jsonl(chunks_file)}
    embedded_total = 0
    for n_group, (index_key, members) in enumerate(groups.items(), start=1):
        todo = [cid for cid in members if cid not in results]
        if not todo:
            continue
        depths = sorted(
            {k for cid in todo for k in served_depths(ks, configs[cid][1].top_k)[0]}
            | {n for cid in todo if (n := rerank_candidates(configs[cid][1]))}
        )
        config = configs[todo[0]][1]
        label = ", ".join(f"{k}={v}" for k, v in configs[todo[0]][0].items() if k != "top_k")
        print(
            f"[{n_group}/{len(groups)}] index {label}: {len(cases)} questions at k in {depths} for "
            f"{len(todo)} configuration(s)",
            file=sys.stderr,
        )
        rss_before = _rss_mb()
        t = time.perf_counter()
        # configurations that differ only in their reranker share the index run; each reranks its own
        retrieved = stages.retrieve(
            config, corpus, cases, depths, options.progress, rerank=False, fresh=options.fresh_retrieval
        )
        group_seconds = time.perf_counter() - t
        embedded_total += retrieved.embedded_texts
        for cid in todo:
            params, cfg = configs[cid]
            t = time.perf_counter()
            own, unserved = served_depths(ks, cfg.top_k)
            n_candidates = rerank_candidates(cfg)
            if n_candidates is None:
                served = {c.id: {k: retrieved.served[c.id][k] for k in own} for c in cases}
            else:
                lists = rerank_at_depths(
                    [(c.question, retrieved.served[c.id][n_candidates]) for c in cases], build_reranker(cfg), own
                )
                served = dict(zip([c.id for c in cases], lists))
            answers = None
            if options.answers:
                answerer, _ = stages.make_answerer(cfg, use_llm=False)
                answers = stages.answer(answerer, [(c.question, served[c.id][cfg.top_k]) for c in cases])
            scored = stages.score(
                cases,
                served,
                top_k=cfg.top_k,
                relevance=dataset.relevance,
                texts=texts,
                retrieved=retrieved,
                unserved_ks=unserved,
                own_k_aliases=True,
                answers=answers,
                language=str(cfg.get("language", "en") or "en"),
            )
            records = [r.line() for r in scored]
            folder = sweep_dir / "configs" / cid
            folder.mkdir(parents=True, exist_ok=True)
            # the texts first (only chunks no earlier configuration served), then the lines referring to them
            append_chunks(chunks_file, (h for r in scored for h in r.hits), known_chunks)
            (folder / "cases.jsonl").unlink(missing_ok=True)
            with JsonlWriter(folder / "cases.jsonl") as writer:
                for record in records:
                    writer.write(compact(record))
            agg = aggregate(records, interval_metrics=[*objectives, *(at_own_k(b) for b in AT_K_FAMILIES)])
            result = {
                "id": cid,
                "params": params,
                "config_hash": cfg.hash,
                "index_key": index_key,
                "top_k": cfg.top_k,
                "served_ks": own,
                "unserved_ks": unserved,
                "metrics": agg["metrics"],
                "intervals": agg["intervals"],
                "counts": agg["counts"],
                "baselines": agg["baselines"],
                "seconds": round(group_seconds / len(members) + time.perf_counter() - t, 3),
                "index_run_seconds": round(group_seconds, 3),
                "latency_ms_per_query": round(1000 * retrieved.seconds / max(1, len(cases) * len(depths)), 3),
                "chunks": retrieved.n_chunks,
                "embedded_texts": retrieved.embedded_texts,
                "rss_mb": round(_rss_mb(), 1),
                "rss_mb_before": round(rss_before, 1),
                "peak_rss_mb": round(_peak_rss_mb(), 1),
            }
            write_json(folder / "result.json", result)
            results[cid] = result

    report = finish_sweep(sweep_dir, configs, results, baseline_id, objectives, grid, options)
    report["ks"] = ks
    report["choice_split"] = "dev" if holdout else options.split
    report["same_cases_for_choice_and_report"] = not holdout
    if holdout:
        report["verdict"] = score_on_holdout(
            report, configs, baseline_id, objectives, ks, corpus, texts, dataset, holdout, options
        )
    report["manifest"] = {
        "pipeline": base_config.manifest(),
        "dataset": {
            "path": options.dataset,
            "split": options.split,
            "limit": options.limit,
            "sample": options.sample,
            "seed": options.seed,
            "cases": len(cases),
        },
        "corpus": {
            "hash": corpus.content_hash,
            "documents": len(corpus.documents),
            "pdf_pipeline": corpus.pdf_pipeline,
        },
        "parse_seconds": round(parse_seconds, 3),
        "embedded_texts_this_run": embedded_total,
        "packages": package_versions(),
        "git_commit": git_commit(),
        "timestamps": {"started": started_at, "finished": now()},
    }
    write_json(sweep_dir / "sweep.json", report)
    write_html(sweep_dir)
    return sweep_dir, report


def score_on_holdout(
    report, configs, baseline_id, objectives, ks, corpus, texts, dataset, holdout, options
) -> dict[str, Any]:
    """The configuration chosen on dev (best on the first objective), and the baseline, scored on
    the test cases, with a paired test between the two: the number to believe."""
    from ragsweep.metrics.stats import paired_test, significant

    main = objectives[0]
    chosen = report["best"].get(main, baseline_id)
    out: dict[str, Any] = {
        "split": "test",
        "cases": len(holdout),
        "objective": main,
        "chosen": chosen,
        "baseline": baseline_id,
        "configs": {},
    }
    per_case: dict[str, dict[str, float | None]] = {}
    for cid in dict.fromkeys([chosen, baseline_id]):
        params, cfg = configs[cid]
        own, unserved = served_depths(ks, cfg.top_k)
        retrieved = stages.retrieve(cfg, corpus, holdout, own, options.progress, fresh=options.fresh_retrieval)
        records = [
            r.line()
            for r in stages.score(
                holdout,
                retrieved.served,
                top_k=cfg.top_k,
                relevance=dataset.relevance,
                texts=texts,
                retrieved=retrieved,
                unserved_ks=unserved,
                own_k_aliases=True,
            )
        ]
        agg = aggregate(records, interval_metrics=objectives)
        out["configs"][cid] = {
            "params": params,
            **{k: agg[k] for k in ("metrics", "intervals", "counts")},
            "baselines": {m: agg["baselines"].get(m) for m in objectives if m in agg["baselines"]},
        }
        per_case[cid] = {r["id"]: r["metrics"].get(main) for r in records}
    if chosen != baseline_id:
        pairs = [(per_case[chosen][i], per_case[baseline_id][i]) for i in per_case[chosen]]
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        p = paired_test([a for a, _ in pairs], [b for _, b in pairs]) if pairs else None
        out["p_value"], out["significant"] = p, significant(p, ALPHA)
    return out


def finish_sweep(sweep_dir: Path, configs, results, baseline_id, objectives, grid, options) -> dict[str, Any]:
    """Paired tests against the baseline (Holm across configurations), best, Pareto, CSV."""
    from ragsweep.metrics.stats import holm, paired_test, significant

    def per_case(cid: str) -> dict[str, dict[str, float | None]]:
        rows = read_jsonl(sweep_dir / "configs" / cid / "cases.jsonl")  # compact lines: the metrics are all kept
        return {r["id"]: r.get("metrics") or {} for r in rows}

    base_cases = per_case(baseline_id)
    p_values: dict[str, dict[str, float | None]] = defaultdict(dict)
    for cid in configs:
        if cid == baseline_id:
            continue
        other = per_case(cid)
        for metric in objectives:
            pairs = [(base_cases[i].get(metric), other[i].get(metric)) for i in base_cases if i in other]
            pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
            p_values[metric][cid] = paired_test([a for a, _ in pairs], [b for _, b in pairs]) if pairs else None
    adjusted: dict[str, dict[str, float | None]] = {}
    for metric, by_cid in p_values.items():
        present = {cid: p for cid, p in by_cid.items() if p is not None}
        adj = holm(present) if present else {}
        adjusted[metric] = {cid: adj.get(cid) for cid in by_cid}

    rows = []
    for cid, (params, _cfg) in configs.items():
        result = results[cid]
        rows.append(
            {
                **result,
                "p_values": {m: p_values[m].get(cid) for m in objectives},
                "p_adjusted": {m: adjusted.get(m, {}).get(cid) for m in objectives},
                "significant": {m: significant(adjusted.get(m, {}).get(cid), ALPHA) for m in objectives},
                "delta_vs_baseline": {
                    m: (
                        None
                        if result["metrics"].get(m) is None or results[baseline_id]["metrics"].get(m) is None
                        else result["metrics"][m] - results[baseline_id]["metrics"][m]
                    )
                    for m in objectives
                },
            }
        )
    best = {}
    for metric in objectives:
        scored = sorted(
            (r for r in rows if r["metrics"].get(metric) is not None), key=lambda r: r["latency_ms_per_query"]
        )  # ties: the faster configuration
        pick = best_of([(r["id"], r["metrics"][metric]) for r in scored], metric)
        if pick:
            best[metric] = pick
    main_metric = objectives[0]
    scored_rows = [r for r in rows if r["metrics"].get(main_metric) is not None]
    pareto = pareto_front(
        [(r["id"], r["metrics"][main_metric], r["latency_ms_per_query"]) for r in scored_rows],
        higher_is_better=not lower_is_better(main_metric),
    )
    report = {
        "baseline": baseline_id,
        "grid": grid.grid,
        "objectives": objectives,
        "configs": rows,
        "directions": {m: ("lower" if lower_is_better(m) else "higher") for m in objectives},
        "alpha": ALPHA,
        "best": best,
        "pareto": pareto,
        "pareto_axes": [main_metric, "latency_ms_per_query"],
    }
    write_csv(sweep_dir / "sweep.csv", rows, objectives)
    return report


def write_csv(path: Path, rows: list[dict[str, Any]], objectives: list[str]) -> None:
    import csv

    params = sorted({k for r in rows for k in r["params"]})
    metric_names = sorted({k for r in rows for k in r["metrics"] if "@k" in k or k in objectives})
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "id",
                *params,
                *metric_names,
                *[f"{m}_{s}" for m in objectives for s in ("ci_low", "ci_high", "p", "p_holm", "significant")],
                "seconds",
                "latency_ms_per_query",
                "peak_rss_mb",
            ]
        )
        for r in rows:
            w.writerow(
                [
                    r["id"],
                    *[r["params"].get(p) for p in params],
                    *[r["metrics"].get(m) for m in metric_names],
                    *[
                        v
                        for m in objectives
                        for v in (
                            *(r["intervals"].get(m) or [None, None]),
                            r["p_values"].get(m),
                            r["p_adjusted"].get(m),
                            r["significant"].get(m),
                        )
                    ],
                    r["seconds"],
                    r["latency_ms_per_query"],
                    r["peak_rss_mb"],
                ]
            )


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
    sign = 1 if lower_is_better(objectives[0]) else -1
    for r in sorted(report["configs"], key=lambda r: sign * (r["metrics"].get(objectives[0]) or 0)):
        cells = []
        for m in objectives:
            v = r["metrics"].get(m)
            mark = "*" if r["significant"].get(m) else (" " if r["id"] != report["baseline"] else "=")
            cells.append(f"{'n/a' if v is None else f'{v:.4f}'}{mark}".rjust(16))
        label = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        lines.append(f"{label[:62]:<62} " + " ".join(cells) + f" {r['latency_ms_per_query']:>9.2f}")
    lines.append(
        f"= baseline; * differs from the baseline (paired randomization test, Holm-adjusted p <= {report.get('alpha', ALPHA)})"
    )
    lines.append("@k = at the configuration's own top_k; a depth deeper than a configuration's top_k is missing for it")
    if report.get("same_cases_for_choice_and_report"):
        lines.append('note: "best" was chosen on the same cases it is reported on (no held-out split)')
    lines.append(
        "best: "
        + ", ".join(f"{m}: {cid}" for m, cid in report["best"].items())
        + (" (chosen on the dev split)" if report.get("verdict") else "")
    )
    verdict = report.get("verdict")
    if verdict:
        main = verdict["objective"]
        for cid, row in verdict["configs"].items():
            value, ci = row["metrics"].get(main), row["intervals"].get(main) or [None, None]
            role = "chosen" if cid == verdict["chosen"] else "baseline"
            text = "n/a" if value is None else f"{value:.4f}"
            ci_text = "" if ci[0] is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]"
            lines.append(f"test split ({verdict['cases']} cases), {role}: {cid}: {main} = {text}{ci_text}")
        if "p_value" in verdict:
            lines.append(
                f"test split: chosen vs baseline p = {verdict['p_value']}"
                f"{' (significant)' if verdict['significant'] else ' (not significant)'}"
            )
    lines.append(f"Pareto set ({' vs '.join(report['pareto_axes'])}): " + ", ".join(report["pareto"]))
    return "\n".join(lines)


def run_sweep_cli(args) -> int:
    try:
        options = SweepOptions(
            pipeline=args.pipeline,
            dataset=args.dataset,
            grid=args.grid,
            split=args.split,
            limit=args.limit,
            sample=getattr(args, "sample", None),
            seed=getattr(args, "seed", 0),
            ks=getattr(args, "ks", None),
            validate_dataset=not getattr(args, "no_validate", False),
            workers=getattr(args, "workers", None),
            fresh_retrieval=getattr(args, "fresh_retrieval", False),
            out=args.out,
            name=args.name,
            resume=args.resume,
            objectives=args.objective,
            answers=args.answers,
            overrides=parse_overrides(args.set),
        )
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
