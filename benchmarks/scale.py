"""Scale: the whole CUAD release (510 contracts x 41 categories = 20,910 cases) in one eval.

    .venv/bin/python benchmarks/scale.py CUAD_DIR [--points 100,255,510] [--warm] [--work DIR] [--reuse]
    .venv/bin/python benchmarks/scale.py --smoke

``CUAD_DIR`` is a CUAD v1 release folder holding ``master_clauses.csv``,
``category_descriptions.csv`` and ``txt/`` (the contract texts). The full dataset is built
with the existing importer (:func:`ragsweep.datasets.cuad.import_cuad`), then each point
(a number of contracts) gets its own dataset: the first N contracts in a fixed order
(SHA-256 of the contract's normalised name), so each point's dataset is a superset of the
previous one. Each point is ONE ``ragsweep eval`` (default pipeline, extractive answerer,
no LLM, default ks) in its own fresh process with its own empty ``RAGSWEEP_CACHE_DIR``
(parse and embedding paid cold, so the points are comparable; ``--warm`` shares one cache).

Per point it prints documents, chunks, cases, the time of every stage (the manifest's
``stage_seconds`` plus what this script times around them: process start-up and imports,
dataset load + validation, writing chunks/hits, report.json, report.html, exit), the
answer+score rate, the peak RSS (the eval process; its whole process tree sampled every
0.5 s; the process's RSS and peak as each stage ends), the run folder's size per file and
the load average. Each point's numbers are saved as WORK/point-N.json; ``--reuse`` takes
them from there instead of running that point again. Then the linearity check:
each stage's cost per document or per case at every point, and the ratio of the largest
point to the smallest; a ratio above ``--max-growth`` (1.3) means the stage grows faster
than linearly. Prints ``RESULT`` lines and a final ``JSON {...}`` line.

The child process only wraps the few ragsweep functions listed in ``WRAP_POINTS`` (below, the one
place to update when the evaluation code moves) with timers and RSS probes (nothing else
changes), and imports ragsweep, pathway and those modules first, so those imports count as
start-up and not as a stage.

``--smoke``: points 1 and 3 of ``tests/fixtures/datasets/cuad_small`` (its master_clauses.csv,
category_descriptions.csv and 3 placeholder contract texts in ``docs/``), one shared cache, a
temporary work folder: a check that the script runs (``make test`` does it), not a measurement.
It fails (exit 2) when a wrap point is missing or was never called, naming it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 1024**3
MIB = 1024**2

DATASET_YAML = (
    "name: {name}\nrelevance: evidence_offsets\nevidence_min_overlap_fraction: 0.5\nevidence_min_overlap_chars: 100\n"
)
SMOKE_CUAD = ROOT / "tests" / "fixtures" / "datasets" / "cuad_small"  # a release's CSVs, texts in docs/

# ================================================================== WRAP POINTS
# The ragsweep internals the child wraps, and nothing else of ragsweep. When the evaluation code
# moves, update this table (only this table): `scale.py --smoke` (run by `make test`, see
# tests/test_benchmarks_smoke.py) fails naming every entry that is missing or never called.
# (module, name, how): name = a function of the module, or "Class.method"; how = "mark:LABEL" (the
# process's RSS as the call ends: a stage's end), "time:LABEL" (seconds summed over calls), "json"
# (write_json's seconds by file name: report_json / other_json); several joined by "+" (the first
# is the outermost). Each is replaced on its module (or class), so what counts is the name the
# caller looks up at call time: e.g. `retrieve` as ragsweep.evaluation.loop imported it.
WRAP_POINTS: tuple[tuple[str, str, str], ...] = (
    ("ragsweep.commands.eval", "load_inputs", "time:load_and_validate"),
    ("ragsweep.evaluation.run", "parse_documents", "mark:parse"),
    ("ragsweep.execution.local", "retrieve", "mark:retrieve (split, embed, index, queries)"),
    ("ragsweep.evaluation.runfolder", "RunFolder.save_served", "time:save_chunks_and_hits"),
    ("ragsweep.evaluation.run", "evaluate_configuration", "mark:answer_and_score"),
    ("ragsweep.evaluation.run", "run_result", "mark:aggregate"),
    ("ragsweep.commands.eval", "write_html", "time:report_html+mark:report_html"),
    ("ragsweep.commands.eval", "summary_table", "time:summary_table"),
    ("ragsweep.evaluation.runfolder", "RunFolder.write_json", "json"),
)
# ================================================================== end of WRAP POINTS


# ------------------------------------------------------------------ the child: one `ragsweep eval`


def child(args: argparse.Namespace) -> int:
    """One eval in this fresh process; its timings go to ``args.timings`` as JSON."""
    entered = time.time()
    t0 = time.perf_counter()
    from ragsweep.core.offline import ensure_offline

    ensure_offline()
    import ragsweep
    import ragsweep.cli
    import ragsweep.pipeline.store  # noqa: F401 - pathway: a start-up cost, not one of the stages

    modules, import_errors = {}, {}
    for module_name in dict.fromkeys(m for m, _, _ in WRAP_POINTS):
        try:
            modules[module_name] = importlib.import_module(module_name)
        except ImportError as err:
            import_errors[module_name] = str(err)
    imports = time.perf_counter() - t0
    timers: dict[str, float] = {}
    marks: list[dict] = []  # the process's RSS and peak RSS as each stage ends
    calls: dict[str, int] = {}

    def timed(name, fn):
        def wrapper(*a, **kw):
            started = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                timers[name] = timers.get(name, 0.0) + time.perf_counter() - started

        return wrapper

    def timed_json(_, fn):
        def wrapper(*a, **kw):
            started = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:  # the file: the first argument that is a path (a method's self is not)
                path = next((x for x in a if isinstance(x, (str, os.PathLike))), "")
                name = "report_json" if Path(path).name == "report.json" else "other_json"
                timers[name] = timers.get(name, 0.0) + time.perf_counter() - started

        return wrapper

    def marked(name, fn):
        def wrapper(*a, **kw):
            try:
                return fn(*a, **kw)
            finally:
                marks.append({"after": name, **_rss_now()})

        return wrapper

    def counted(key, fn):
        def wrapper(*a, **kw):
            calls[key] = calls.get(key, 0) + 1
            return fn(*a, **kw)

        return wrapper

    def owner_of(module, dotted: str):
        """(the object holding the last part of ``dotted``, that part) or None when a part is missing."""
        *path, last = dotted.split(".")
        owner = module
        for part in path:
            owner = getattr(owner, part, None)
        return (owner, last) if owner is not None and callable(getattr(owner, last, None)) else None

    kinds = {"mark": marked, "time": timed, "json": timed_json}
    missing, present = [], []  # a name this version of ragsweep lacks is left alone (and untimed)
    for module_name, attr, how in WRAP_POINTS:
        key = f"{module_name}.{attr}"
        found = owner_of(modules[module_name], attr) if module_name in modules else None
        if found is None:
            missing.append(key + (f" (import: {import_errors[module_name]})" if module_name in import_errors else ""))
            continue
        owner, last = found
        fn = getattr(owner, last)
        for part in reversed(how.split("+")):
            kind, _, label = part.partition(":")
            fn = kinds[kind](label, fn)
        setattr(owner, last, counted(key, fn))
        present.append(key)

    started = time.perf_counter()
    argv = ["eval", "--dataset", args.dataset, "--out", args.out, "--name", args.name, "--pipeline", args.pipeline]
    rc = ragsweep.cli.main(argv)
    main_seconds = time.perf_counter() - started
    me = resource.getrusage(resource.RUSAGE_SELF)
    Path(args.timings).write_text(
        json.dumps(
            {
                "entered": entered,
                "imports": imports,
                "main_seconds": main_seconds,
                "timers": timers,
                "rc": rc,
                "self_maxrss_kb": me.ru_maxrss,
                "rss_marks": marks,
                "wrap_points_missing": missing,
                "wrap_points_uncalled": [key for key in present if not calls.get(key)],
                "ragsweep_file": ragsweep.__file__,
                "left_main": time.time(),
            }
        )
    )
    return rc


def _rss_now() -> dict:
    """This process's resident set now and its peak so far (VmRSS, VmHWM), in MB."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out["rss_mb" if key == "VmRSS" else "peak_mb"] = round(int(value.split()[0]) / 1024, 1)
    return out


