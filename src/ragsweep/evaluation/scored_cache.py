"""Scored cases kept on disk: a case whose inputs are unchanged is not judged and scored again.

A :class:`~ragsweep.evaluation.records.CaseResult` is a pure function of what
:func:`ragsweep.evaluation.loop.score` hands :func:`~ragsweep.evaluation.case_scoring.build_case_result`
for it (the case, its served lists at every depth, its candidate chunks, its answer and verdict, the
relevance rule, the top_k, the language, the token budgets, whether ragas' string metrics are added)
and of the parsed texts it reads to locate its evidence, computed by ragsweep's code and the
packages it scores with. The key hashes the first group and the code; the texts are a dependency
found while scoring: the entry keeps the ids of the documents the case read (or every document, when
it searched them all) with a hash of their texts, and a hit is taken only when those texts are
unchanged. So after one document of the folder changes, only the cases that read it, or whose lists,
candidates or answers moved, are scored again (``ragsweep watch``), and a warm ``eval`` never imports
ragas.

The code: a hash of every source file of the ragsweep package and the versions of the packages that
score (ragas, rapidfuzz, rouge-score, nltk, numpy, pydantic). ``RAGSWEEP_SCORED_CACHE=0`` turns it
off; ``<cache dir>/scored.sqlite``, healed like the other caches when damaged. An entry is a pickled
result (floats, NaN included, come back bit for bit), read back as a new object for each run.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache, partial
from pathlib import Path
from typing import NamedTuple

from ragsweep.core.cache_files import BlobTable, default_cache_dir
from ragsweep.core.environment import scored_cache_enabled
from ragsweep.core.hits import Hit
from ragsweep.core.keys import CodeDependencies, cache_key, digest
from ragsweep.evaluation.records import CaseResult

# a scored case is computed by ragsweep's code and the packages that score
_CODE = CodeDependencies(packages=("ragas", "rapidfuzz", "rouge-score", "nltk", "numpy", "pydantic"))
EVERY_DOCUMENT = "*"  # the case searched every parsed document


class ReadTexts(Mapping[str, str]):
    """The parsed texts, noting which documents a case reads (all of them once it lists them)."""

    def __init__(self, texts: Mapping[str, str]):
        self.texts = texts
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return self.texts[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return key in self.texts

    def __iter__(self) -> Iterator[str]:
        self.read.add(EVERY_DOCUMENT)
        return iter(self.texts)

    def __len__(self) -> int:
        self.read.add(EVERY_DOCUMENT)
        return len(self.texts)


class Inputs(NamedTuple):
    """What one case's result is computed from, besides the texts it reads."""

    case: object
    served: Mapping[int, Sequence[Hit]]
    candidates: Sequence[Hit] | None
    answer: object
    verdict: object
    settings: str  # top_k, relevance rule, language, budgets, ragas' string metrics: the same for every case
    pre_rerank: Sequence[Hit] | None = None  # the store's list before the reranker (the funnel's rerank stage)


class _PerObject:
    """Values memoised by an object's identity, the object kept so that its id is not reused."""

    def __init__(self) -> None:
        self._found: dict[int, tuple[object, str]] = {}

    def value(self, obj: object, compute: Callable[[], str]) -> str:
        if (known := self._found.get(id(obj))) is None:
            known = self._found[id(obj)] = (obj, compute())
        return known[1]


class Digests:
    """Hashes of texts and of documents, each computed once per run."""

    def __init__(self, texts: Mapping[str, str]):
        self.texts = texts
        self.text = cache(partial(digest, length=32))
        self._lists = _PerObject()  # each scope's candidates are one list, shared
        self._hits = _PerObject()  # a hit in several lists is written once

    def hits(self, hits: Sequence[Hit]) -> str:
        """A list of hits, memoised by the list object."""
        return self._lists.value(hits, lambda: cache_key("hits", [self._hit(h) for h in hits], length=32))

    def _hit(self, hit: Hit) -> str:
        """One hit's fields, named, its texts by their hashes."""
        return self._hits.value(hit, lambda: _hit_row(hit, self.text))

    def documents(self, ids: Sequence[str]) -> str:
        """The texts of these documents (absent ones as absent); :data:`EVERY_DOCUMENT` stands for all."""
        names = sorted(self.texts) if EVERY_DOCUMENT in ids else sorted(ids)
        parts = [f"{d}\0{self.text(t) if (t := self.texts.get(d)) is not None else '-'}" for d in names]
        if EVERY_DOCUMENT in ids:
            parts.insert(0, EVERY_DOCUMENT)
        return cache_key("documents", parts, length=32)


def _hit_row(hit: Hit, text: Callable[[str], str]) -> str:
    # every field by name (a subclass's too), in the model's order: an order that differs only misses
    fields = dict(vars(hit))
    fields["text"], fields["header"] = text(hit.text), text(hit.header)
    return repr(fields)


def case_key(inputs: Inputs, digests: Digests) -> str:
    served = {k: digests.hits(v) for k, v in sorted(inputs.served.items())}
    candidates = digests.hits(inputs.candidates) if inputs.candidates is not None else None
    pre_rerank = digests.hits(inputs.pre_rerank) if inputs.pre_rerank is not None else None
    return cache_key("scored-case", _CODE.fingerprint(), inputs.settings, _dump(inputs.case), served, candidates,
                     _dump(inputs.answer), _dump(inputs.verdict), pre_rerank)  # fmt: skip


def _dump(value: object) -> str:
    dump = getattr(value, "model_dump_json", None)
    return dump() if callable(dump) else repr(value)


class Entry(NamedTuple):
    read: list[str]  # the documents the case read (or EVERY_DOCUMENT)
    texts: str  # their texts' hash then
    result: bytes  # the pickled CaseResult


class ScoredCache:
    """Scored cases by key, each with the documents it read."""

    def __init__(self, path: Path | None):
        self._db = BlobTable.shared(path, "scored", what="scored-case") if path is not None else None

    @classmethod
    def default(cls) -> ScoredCache | None:
        """The cache in ragsweep's cache folder, or None when off."""
        return cls(default_cache_dir() / "scored.sqlite") if scored_cache_enabled() else None

    def get_many(self, keys: Sequence[str], digests: Digests) -> dict[str, CaseResult]:
        """The results stored under ``keys`` whose documents still have the texts they had."""
        if self._db is None:
            return {}
        found: dict[str, CaseResult] = {}
        for key, blob in self._db.get_many(keys).items():
            try:
                entry = Entry(*pickle.loads(zlib.decompress(blob)))
                result = pickle.loads(entry.result)
            except Exception:  # noqa: BLE001 - a damaged or foreign row is a miss
                continue
            if isinstance(result, CaseResult) and digests.documents(entry.read) == entry.texts:
                found[key] = result
        return found

    def put_many(self, rows: Mapping[str, tuple[set[str], CaseResult]], digests: Digests) -> None:
        if self._db is None:
            return
        entries = {
            key: Entry(sorted(read), digests.documents(sorted(read)), pickle.dumps(result))
            for key, (read, result) in rows.items()
        }
        self._db.put_many({key: zlib.compress(pickle.dumps(tuple(entry)), 1) for key, entry in entries.items()})

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


class CaseCache(NamedTuple):
    """The cache and one run's hashes of its texts and lists."""

    store: ScoredCache
    digests: Digests

    @classmethod
    def open(cls, texts: Mapping[str, str]) -> CaseCache | None:
        """For a run over these parsed texts; None when the cache is off."""
        store = ScoredCache.default()
        return cls(store, Digests(texts)) if store is not None else None
