"""What the DocumentStore served, kept on disk: a warm run asks Pathway only new questions.

A served list is a function of the parsed corpus, the pipeline's index (its chunking and
retriever definitions, every variable they reference: ``PipelineConfig.index_key``), the
code that builds and serves the index, and the query itself (question, k, scope filter).
Every query is answered by Pathway *as of now* against the whole index, independently of
the other queries in its run (``tests/test_server_parity.py``), so a list Pathway served
once is the list it serves again for the same key.

The key of a query hashes all of that:

- the corpus' content hash (every parsed text and its id), and its outline hash (titles and
  headings, what ``$chunk_header`` prepends) when a document has either;
- ``index_key`` (chunking, ``$chunk_header`` included, + retriever factory, with the embedder's
  model, dtype and device knobs, + ``$route_docs`` when set);
- the code: the versions of pathway (its engine holds tantivy and the KNN index),
  sentence-transformers, transformers, torch and rjieba, whether torch sees a GPU, and a
  hash of the source files of ragsweep's serving modules and of every class or function
  the pipeline YAML names (``!pw.…``, ``!ragsweep.…``, a user's own ``!mypackage.…``);
- the question as written, k, the scope's filter string and the prefix depths asked.

A change to any of them is a miss, and Pathway answers. What the key cannot see is a
change to a module the named classes import in turn: after editing such code, run with
``--fresh-retrieval`` (or ``RAGSWEEP_SERVED_CACHE=0``), which always asks Pathway and
refreshes the cache. Each run folder's manifest says how many queries came from here.

A named class or function whose source cannot be read (a deleted or unreadable file, a module loaded from a
zip or built in memory) would enter the key as a constant, and an edit of it would be served the old lists:
for such a pipeline the cache is off (:func:`index_fingerprint` gives None, said once on stderr).

The cache is ``<cache dir>/served.sqlite`` (``RAGSWEEP_CACHE_DIR``); a damaged file is
moved aside and the queries are asked again (:class:`ragsweep.core.cache_files.SQLiteCacheFile`).
"""

from __future__ import annotations

import json
import sys
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ragsweep.core import environment
from ragsweep.core.cache_files import BlobTable, default_cache_dir
from ragsweep.core.environment import cuda_available
from ragsweep.core.hits import chunk_id, chunk_source, chunk_span
from ragsweep.core.keys import CodeDependencies, cache_key, digest_blocks, read_blocks
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus

# what the store serves is decided by ragsweep's pipeline package (a module added to it is covered without
# being listed), the chunk identities of core.hits, the knob declarations, the question limits of Pathway's
# BM25, and these packages (pathway's engine holds tantivy and the KNN index)
_CODE = CodeDependencies(
    modules=("ragsweep.pipeline", "ragsweep.core.hits", "ragsweep.core.knob", "ragsweep.datasets.pathway_limits"),
    packages=("pathway", "sentence-transformers", "transformers", "torch", "rjieba"),
)


def index_fingerprint(config: PipelineConfig, corpus: Corpus) -> str | None:
    """What every query of one index shares: corpus, index definition, code (None: the code of a component
    the YAML names cannot be read, so no key could see it change: the cache is off for this index)."""
    # each class or function the YAML names, read again on every call: an edited one is a miss at once
    components = component_digests(config.component_sources())
    if components is None:
        return None
    return cache_key(
        "served-index",
        corpus.content_hash,
        corpus.outline_hash,  # titles, headings: what chunk headers are made of ("" where none has one)
        corpus.elements_hash,  # an app's parser: its elements too ("" for ragsweep's own parse)
        config.index_key,
        _CODE.fingerprint(),
        cuda_available(),
        components,
    )


def component_digests(sources: Mapping[str, Mapping[str, str]]) -> list[list[Any]] | None:
    """``[module, hash of its source file]`` for each module of :meth:`PipelineConfig.component_sources`
    (a module whose components lie in several files: the list of their hashes), or None when one
    component's source cannot be read, said once on stderr."""
    found: list[list[Any]] = []
    for module, places in sources.items():
        digests: list[str] = []
        for name, path in places.items():
            digest, why = _source_digest(path)
            if digest is None:
                _say_off(name, why)
                return None
            digests.append(digest)
        unique = list(dict.fromkeys(digests))
        found.append([module, unique[0] if len(unique) == 1 else unique])
    return found


