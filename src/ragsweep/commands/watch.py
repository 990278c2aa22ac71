"""`ragsweep watch`: the numbers follow the documents folder.

One long-lived process: it evaluates the dataset as `ragsweep eval` does, then looks at the documents
folder every ``--poll`` seconds; once a change (a file added, modified, deleted or renamed) has settled
(the folder looked the same twice in a row), it evaluates again and says what moved: the documents,
how many cases' served lists or numbers changed, each watched metric before -> after with the paired
95% CI of the difference, and the cases that went from hit to miss and back.

Each evaluation is `ragsweep eval`'s own (its parse, embedding and served-list caches, so only what a
change touched is parsed and embedded again): the numbers of an update are those of a fresh eval over
the folder as it stood (tests/test_watch.py). What is not incremental: the index is rebuilt and every
question asked again per update (BM25's statistics are corpus-wide), each once for all its scopes
(:mod:`ragsweep.pipeline.scoped_lists`). While it waits for the first change, the watch loads what an
update would load for the changed document alone (:mod:`ragsweep.evaluation.warm_up`).

The folder ``<out>/<name>/`` holds one run folder per evaluation (``gen-0001``...; the current one and
the one before it are kept), ``current`` (a symlink swapped atomically to the newest complete one: its
report.json and report.html are always whole; withdrawn while the folder is gone or its evaluation fails,
so it never holds numbers a fresh eval of the folder would not give) and ``history.jsonl`` (one line per
evaluation: when, what changed, the watched metrics). Interrupted (Ctrl-C, SIGKILL), ``current`` still names the last
complete evaluation; a new ``watch`` with the same ``--name`` continues the folder and its history.
``--serve PORT`` serves ``current``'s report.html on 127.0.0.1 (commands/watch_server.py), a page that
follows each evaluation without a reload (report/live.py).
"""

from __future__ import annotations

import gc
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ragsweep.commands.eval import EvalOptions, run_eval
from ragsweep.commands.inputs import load_inputs
from ragsweep.commands.watch_server import LiveServer
from ragsweep.core.errors import RunError, StageError
from ragsweep.datasets.schema import Dataset
from ragsweep.evaluation.records import CaseResult, RunResult
from ragsweep.evaluation.scoring import quality_failures
from ragsweep.evaluation.settings import option
from ragsweep.evaluation.warm_up import warm_up
from ragsweep.execution.base import ExecutorError
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import CorpusError
from ragsweep.report import write_html
from ragsweep.report.history import HISTORY, Change, MetricMove, Update
from ragsweep.report.runs import read_run

CURRENT = "current"
# an evaluation that ends with one of these is said and the watch goes on: the next change may mend it
WATCHING_ON = (RunError, ExecutorError, CorpusError, StageError)
Snapshot = dict[str, tuple[int, int]]  # file (relative to the documents folder) -> (size, mtime in ns)


class WatchOptions(EvalOptions):
    """`ragsweep watch`: eval's options, and how the folder is followed."""

    poll: float = option(
        0.5, "seconds between two looks at the documents folder (a change is evaluated once two looks agree)",
        ge=0.05, metavar="S", what="a number of seconds",
    )  # fmt: skip
    exit_on_fail: bool = option(False, "end with exit status 1 when an evaluation has a metric below its --min floor")
    max_updates: int | None = option(
        None, "stop after N updates (default: follow the folder until interrupted)", ge=0, metavar="N",
        what="a whole number of updates",
    )  # fmt: skip
    serve: int | None = option(
        None, "serve the newest report.html on http://127.0.0.1:PORT/, a page that follows each evaluation "
        "without a reload (0: a free port; default: no server)", ge=0, le=65535, metavar="PORT", what="a port number",
    )  # fmt: skip


def snapshot(docs: Path) -> Snapshot:
    """Every file under the documents folder with its size and modification time."""
    out: Snapshot = {}
    for path in sorted(docs.rglob("*")):
        try:
            if path.is_file() and not path.name.startswith("."):
                stat = path.stat()
                out[path.relative_to(docs).as_posix()] = (stat.st_size, stat.st_mtime_ns)
        except FileNotFoundError:  # deleted while we looked: the next look sees it gone
            continue
    return out


def change_between(before: Snapshot, after: Snapshot) -> Change:
    return Change(
        added=[f for f in after if f not in before],
        modified=[f for f in after if f in before and after[f] != before[f]],
        deleted=[f for f in before if f not in after],
    )


