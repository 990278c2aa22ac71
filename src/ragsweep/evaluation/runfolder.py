"""Run folders: create, lock, resume; durable JSONL; manifest and provenance.

A run folder is where results leave ragsweep. Nothing here scores anything.

- One process at a time: :class:`RunLock` takes an exclusive ``flock`` on
  ``<run>/.lock`` (released by the kernel when the holder dies, so a killed run
  never leaves a stale lock); a second process gets an error naming the holder. The
  file is removed when its holder releases it: a finished folder holds no ``.lock``.
- Lines are fsynced one by one (:class:`JsonlWriter`): a kill loses at most the
  line being written. :func:`read_jsonl` keeps every valid line, wherever a torn
  or corrupt one stands, and moves the bad lines aside (``<file>.bad-lines``).
- A full disk or another write failure ends in a :class:`RunError` naming the
  file and what is already saved, never a traceback.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict, JsonValue

from ragsweep.core.errors import RunError
from ragsweep.core.hits import Hit, chunk_id
from ragsweep.core.keys import digest, package_version
from ragsweep.evaluation.records import RECORD_VERSION, CaseResult, JsonObject, RunResult
from ragsweep.evaluation.storage import compact, expand_lines
from ragsweep.pipeline.retrieval import Retrieved, Served

PACKAGES = (
    "ragsweep",
    "pathway",
    "docling-slim",
    "docling-core",
    "tantivy",
    "sentence-transformers",
    "torch",
    "tiktoken",
    "openai",
    "ragas",
    "pydantic",
    "scipy",
)
# 2: cases.jsonl holds CaseResult lines; hits.jsonl holds every served depth.
# 3: cases.jsonl lines are compact (storage.compact: hit texts in chunks.jsonl, no defaults, no
#    metric without a value, no per-case chance/oracle once report.json holds their means).
LAYOUT_VERSION = 3
# A sweep folder's layout (its sweep-state.json "layout"). Up to 3 a sweep wrote the eval number while its
# configs/<id>/cases.jsonl held full CaseResult lines (every hit's text once per case per configuration).
# 4: those lines are compact (storage.compact, unsettled: chance/oracle and metrics without a value kept) and
#    <sweep>/chunks.jsonl holds the text of each chunk any configuration served, once.
SWEEP_LAYOUT_VERSION = 4


class FolderState(BaseModel):
    """What a run folder is, written to its state file when created (the eval's and the sweep's
    are :mod:`ragsweep.evaluation.context`'s); a resume checks the saved one against this run's."""

    MARKER: ClassVar[str] = "state.json"  # the state file's name in the folder
    RESUME_KEYS: ClassVar[tuple[str, ...]] = ()  # what a resume must match

    layout: int


StateT = TypeVar("StateT", bound=FolderState)


class SavedState(BaseModel):
    """A state file as a resume reads it back, of any layout: its ``layout`` (a layout-1 file wrote
    none), when its run began, and the rest kept as written (what a resume compares, by name)."""

    model_config = ConfigDict(extra="allow")

    layout: JsonValue = 1
    started_at: JsonValue = None


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def file_hash(path: Path) -> str:
    """A file's short content id (raises ``OSError`` when it cannot be read)."""
    return digest(path.read_bytes(), 16)


def git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=here)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=here,
        )
        if out.returncode == 0:
            return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def package_versions() -> dict[str, str]:
    found = {name: package_version(name) for name in PACKAGES}
    return {name: shown for name, shown in found.items() if shown != "-"}


# ------------------------------------------------------------------ durable lines

# json.dumps(..., ensure_ascii=False) builds an encoder per call; a run encodes thousands of lines
_LINE = json.JSONEncoder(ensure_ascii=False)
_VALUE = json.JSONEncoder(ensure_ascii=False, default=str)  # a report's values (a path, a date: their text)


def _why_not_written(err: OSError) -> str:
    return "the disk is full" if err.errno in (errno.ENOSPC, errno.EDQUOT) else str(err)


