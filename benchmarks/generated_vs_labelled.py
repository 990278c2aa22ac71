"""Does a generated test set rank pipeline configurations the way human labels do?

1. take ``--contracts`` CUAD contracts (a seeded choice; all with ``--contracts 0``) and
   build two datasets over exactly those documents: the human CUAD labels of them
   (``datasets/cuad/cases.jsonl`` restricted to their ``doc_scope``) and a set generated
   from them by ``ragsweep generate`` (the configured OpenAI-compatible endpoint);
2. run the same sweep (:func:`ragsweep.sweep`, a small grid: chunking x retriever x top_k) on both,
   and read each configuration's metrics from its ``sweep.json``;
3. print each configuration's metrics on both sets and Kendall's tau-b
   (:func:`scipy.stats.kendalltau`) between the two rankings of the configurations, per
   metric (retrieval metrics at each configuration's own top_k).

Usage (a local model: ``../shared/tools/local-llm.sh serve`` and its ``env`` first)::

    .venv/bin/python benchmarks/generated_vs_labelled.py --contracts 8 --n 15 \\
        --set llm_concurrency=1 --set llm_timeout=600 [--generated DIR] [--work runs/generated-vs-labelled]

``--generated DIR`` reuses a generated set (its documents must be the chosen contracts).
The output ends with a ``JSON {...}`` line holding everything printed.

``--smoke``: no LLM. One contract of ``datasets/cuad-mini``; in place of a generated set, a stand-in
made of every second human-labelled case of it (through the ``--generated`` path); a grid of 3
configurations (one chunking, bm25, top_k 1/3/5); a temporary work folder. A check that the
script runs (``make test`` does it): its taus compare two halves of the same labels, not a
generated set, and are not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

GRID = """grid:
  chunking:
    - {min_tokens: 100, max_tokens: 200}
    - {min_tokens: 200, max_tokens: 400}
    - {min_tokens: 250, max_tokens: 600}
  retriever_mode: [bm25, knn, hybrid]
  top_k: [3, 5]
baseline: {min_tokens: 250, max_tokens: 600, retriever_mode: hybrid, top_k: 5}
objectives: [recall@k, mrr@k, ndcg@k, hit_rate@k]
ks: [3, 5]
"""
SMOKE_GRID = """grid:
  chunking:
    - {min_tokens: 250, max_tokens: 600}
  retriever_mode: [bm25]
  top_k: [1, 3, 5]
