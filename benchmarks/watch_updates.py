"""How fast `ragsweep watch` follows a documents folder, beside a warm `ragsweep eval` in the same run.

On a copy of the dataset (its documents copied, its caches warm): one warm `ragsweep eval` (after one
that fills the caches), then a `ragsweep watch` that sees, in turn, N contracts each with one clause
reworded, one contract deleted and one added back under another name. For each change:

- ``evaluation``: the update's own time (history.jsonl's ``seconds``: the eval of the changed folder);
- ``seen``: from the moment the changed file is in place to ``current`` naming the update's run folder
  (its report.json and report.html whole; the poll, the folder settling, the before -> after intervals,
  the history line and report.html included: what a user waits for). Each change is made 1 s after the
  previous update was published (the first after the watch's first evaluation and its warm-up start).

Each update's numbers are a fresh eval's (tests/test_watch.py checks that); here only times.

    .venv/bin/python benchmarks/watch_updates.py [--dataset datasets/cuad] [--modify 3]
    .venv/bin/python benchmarks/watch_updates.py --smoke     # cuad-mini, 20 cases, one change of each kind
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pdf_reword import reword_pdf

ROOT = Path(__file__).resolve().parent.parent
RAGSWEEP = [sys.executable, "-m", "ragsweep.cli"]
PIPELINE = str(ROOT / "pipelines" / "default.yaml")
PAUSE = 1.0  # seconds between an update's publication and the next change
SMOKE_PAUSE = 0.3  # a smoke run's (its timings are not measurements): still 3 of the watch's polls


def copy_dataset(dataset: Path, work: Path) -> Path:
    """The dataset folder with its own copy of the documents (a ``docs:`` elsewhere is copied in)."""
    target = work / "data"
    shutil.copytree(dataset, target, symlinks=False)
    return target


def timed_eval(data: Path, out: Path, name: str, limit: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [*RAGSWEEP, "eval", "--pipeline", PIPELINE, "--dataset", str(data), "--out", str(out), "--name", name, *limit],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode not in (0, 1):  # 1: a floor of the dataset's own; still a run
        raise SystemExit(f"eval failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def history(out: Path) -> list[dict]:
    path = out / "w" / "history.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def published(out: Path, run: str) -> bool:
    """Does ``current`` name the run folder ``run`` (its report.json and report.html whole)?"""
    link = out / "w" / "current"
    return link.is_symlink() and os.readlink(link) == run


def wait_for(out: Path, n: int, proc: subprocess.Popen[str], timeout: float = 900) -> dict:
    """Update ``n``'s line in history.jsonl, once ``current`` names its run folder."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(lines := history(out)) >= n and published(out, lines[n - 1]["run"]):
            return lines[n - 1]
        if proc.poll() is not None:
            raise SystemExit(f"watch ended (rc {proc.returncode}):\n{proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.02)
    raise SystemExit(f"no update {n} within {timeout} s")


def reword(path: Path) -> None:
    """One clause reworded, saved as an editor saves (written beside, renamed over): in a PDF the words
    of one line reversed (benchmarks/pdf_reword.py), in a text file one word upper-cased."""
    if path.suffix.lower() == ".pdf":
        reword_pdf(path)
        return
    text = path.read_text(encoding="utf-8")
    word = next((w for w in ("Agreement", "agreement", "Party", "shall") if w in text), None)
    changed = text.replace(word, word.upper(), 1) if word else text + "\nAmended."
    tmp = path.parent.parent / f".{path.name}.tmp"
    tmp.write_text(changed, encoding="utf-8")
    os.replace(tmp, path)


def rewordable(docs: list[Path], n: int) -> list[Path]:
    """The first ``n`` documents a clause of which can be reworded (tried on a copy)."""
    found: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        for doc in docs:
            trial = Path(tmp) / "docs" / doc.name
            trial.parent.mkdir(exist_ok=True)
            shutil.copy(doc, trial)
            try:
                reword(trial)
            except ValueError:
                continue
            found.append(doc)
            if len(found) == n:
                return found
    raise SystemExit(f"only {len(found)} of the documents can be reworded; asked for {n}")


Row = tuple[str, float, float, dict[str, float]]  # kind of change, evaluation s, seen s, stage seconds


def follow(data: Path, out: Path, limit: list[str], modify: int, pause: float = PAUSE) -> list[Row]:
    """(kind, evaluation s, seen s, the evaluation's stage seconds) of each change the watch followed."""
    docs = sorted(p for p in (data / "docs").iterdir() if p.is_file())
    proc = subprocess.Popen(
        [*RAGSWEEP, "watch", "--pipeline", PIPELINE, "--dataset", str(data), "--out", str(out), "--name", "w",
         "--poll", "0.1", *limit],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    rows: list[Row] = []
    try:
        wait_for(out, 1, proc)
        held = out.parent / "held"
        changes = [("modify", lambda doc=doc: reword(doc)) for doc in rewordable(docs[:-1], modify)]
        changes += [("delete", lambda: shutil.move(docs[-1], held)), ("add", lambda: shutil.copy(held, docs[-1].parent / f"added{docs[-1].suffix}"))]  # fmt: skip
        for n, (kind, act) in enumerate(changes, start=2):
            time.sleep(pause)  # a change comes to a watch that is waiting for one, not finishing the last
            act()  # the change is made when the new file is in place (an editor's rename, a copy's end)
            started = time.perf_counter()
            line = wait_for(out, n, proc)
            rows.append((kind, float(line["seconds"]), time.perf_counter() - started, line.get("stage_seconds", {})))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="datasets/cuad")
    parser.add_argument("--modify", type=int, default=3, help="contracts reworded, one update each")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--smoke", action="store_true", help="cuad-mini, 20 cases, one change of each kind")
    args = parser.parse_args()
    if args.smoke:
        args.dataset, args.modify, args.limit = "datasets/cuad-mini", 1, 20
        print("SMOKE RUN: cuad-mini, 20 cases, one change of each kind (timings are not measurements)")
    limit = ["--limit", str(args.limit)] if args.limit else []
    with tempfile.TemporaryDirectory(prefix="ragsweep-watch-bench-") as tmp:
        work = Path(tmp)
        data = copy_dataset(ROOT / args.dataset, work)
        timed_eval(data, work / "runs", "fill", limit)  # caches filled (warm already when run before)
        warm = timed_eval(data, work / "runs", "warm", limit)
        rows = follow(data, work / "watch", limit, args.modify, SMOKE_PAUSE if args.smoke else PAUSE)
    print(f"RESULT warm full eval (a process, the same dataset): {warm:.2f} s")
    summary: dict[str, object] = {"smoke": args.smoke, "dataset": args.dataset, "warm_eval_s": round(warm, 3)}
    for kind in ("modify", "delete", "add"):
        evals = [e for k, e, _, _ in rows if k == kind]
        seen = [s for k, _, s, _ in rows if k == kind]
        stages = [st for k, _, _, st in rows if k == kind]
        medians = {name: statistics.median(st.get(name, 0.0) for st in stages) for name in stages[0]} if stages else {}
        print(
            f"RESULT update {kind}: evaluation median {statistics.median(evals):.2f} s, seen median "
            f"{statistics.median(seen):.2f} s over {len(evals)} change(s); warm eval / evaluation "
            f"{warm / statistics.median(evals):.1f}x; stages (median s): "
            + ", ".join(f"{name} {v:.2f}" for name, v in medians.items())
        )
        summary[kind] = {
            "evaluation_s": [round(e, 3) for e in evals], "seen_s": [round(s, 3) for s in seen],
            "stage_median_s": {name: round(v, 3) for name, v in medians.items()},
        }  # fmt: skip
    print("JSON " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
