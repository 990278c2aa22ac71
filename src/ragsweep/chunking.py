"""Pathway's TokenCountSplitter, with each chunk's character offsets in its document.

The splitting itself is Pathway's own (``TokenCountSplitter.chunk``); this module
only finds where each chunk sits in the text it came from and stores that as
``start``/``end`` in the chunk metadata, so evidence coverage can be judged for
any chunk size.
"""

from __future__ import annotations

import time
import unicodedata

from pathway.xpacks.llm.splitters import TokenCountSplitter


def locate_chunks(text: str, chunks: list[str]) -> list[tuple[int, int]]:
    """Offsets of consecutive chunks in ``text``.

    Chunks come out of the splitter in order and nearly back to back, so each one
    is searched from where the previous one ended (with a little slack for a
    token re-encoded differently at a boundary). A chunk that cannot be found
    verbatim gets the span right after its predecessor, of its own length.
    """
    spans: list[tuple[int, int]] = []
    cursor = 0
    for chunk in chunks:
        pos = text.find(chunk, max(0, cursor - 16))
        if pos < 0:
            stripped = chunk.strip()
            pos = text.find(stripped, max(0, cursor - 16)) if stripped else -1
            if pos >= 0:
                pos -= chunk.index(stripped[:1]) if stripped else 0
        if pos < 0:
            pos = cursor
        end = min(len(text), pos + len(chunk))
        spans.append((pos, end))
        cursor = end
    return spans


class OffsetTokenCountSplitter(TokenCountSplitter):
    """``TokenCountSplitter`` whose chunk metadata carries ``start``/``end`` offsets."""

    seconds = 0.0  # time spent splitting in this process (all instances)
    calls = 0

    def chunk(self, text: str, metadata: dict = {}, **kwargs) -> list[tuple[str, dict]]:
        started = time.perf_counter()
        pieces = super().chunk(text, metadata, **kwargs)
        normalised = unicodedata.normalize("NFKC", text)
        spans = locate_chunks(normalised, [piece for piece, _ in pieces])
        out = [(piece, {**meta, "start": start, "end": end}) for (piece, meta), (start, end) in zip(pieces, spans)]
        OffsetTokenCountSplitter.seconds += time.perf_counter() - started
        OffsetTokenCountSplitter.calls += 1
        return out