def _source_digest(path: str) -> tuple[str | None, str]:
    """A source file's hash, or None and why it cannot be had."""
    if not path:
        return None, "it is Python code with no source file (a module without one, code built by exec)"
    try:
        return digest_blocks(read_blocks(path)), ""
    except OSError as err:
        return None, f"its source file {path} cannot be read ({err.strerror or err})"


_SAID: set[str] = set()  # the lines said in this process: one per component and reason, not one per query


def _say_off(name: str, why: str) -> None:
    line = f"ragsweep: served-list cache off: the code of {name} cannot be seen, {why}; Pathway answers every query"
    if line not in _SAID:
        _SAID.add(line)
        print(line, file=sys.stderr)


def query_key(index_key: str, text: str, k: int, metadata_filter: str | None, prefix_ks: Sequence[int]) -> str:
    return cache_key("served-query", index_key, text, int(k), metadata_filter, list(prefix_ks))


def chunks_key(index_key: str) -> str:
    return cache_key("served-chunks", index_key)


UNRESOLVED = object()  # a stored list whose chunk texts the stored chunk table cannot give back: a miss


def _chunk_of(item: JsonValue) -> str | None:
    """The chunk id of a stored item (None: not a chunk with offsets)."""
    match item:
        case {"metadata": dict() as meta}:
            span = chunk_span(meta)
            return None if span is None else chunk_id(chunk_source(meta), *span)
    return None


def compact_list(raw: Any, texts: Mapping[str, str]) -> Any:
    """A served list as stored: the text of each item that the index's chunk table holds (same
    document, offsets and text) is left out, the table stores it once (a list repeated every
    chunk text: 421 MB for the 83,640 lists of the 510-contract CUAD eval). Lossless:
    :func:`expand_list` gives the list back equal to ``raw``."""
    if not isinstance(raw, list):
        return raw
    items, from_table = [], []
    for n, item in enumerate(raw):
        key = _chunk_of(item)
        match item:
            case {"text": str() as text} if key is not None and texts.get(key) == text:
                item = {k: v for k, v in item.items() if k != "text"}
                from_table.append(n)
        items.append(item)
    return {"items": items, "text_from_table": from_table} if from_table else raw


def expand_list(value: Any, texts: Mapping[str, str] | None) -> Any:
    """The served list :func:`compact_list` stored, texts put back from the chunk table
    (:data:`UNRESOLVED` when the table lacks one); a list stored whole comes back as it is."""
    if not isinstance(value, dict) or "text_from_table" not in value:
        return value
    items = list(value["items"])  # compact_list writes both keys
    for n in value["text_from_table"]:
        text = texts.get(_chunk_of(items[n]) or "") if texts is not None and 0 <= n < len(items) else None
        if text is None:
            return UNRESOLVED
        items[n] = {"text": text, **items[n]}
    return items


def _pack(value: JsonValue) -> bytes:
    return zlib.compress(json.dumps(value, separators=(",", ":")).encode(), 6)


def _unpack(blob: bytes) -> JsonValue:
    """The stored value, or None for a row that does not decode (a miss)."""
    try:
        value: JsonValue = json.loads(zlib.decompress(blob))
        return value
    except (zlib.error, TypeError, ValueError):
        return None


class ServedCache:
    """Served lists (Pathway's raw result rows) and chunk tables, by key."""

    def __init__(self, path: Path | None):
        self._db = BlobTable(path, "served", what="served-list") if path is not None else None

    @classmethod
    def default(cls) -> ServedCache | None:
        """The cache in ragsweep's cache folder, or None when turned off."""
        return cls(default_cache_dir() / "served.sqlite") if environment.served_cache_enabled() else None

    def get_many(
        self, keys: Iterable[str]
    ) -> dict[str, Any]:  # JSON values; the store reads its chunk tables from them
        if self._db is None:
            return {}
        found = ((key, _unpack(blob)) for key, blob in self._db.get_many(list(keys)).items())
        return {key: value for key, value in found if value is not None}

    def put_many(self, items: dict[str, JsonValue]) -> None:
        if self._db is not None:
            self._db.put_many({k: _pack(v) for k, v in items.items()})

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