# ------------------------------------------------------------------ datasets


def build_full(cuad_dir: Path, out: Path):
    """The full CUAD dataset from the release (existing importer); returns its cases."""
    from ragsweep.datasets.cuad import import_cuad

    if out.exists():
        shutil.rmtree(out)
    cases = import_cuad(
        cuad_dir / "master_clauses.csv", cuad_dir / "category_descriptions.csv", out, texts_dir(cuad_dir)
    )
    _dataset_files(out, "cuad-full", len(list((out / "docs").iterdir())), cuad_dir)
    return cases


def texts_dir(cuad_dir: Path) -> Path:
    """The contract texts: the release's ``txt/``, else ``docs/`` (the layout of the smoke fixture)."""
    return cuad_dir / "txt" if (cuad_dir / "txt").is_dir() or not (cuad_dir / "docs").is_dir() else cuad_dir / "docs"


def contract_order(docs: list[str]) -> list[str]:
    """A fixed pseudo-random order of the contracts (SHA-256 of the normalised name)."""
    from ragsweep.datasets._util import contract_key

    return sorted(docs, key=lambda d: (hashlib.sha256(contract_key(d).encode()).hexdigest(), d))


def build_point(cuad_dir: Path, out: Path, contracts: list[str]):
    from ragsweep.datasets.cuad import import_cuad

    if out.exists():
        shutil.rmtree(out)
    cases = import_cuad(
        cuad_dir / "master_clauses.csv",
        cuad_dir / "category_descriptions.csv",
        out,
        texts_dir(cuad_dir),
        contracts=contracts,
    )
    _dataset_files(out, out.name, len(contracts), cuad_dir)
    return cases


