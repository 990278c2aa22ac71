"""ragsweep's cache files: where they live (:func:`default_cache_dir`) and SQLite ones that heal
themselves (the embedding cache, the served-list cache, the LLM reply cache).

Used by the pipeline's caches and by :mod:`ragsweep.llm.cache`; it imports nothing of ragsweep.

A cache is a cache: a truncated, garbled or non-SQLite file must cost a rebuild,
never a run. :class:`SQLiteCacheFile` opens its file lazily and checks it once per
process (``PRAGMA quick_check``); when the file is corrupt, on open or on any later
read or write (``database disk image is malformed``, ``file is not a database``), it

1. logs a warning naming the file,
2. moves it aside as ``<name>.corrupt-<timestamp>`` (with its ``-wal``/``-shm``/``-journal``
   files, so a stale log is never replayed into the fresh file), or deletes it when it
   cannot be moved,
3. opens a fresh file with the schema and retries the operation once.

Other SQLite / OS errors (a locked file, a full disk, a read-only folder) are logged
(once per message) and the operation returns its default: a miss, a skipped write.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ragsweep.core import environment

log = logging.getLogger(__name__)

T = TypeVar("T")

_CORRUPT_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
_CORRUPT_TEXT = ("malformed", "not a database", "file is encrypted", "database corrupt")
_CHECKED: set[str] = set()  # files checked by quick_check in this process
_CHECKED_LOCK = threading.Lock()


def default_cache_dir() -> Path:
    """``$RAGSWEEP_CACHE_DIR``, else ``.cache/ragsweep``: the parse, embedding, served-list and LLM caches."""
    return environment.cache_dir()


def _cannot_write(err: sqlite3.Error) -> bool:
    """SQLite's ways of saying the file or its folder cannot be written."""
    text = str(err).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


class CorruptCacheError(sqlite3.DatabaseError):
    """``PRAGMA quick_check`` did not answer ``ok``."""


def is_corruption(err: BaseException) -> bool:
    """Whether a sqlite error means the file is damaged (not: locked, read-only, disk full)."""
    if isinstance(err, CorruptCacheError):
        return True
    if not isinstance(err, sqlite3.DatabaseError):
        return False
    name = getattr(err, "sqlite_errorname", None) or ""
    if name.startswith(_CORRUPT_CODES):
        return True
    text = str(err).lower()
    return any(t in text for t in _CORRUPT_TEXT)


def quarantine(path: str | Path) -> Path | None:
    """Move a damaged file aside as ``<name>.corrupt-<timestamp>``; delete it if it cannot move.

    Returns where it went (``None`` when it was deleted or had already gone).
    """
    path = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    moved: Path | None = target
    try:
        os.replace(path, target)
    except FileNotFoundError:
        moved = None
    except OSError:
        moved = None
        try:
            path.unlink()
        except OSError:
            pass
    for suffix in ("-wal", "-shm", "-journal"):
        side = path.with_name(path.name + suffix)
        if not side.exists():
            continue
        try:
            if moved is not None:
                os.replace(side, moved.with_name(moved.name + suffix))
            else:
                side.unlink()
        except OSError:
            try:
                side.unlink()
            except OSError:
                pass
    return moved


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def rows_for_keys(
    conn: sqlite3.Connection, select: str, keys: Sequence[str], batch: int = 500
) -> list[tuple[Any, ...]]:
    """The rows of ``select`` (``SELECT key, ... FROM table``) whose key is one of ``keys``, asked
    ``batch`` keys at a time (SQLite limits the number of bound variables in one statement)."""
    rows: list[tuple[Any, ...]] = []
    for i in range(0, len(keys), batch):
        part = list(keys[i : i + batch])
        rows.extend(conn.execute(f"{select} WHERE key IN ({','.join('?' * len(part))})", part).fetchall())
    return rows


