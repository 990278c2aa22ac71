"""A warm start, timed from outside: the pytest plugin's example in a user's own project, and
``ragsweep.evaluate()``, each in a fresh process after its caches are filled, with where the
seconds go (``python -X importtime``: the packages imported, their own import seconds).

The user's project is a temporary folder holding a copy of the pipeline and the dataset under
their own names, a pytest.ini naming them, and the README's test file (the ``ragsweep_eval``
fixture). Its caches are its own (``.cache/ragsweep`` in that folder): the first run is cold.

- **pytest, result cache**: a warm session, nothing changed: the plugin's result cache answers.
- **pytest, evaluated again** (``--ragsweep-fresh``): the evaluation runs, every parse, embedding
  and served list from the caches; what a session costs after the dataset or a floor-free edit.
- **evaluate()**: ``python -c "ragsweep.evaluate(pipeline, dataset)"``, the same caches; with
  ``--base REV`` REV's code does the same (a ``git archive`` of its ``src``), for the before.

Each warm figure is the min / median / max of ``--runs`` runs, whole process (start-up and exit
included). pytest's ``langsmith_plugin`` (installed with ragas, loaded by every pytest of the
environment, ~1 s) is turned off by ``-p no:langsmith_plugin`` unless ``--with-langsmith``.

    .venv/bin/python benchmarks/warm_start.py [--dataset datasets/cuad-mini] [--runs 7] [--base 78dacee]
    .venv/bin/python benchmarks/warm_start.py --smoke
    /path/to/user-venv/bin/python benchmarks/warm_start.py --installed     # the wheel's ragsweep, its entry point
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_FILE = 'def test_rag_quality(ragsweep_eval):\n    ragsweep_eval.assert_quality(min={"recall@5": 0.5})\n'
EVALUATE = (
    "import json, sys, ragsweep; r = ragsweep.evaluate(sys.argv[1], sys.argv[2]);"
    " m = r.manifest; m = m if isinstance(m, dict) else m.model_dump();"  # a --base revision may hold a dict
    " print('STAGES ' + json.dumps(m['stage_seconds']))"
)
# packages a warm run is checked for: each is named with its import seconds, or "not imported"
WATCHED = ("pathway", "scipy", "ragas", "langchain_openai", "openai", "torch", "sentence_transformers",
           "transformers", "docling", "mlflow", "pandas", "httpx", "langsmith")  # fmt: skip


def user_project(work: Path, pipeline: Path, dataset: Path, cases: int | None) -> Path:
    project = work / "project"
    (project / "tests").mkdir(parents=True)
    shutil.copy(pipeline, project / "rag.yaml")
    shutil.copytree(dataset, project / "eval-data")
    if cases:  # the smoke run: cuad-mini's first N cases
        path = project / "eval-data" / "cases.jsonl"
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:cases]))
    (project / "pytest.ini").write_text(
        "[pytest]\naddopts = -p no:cacheprovider\nragsweep_pipeline = rag.yaml\nragsweep_dataset = eval-data\n"
    )
    (project / "tests" / "test_rag.py").write_text(TEST_FILE)
    return project


def child_env(src: Path | None) -> dict[str, str]:
    """A user's environment: ragsweep's caches where the plugin puts them, the served-list cache on,
    bytecode written (a user's warm start has its ``.pyc`` files from the first run); ``src`` first on
    the path (None: the ragsweep installed in this Python, e.g. from the wheel)."""
    drop = (
        "RAGSWEEP_CACHE_DIR",
        "RAGSWEEP_SERVED_CACHE",
        "RAGSWEEP_CONFIG_FACTS",
        "PYTHONDONTWRITEBYTECODE",
        *(("PYTHONPATH",) if src is None else ()),
    )
    env = {k: v for k, v in os.environ.items() if k not in drop}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(
            f"{' '.join(cmd)} (in {cwd}) failed, exit {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return seconds, done


def timed(label: str, cmd: list[str], cwd: Path, env: dict[str, str], runs: int, must: str) -> dict:
    walls = []
    for _ in range(runs):
        seconds, done = run(cmd, cwd, env)
        if must not in done.stdout + done.stderr:
            sys.exit(f"{label}: {must!r} not in its output:\n{done.stdout[-3000:]}")
        walls.append(seconds)
    row = {"min": min(walls), "median": statistics.median(walls), "max": max(walls), "runs": runs}
    print(f"RESULT {label}: median {row['median']:.2f} s (min {row['min']:.2f}, max {row['max']:.2f}, {runs} runs)")
    return row


def import_seconds(cmd: list[str], cwd: Path, env: dict[str, str]) -> dict:
    """One more run under ``-X importtime``: seconds of import per top-level package (own time)."""
    _, done = run([cmd[0], "-X", "importtime", *cmd[1:]], cwd, env)
    own: Counter[str] = Counter()
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if m:
            own[m.group(2).split(".")[0]] += int(m.group(1)) / 1e6
    # the 15 largest and every watched package imported: what the JSON line keeps
    largest = {p for p, _ in own.most_common(15)}
    kept = {p: round(t, 3) for p, t in own.most_common() if p in largest or p in WATCHED}
    return {"total": round(sum(own.values()), 3), "by_package": kept, "stages": _stages(done.stdout)}


def _stages(stdout: str) -> dict | None:
    line = next((x for x in stdout.splitlines() if x.startswith("STAGES ")), None)
    return None if line is None else json.loads(line[len("STAGES ") :])


def show_imports(label: str, found: dict) -> None:
    watched = ", ".join(f"{p} {found['by_package'][p]:.2f}" if p in found["by_package"] else f"{p} -" for p in WATCHED)
    top = ", ".join(f"{p} {s:.2f}" for p, s in list(found["by_package"].items())[:8])
    print(f"RESULT imports, {label}: {found['total']:.2f} s in all; top: {top}")
    print(f"RESULT   watched ('-': not imported): {watched}")
    if found["stages"]:
        print(f"RESULT   stages [s]: {found['stages']}")


def base_src(rev: str, work: Path) -> Path:
    """REV's ``src`` in a folder of its own (git archive: no worktree, nothing of REV left behind)."""
    target = work / f"base-{rev}"
    target.mkdir()
    archive = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / "src"


def plugin_args(env: dict[str, str]) -> list[str]:
    """``-p ragsweep.pytest_plugin`` where the child's metadata lacks the entry point (an editable
    install made before it existed); none where pytest finds it by itself."""
    code = "from importlib.metadata import entry_points as e; print(any(p.value == 'ragsweep.pytest_plugin' for p in e(group='pytest11')))"
    found = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout.strip()
    return [] if found == "True" else ["-p", "ragsweep.pytest_plugin"]


def pytest_rows(project: Path, env: dict[str, str], args: argparse.Namespace) -> dict:
    pytest = [
        sys.executable,
        "-m",
        "pytest",
        *plugin_args(env),
        *([] if args.with_langsmith else ["-p", "no:langsmith_plugin"]),
    ]
    cold, _ = run(pytest, project, env)
    print(f"RESULT pytest cold (parse, embed, Pathway, score; fills {project.name}/.cache/ragsweep): {cold:.2f} s")
    rows: dict = {"cold_s": cold}
    rows["result_cache"] = timed("pytest warm, result cache", pytest, project, env, args.runs, "from the result cache")
    fresh = [*pytest, "--ragsweep-fresh"]
    rows["evaluated"] = timed(
        "pytest warm, evaluated again (--ragsweep-fresh)", fresh, project, env, args.runs, "served lists from the cache"
    )
    for key, cmd in (("result_cache", pytest), ("evaluated", fresh)):
        rows[key]["imports"] = import_seconds([*cmd, "-s"], project, env)
        show_imports(f"pytest warm, {key.replace('_', ' ')}", rows[key]["imports"])
    return rows


def evaluate_row(label: str, project: Path, src: Path | None, runs: int) -> dict:
    """``ragsweep.evaluate()`` in a fresh process, ``src``'s code, the project's caches (one run to warm them)."""
    env = {**child_env(src), "RAGSWEEP_CACHE_DIR": str(project / ".cache" / "ragsweep")}
    cmd = [sys.executable, "-c", EVALUATE, "rag.yaml", "eval-data"]
    run(cmd, project, env)  # another revision's served-list keys may differ: its first run fills them
    row = timed(label, cmd, project, env, runs, "STAGES")
    row["imports"] = import_seconds(cmd, project, env)
    show_imports(label, row["imports"])
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipeline", default="pipelines/default.yaml")
    parser.add_argument("--dataset", default="datasets/cuad-mini")
    parser.add_argument("--runs", type=int, default=7, help="warm runs of each kind (default 7)")
    parser.add_argument("--base", help="a revision whose evaluate() is timed the same way (the before)")
    parser.add_argument("--with-langsmith", action="store_true", help="leave pytest's langsmith plugin on")
    parser.add_argument(
        "--installed", action="store_true", help="time the ragsweep installed in this Python (a wheel), not ./src"
    )
    parser.add_argument("--smoke", action="store_true", help="10 cuad-mini cases, 1 run, base HEAD: the path only")
    args = parser.parse_args()
    cases = None
    if args.smoke:
        args.dataset, args.runs, args.base, cases = "datasets/cuad-mini", 1, "HEAD", 10
        print(
            "SMOKE RUN: 10 cuad-mini cases, 1 warm run of each kind, evaluate() of HEAD (timings are not measurements)"
        )
    summary: dict = {"dataset": args.dataset, "runs": args.runs, "smoke": args.smoke, "base": args.base}
    summary["installed"] = args.installed
    with tempfile.TemporaryDirectory(prefix="ragsweep-warm-start-") as tmp:
        work = Path(tmp)
        project = user_project(work, ROOT / args.pipeline, ROOT / args.dataset, cases)
        src = None if args.installed else ROOT / "src"
        summary["pytest"] = pytest_rows(project, child_env(src), args)
        this = "the installed ragsweep" if args.installed else "this checkout"
        summary["evaluate"] = evaluate_row(f"evaluate() warm, {this}", project, src, args.runs)
        if args.base:
            base = base_src(args.base, work)
            summary["evaluate_base"] = evaluate_row(f"evaluate() warm, base {args.base}", project, base, args.runs)
    print("JSON " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