def _dataset_files(out: Path, name: str, n_docs: int, cuad_dir: Path) -> None:
    (out / "dataset.yaml").write_text(DATASET_YAML.format(name=name))
    (out / "README.md").write_text(
        f"# {name}: {n_docs} CUAD v1 contracts (plain text) x 41 categories\n\n"
        f"Built by benchmarks/scale.py from {cuad_dir} (CUAD v1, The Atticus Project, CC BY 4.0) with\n"
        "ragsweep.datasets.cuad.import_cuad, as datasets/cuad (see its README) but from the contract texts.\n"
        "A benchmark's scratch dataset: not shipped.\n"
    )


# ------------------------------------------------------------------ measuring a child


class TreeSampler(threading.Thread):
    """Peak RSS of a process and of its whole tree, and the load average, every ``every`` s."""

    def __init__(self, pid: int, every: float = 0.5):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.peak_self = self.peak_tree = 0
        self.loads: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        import psutil

        try:
            proc = psutil.Process(self.pid)
        except psutil.Error:
            return
        while not self.stop.is_set():
            try:
                rss = proc.memory_info().rss
                tree = rss
                for kid in proc.children(recursive=True):
                    try:
                        tree += kid.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                break
            self.peak_self, self.peak_tree = max(self.peak_self, rss), max(self.peak_tree, tree)
            self.loads.append(os.getloadavg()[0])
            self.stop.wait(self.every)