def check_writable(path: Path, what: str) -> None:
    """Refuse, before any work, a file that could not be written at the end: its folder cannot be made or
    written into (read-only, full, a file in the way), or the path is a folder. A RunError in one line."""
    path = Path(path)
    if path.is_dir():
        raise RunError(f"{what} {path}: is a folder, not a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".ragsweep-write-check-") as probe:
            probe.write(b"\n")
            probe.flush()
    except OSError as err:
        raise RunError(f"{what} {path}: cannot write there: {_why_not_written(err)}") from err


def _write_error(path: Path, err: OSError, saved: str) -> RunError:
    what = _why_not_written(err)
    return RunError(
        f"cannot write {path}: {what}. {saved} Free space (or fix the cause) and run again with --resume {path.parent}"
    )


class JsonlWriter:
    """Append records, each flushed to the file at once: a killed process loses at most the
    line being written (the kernel holds what was flushed). The file is fsynced every
    ``sync_every`` lines and on close, so a crash of the machine itself loses at most that
    many; an fsync per line cost 1.4 ms, a third of a warm `make eval`'s scoring time."""

    def __init__(self, path: Path, sync_every: int = 64):
        self.path = path
        self.written = 0
        self.sync_every = max(1, sync_every)
        try:
            self.fh = path.open("a", encoding="utf-8")
        except OSError as err:
            raise _write_error(path, err, "Nothing was lost.") from err

    def write(self, record: JsonObject | ChunkRow) -> None:
        try:
            self.fh.write(_LINE.encode(record) + "\n")
            self.fh.flush()
            if (self.written + 1) % self.sync_every == 0:
                os.fsync(self.fh.fileno())
        except OSError as err:
            raise _write_error(self.path, err, f"{self.written} line(s) of this run were saved before it.") from err
        self.written += 1

    def close(self) -> None:
        try:
            self.fh.flush()
            os.fsync(self.fh.fileno())
        except (OSError, ValueError):  # ValueError: already closed
            pass
        try:
            self.fh.close()
        except OSError:
            pass

    def __enter__(self) -> "JsonlWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_jsonl(path: Path, key: str = "id") -> list[JsonObject]:
    """Every valid line of a JSONL file an interrupted run wrote.

    A torn or corrupt line, anywhere in the file, is dropped and the good lines
    are kept (later duplicates of one ``key`` replace earlier ones). When bad lines
    were found, the file is rewritten without them (atomically) and the bad lines
    are appended to ``<file>.bad-lines`` with a warning naming their line numbers.
    """
    if not path.exists():
        return []
    good: dict[JsonValue, JsonObject] = {}
    bad: list[tuple[int, bytes]] = []
    raw_lines = path.read_bytes().splitlines(keepends=True)
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
            if not isinstance(record, dict) or (key and key not in record):
                raise ValueError("not a record")
        except ValueError:
            bad.append((number, raw))
            continue
        good[record[key] if key else number] = record  # a record without its key was set aside above
    if bad or len(good) != sum(1 for r in raw_lines if r.strip()):
        if bad:
            with (path.parent / f"{path.name}.bad-lines").open("ab") as fh:
                for _, raw in bad:
                    fh.write(raw if raw.endswith(b"\n") else raw + b"\n")
            numbers = ", ".join(str(n) for n, _ in bad[:10]) + (" ..." if len(bad) > 10 else "")
            print(
                f"warning: {path}: {len(bad)} unreadable line(s) (line {numbers}) moved to "
                f"{path.name}.bad-lines; their cases are computed again",
                file=sys.stderr,
            )
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in good.values()), encoding="utf-8")
        tmp.replace(path)
    return list(good.values())


class ChunkRow(TypedDict):
    """One line of a chunk table (``chunks.jsonl``)."""

    id: str
    doc_id: str
    start: int
    end: int
    text: str


def chunk_row(row: JsonObject) -> ChunkRow:
    """A chunk table's line as read back (its fields checked)."""
    key, doc_id, start, end, text = row["id"], row["doc_id"], row["start"], row["end"], row["text"]
    if not (
        isinstance(key, str)
        and isinstance(doc_id, str)
        and isinstance(start, int)
        and isinstance(end, int)
        and isinstance(text, str)
    ):
        raise RunError(f"a chunk table line is not {{id, doc_id, start, end, text}}: {row!r}")
    return ChunkRow(id=key, doc_id=doc_id, start=start, end=end, text=text)


