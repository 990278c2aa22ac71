"""Pathway's TokenCountSplitter, with each chunk's character offsets in its document.

The splitting is Pathway's ``TokenCountSplitter`` algorithm (with its lower bound
kept in tokens, see :func:`split_tokens`); this module also finds where each
chunk sits in the text it came from and stores that as ``start``/``end`` in the
chunk metadata, so evidence coverage can be judged for any chunk size.

``chunk_header`` (``$chunk_header``) prepends to each chunk, for the embedder and BM25
alike, its document's title and, with ``title+heading``, the nearest section heading
(:func:`header_of`). The pieces are split exactly as without a header (the header does not
count toward ``max_tokens``), so ``start``/``end`` stay those of the piece in the original
text; the chunk metadata's ``header`` says what was prepended.

The knobs (``$min_tokens``, ``$max_tokens``, ``$chunk_header``) are declared in
:mod:`ragsweep.pipeline.chunking_knobs` (Pathway-free: a spec reads them).
"""

from __future__ import annotations

import bisect
import functools
import time
import unicodedata
from pathlib import PurePosixPath
from typing import Any

from pathway.xpacks.llm.splitters import TokenCountSplitter

from ragsweep.core.errors import ConfigError
from ragsweep.core.offline import ensure_offline
from ragsweep.pipeline.chunking_knobs import CHUNK_HEADERS


def header_of(mode: str, metadata: dict[str, Any], start: int) -> str:
    """What ``mode`` prepends to the chunk starting at ``start`` of the document ``metadata``
    describes: ``"{title}\n\n"`` or ``"{title}\n{heading}\n\n"`` (``""`` for ``none``).

    The title is the document's ``title`` (Docling's, see :mod:`ragsweep.pipeline.corpus`), else
    its file stem; the heading is the last of its ``headings`` (``[offset, text]`` pairs) that
    starts at or before ``start``, left out when there is none or it is the title itself.
    """
    if mode == "none":
        return ""
    meta = {"doc_id": None, "path": "", "title": None, "headings": None, **metadata}
    name = str(meta["doc_id"] or meta["path"]).replace("\\", "/")
    lines = [_one_line(str(meta["title"] or PurePosixPath(name).stem))]
    if not lines[0]:  # a document known by no name (no metadata): nothing to put first
        return ""
    headings = (meta["headings"] or []) if mode == "title+heading" else []
    at = bisect.bisect_right([int(offset) for offset, _ in headings], start) - 1
    if at >= 0 and _one_line(str(headings[at][1])) not in ("", lines[0]):
        lines.append(_one_line(str(headings[at][1])))
    return "\n".join(lines) + "\n\n"