def run_point(n: int, dataset: Path, work: Path, pipeline: str, warm: bool) -> dict:
    cache = work / ("cache" if warm else f"cache-{n}")
    if not warm and cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)
    runs = work / "runs"
    name = f"scale-{n}"
    if (runs / name).exists():
        shutil.rmtree(runs / name)
    timings_file = work / f"timings-{n}.json"
    timings_file.unlink(missing_ok=True)
    log = work / f"eval-{n}.log"
    env = {**os.environ, "RAGSWEEP_CACHE_DIR": str(cache)}
    env.pop("RAGSWEEP_MODELS_DIR", None)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        "--dataset",
        str(dataset),
        "--out",
        str(runs),
        "--name",
        name,
        "--pipeline",
        pipeline,
        "--timings",
        str(timings_file),
    ]
    load_before = os.getloadavg()
    spawned = time.time()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        sampler = TreeSampler(proc.pid)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    ended = time.time()
    sampler.stop.set()
    sampler.join()
    wall = ended - spawned
    if proc.returncode != 0 or not timings_file.exists():
        tail = log.read_text(errors="replace")[-3000:]
        raise SystemExit(f"point {n}: eval exited {proc.returncode}; end of {log}:\n{tail}")
    t = json.loads(timings_file.read_text())
    run_dir = runs / name
    report = json.loads((run_dir / "report.json").read_text())
    man = report["manifest"]
    ss = man["stage_seconds"]
    timers = t["timers"]
    save = timers.get("save_chunks_and_hits", 0.0)
    split, embed = ss.get("split", 0.0), ss.get("embed", 0.0)
    stages = {
        "startup_imports": t["entered"] - spawned + t["imports"],
        "load_validate": timers.get("load_and_validate", 0.0),
        "parse": ss.get("parse", 0.0),
        "split": split,
        "embed": embed,
        "index_and_query": ss.get("retrieve", 0.0) - split - embed - save,
        "save_chunks_hits": save,
        "answer_and_score": ss.get("answer_and_score", 0.0),
        "aggregate": ss.get("aggregate", 0.0),
        "report_json": timers.get("report_json", 0.0),
        "report_html": timers.get("report_html", 0.0),
        "exit": ended - t["left_main"],
    }
    stages["other"] = wall - sum(stages.values())
    files = {p.name: p.stat().st_size for p in sorted(run_dir.iterdir()) if p.is_file()}
    chunks_file = run_dir / "chunks.jsonl"
    chunks = sum(1 for _ in open(chunks_file)) if chunks_file.exists() else None
    cases = report.get("n_cases")
    return {
        "contracts": n,
        "documents": man["corpus"]["documents"],
        "skipped": len(man["corpus"]["skipped"]),
        "chunks": chunks,
        "cases": cases,
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "stages": {k: round(v, 3) for k, v in stages.items()},
        "stage_seconds_manifest": ss,
        "cases_per_second_answer_score": (
            round(cases / ss["answer_and_score"], 1) if ss.get("answer_and_score") else None
        ),
        "peak_rss_eval_process_mb": round(t["self_maxrss_kb"] / 1024, 1),
        "peak_rss_wait4_mb": round(usage.ru_maxrss / 1024, 1),
        "peak_rss_tree_sampled_mb": round(sampler.peak_tree / MIB, 1),
        "run_folder_bytes": files,
        "run_folder_total_mb": round(sum(files.values()) / MIB, 2),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "load_1min_mean_during": round(sum(sampler.loads) / len(sampler.loads), 2) if sampler.loads else None,
        "load_1min_max_during": max(sampler.loads) if sampler.loads else None,
        "cache": str(cache),
        "warm": warm,
        "run_dir": str(run_dir),
        "log": str(log),
        "ragsweep_file": t["ragsweep_file"],
        "git_commit": man.get("git_commit"),
        "recall@5": report.get("metrics", {}).get("recall@5"),
        "rss_after_stage": t.get("rss_marks", []),
        "wrap_points_missing": t.get("wrap_points_missing", []),
        "wrap_points_uncalled": t.get("wrap_points_uncalled", []),
    }


# ------------------------------------------------------------------ linearity

# each stage's unit: what its cost should be proportional to (None: a fixed cost)
UNITS = {
    "startup_imports": None,
    "load_validate": "case",
    "parse": "document",
    "split": "document",
    "embed": "chunk",
    "index_and_query": "case",
    "save_chunks_hits": "case",
    "answer_and_score": "case",
    "aggregate": "case",
    "report_json": "case",
    "report_html": "case",
    "exit": None,
    "other": None,
}


def linearity(points: list[dict], max_growth: float) -> dict:
    lo, hi = points[0], points[-1]
    out = {}
    for stage, unit in UNITS.items():
        per = {}
        for p in points:
            count = {"document": p["documents"], "chunk": p["chunks"], "case": p["cases"]}.get(unit)
            per[p["contracts"]] = (p["stages"][stage] / count) if count else None
        ratio = None
        if unit and per[lo["contracts"]] and per[hi["contracts"]] is not None:
            ratio = per[hi["contracts"]] / per[lo["contracts"]]
        out[stage] = {
            "unit": unit,
            "per_unit_seconds": per,
            "ratio": ratio,
            "superlinear": ratio is not None and ratio > max_growth,
        }
    return out