def stored_chunk_id(doc_id: str, start: int, end: int, text: str, known: Mapping[str, str]) -> str:
    """The id a chunk has in a chunk table: :func:`ragsweep.core.hits.chunk_id` of its document and offsets,
    or, where the table holds another text at those offsets (a sweep whose parser configurations make different
    texts of one document), that id plus a hash of its own text."""
    key = chunk_id(doc_id, start, end)
    if known.get(key, text) == text:
        return key
    return f"{key}~{digest(text, 12)}"


def append_chunks(path: Path, hits: Iterable[Hit], known: dict[str, str]) -> int:
    """Append to a chunk table (``chunks.jsonl``: one chunk a line, ``{id, doc_id, start, end, text}``, the id
    :func:`stored_chunk_id`) each chunk of ``hits`` not in ``known`` (id -> text), and add it there; return how
    many lines were written. ``hits``: anything with ``doc_id``, ``start``, ``end`` and ``text`` (a Hit, a
    JudgedHit). ``known`` starts as the table read back with :func:`read_jsonl`, so a resumed run appends only
    what a killed one had not written."""
    written = 0
    with JsonlWriter(path) as writer:
        for hit in hits:
            key = stored_chunk_id(hit.doc_id, hit.start, hit.end, hit.text, known)
            if key in known:
                continue
            writer.write(ChunkRow(id=key, doc_id=hit.doc_id, start=hit.start, end=hit.end, text=hit.text))
            known[key] = hit.text
            written += 1
    return written


@cache
def _saved_fields(model: type[Hit]) -> tuple[str, ...]:
    return tuple(name for name in model.model_fields if name != "text")


