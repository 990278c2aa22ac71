"""Source passages for generation: the pipeline's own parse and split, drawn stratified over documents.

The chunks are exactly the ones the pipeline indexes: the parsed text of
:func:`ragsweep.pipeline.corpus.parse_corpus` cut by the configuration's splitter
(``PipelineConfig.build().splitter``, Pathway's ``TokenCountSplitter`` with offsets in
``pipelines/default.yaml``). A question is therefore written from a passage the store
can serve as one chunk.

Sampling is *stratified over documents*: documents are visited in a seeded random
order, one unused chunk of each in turn (round robin), so ``n`` passages cover
``min(n, documents)`` documents and no document gets two passages before every
document with chunks left got one. Chunks too short or with too few words to ask
anything about (a title line, a page number, a table of dots) are left out.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass

MIN_CHARS = 200  # a passage shorter than this rarely holds a fact worth a question
MIN_WORDS = 30
_WORD = re.compile(r"[^\W\d_]{2,}")


@dataclass(frozen=True)
class SourceChunk:
    """One chunk of the pipeline's split: offsets into its document's parsed text.

    ``start``/``end`` are the splitter's offsets (the text the splitter saw, see
    :mod:`ragsweep.pipeline.chunking`); evidence offsets are located again in the parsed text.
    """

    doc_id: str
    start: int
    end: int
    text: str

    @property
    def key(self) -> tuple[str, int]:
        return (self.doc_id, self.start)


def split_corpus(corpus, config) -> list[SourceChunk]:
    """Every chunk the pipeline's splitter makes of every parsed document, in document order."""
    # deferred: the splitter imports pathway (~1 s); `ragsweep generate --help` reads this module
    from ragsweep.core.hits import split_header

    # deferred: the store imports pathway (~1 s); `ragsweep generate --help` reads this module
    from ragsweep.pipeline.store import outline_metadata

    splitter = config.build().splitter
    chunks: list[SourceChunk] = []
    for doc in sorted(corpus.documents, key=lambda d: d.doc_id):
        pieces = splitter.chunk(doc.text, {"doc_id": doc.doc_id, "path": doc.doc_id, **outline_metadata(doc)})
        cursor = 0
        for served, meta in pieces:
            _, piece = split_header(served, meta)  # a passage is the document's own text
            if "start" in meta and "end" in meta:
                start, end = int(meta["start"]), int(meta["end"])
            else:  # a splitter of Pathway's own records no offsets
                pos = doc.text.find(piece, cursor)
                start, end = (pos, pos + len(piece)) if pos >= 0 else (cursor, cursor + len(piece))
            cursor = max(cursor, end)
            chunks.append(SourceChunk(doc.doc_id, start, end, piece))
    return chunks


def usable(chunk: SourceChunk) -> bool:
    """Enough prose to ask something about."""
    text = chunk.text.strip()
    return len(text) >= MIN_CHARS and len(_WORD.findall(text)) >= MIN_WORDS


def by_document(chunks: Iterable[SourceChunk]) -> dict[str, list[SourceChunk]]:
    out: dict[str, list[SourceChunk]] = {}
    for c in chunks:
        if usable(c):
            out.setdefault(c.doc_id, []).append(c)
    return out


class ChunkSampler:
    """Seeded, stratified draws of unused chunks (a chunk is never the source of two questions).

    Every draw continues the same random sequence, so a run with the same seed, corpus
    and configuration draws the same passages in the same order.
    """

    def __init__(self, chunks: Sequence[SourceChunk], seed: int | str):
        self.rng = random.Random(seed)
        self.docs = by_document(chunks)
        # each document's chunks in a seeded random order; documents in a seeded order
        self.queues: defaultdict[str, list[SourceChunk]] = defaultdict(list)  # a document without chunks: none
        for doc_id in sorted(self.docs):
            queue = list(self.docs[doc_id])
            self.rng.shuffle(queue)
            self.queues[doc_id] = queue
        self.order = sorted(self.docs)
        self.rng.shuffle(self.order)
        self._next_doc = 0
        self.used: set[tuple[str, int]] = set()

    @property
    def remaining(self) -> int:
        return sum(1 for q in self.queues.values() for c in q if c.key not in self.used)

    def _pop(self, doc_id: str, avoid: Set[tuple[str, int]] = frozenset()) -> SourceChunk | None:
        queue = self.queues[doc_id]
        for i, chunk in enumerate(queue):
            if chunk.key not in self.used and chunk.key not in avoid:
                del queue[i]
                self.used.add(chunk.key)
                return chunk
        return None

    def draw(self, n: int, exclude_docs: Iterable[str] = ()) -> list[SourceChunk]:
        """Up to ``n`` unused chunks, one per document in turn (round robin over the documents)."""
        excluded = set(exclude_docs)
        out: list[SourceChunk] = []
        idle = 0
        while len(out) < n and self.order and idle < len(self.order):
            doc_id = self.order[self._next_doc % len(self.order)]
            self._next_doc += 1
            chunk = None if doc_id in excluded else self._pop(doc_id)
            if chunk is None:
                idle += 1
                continue
            idle = 0
            out.append(chunk)
        return out

    def draw_pairs(self, n: int) -> list[tuple[SourceChunk, SourceChunk]]:
        """Up to ``n`` pairs of unused chunks for multi-hop questions: two chunks of one
        document (its round-robin turn), else, for a document with one chunk left, that
        chunk and one of the next document with chunks left."""
        out: list[tuple[SourceChunk, SourceChunk]] = []
        idle = 0
        while len(out) < n and self.order and idle < len(self.order):
            doc_id = self.order[self._next_doc % len(self.order)]
            self._next_doc += 1
            first = self._pop(doc_id)
            if first is None:
                idle += 1
                continue
            second = self._pop(doc_id)
            if second is None:
                for step in range(1, len(self.order)):
                    other = self.order[(self._next_doc - 1 + step) % len(self.order)]
                    second = self._pop(other)
                    if second is not None:
                        break
            if second is None:  # nothing left to pair with
                self.used.discard(first.key)
                self.queues[doc_id].insert(0, first)
                break
            idle = 0
            a, b = sorted((first, second), key=lambda c: (c.doc_id, c.start))
            out.append((a, b))
        return out

    def draw_from(self, doc_ids: Sequence[str], n: int) -> list[SourceChunk]:
        """Up to ``n`` unused chunks from these documents, round robin in the given order."""
        out: list[SourceChunk] = []
        idle = 0
        i = 0
        while len(out) < n and doc_ids and idle < len(doc_ids):
            chunk = self._pop(doc_ids[i % len(doc_ids)])
            i += 1
            if chunk is None:
                idle += 1
                continue
            idle = 0
            out.append(chunk)
        return out

    def take(self, chunk: SourceChunk) -> bool:
        """Mark a chunk chosen elsewhere (by retrieval) as used; False if it already was."""
        if chunk.key in self.used:
            return False
        self.used.add(chunk.key)
        self.queues[chunk.doc_id] = [c for c in self.queues[chunk.doc_id] if c.key != chunk.key]
        return True