def fmt_mb(b: int) -> str:
    return f"{b / MIB:.2f} MB" if b >= 10 * 1024 else f"{b} B"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cuad_dir", nargs="?", help="CUAD v1 release folder (master_clauses.csv, txt/)")
    parser.add_argument("--points", default="100,255,510", help="numbers of contracts, comma separated")
    parser.add_argument("--warm", action="store_true", help="one cache for every point (parse/embed re-used)")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="take a point measured before from WORK/point-N.json instead of running it again "
        "(e.g. after the largest point was interrupted)",
    )
    parser.add_argument("--work", default="/tmp/ragsweep-scale", help="datasets, caches and run folders go here")
    parser.add_argument("--pipeline", default=str(ROOT / "pipelines" / "default.yaml"))
    parser.add_argument(
        "--max-growth",
        type=float,
        default=1.3,
        help="a per-unit cost growing more than this from the smallest to the largest point is flagged",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="points 1,3 of tests/fixtures/datasets/cuad_small, warm, a temporary work folder: does it run "
        "(not a measurement); fails naming a WRAP_POINTS entry that is missing or never called",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--timings", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    scratch = None
    if args.smoke:
        scratch = tempfile.mkdtemp(prefix="ragsweep-scale-smoke-")
        args.cuad_dir, args.points, args.warm, args.work = str(SMOKE_CUAD), "1,3", True, scratch
        print(
            f"SMOKE RUN: points 1 and 3 of {SMOKE_CUAD.relative_to(ROOT)} (placeholder contract texts), one cache, "
            f"work folder {scratch}; the numbers below are not measurements",
            flush=True,
        )
    if not args.cuad_dir:
        parser.error("give the CUAD release folder")
    try:
        return measure(args, parser)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def measure(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    cuad_dir, work = Path(args.cuad_dir).resolve(), Path(args.work).resolve()
    points = sorted({int(x) for x in args.points.split(",") if x.strip()})
    work.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    full = build_full(cuad_dir, work / "cuad-full")
    docs = sorted(p.name for p in (work / "cuad-full" / "docs").iterdir())
    n_un = sum(c.unanswerable for c in full)
    print(
        f"RESULT full dataset: {len(docs)} contracts, {len(full)} cases ({n_un} unanswerable, "
        f"{len(full) - n_un} answerable, {sum(len(c.evidence) for c in full)} evidence spans), "
        f"built in {time.perf_counter() - started:.1f} s -> {work / 'cuad-full'}",
        flush=True,
    )
    if points[-1] > len(docs):
        parser.error(f"--points: {points[-1]} contracts asked, the release has {len(docs)}")
    order = contract_order(docs)
    print(
        f"python {sys.executable}; ragsweep from PYTHONPATH={os.environ.get('PYTHONPATH', '')!r}; "
        f"pipeline {args.pipeline}; cores {os.cpu_count()}; {'warm (shared cache)' if args.warm else 'cold caches'}",
        flush=True,
    )

    results = []
    for n in points:
        saved = work / f"point-{n}{'-warm' if args.warm else ''}.json"
        if args.reuse and saved.exists():
            p = json.loads(saved.read_text())
            print(f"point {n}: measured earlier ({saved}, commit {p['git_commit']})", flush=True)
        else:
            dataset = work / f"cuad-{n}"
            cases = build_point(cuad_dir, dataset, order[:n])
            print(
                f"point {n}: {len(cases)} cases -> {dataset}; eval starts {time.strftime('%H:%M:%S')}, "
                f"load {os.getloadavg()}",
                flush=True,
            )
            p = run_point(n, dataset, work, args.pipeline, args.warm)
            saved.write_text(json.dumps(p, indent=1))
        results.append(p)
        st = p["stages"]
        print(
            f"RESULT point {n} contracts: {p['documents']} documents ({p['skipped']} skipped), {p['chunks']} chunks, "
            f"{p['cases']} cases; wall {p['wall_seconds']} s, CPU {p['cpu_seconds']} s; "
            f"answer+score {p['cases_per_second_answer_score']} cases/s; "
            f"peak RSS eval process {p['peak_rss_eval_process_mb']} MB (tree, sampled: "
            f"{p['peak_rss_tree_sampled_mb']} MB); "
            f"run folder {p['run_folder_total_mb']} MB; load before {p['load_before'][0]:.2f}, "
            f"mean during {p['load_1min_mean_during']}, max {p['load_1min_max_during']}; "
            f"recall@5 {p['recall@5']}; commit {p['git_commit']}",
            flush=True,
        )
        print("  stages [s]: " + ", ".join(f"{k} {v:.2f}" for k, v in st.items()), flush=True)
        print("  run folder: " + ", ".join(f"{k} {fmt_mb(v)}" for k, v in p["run_folder_bytes"].items()), flush=True)
        if p.get("wrap_points_missing") or p.get("wrap_points_uncalled"):
            print(
                f"  WRAP POINTS of this script: missing {p.get('wrap_points_missing')}, "
                f"never called {p.get('wrap_points_uncalled')} (their stages are untimed; see WRAP_POINTS)",
                flush=True,
            )
        if p.get("rss_after_stage"):
            print(
                "  eval process RSS after each stage (now / peak so far, MB): "
                + ", ".join(f"{m['after']} {m.get('rss_mb')} / {m.get('peak_mb')}" for m in p["rss_after_stage"]),
                flush=True,
            )

    lin = linearity(results, args.max_growth) if len(results) > 1 else {}
    if lin:
        lo, hi = points[0], points[-1]
        print(
            f"linearity: milliseconds per unit at each point, and the ratio {hi} / {lo} "
            f"(> {args.max_growth} = faster than linear)"
        )
        print(f"{'stage':<18} {'unit':<9} " + " ".join(f"{n:>12}" for n in points) + f" {'ratio':>7}")
        for stage, row in lin.items():
            per = " ".join(
                f"{v * 1000:>12.4g}" if v is not None else f"{'-':>12}" for v in row["per_unit_seconds"].values()
            )
            ratio = f"{row['ratio']:>7.2f}" if row["ratio"] is not None else f"{'-':>7}"
            flag = "  FASTER THAN LINEAR" if row["superlinear"] else ""
            print(f"{stage:<18} {row['unit'] or 'fixed':<9} {per} {ratio}{flag}")
    flagged = [s for s, row in lin.items() if row["superlinear"]]
    peak = max(p["peak_rss_tree_sampled_mb"] for p in results)
    peak_self = max(p["peak_rss_eval_process_mb"] for p in results)
    print(
        f"RESULT peak RSS: eval process {peak_self} MB, process tree (sampled) {peak} MB (target < 4096 MB): "
        f"{'met' if max(peak, peak_self) < 4096 else 'NOT met'}"
    )
    verdict = (
        f"faster than linear: {', '.join(flagged)}"
        if flagged
        else f"no stage's per-unit cost grows more than {args.max_growth}x"
    )
    print(f"RESULT linearity ({points[0]} -> {points[-1]} contracts): {verdict}")
    print(
        "JSON "
        + json.dumps(
            {
                "cuad_dir": str(cuad_dir),
                "points": results,
                "linearity": lin,
                "superlinear": flagged,
                "peak_rss_mb": max(peak, peak_self),
                "cores": os.cpu_count(),
                "full_cases": len(full),
                "full_contracts": len(docs),
                "seconds": round(time.perf_counter() - started, 1),
                "smoke": args.smoke,
            }
        )
    )
    if args.smoke:
        missing = sorted({w for p in results for w in p.get("wrap_points_missing", [])})
        uncalled = sorted({w for p in results for w in p.get("wrap_points_uncalled", [])})
        if missing or uncalled:
            print(
                "SMOKE FAILED: benchmarks/scale.py's WRAP_POINTS name ragsweep internals that are "
                + "; ".join(
                    x
                    for x in (
                        f"missing: {', '.join(missing)}" if missing else "",
                        f"never called: {', '.join(uncalled)}" if uncalled else "",
                    )
                    if x
                )
                + " (update the table at the top of the script)"
            )
            return 2
        return 0  # a smoke run's timings are not measurements: no verdict on them
    return 0 if not flagged and max(peak, peak_self) < 4096 else 1


if __name__ == "__main__":
    sys.exit(main())