def saved_hit(hit: Hit) -> JsonObject:
    """``hit.model_dump(exclude={"text"})``, read straight from its fields (each a plain value): a run
    saves tens of thousands of served hits, and the dump cost more than writing them."""
    values = vars(hit)
    return {name: values[name] for name in _saved_fields(type(hit))}


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (a temp file then a rename); a failure names the file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(readable_json(data) + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise _write_error(path, err, "Every case already computed is in cases.jsonl.") from err


def readable_json(value: Any, depth: int = 0) -> str:
    """JSON indented by 2, except that below the top level a list or object of plain values
    takes one line (an interval, a metric's counts, a group's summary): a third smaller than
    ``json.dumps(indent=2)`` for a report, and easier to read."""
    items = list(value.items()) if isinstance(value, dict) else value if isinstance(value, list) else None
    if not items or (
        depth >= 2
        and not any(isinstance(v, (dict, list)) for v in (value.values() if isinstance(value, dict) else value))
    ):
        return _VALUE.encode(value)
    pad, end = "  " * (depth + 1), "  " * depth
    if isinstance(value, dict):
        lines = [f"{pad}{_LINE.encode(str(k))}: {readable_json(v, depth + 1)}" for k, v in items]
        return "{\n" + ",\n".join(lines) + "\n" + end + "}"
    return "[\n" + ",\n".join(pad + readable_json(v, depth + 1) for v in items) + "\n" + end + "]"


# ------------------------------------------------------------------ folders


class RunLock:
    """An exclusive lock on a run folder for the life of this object (or process).

    Released, the ``.lock`` file goes with it, so a finished folder holds only its results; a
    killed run leaves it behind, unlocked, and the next holder takes it over. A holder checks that
    the file it locked is still the one at ``.lock`` (another may have removed it meanwhile)."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / ".lock"
        try:
            self._take(run_dir)
        except OSError as err:
            self.release()
            raise RunError(f"cannot write {self.path}: {_why_not_written(err)}") from err  # cause: the OSError

    def _take(self, run_dir: Path) -> None:
        while True:
            self.fh = self.path.open("a+")
            try:
                fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.fh.seek(0)
                holder = self.fh.read().strip() or "another process"
                self.fh.close()
                raise RunError(
                    f"{run_dir} is in use by {holder}: wait for it to finish (or stop it) before resuming this folder"
                ) from None
            if self._still_at_path():
                break
            self.fh.close()  # its holder removed it on release: lock the file now there
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(f"pid {os.getpid()} on {socket.gethostname()} since {now()}")
        self.fh.flush()

    def _still_at_path(self) -> bool:
        try:
            return os.path.samestat(os.fstat(self.fh.fileno()), os.stat(self.path))
        except FileNotFoundError:
            return False

    def release(self) -> None:
        if getattr(self, "fh", None) is not None and not self.fh.closed:
            if self._still_at_path():
                self.path.unlink(missing_ok=True)  # removed while held: no one can lock it in between
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_UN)
            try:
                self.fh.close()
            except OSError:  # its holder line not flushed (a full disk): the lock is released all the same
                pass


def new_run_dir(out: Path, name: str | None, default_name: str) -> Path:
    """A fresh folder under ``out``; an existing ``--name`` is refused, never reused."""
    if name:
        run_dir = out / name
        if run_dir.exists():
            raise RunError(f"{run_dir} already exists: choose another --name, or finish it with --resume {run_dir}")
        return run_dir
    run_dir = out / default_name
    n = 2
    while run_dir.exists():  # two runs of one config within a second
        run_dir = out / f"{default_name}-{n}"
        n += 1
    return run_dir


def find_resume_dir(out: Path, resume: str, marker: str) -> Path:
    """The folder ``--resume`` names (``latest``: the newest under ``out`` holding ``marker``)."""
    if resume != "latest":
        run_dir = Path(resume)
    else:
        candidates = sorted(p.parent for p in out.glob(f"*/{marker}"))
        if not candidates:
            raise RunError(f"--resume: no run folder under {out}")
        run_dir = candidates[-1]
    if not (run_dir / marker).exists():
        raise RunError(f"--resume: {run_dir} is not a run folder (no {marker})")
    return run_dir


def check_resumable(run_dir: Path, saved: SavedState, now: FolderState) -> None:
    """Refuse a resume whose saved state is of another layout or differs from ``now`` on one of its
    ``RESUME_KEYS``."""
    then, layout = saved.layout, now.layout
    if not isinstance(then, int):
        raise RunError(f"--resume {run_dir}: its state names no run-folder layout; start a new run")
    if then != layout:
        by = (
            ("an older ragsweep", "compare and report.html still read it")
            if then < layout
            else ("a newer ragsweep", "or resume it with that version")
        )
        raise RunError(
            f"--resume {run_dir}: written by {by[0]} (run-folder layout {then}; this one writes layout "
            f"{layout}), so its cases cannot be continued: start a new run ({by[1]})"
        )
    now_values = now.model_dump(mode="json")  # every field: RESUME_KEYS names fields of its class
    then_values = saved.model_extra or {}
    for key in now.RESUME_KEYS:
        was = then_values.get(key)  # an older file may lack a key: None, as a field it had not yet
        if was != now_values[key]:
            raise RunError(
                f"--resume {run_dir}: {key} differs ({was!r} then, {now_values[key]!r} now); start a new run instead"
            )


def make_dir(run_dir: Path) -> None:
    try:
        run_dir.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise RunError(f"{run_dir} already exists: choose another --name, or --resume it") from None
    except OSError as err:
        raise RunError(f"cannot create {run_dir}: {err}") from err


def _start(path: Path, marker: str, state: FolderState) -> RunLock:
    """A new folder's lock and state file; a failure (a full disk) removes the folder, so nothing is left
    that looks like a run, and says so in one line before any work."""
    lock = None
    try:
        lock = RunLock(path)
        write_json(path / marker, state.model_dump(mode="json"))
        return lock
    except RunError as err:
        if lock is not None:
            lock.release()
        shutil.rmtree(path, ignore_errors=True)
        cause = err.__cause__
        why = _why_not_written(cause) if isinstance(cause, OSError) else str(err)
        raise RunError(f"cannot start a run folder in {path.parent}: {why}; nothing was run") from err


# ------------------------------------------------------------------ the folder object


class RunFolder:
    """An eval run folder or a sweep folder: created or reopened (``--resume``), locked for the
    life of the object, with its state file, chunk table, case files and result.

    ``state``: what the run is (written to ``marker`` on creation); a resume refuses a folder
    whose saved state differs on any of its ``RESUME_KEYS``. ``path`` None: no folder (a dry run or the
    Python API without ``out``): every write goes nowhere.
    """

    def __init__(
        self,
        path: Path | None,
        state: FolderState | None = None,
        lock: RunLock | None = None,
        marker: str | None = None,
    ):
        self.path = path
        self.state = state
        self._lock = lock
        self._marker = marker  # set when this process created the folder (a new run, not a resumed one)
        self._known_chunks: dict[str, str] | None = None
        self._chunk_rows: list[ChunkRow] | None = None

    @classmethod
    def open(
        cls,
        out: Path,
        *,
        marker: str,
        state: StateT,
        default_name: str,
        name: str | None = None,
        resume: str | None = None,
        create: bool = True,
    ) -> RunFolder:
        if resume:
            path = find_resume_dir(out, resume, marker)
            lock = RunLock(path)
            try:
                saved = SavedState.model_validate(json.loads((path / marker).read_text()))
                check_resumable(path, saved, state)
            except BaseException:
                lock.release()
                raise
            if "started_at" in type(state).model_fields and saved.started_at is not None:
                state = state.model_copy(update={"started_at": saved.started_at})  # when the run began
            return cls(path, state, lock)
        path = new_run_dir(out, name, default_name)
        if not create:  # a dry run leaves nothing behind
            return cls(None, state)
        make_dir(path)
        return cls(path, state, _start(path, marker, state), marker=marker)

    @classmethod
    def none(cls, state: FolderState | None = None) -> RunFolder:
        return cls(None, state)

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.release()
        if exc_type is not None and self.never_started():
            shutil.rmtree(self.path, ignore_errors=True)  # type: ignore[arg-type]

    def never_started(self) -> bool:
        """A folder this process created that holds nothing but its state and lock: a run that
        failed before its first result leaves no half folder behind."""
        if self.path is None or self._marker is None or not self.path.is_dir():
            return False
        return {p.name for p in self.path.iterdir()} <= {self._marker, ".lock"}

    # ---------------------------------------------------------------- files
    def file(self, *parts: str) -> Path | None:
        return None if self.path is None else self.path.joinpath(*parts)

    def read_lines(self, *parts: str) -> list[JsonObject]:
        path = self.file(*parts)
        return read_jsonl(path) if path is not None else []

    def write_json(self, name: str, data: Any) -> None:
        if self.path is not None:
            write_json(self.path / name, data)

    def chunk_rows(self) -> list[ChunkRow]:
        """The folder's chunk table, read once (a resume needs it for the saved lists and the cases)."""
        if self._chunk_rows is None:
            self._chunk_rows = [chunk_row(row) for row in self.read_lines("chunks.jsonl")]
        return self._chunk_rows

    def append_chunks(self, hits: Iterable[Hit]) -> None:
        """Add to the folder's chunk table every chunk of ``hits`` it does not hold yet."""
        if self.path is None:
            return
        if self._known_chunks is None:
            self._known_chunks = {row["id"]: row["text"] for row in self.chunk_rows()}
        self._chunk_rows = None
        append_chunks(self.path / "chunks.jsonl", hits, self._known_chunks)

    def refer_chunks(self, result: CaseResult) -> JsonObject:
        """``result``'s line (its hits are in the chunk table) with a ``chunk`` id on each hit stored
        under another id than its document and offsets (:func:`stored_chunk_id`)."""
        known = self._known_chunks or {}
        line = result.line()
        stored_hits = line["hits"]
        if not isinstance(stored_hits, list):
            return line
        for hit, stored in zip(result.hits, stored_hits, strict=True):
            key = stored_chunk_id(hit.doc_id, hit.start, hit.end, hit.text, known)
            if key != chunk_id(hit.doc_id, hit.start, hit.end) and isinstance(stored, dict):
                stored["chunk"] = key
        return line

    def write_chunk_table(self, hits: Iterable[Hit]) -> None:
        """The chunk table anew (an eval's: every chunk of the index, the candidates of chance/oracle)."""
        if self.path is None:
            return
        (self.path / "chunks.jsonl").unlink(missing_ok=True)
        self._known_chunks, self._chunk_rows = {}, None
        append_chunks(self.path / "chunks.jsonl", hits, self._known_chunks)

    def save_served(self, served: Served, retrieved: Retrieved) -> None:
        """The index's chunk table, then every served list (chunk ids, not texts): what a resume
        needs to skip retrieval (``hits.jsonl``, removed once every case is done)."""
        if self.path is None:
            return
        self.write_chunk_table(h for hits in retrieved.chunks_by_doc.values() for h in hits)
        with JsonlWriter(self.path / "hits.jsonl") as writer:
            for case_id, by_k in served.items():
                lists: JsonObject = {str(k): [saved_hit(h) for h in hits] for k, hits in by_k.items()}
                writer.write({"id": case_id, "served": lists})

    def load_served(self) -> Retrieved | None:
        """What an interrupted run saved of retrieval: a ``Retrieved`` whose ``served`` are the lists
        (None without a chunk table)."""
        rows = self.chunk_rows()
        if not rows:
            return None
        by_doc: dict[str, list[Hit]] = {}
        texts: dict[str, str] = {}
        for row in rows:
            hit = Hit(rank=1, score=0.0, text=row["text"], doc_id=row["doc_id"], start=row["start"], end=row["end"])
            by_doc.setdefault(row["doc_id"], []).append(hit)
            texts[row["id"]] = row["text"]
        served = {}
        for saved in self.read_lines("hits.jsonl"):
            try:
                lists = _SavedLists.model_validate(saved)
                served[lists.id] = {
                    k: [
                        Hit(**h.model_dump(exclude={"text"}), text=texts[chunk_id(h.doc_id, h.start, h.end)])
                        for h in hits
                    ]
                    for k, hits in lists.served.items()
                }
            except (KeyError, TypeError, ValueError):
                continue
        return Retrieved(served=served, chunks_by_doc=by_doc, n_chunks=len(rows))

    def read_results(self, *parts: str) -> dict[str, CaseResult]:
        """The valid case lines of a cases file, as CaseResults by id (a torn or corrupt line is set
        aside by :func:`read_jsonl`; a line of another record version is computed again)."""
        rows = self.read_lines(*parts)
        if not rows or self.path is None:
            return {}
        texts = {row["id"]: row["text"] for row in self.chunk_rows()}
        report = self.path / "report.json"
        names = RunResult.model_validate_json(report.read_text()).case_metrics if report.is_file() else []
        lines = [line for line in expand_lines(rows, texts, names) if line.get("version") == RECORD_VERSION]
        results = [CaseResult.model_validate(line) for line in lines]
        return {result.id: result for result in results}

    def case_file(self, *parts: str, chunks: bool = False) -> CaseFile:
        """A sink for one configuration's results (``parts``: the cases file's path in the folder);
        ``chunks``: each result's hit texts go to the chunk table first (a sweep's shared table)."""
        return CaseFile(self, self.file(*parts), chunks=chunks)


class _SavedHit(Hit):
    text: str = ""  # a saved list's hit has none: its text is in the chunk table


class _SavedLists(BaseModel):
    """A line of ``hits.jsonl``: the lists served to one case, by depth."""

    id: str
    served: dict[int, list[_SavedHit]]


class CaseFile:
    """Compact case lines (:func:`ragsweep.evaluation.storage.compact`), each saved as computed."""

    def __init__(self, folder: RunFolder, path: Path | None, chunks: bool = False):
        self.folder = folder
        self.path = path
        self.chunks = chunks
        self._writer: JsonlWriter | None = None

    def served(self, served: Served, retrieved: Retrieved) -> None:
        pass

    def write(self, result: CaseResult) -> None:
        if self.path is None:
            return
        if self.chunks:
            self.folder.append_chunks(result.hits)
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = JsonlWriter(self.path)
        self._writer.write(compact(self._line(result)))

    def _line(self, result: CaseResult) -> JsonObject:
        return self.folder.refer_chunks(result) if self.chunks else result.line()

    def rewrite(self, results: Iterable[CaseResult], settled: bool = False) -> None:
        """The file again from ``results`` (an atomic replace); ``settled``: see ``storage.compact``."""
        if self.path is None:
            return
        self.close()
        tmp = self.path.with_suffix(".jsonl.tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for result in results:
                fh.write(_LINE.encode(compact(self._line(result), settled=settled)) + "\n")
        tmp.replace(self.path)

    def reset(self) -> None:
        """Start the file empty (a configuration computed again from the start)."""
        if self.path is not None:
            self.close()
            self.path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class RunCaseFile(CaseFile):
    """An eval run's cases file: the served lists are saved too, so a resume skips retrieval."""

    def served(self, served: Served, retrieved: Retrieved) -> None:
        self.folder.save_served(served, retrieved)