class SQLiteCacheFile:
    """A thread-safe sqlite connection to a cache file, healed when the file is damaged.

    Args:
        path: the sqlite file (its folder is created).
        schema: statements run on every open (``CREATE TABLE IF NOT EXISTS ...``).
        what: what the cache holds, for messages ("embedding", "LLM reply").
        timeout: sqlite's busy timeout, seconds.
    """

    def __init__(self, path: str | Path, schema: Sequence[str], what: str = "cache", timeout: float = 30.0):
        self.path = Path(path)
        self.schema = tuple(schema)
        self.what = what
        self.timeout = timeout
        self.healed: list[Path | None] = []  # where each corrupt file went, in order
        self.disabled = False  # set when even a fresh file cannot be made: a cache-less run
        self._conn: sqlite3.Connection | None = None
        self._inode: int | None = None  # of the file the connection has open
        self._lock = threading.RLock()
        self._warned: set[str] = set()

    # ------------------------------------------------------------ connection
    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect(self.path)
        except sqlite3.OperationalError as err:
            if not self.path.is_file() or not _cannot_write(err):
                raise
            return self._open_copy(err)

    def _open_copy(self, err: sqlite3.Error) -> sqlite3.Connection:
        """A cache this process cannot write (a read-only folder or file system, a CI cache restored
        read-only): SQLite cannot even read a WAL-mode file there, so a private copy of it (and of
        its write-ahead log) is read instead; what this run adds is not kept."""
        folder = Path(tempfile.mkdtemp(prefix="ragsweep-read-only-cache-"))
        for suffix in ("", "-wal"):
            source = self.path.with_name(self.path.name + suffix)
            if source.is_file():
                shutil.copyfile(source, folder / source.name)
        log.warning(
            "ragsweep %s cache %s cannot be written (%s): reading a copy of it; what this run adds is not kept",
            self.what,
            self.path,
            " ".join(str(err).split())[:120],
        )
        conn = self._connect(folder / self.path.name)
        self._inode = _inode(self.path)
        return conn

    def _connect(self, path: Path) -> sqlite3.Connection:
        path.parent.mkdir(parents=True, exist_ok=True)
        key = str(path.resolve())
        conn = sqlite3.connect(str(path), timeout=self.timeout, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            with _CHECKED_LOCK:
                check = key not in _CHECKED
            if check:
                rows = conn.execute("PRAGMA quick_check").fetchall()
                problems = [str(r[0]) for r in rows if str(r[0]).lower() != "ok"]
                if problems:
                    raise CorruptCacheError(f"quick_check: {'; '.join(problems[:3])}"[:300])
            for statement in self.schema:
                conn.execute(statement)
            conn.commit()
        except BaseException:
            conn.close()
            raise
        with _CHECKED_LOCK:
            _CHECKED.add(key)
        self._inode = _inode(path)
        return conn

    def _close(self) -> None:
        self._inode = None
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None

    def _heal(self, err: BaseException) -> None:
        opened, self._inode = self._inode, None
        self._close()
        if opened is not None and _inode(self.path) != opened:
            # another cache object (or process) already moved the damaged file aside and
            # started a fresh one: use that, do not throw it away
            log.info("ragsweep %s cache %s was replaced meanwhile; reopening it", self.what, self.path)
            return
        moved = quarantine(self.path)
        with _CHECKED_LOCK:
            _CHECKED.discard(str(self.path.resolve()))
        self.healed.append(moved)
        where = f"moved aside to {moved}" if moved is not None else "deleted"
        log.warning(
            "ragsweep %s cache %s is corrupt (%s): %s; starting a fresh cache",
            self.what,
            self.path,
            " ".join(str(err).split())[:200],
            where,
        )

    def _warn_once(self, action: str, err: BaseException) -> None:
        text = f"{self.what} cache {action} failed ({self.path}): {' '.join(str(err).split())[:200]}"
        if text in self._warned:
            log.debug(text)
            return
        self._warned.add(text)
        log.warning("ragsweep %s; carrying on without it", text)

    # ------------------------------------------------------------ operations
    def run(self, op: Callable[[sqlite3.Connection], T], default: Any = None, action: str = "access") -> T | Any:
        """``op(connection)`` under the lock; heals a corrupt file and retries once.

        Never raises a sqlite or OS error: returns ``default`` instead (with a warning).
        """
        with self._lock:
            if self.disabled:
                return default
            for attempt in (0, 1):
                try:
                    if self._conn is None:
                        self._conn = self._open()
                    return op(self._conn)
                except (sqlite3.Error, OSError) as err:
                    corrupt = isinstance(err, sqlite3.Error) and is_corruption(err)
                    if corrupt and attempt == 0:
                        self._heal(err)
                        continue
                    if corrupt:  # the fresh file is damaged too (it could not be moved or deleted)
                        self._close()
                        self.disabled = True
                        log.warning(
                            "ragsweep %s cache %s still corrupt after healing (%s); running without this cache",
                            self.what,
                            self.path,
                            err,
                        )
                        return default
                    if self._conn is not None:
                        try:
                            self._conn.rollback()
                        except sqlite3.Error:
                            self._close()
                    self._warn_once(action, err)
                    return default
        return default  # pragma: no cover

    def open(self) -> bool:
        """Open (and check) now; ``False`` when the cache is unusable (warned)."""
        return bool(self.run(lambda conn: True, default=False, action="open"))

    def close(self) -> None:
        with self._lock:
            self._close()


class BlobTable:
    """A healing SQLite file holding one table of ``key -> value`` blobs: what the served-list, scored-case
    and interval caches store, each packing its values its own way. A read that fails is a miss, a write
    that fails is skipped (see :class:`SQLiteCacheFile`)."""

    def __init__(self, path: str | Path, table: str, what: str):
        self.table = table
        self._db = SQLiteCacheFile(
            path, (f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value BLOB)",), what
        )

    @classmethod
    def shared(cls, path: Path, table: str, what: str) -> BlobTable:
        """One object per file in this process (a sweep's configurations share its connection)."""
        key = str(path.resolve())
        with _SHARED_LOCK:
            if key not in _SHARED:
                _SHARED[key] = cls(key, table, what)
            return _SHARED[key]

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}

        def read(conn: sqlite3.Connection) -> dict[str, bytes]:
            return {
                key: bytes(value) for key, value in rows_for_keys(conn, f"SELECT key, value FROM {self.table}", keys)
            }

        found: dict[str, bytes] = self._db.run(read, default={}, action="read")
        return found

    def put_many(self, rows: dict[str, bytes]) -> None:
        if not rows:
            return

        def write(conn: sqlite3.Connection) -> None:
            conn.executemany(f"INSERT OR REPLACE INTO {self.table} (key, value) VALUES (?, ?)", list(rows.items()))
            conn.commit()

        self._db.run(write, action="write")

    def close(self) -> None:
        self._db.close()


_SHARED: dict[str, BlobTable] = {}
_SHARED_LOCK = threading.Lock()
