"""Same input, same numbers across a change: this checkout's `ragsweep eval` against another
revision's, both fed the same served lists.

Two revisions may serve different lists (before ragsweep.pipeline.stable_order, even two cold runs
of one revision could: Pathway ordered equal BM25 scores differently from run to run), so the
served lists are asked once (by this checkout, from the served-list cache where it holds them) and
written to a JSON file; then each revision runs its own eval code in its own process with
retrieval replaced by those lists:

- this checkout, in place;
- REV, in a `git worktree` of it (``PYTHONPATH`` points at its ``src``), with the same venv.

Printed: every section of report.json (metrics, counts, intervals, chance/oracle, groups, ...;
the manifest differs by design) equal as JSON text or not, and cases.jsonl byte for byte.

    .venv/bin/python benchmarks/same_numbers.py --base 15d3802            # make eval's dataset
    .venv/bin/python benchmarks/same_numbers.py --smoke                    # cuad-mini, 8 cases, vs HEAD

Exit status 1 when anything differs. The replacement of retrieval is the one place that knows
each revision's internals: every ragsweep module holding ``ragsweep.pipeline.retrieval.retrieve`` (the
loop, the local executor) now, ``ragsweep.stages.retrieve`` before the evaluation loop was one module.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs inside each revision: eval with retrieval replaced by the dumped lists.
RUNNER = r"""
import importlib, json, pkgutil, sys
dump, dataset, out, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) or None
def lists(Hit, Retrieved):
    d = json.load(open(dump))
    def fake_retrieve(config, corpus, cases, ks, progress=False, *args, **kwargs):
        served = {c.id: {int(k): [Hit(**h) for h in hits] for k, hits in d["served"][c.id].items()} for c in cases}
        chunks = {doc: [Hit(**h) for h in hs] for doc, hs in d["chunks"].items()}
        return Retrieved(served=served, chunks_by_doc=chunks, n_chunks=d["n_chunks"])
    return fake_retrieve
def replace_everywhere(original, fake):
    # every module that imported the store's retrieve (the loop, an executor) calls the fake instead
    import ragsweep
    for info in pkgutil.walk_packages(ragsweep.__path__, "ragsweep."):
        if info.name.split(".")[1] in ("execution", "evaluation", "commands"):
            try:
                importlib.import_module(info.name)
            except ImportError:
                pass
    for name, module in list(sys.modules.items()):
        if name.startswith("ragsweep") and getattr(module, "retrieve", None) is original:
            module.retrieve = fake
if __name__ == "__main__":
    try:  # the evaluation loop
        import ragsweep.evaluation.loop as where
        from ragsweep.commands.eval import EvalOptions, run_eval
        from ragsweep.core.hits import Hit
        from ragsweep.pipeline.retrieval import Retrieved, retrieve as original
    except ImportError:  # before it: ragsweep.stages and ragsweep.run
        import ragsweep.stages as where
        from ragsweep.hits import Hit
        from ragsweep.run import EvalOptions, run_eval
        from ragsweep.stages import Retrieved, retrieve as original
    fake = lists(Hit, Retrieved)
    where.retrieve = fake
    replace_everywhere(original, fake)
    run_eval(EvalOptions(dataset=dataset, out=out, name="run", progress=False, limit=limit))
"""

DUMP = r"""
import json, sys
from ragsweep.commands.eval import EvalOptions
try:
    from ragsweep.commands.inputs import load_inputs
except ImportError:  # before the command modules loaded the inputs
    from ragsweep.evaluation.inputs import load_inputs
from ragsweep.evaluation.loop import scored_ks
from ragsweep.pipeline.retrieval import parse_documents, retrieve, serve, store_depths
if __name__ == "__main__":
    dataset, path, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]) or None
    options = EvalOptions(dataset=dataset, progress=False, limit=limit)
    config, ds, cases = load_inputs(options)
    depths = scored_ks(options.ks, config.top_k)
    retrieved = retrieve(config, parse_documents(ds), cases, store_depths(config, depths))
    served = serve(config, retrieved, cases, depths)
    json.dump({
        "served": {c: {str(k): [h.model_dump() for h in hits] for k, hits in by_k.items()} for c, by_k in served.items()},
        "chunks": {d: [h.model_dump() for h in hs] for d, hs in retrieved.chunks_by_doc.items()},
        "n_chunks": retrieved.n_chunks,
    }, open(path, "w"))
    print(f"served lists: {len(served)} cases, {retrieved.queries} queries ({retrieved.from_cache} from the cache)")
