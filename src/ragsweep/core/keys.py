"""The one way ragsweep names what it computed: cache keys, code fingerprints and content digests.

Every cache (parse, embedding, vector, served list, scored case, interval, stored answer, LLM reply,
config facts, pytest result) keys its rows with :func:`cache_key`; every cache whose rows depend on
code keys that code with :func:`code_fingerprint`, given the modules and packages it depends on
(one :class:`CodeDependencies` per cache, declared next to it).
A key is a SHA-256 over a namespace and parts written as canonical JSON, so two caches never share a
key by accident, and the same parts give the same key in every process and on every machine.

Imports nothing of ragsweep and nothing outside the standard library: reading a key imports no
engine.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import NamedTuple

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def _canonical(part: object) -> object:
    """A JSON-ready form of a key part: sequences as lists, mappings sorted, anything else by ``str``."""
    if part is None or isinstance(part, bool | int | float | str):
        return part
    if isinstance(part, bytes):
        return {"bytes": hashlib.sha256(part).hexdigest()}
    if isinstance(part, dict):
        return {str(k): _canonical(v) for k, v in sorted(part.items(), key=lambda kv: str(kv[0]))}
    if isinstance(part, list | tuple):
        return [_canonical(p) for p in part]
    if isinstance(part, set | frozenset):
        return sorted((_canonical(p) for p in part), key=repr)
    return str(part)


def cache_key(namespace: str, *parts: object, length: int = 64) -> str:
    """The key of one row of the cache ``namespace``: SHA-256 of the namespace and ``parts``.

    ``parts`` are JSON values (tuples and sets allowed, mappings sorted by key, bytes by their digest,
    anything else by ``str``). ``length`` shortens the hex digest where a key is shown to people (a
    run folder's name, a config hash)."""
    payload = json.dumps([namespace, *(_canonical(p) for p in parts)], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def digest(data: str | bytes, length: int = 64, *, algorithm: str = "sha256") -> str:
    """A text's or bytes' hash, as hex: the content id of a document, a file, a chunk. ``algorithm``
    (a :mod:`hashlib` name) only where an id already published with another one must keep its value."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return hashlib.new(algorithm, raw).hexdigest()[:length]


def digest_blocks(blocks: Iterable[bytes]) -> str:
    """SHA-256 of bytes read block by block (a model file, a large document), as hex."""
    found = hashlib.sha256()
    for block in blocks:
        found.update(block)
    return found.hexdigest()


def read_blocks(path: str | Path, size: int = 1 << 20) -> Iterator[bytes]:
    """A file's bytes, ``size`` at a time (raises ``OSError`` when it cannot be read)."""
    with open(path, "rb") as f:
        while block := f.read(size):
            yield block


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes ("-" when it cannot be read: a cache then misses, never fails)."""
    try:
        return digest_blocks(read_blocks(path))
    except OSError:
        return "-"


def package_version(name: str) -> str:
    """An installed distribution's version, "-" when it is not installed."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "-"


def _source_of(name: str) -> Path | None:
    """A module's source file (a package's ``__init__.py``), found on disk: neither it nor its parent
    packages are imported (ragsweep's serving modules import Pathway)."""
    top, *inner = name.split(".")
    try:
        spec = find_spec(top)  # a top-level name: its spec is found without importing it
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    place = Path(spec.origin)
    for part in inner:
        if place.name != "__init__.py":
            return None
        package, module = place.parent / part / "__init__.py", place.parent / f"{part}.py"
        place = package if package.is_file() else module
        if not place.is_file():
            return None
    return place


def _module_files(name: str) -> list[Path]:
    """The source files of a module, or of every module of a package."""
    if name == "ragsweep":
        return sorted(_PACKAGE_ROOT.rglob("*.py"))
    origin = _source_of(name)
    if origin is None:
        return []
    return sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]


def _shown(path: Path) -> str:
    """A source file by its place inside ragsweep (the same in every checkout), else its full path."""
    return path.relative_to(_PACKAGE_ROOT).as_posix() if path.is_relative_to(_PACKAGE_ROOT) else path.as_posix()


@lru_cache(maxsize=64)
def _fingerprint(modules: tuple[str, ...], packages: tuple[str, ...]) -> str:
    parts: list[object] = []
    for module in modules:
        files = _module_files(module)
        if not files:  # a declaration naming a module that moved: a key blind to its code would hit stale rows
            raise LookupError(f"code fingerprint: no source file found for module {module!r}")
        parts.append([module, [[_shown(f), file_digest(f)] for f in files]])
    parts.append([[p, package_version(p)] for p in packages])
    return cache_key("code", *parts)


def code_fingerprint(modules: Sequence[str] = ("ragsweep",), packages: Iterable[str] = ()) -> str:
    """What computed results depend on: the source of ``modules`` (dotted names; a package means all its
    modules, ``"ragsweep"`` the whole package) and the installed versions of ``packages`` (distribution
    names). Read from the files, never by importing them."""
    return _fingerprint(tuple(modules), tuple(packages))


class CodeDependencies(NamedTuple):
    """What one cache's rows are computed by, declared once next to the cache: modules (dotted names) and
    installed distributions. :meth:`fingerprint` is the part of its keys that stands for that code."""

    modules: tuple[str, ...] = ("ragsweep",)
    packages: tuple[str, ...] = ()

    def fingerprint(self) -> str:
        return code_fingerprint(self.modules, self.packages)