baseline: {min_tokens: 250, max_tokens: 600, retriever_mode: bm25, top_k: 5}
objectives: [recall@k, mrr@k, ndcg@k, hit_rate@k]
ks: [1, 3, 5]
"""
METRICS = ("recall@k", "mrr@k", "ndcg@k", "hit_rate@k")


def labelled_subset(labelled: Path, docs: list[str], target: Path) -> int:
    """The human labels of these documents as a dataset folder (docs copied: a symlink out of the
    documents folder is not indexed)."""
    target.mkdir(parents=True, exist_ok=True)
    (target / "docs").mkdir(exist_ok=True)
    for d in docs:
        copy = target / "docs" / d
        if not copy.exists():
            shutil.copy2(labelled / "docs" / d, copy)
    keep = set(docs)
    lines = []
    for line in (labelled / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line) if line.strip() else None
        if case and set(case.get("doc_scope") or []) <= keep:
            case.pop("split", None)  # every case ranks the configurations (a sweep would choose on dev only)
            lines.append(json.dumps(case, ensure_ascii=False))
    (target / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.copy(labelled / "dataset.yaml", target / "dataset.yaml")
    (target / "README.md").write_text(f"The CUAD cases of {len(docs)} contracts of {labelled} (see its README).\n")
    return len(lines)


def smoke_stand_in(subset: Path, target: Path) -> int:
    """A stand-in for a generated set (no LLM): every second case of ``subset``, same documents."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    (target / "docs").symlink_to((subset / "docs").resolve(), target_is_directory=True)
    lines = [x for x in (subset / "cases.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()][::2]
    (target / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.copy(subset / "dataset.yaml", target / "dataset.yaml")
    (target / "README.md").write_text(
        f"A smoke run's stand-in for a generated set: every second case of {subset} (human CUAD labels).\n"
    )
    stand_in = {"kept": len(lines), "dropped": 0, "proposed": len(lines), "usage": None, "problems": []}
    (target / "generation.json").write_text(json.dumps({**stand_in, "smoke_stand_in": True}))
    return len(lines)


def sweep(dataset: Path, grid: Path, out: Path, pipeline: str) -> dict:
    """One sweep in this process (:func:`ragsweep.sweep`); its configurations from ``sweep.json``."""
    import ragsweep

    if out.exists():
        shutil.rmtree(out)
    ragsweep.sweep(pipeline, dataset, grid, out=out)
    (report,) = out.glob("*/sweep.json")  # out holds this one sweep
    return {row["id"]: row for row in json.loads(report.read_text())["configs"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labelled", default=str(ROOT / "datasets" / "cuad"))
    parser.add_argument("--contracts", type=int, default=8, help="contracts to use (0: all)")
    parser.add_argument("--n", type=int, default=15, help="generated cases")
    parser.add_argument("--types", default="single_hop,multi_hop,unanswerable")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pipeline", default=str(ROOT / "pipelines" / "default.yaml"))
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="pipeline overrides for the generation (llm_concurrency, llm_timeout...)",
    )
    parser.add_argument("--check-k", type=int, default=3)
    parser.add_argument("--oversample", type=float, default=1.5)
    parser.add_argument("--max-rounds", type=int, default=3)
    parser.add_argument("--generated", help="reuse this generated dataset folder")
    parser.add_argument("--work", default=str(ROOT / "runs" / "generated-vs-labelled"))
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="no LLM: 1 cuad-mini contract, half its labels as a stand-in generated set, 3 configurations "
        "(a check that the script runs, not a measurement)",
    )
    args = parser.parse_args(argv)
    scratch = None
    if args.smoke:
        import tempfile

        scratch = tempfile.mkdtemp(prefix="ragsweep-gen-vs-lab-smoke-")
        args.labelled, args.contracts, args.work = str(ROOT / "datasets" / "cuad-mini"), 1, scratch
        print(
            "SMOKE RUN: no LLM, 1 contract of datasets/cuad-mini, a stand-in 'generated' set (every second labelled "
            "case), 3 configurations; the numbers below are not measurements",
            flush=True,
        )
    try:
        return compare(args, argv)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def compare(args: argparse.Namespace, argv: list[str] | None) -> int:

    from ragsweep.core.offline import ensure_offline

    ensure_offline()
    from scipy.stats import kendalltau

    from ragsweep.datasets.schema import list_doc_ids
    from ragsweep.generate.generator import generate
    from ragsweep.generate.settings import GenerateSettings
    from ragsweep.pipeline.config import parse_overrides

    labelled = Path(args.labelled)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    all_docs = list_doc_ids(labelled / "docs")
    docs = (
        sorted(random.Random(args.seed).sample(all_docs, args.contracts))
        if 0 < args.contracts < len(all_docs)
        else all_docs
    )
    subset = work / "labelled"
    if subset.exists():
        shutil.rmtree(subset)
    n_labelled = labelled_subset(labelled, docs, subset)
    print(f"contracts: {len(docs)}; human-labelled cases on them: {n_labelled}")

    timings: dict[str, float] = {}
    if args.smoke and not args.generated:
        args.generated = str(work / "generated-stand-in")
        smoke_stand_in(subset, Path(args.generated))
    if args.generated:
        generated = Path(args.generated)
        gen_result = json.loads((generated / "generation.json").read_text())
    else:
        generated = work / "generated"
        t = time.perf_counter()
        gen_result = generate(
            GenerateSettings(
                docs=str(subset / "docs"),
                out=str(generated),
                n=args.n,
                types=args.types.split(","),
                seed=args.seed,
                pipeline=args.pipeline,
                overrides=parse_overrides(args.set),
                check_k=args.check_k,
                force=True,
                oversample=args.oversample,
                max_rounds=args.max_rounds,
                test_fraction=0.0,  # all dev: every case ranks the configurations, as for the labelled set
                command="benchmarks/generated_vs_labelled.py " + " ".join(argv or sys.argv[1:]),
            )
        )
        timings["generate"] = round(time.perf_counter() - t, 1)
        if gen_result["problems"]:
            print("the generated set does not validate:\n  " + "\n  ".join(gen_result["problems"]))
            return 1
    gen_cases = [json.loads(x) for x in (generated / "cases.jsonl").read_text().splitlines() if x.strip()]
    answerable = sum(not c.get("unanswerable") for c in gen_cases)
    print(
        f"generated: {len(gen_cases)} cases ({answerable} answerable) in {generated}; "
        f"kept {gen_result.get('kept')}, dropped {gen_result.get('dropped')}"
    )

    grid = work / "grid.yaml"
    grid.write_text(SMOKE_GRID if args.smoke else GRID)
    t = time.perf_counter()
    on_generated = sweep(generated, grid, work / "runs" / "generated", args.pipeline)
    timings["sweep_generated"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    on_labelled = sweep(subset, grid, work / "runs" / "labelled", args.pipeline)
    timings["sweep_labelled"] = round(time.perf_counter() - t, 1)

    ids = sorted(set(on_generated) & set(on_labelled))
    rows = []
    print(f"\n{'configuration':<58}" + "".join(f"{m + ' gen':>14}{m + ' lab':>14}" for m in METRICS[:2]))
    for cid in ids:
        p = on_generated[cid]["params"]
        label = f"{p.get('min_tokens')}-{p.get('max_tokens')} {p.get('retriever_mode')} k={p.get('top_k')}"
        row = {
            "id": cid,
            "params": p,
            "generated": {m: on_generated[cid]["metrics"].get(m) for m in METRICS},
            "labelled": {m: on_labelled[cid]["metrics"].get(m) for m in METRICS},
        }
        rows.append(row)
        print(
            f"{label:<58}" + "".join(f"{_f(row['generated'][m]):>14}{_f(row['labelled'][m]):>14}" for m in METRICS[:2])
        )
    taus = {}
    for m in METRICS:
        pairs = [
            (r["generated"][m], r["labelled"][m])
            for r in rows
            if r["generated"][m] is not None and r["labelled"][m] is not None
        ]
        if len(pairs) >= 3:
            res = kendalltau([a for a, _ in pairs], [b for _, b in pairs])
            taus[m] = {
                "tau": None if res.statistic != res.statistic else round(float(res.statistic), 3),
                "p": None if res.pvalue != res.pvalue else round(float(res.pvalue), 4),
                "configurations": len(pairs),
            }
    print()
    for m, t in taus.items():
        print(f"Kendall tau-b ({m}): {t['tau']}  (p={t['p']}, {t['configurations']} configurations)")
    summary = {
        "smoke": args.smoke,
        "contracts": docs,
        "labelled_cases": n_labelled,
        "generated_cases": len(gen_cases),
        "generated_answerable": answerable,
        "generation": {k: gen_result.get(k) for k in ("kept", "dropped", "proposed", "usage")},
        "kendall_tau": taus,
        "configs": rows,
        "seconds": timings,
        "model": os.environ.get("RAGSWEEP_LLM_MODEL") or os.environ.get("LOCAL_LLM_MODEL"),
    }
    print("JSON " + json.dumps(summary))
    return 0


def _f(v) -> str:
    return "n/a" if v is None else f"{v:.3f}"


if __name__ == "__main__":
    from lib.process_exit import exit_now

    exit_now(main())