class StopRequest:
    """Ctrl-C, remembered as well as raised.

    Python ignores an exception raised inside a finalizer, and a collection runs finalizers: a Ctrl-C that
    lands there raises a KeyboardInterrupt nobody sees (and one inside a Pathway callback may come back as
    a failed evaluation). The flag still stops the watch at its next look at the folder.
    """

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._previous: object = None

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():  # only there can a handler be set
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]

    def _handle(self, signum: int, frame: object) -> None:
        self.requested.set()
        raise KeyboardInterrupt

    def check(self) -> None:
        if self.requested.is_set():
            raise KeyboardInterrupt


def settled_change(
    docs: Path, seen: Snapshot, poll: float, stop: StopRequest, on_gone: Callable[[], object] = lambda: None
) -> tuple[Snapshot, Change]:
    """Wait until the folder differs from ``seen`` and has looked the same twice in a row.

    A folder that is gone (deleted, or renamed away while it is replaced) is waited for, not evaluated
    (``on_gone`` is called once); once it is back and settled it is evaluated, changed or not.
    """
    last, gone, came_back = seen, False, False
    while True:
        stop.check()
        time.sleep(poll)
        if not docs.is_dir():
            if not gone:
                print(f"watch: the documents folder {docs} is gone: waiting for it to come back", file=sys.stderr,
                      flush=True)  # fmt: skip
                on_gone()
            gone = True
            continue
        if gone:
            print(f"watch: the documents folder {docs} is back", file=sys.stderr, flush=True)
            gone, came_back, last = False, True, snapshot(docs)
            continue  # settled only when the next look agrees with this one
        now = snapshot(docs)
        if now == last and (now != seen or came_back):
            return now, change_between(seen, now)
        last = now


def watched_metrics(result: RunResult, floors: dict[str, float]) -> list[str]:
    """The headline retrieval metrics at the configuration's top_k, then the floors' metrics."""
    k = result.top_k
    names = [f"recall@{k}", f"hit_rate@{k}", f"mrr@{k}", *floors]
    return [m for m in dict.fromkeys(names) if m in result.metrics]


def _served(case: CaseResult) -> list[tuple[str, int, int]]:
    return [(h.doc_id, h.start, h.end) for h in case.hits]


def case_moves(before: RunResult, after: RunResult) -> tuple[list[str], list[str], list[str]]:
    """(cases whose served list or numbers changed, hit -> miss, miss -> hit) at the top_k."""
    old = {c.id: c for c in before.cases}
    hit = f"hit_rate@{after.top_k}"
    changed, lost, found = [], [], []
    for case in after.cases:
        was = old.get(case.id)
        if was is None or _served(was) != _served(case) or was.metrics != case.metrics:
            changed.append(case.id)
        a, b = (was.metric(hit) if was else None), case.metric(hit)
        if a == 1.0 and b == 0.0:
            lost.append(case.id)
        elif a == 0.0 and b == 1.0:
            found.append(case.id)
    return changed, lost, found


def metric_move(metric: str, before: RunResult, after: RunResult) -> MetricMove:
    # deferred: scipy's bootstrap (~0.7 s to import); only an update with a previous run needs it
    from ragsweep.metrics.stats import paired_bootstrap_ci

    # ``metric`` is an aggregate's name (at a served depth), so a case's value is its own
    old = {c.id: w for c in before.cases if (w := c.metric(metric)) is not None}
    pairs = [(v, old[c.id]) for c in after.cases if c.id in old and (v := c.metric(metric)) is not None]
    low = high = None
    if len(pairs) > 1 and any(a != b for a, b in pairs):
        low, high = paired_bootstrap_ci([a for a, _ in pairs], [b for _, b in pairs], seed=0)
    elif pairs:
        low = high = 0.0
    return MetricMove(metric=metric, before=before.metric(metric), after=after.metric(metric), ci_low=low, ci_high=high)