"""


def run_python(code_file: Path, args: list[str], cwd: Path, src: Path) -> str:
    """The script's stdout (stripped); exits naming the tree when it fails."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, str(code_file), *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{cwd}: {code_file.name} failed (rc {done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout.strip()


def show(stdout: str) -> None:
    if stdout:
        print(stdout)


def compare(a: Path, b: Path) -> list[str]:
    """The report.json sections and files that differ (the manifest says when and where it ran)."""
    ra, rb = (json.loads((p / "report.json").read_text()) for p in (a, b))
    differ = [
        k for k in sorted(set(ra) | set(rb)) if k != "manifest" and json.dumps(ra.get(k)) != json.dumps(rb.get(k))
    ]
    for key in ("metrics", "intervals", "baselines"):
        same = sum(json.dumps(ra[key][m]) == json.dumps(rb.get(key, {}).get(m)) for m in ra.get(key, {}))
        print(f"RESULT {key}: {same} of {len(ra.get(key, {}))} equal as JSON text")
    same_cases = (a / "cases.jsonl").read_bytes() == (b / "cases.jsonl").read_bytes()
    lines = len((a / "cases.jsonl").read_text().splitlines())
    print(f"RESULT cases.jsonl: {lines} lines, byte-identical: {same_cases}")
    if not same_cases:
        print(f"RESULT cases.jsonl: {common_fields(a / 'cases.jsonl', b / 'cases.jsonl')}")
    return differ + ([] if same_cases else ["cases.jsonl"])


def common_fields(a: Path, b: Path) -> str:
    """Whether two case files hold the same values in the fields both write (a revision may add fields)."""
    pairs = list(zip(a.read_text().splitlines(), b.read_text().splitlines(), strict=True))
    only: dict[str, set[str]] = {"base": set(), "this checkout": set()}
    same = 0
    for line_a, line_b in pairs:
        ca, cb = json.loads(line_a), json.loads(line_b)
        only["base"] |= set(ca) - set(cb)
        only["this checkout"] |= set(cb) - set(ca)
        same += all(ca[k] == cb[k] for k in set(ca) & set(cb))
    extra = "; ".join(f"only in {side}: {', '.join(sorted(keys))}" for side, keys in only.items() if keys)
    return f"{same} of {len(pairs)} lines equal in the fields both write" + (f" ({extra})" if extra else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD", help="the revision to compare with (default HEAD)")
    parser.add_argument("--dataset", default="datasets/cuad")
    parser.add_argument("--limit", type=int, default=0, help="only the first N cases (0: all)")
    parser.add_argument(
        "--smoke", action="store_true", help="cuad-mini, 8 cases, against HEAD: the path, not a finding"
    )
    args = parser.parse_args()
    if args.smoke:
        args.dataset, args.limit, args.base = "datasets/cuad-mini", 8, "HEAD"
        print("SMOKE RUN: cuad-mini, 8 cases, this checkout against HEAD (not a measurement of a change)")
    with tempfile.TemporaryDirectory(prefix="ragsweep-same-numbers-") as tmp:
        work = Path(tmp)
        (work / "runner.py").write_text(RUNNER)
        (work / "dump.py").write_text(DUMP)
        base = work / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-f", str(base), args.base], cwd=ROOT, check=True,
                       capture_output=True)  # fmt: skip
        try:
            show(run_python(work / "dump.py", [args.dataset, str(work / "served.json"), str(args.limit)], ROOT,
                            ROOT / "src"))  # fmt: skip
            # the two revisions' evals share nothing but the lists: they run side by side (one core each)
            with ThreadPoolExecutor(2) as pool:
                runs = [pool.submit(run_python, work / "runner.py", [str(work / "served.json"), args.dataset,
                                    str(work / name), str(args.limit)], tree, tree / "src")
                        for name, tree in (("this", ROOT), ("base", base))]  # fmt: skip
                outputs = [run.result() for run in runs]  # a failed one's SystemExit, raised here
            for stdout in outputs:
                show(stdout)
            differ = compare(work / "base" / "run", work / "this" / "run")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)
    print(f"RESULT base {args.base} vs this checkout on {args.dataset}: "
          + ("the same numbers" if not differ else "DIFFER in " + ", ".join(differ)))  # fmt: skip
    print("JSON " + json.dumps({"base": args.base, "dataset": args.dataset, "differ": differ, "smoke": args.smoke}))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