def _one_line(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


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
        pos = cursor if text.startswith(chunk, cursor) else text.find(chunk, max(0, cursor - 16))
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


def split_tokens(text: str, min_tokens: int, max_tokens: int, encoding_name: str, punctuation: list[str]) -> list[str]:
    """Pathway's ``TokenCountSplitter`` algorithm with its ``min_tokens`` bound kept in tokens.

    Pathway's splitter takes ``max_tokens`` tokens, then cuts back to the last
    punctuation mark when that mark lies more than ``3 * min_tokens`` *characters*
    in; with ~4 characters per token that leaves chunks below ``min_tokens``, and
    its cut of the final piece can leave a one-token tail. Here the cut is taken
    only when the kept part still has ``min_tokens`` tokens, and the final piece
    is kept whole, so every chunk but a document's last lies in
    [``min_tokens``, ``max_tokens``], as Pathway's docstring promises.
    """
    import tiktoken

    tokenizer = tiktoken.get_encoding(encoding_name)
    tokens = tokenizer.encode_ordinary(text)
    chunks: list[str] = []
    i = 0
    while i < len(tokens):
        chunk = tokenizer.decode(tokens[i : i + max_tokens])
        if i + max_tokens < len(tokens):
            last = max(chunk.rfind(p) for p in punctuation)
            if last != -1:
                cut = chunk[: last + 1]
                if len(tokenizer.encode_ordinary(cut)) >= min_tokens:
                    chunk = cut
        i += max(1, len(tokenizer.encode_ordinary(chunk)))
        chunks.append(chunk)
    return chunks


class OffsetTokenCountSplitter(TokenCountSplitter):
    """``TokenCountSplitter`` whose chunk metadata carries ``start``/``end`` offsets.

    ``strict_min_tokens`` (default) measures the punctuation cut in tokens (see
    :func:`split_tokens`); ``False`` runs Pathway's own ``chunk`` unchanged.
    ``chunk_header`` (one of :data:`CHUNK_HEADERS`) prepends :func:`header_of` to each chunk; it
    needs the document's metadata, which ragsweep's DocumentStore hands the splitter
    (:attr:`takes_metadata`).
    """

    seconds = 0.0  # time spent splitting in this process (all instances)
    calls = 0  # documents split (a document already split with the same parameters is not split again)
    memo_hits = 0
    # (text digest, parameters) -> [(piece, start, end)]: a store asked many batches in one process
    # (RagStore.retrieve, the Python API, a sweep's top-k variants) splits each document once
    _memo: "dict[tuple, list[tuple[str, int, int]]]" = {}
    MEMO_LIMIT = 20_000

    def __init__(
        self,
        min_tokens: int = 50,
        max_tokens: int = 500,
        encoding_name: str = "cl100k_base",
        strict_min_tokens: bool = True,
        chunk_header: str = "none",
    ):
        if chunk_header not in CHUNK_HEADERS:
            raise ValueError(f"chunk_header = {chunk_header!r}: must be one of {', '.join(CHUNK_HEADERS)}")
        super().__init__(min_tokens=min_tokens, max_tokens=max_tokens, encoding_name=encoding_name)
        self.strict_min_tokens = strict_min_tokens
        self.chunk_header = chunk_header

    @property
    def takes_metadata(self) -> bool:
        """Does a chunk depend on its document's metadata (title, headings, file name)?"""
        return self.chunk_header != "none"

    def _with_headers(self, pieces: list[tuple[str, int, int]], metadata: dict) -> list[tuple[str, dict]]:
        if not self.takes_metadata:
            return [(piece, {**metadata, "start": start, "end": end}) for piece, start, end in pieces]
        # each chunk carries its own header; the document's list of headings stays out of it
        meta = {k: v for k, v in metadata.items() if k != "headings"}
        out = []
        for piece, start, end in pieces:
            header = header_of(self.chunk_header, metadata, start)
            out.append((header + piece, {**meta, "start": start, "end": end, "header": header}))
        return out

    def chunk(self, text: str, metadata: dict = {}, **kwargs) -> list[tuple[str, dict]]:  # noqa: B006 - Pathway's signature
        import hashlib

        params = {**self.kwargs, **kwargs}
        key = (
            hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest(),
            self.strict_min_tokens,
            params["min_tokens"],
            params["max_tokens"],
            params["encoding_name"],
        )
        memo = OffsetTokenCountSplitter._memo
        if key in memo:
            OffsetTokenCountSplitter.memo_hits += 1
            return self._with_headers(memo[key], metadata)
        started = time.perf_counter()
        normalised = unicodedata.normalize("NFKC", text)
        if self.strict_min_tokens:
            params = {**self.kwargs, **kwargs}
            texts = split_tokens(
                normalised, params["min_tokens"], params["max_tokens"], params["encoding_name"], self.PUNCTUATION
            )
        else:
            texts = [piece for piece, _ in super().chunk(text, metadata, **kwargs)]
        spans = locate_chunks(normalised, texts)
        pieces = [(piece, start, end) for piece, (start, end) in zip(texts, spans)]
        out = self._with_headers(pieces, metadata)
        if len(memo) >= self.MEMO_LIMIT:
            memo.clear()
        memo[key] = pieces
        OffsetTokenCountSplitter.seconds += time.perf_counter() - started
        OffsetTokenCountSplitter.calls += 1
        return out


@functools.lru_cache(maxsize=4)
def _tokenizer(encoding_name: str):
    ensure_offline()
    import tiktoken

    return tiktoken.get_encoding(encoding_name)


@functools.lru_cache(maxsize=1 << 16)
def chunk_tokens(text: str, encoding_name: str = "cl100k_base") -> int:
    """A chunk's length in tokens as :func:`split_tokens` measures it (``encode_ordinary``), so a
    chunk cut at ``max_tokens`` counts exactly ``max_tokens``; what the token-budget metrics add up."""
    return len(_tokenizer(encoding_name).encode_ordinary(text))


def check_not_empty(texts: list[str], splitter: object, path: str) -> None:
    """A chunk table whose every chunk is empty (a splitter's arguments that cut no text) scores every
    metric 0 with nothing to say why: an error naming the splitter, not a run."""
    if texts and not any(text.strip() for text in texts):
        raise ConfigError(
            f"{path}: the splitter ({type(splitter).__name__}) cut the documents into {len(texts)} chunk(s), every "
            "one empty: nothing to index or score (check its arguments: max_tokens, min_tokens...)"
        )