class WatchFolder:
    """``<out>/<name>/``: the evaluations, the ``current`` link and the history."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def generations(self) -> list[int]:
        return sorted(int(p.name[4:]) for p in self.root.glob("gen-*") if p.name[4:].isdigit())

    def current(self) -> Path | None:
        link = self.root / CURRENT
        return link.resolve() if link.is_symlink() and (link.resolve() / "report.json").is_file() else None

    def publish(self, run_dir: Path) -> None:
        """Point ``current`` at ``run_dir`` in one rename; keep it and the one before it."""
        previous = self.current()
        tmp = self.root / f".{CURRENT}.tmp"
        tmp.unlink(missing_ok=True)
        os.symlink(run_dir.name, tmp)
        os.replace(tmp, self.root / CURRENT)
        keep = {run_dir.name, previous.name if previous else ""}
        for old in self.root.glob("gen-*"):
            if old.name not in keep:
                shutil.rmtree(old, ignore_errors=True)

    def withdraw(self) -> None:
        """No ``current``: the folder as it stands has no evaluation (it is gone, or its evaluation failed), and
        the last one's numbers are not a fresh eval's. The run folders stay; the next evaluation publishes."""
        (self.root / CURRENT).unlink(missing_ok=True)

    def record(self, update: Update) -> None:
        with open(self.root / HISTORY, "a", encoding="utf-8") as f:
            f.write(update.model_dump_json() + "\n")
            f.flush()
            os.fsync(f.fileno())


def evaluate_generation(
    options: WatchOptions, folder: WatchFolder, generation: int, generation_after_start: bool
) -> RunResult:
    """One `ragsweep eval` into ``gen-<n>`` (no gate: the watch applies the floors itself; report.html is
    written by the caller, after the history line)."""
    # the dataset was validated at the start; a document deleted since is the change being watched (its
    # cases' evidence becomes unlocated), not a problem that stops the watch. A changed document changes the
    # index, so no list of an update is in the served-list cache: it is neither read nor written
    one = options.model_copy(
        update={"out": str(folder.root), "name": f"gen-{generation:04d}", "progress": False, "floors": {}}
        | ({"validate_dataset": False, "fresh_retrieval": True} if generation_after_start else {})
    )
    # the options given, and only those: one left out (--ks) keeps its meaning (an adaptive answerer's depths)
    given = one.model_dump(include=set(EvalOptions.model_fields) & one.model_fields_set)
    _, result = run_eval(EvalOptions(**given), html=False, say_language=not generation_after_start)
    assert isinstance(result, RunResult)  # not a dry run
    return result


def update_of(
    generation: int, result: RunResult, before: RunResult | None, change: Change, options: WatchOptions, seconds: float
) -> Update:
    update = Update(
        generation=generation,
        at=time.strftime("%Y-%m-%dT%H:%M:%S"),
        run=Path(result.run_dir or "").name,
        seconds=round(seconds, 3),
        stage_seconds=result.manifest.stage_seconds,
        change=change,
        metrics={m: result.metric(m) for m in watched_metrics(result, options.floors)},
        failures=quality_failures(result, options.floors),
    )
    if before is not None:
        update.cases_changed, update.hit_to_miss, update.miss_to_hit = case_moves(before, result)
        was = {c.id for c in before.cases if c.evidence_unlocated}
        update.now_unlocated = [c.id for c in result.cases if c.evidence_unlocated and c.id not in was]
        update.moves = [metric_move(m, before, result) for m in update.metrics]
    return update


def _ids(ids: list[str], n: int = 10) -> str:
    return ", ".join(ids[:n]) + (f" ... (+{len(ids) - n})" if len(ids) > n else "")


def print_update(update: Update, first: bool) -> None:
    """One line per change of the folder, then the cases that flipped and any floor missed."""
    if first:
        shown = ", ".join(f"{m} {'n/a' if v is None else f'{v:.3f}'}" for m, v in update.metrics.items())
        print(f"watch: evaluated {update.run} in {update.seconds:.1f} s: {shown}", flush=True)
    moved = "; ".join(m.shown() for m in update.moves)
    what = update.change.lines() or ([] if first else ["(no document changed)"])
    for line in what:
        print(f"{line}: {len(update.cases_changed)} cases changed, {moved} ({update.seconds:.1f} s)", flush=True)
    if update.hit_to_miss:
        print(f"  hit -> miss: {_ids(update.hit_to_miss)}", flush=True)
    if update.miss_to_hit:
        print(f"  miss -> hit: {_ids(update.miss_to_hit)}", flush=True)
    if update.now_unlocated:
        n = len(update.now_unlocated)
        print(f"  {n} case(s) whose evidence is in no parsed document now (left out, not a miss): "
              f"{_ids(update.now_unlocated)}", flush=True)  # fmt: skip
    for failure in update.failures:
        print(f"gate FAILED: {failure}", file=sys.stderr, flush=True)


def refuse(options: WatchOptions) -> str | None:
    if options.resume:
        return "--resume: a watch continues its folder by --name"
    if options.dry_run:
        return "--dry-run: nothing to estimate for a watch (run eval --dry-run)"
    return None


def run_watch(options: WatchOptions) -> int:
    """Follow the folder until interrupted (or ``--max-updates``); 1 on a missed floor with ``--exit-on-fail``."""
    if (why := refuse(options)) is not None:
        print(f"ragsweep: error: {why}", file=sys.stderr)
        return 2
    try:
        config, dataset, _ = load_inputs(options)
    except RunError as err:
        print(f"ragsweep: error: {err}", file=sys.stderr)
        return 2
    folder = WatchFolder(Path(options.out) / (options.name or f"{time.strftime('%Y%m%d-%H%M%S')}-watch-{dataset.name}"))
    print(f"watch folder: {folder.root} (following {dataset.docs_dir})", file=sys.stderr, flush=True)
    try:
        server = LiveServer(folder.root, folder.current, options.serve).start() if options.serve is not None else None
    except OSError as err:  # the port is taken
        print(f"ragsweep: error: --serve {options.serve}: {err}", file=sys.stderr)
        return 2
    if server is not None:
        print(f"watch: live report at {server.url}", file=sys.stderr, flush=True)
    try:
        with StopRequest() as stop:
            return follow(options, folder, dataset, config, stop)
    finally:
        if server is not None:
            server.stop()


def stopped_line(folder: WatchFolder) -> str:
    if folder.current() is None:
        return "watch: stopped; no current evaluation"
    return f"watch: stopped; {folder.root / CURRENT} holds the last evaluation"


def warm_in_background(options: WatchOptions, config: PipelineConfig, dataset: Dataset) -> threading.Thread:
    """The parser, embedder and ragas loaded while the watch waits for the first change (warm_up's why)."""
    thread = threading.Thread(
        target=warm_up, args=(config, dataset.docs_dir, options.ragas_nonllm), name="ragsweep-warm-up", daemon=True
    )
    thread.start()
    return thread


def follow(
    options: WatchOptions, folder: WatchFolder, dataset: Dataset, config: PipelineConfig, stop: StopRequest
) -> int:
    """Evaluate, then again at each settled change of the documents, until ``--max-updates`` or a missed floor."""
    before = read_run(current) if (current := folder.current()) is not None else None
    generation = (folder.generations() or [0])[-1]
    seen, change, updates = snapshot(Path(dataset.docs_dir)), Change(), 0
    warming: threading.Thread | None = None
    while True:
        generation += 1
        if warming is not None:  # a change that came early waits for it: Docling's PDF backend is not thread-safe
            warming.join()
        started = time.perf_counter()
        try:
            result = evaluate_generation(options, folder, generation, generation_after_start=updates > 0)
        except WATCHING_ON as err:  # e.g. every document deleted: say so, keep watching
            stop.check()
            folder.withdraw()
            print(f"ragsweep: error: {err} (watching on; no current evaluation until one succeeds)", file=sys.stderr,
                  flush=True)  # fmt: skip
        else:
            update = update_of(generation, result, before, change, options, time.perf_counter() - started)
            folder.record(update)
            write_html(Path(result.run_dir or ""), live=True)  # once its history section holds this evaluation
            folder.publish(Path(result.run_dir or ""))
            print_update(update, first=updates == 0 and not change)
            if update.failures and options.exit_on_fail:
                return 1
            before = result
        # what an evaluation leaves alive stays alive until the next: the collector need not scan it again
        gc.collect()
        gc.freeze()
        if updates == 0:
            warming = warm_in_background(options, config, dataset)
        if options.max_updates is not None and updates >= options.max_updates:
            return 0
        try:
            seen, change = settled_change(Path(dataset.docs_dir), seen, options.poll, stop, folder.withdraw)
        except KeyboardInterrupt:  # Ctrl-C while waiting for a change: how a watch is meant to end
            print(stopped_line(folder), file=sys.stderr, flush=True)
            return 0
        updates += 1
