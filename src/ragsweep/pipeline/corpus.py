"""Documents folder -> Docling -> parsed text per document, cached by content.

Where documents enter ragsweep. Every file under the folder is either parsed or
skipped with a reason naming it; one bad file never sinks the corpus. A document
that is parsed only in part (pages Docling could not read, a PDF cut short) is
kept, and what went wrong is listed in its ``warnings``.

Text files are checked whole (NUL characters, valid UTF-8, or UTF-16/32 when the file
starts with its byte order mark), block by block as they are read, and handed on as UTF-8.
Cache misses can be parsed by a pool of worker processes (``workers``), or handed one document at a
time to an executor (``dispatch``: a Ray task each); the result (texts, order, skips and their
reasons) is the same as a serial parse.

A ``.txt`` document is not parsed at all: its text is the file's decoded text, verbatim
(no markup is interpreted, white space and line ends are kept), as a Pathway app reading
the folder with its ``Utf8Parser`` gets it. PDF, DOCX, HTML and Markdown go through Docling,
whose text is stripped of leading and trailing white space. Markdown is markup: its text is
what it renders to (headings without ``#``, links without their URL, inline HTML dropped),
as Docling gives it.

Each Docling document also keeps its outline (:class:`Outline`): the text of the item Docling
labels ``title``, and where each ``section_header`` item starts in the parsed text. These feed
the chunk header (``$chunk_header``, :mod:`ragsweep.pipeline.chunking`). A plain text file has
none; nor has a PDF under the model-free native pipeline, which labels every item as text.

Every text is NFKC-normalised, as Pathway's ``TokenCountSplitter`` normalises the text it
splits, so chunk offsets computed by :mod:`ragsweep.pipeline.chunking` index into exactly
this text (for a plain text file that is already in NFKC, the file's own characters).

A symlink whose target lies outside the documents folder is skipped with a warning naming
it (``follow_symlinks=True`` indexes it): a link such as ``docs/passwd.txt`` ->
``/etc/passwd`` must not put a file from elsewhere into the index unnoticed.
"""

from __future__ import annotations

import codecs
import errno
import json
import logging
import os
import pickle
import re
import stat
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import lru_cache, partial
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeAlias

from pydantic import BaseModel, JsonValue

from ragsweep.core import environment
from ragsweep.core.cache_files import default_cache_dir, quarantine
from ragsweep.core.hits import ChunkMetadata, chunk_span
from ragsweep.core.keys import cache_key, digest
from ragsweep.core.offline import ensure_offline

if TYPE_CHECKING:
    from docling.document_converter import DocumentConverter
    from docling_core.types.doc.document import DoclingDocument

log = logging.getLogger(__name__)

# bump when the way text is extracted changes: invalidates the parse cache
PARSER_VERSION = "1"
# the parser name of plain text files (no Docling): part of their cache key
PLAIN_TEXT_PARSER = "plain-text"

# files are read, hashed and (text formats) checked in blocks of this size
READ_BLOCK = 1 << 20
# the format is told from this much of the file's start
HEAD_BYTES = 4096
TEXT_FORMATS = {"html", "md", "txt"}


class Outline(BaseModel):
    """A parsed document's title (Docling's ``title`` item) and section headings, each as
    (offset of its first character in the parsed text, its text), in document order."""

    title: str | None = None
    headings: list[tuple[int, str]] = []


# one element an app's parser gives: its text and its metadata (JSON values, as Pathway's Json carries them)
Element: TypeAlias = "tuple[str, dict[str, JsonValue]]"
# what a parse function returns: the text, or the text and its warnings (and its outline, and the
# elements an app's parser cut the document into: :class:`ParsedElement`)
ParseOutput = (
    str
    | tuple[str, Sequence[str]]
    | tuple[str, Sequence[str], Outline]
    | tuple[str, Sequence[str], Outline, "list[Element]"]
)
ParseFn = Callable[[bytes, str, str, bool], ParseOutput]

EXTENSIONS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "md",
    ".markdown": "md",
    ".txt": "txt",
    ".text": "txt",
}


class CorpusError(Exception):
    """The documents folder as a whole is unusable (missing, empty, not a folder)."""


# between two elements of one document in its parsed text (where evidence spans are located)
ELEMENT_SEPARATOR = "\n\n"


class ParsedElement(BaseModel):
    """One element an app's parser cut a document into (a DoclingParser structure chunk, an
    UnstructuredParser element, a PypdfParser page): its text as the parser gave it, the metadata it
    gave it (what the DocumentStore merges into the chunks' metadata) and where its NFKC text lies
    in the document's parsed text (``start``/``end``). Pathway's splitter cuts each one on its own."""

    text: str
    metadata: dict[str, Any] = {}
    start: int
    end: int


def join_elements(raw: Sequence[Element]) -> tuple[str, list[ParsedElement]]:
    """A document's parsed text (each element's text in NFKC, as the splitter reads it, joined by
    :data:`ELEMENT_SEPARATOR`) and its elements located in it."""
    parts: list[str] = []
    elements: list[ParsedElement] = []
    at = 0
    for text, metadata in raw:
        normalised = unicodedata.normalize("NFKC", text)
        if parts:
            at += len(ELEMENT_SEPARATOR)
        elements.append(ParsedElement(text=text, metadata=dict(metadata), start=at, end=at + len(normalised)))
        parts.append(normalised)
        at += len(normalised)
    return ELEMENT_SEPARATOR.join(parts), elements


class ParsedDocument(BaseModel):
    doc_id: str  # path relative to the documents folder, '/'-separated
    text: str
    # the elements of an app's parser; empty: the whole text is one element with no metadata
    # (ragsweep's own parse, and what Pathway's Utf8Parser makes of a text file)
    elements: list[ParsedElement] = []
    title: str | None = None  # Docling's title item, if it labels one
    headings: list[tuple[int, str]] = []  # (offset in text, heading) of each section header
    format: str  # pdf | docx | html | md | txt
    parser: str  # e.g. docling-native-pdf, docling-standard-pdf, docling-html
    sha256: str
    seconds: float
    cached: bool = False
    # what went wrong while parsing a document that was still kept: pages Docling
    # could not read, a partial conversion, a PDF that looks cut short
    warnings: list[str] = []

    def pieces(self) -> list[tuple[str, dict[str, Any]]]:
        """What the DocumentStore's parser stage hands the splitter: (text, metadata) per element."""
        if not self.elements:
            return [(self.text, {})]
        return [(e.text, dict(e.metadata)) for e in self.elements]

    def chunk_offsets(self, chunk: str, metadata: ChunkMetadata) -> tuple[int, int]:
        """Where a chunk the splitter cut lies in :attr:`text`: its ``start``/``end`` (a splitter of
        ragsweep's gives them within the element it cut) moved to the element's place, else the
        chunk found in the text (Pathway's own splitters record none); ``(0, 0)`` when not found."""
        span = chunk_span(metadata)
        if span is not None:
            start, end = span
            for element in self.elements:
                if self.text[element.start + start : element.start + end] == chunk:
                    return element.start + start, element.start + end
            return start, end
        pos = self.text.find(chunk)
        if pos < 0:
            pos = self.text.find(chunk.strip())
        return (pos, pos + len(chunk)) if pos >= 0 else (0, 0)


class SkippedDocument(BaseModel):
    doc_id: str
    reason: str


class Corpus(BaseModel):
    docs_dir: str
    documents: list[ParsedDocument]
    skipped: list[SkippedDocument]
    pdf_pipeline: str  # "native" (model-free) or "standard" (layout model found locally)

    @property
    def content_hash(self) -> str:
        """Hash of every parsed text and its id: equal hashes mean equal indexes."""
        docs = sorted(self.documents, key=lambda d: d.doc_id)
        return digest(b"".join(d.doc_id.encode() + b"\0" + bytes.fromhex(digest(d.text)) for d in docs))

    @property
    def outline_hash(self) -> str:
        """Hash of every document's title and headings; ``""`` when no document has either (plain
        text, native PDF), so such a corpus is known by :attr:`content_hash` alone."""
        outlines = [(d.doc_id, d.title, d.headings) for d in sorted(self.documents, key=lambda d: d.doc_id)]
        if not any(title or headings for _, title, headings in outlines):
            return ""
        return digest(json.dumps(outlines))

    @property
    def elements_hash(self) -> str:
        """Hash of every document's elements (their texts, metadata and places); ``""`` when no document
        has any (ragsweep's own parse), so such a corpus is known by :attr:`content_hash` alone."""
        docs = sorted(self.documents, key=lambda d: d.doc_id)
        if not any(d.elements for d in docs):
            return ""
        payload = [(d.doc_id, [e.model_dump() for e in d.elements]) for d in docs]
        return digest(json.dumps(payload, sort_keys=True, default=str))

    def text_of(self, doc_id: str) -> str | None:
        for doc in self.documents:
            if doc.doc_id == doc_id:
                return doc.text
        return None

    @property
    def warnings(self) -> dict[str, list[str]]:
        """doc_id -> parse warnings, for the parsed documents that have any."""
        return {d.doc_id: list(d.warnings) for d in self.documents if d.warnings}


# ---------------------------------------------------------------- detection


def detect_format(path: Path, head: bytes) -> tuple[str | None, str | None]:
    """Return (format, None) or (None, reason) from the file's bytes and extension.

    The content decides: a file named ``.pdf`` that is not a PDF is refused, and so
    is binary content behind a text extension.
    """
    ext = path.suffix.lower()
    claimed = EXTENSIONS.get(ext)
    if claimed is None:
        return None, f"unsupported file type {ext or '(no extension)'!r}"
    if not head:
        return None, "empty file"
    if head.startswith(b"%PDF-"):
        return ("pdf", None) if claimed == "pdf" else (None, f"PDF content behind a {ext} extension")
    if claimed == "pdf":
        return None, "not a PDF (no %PDF- header): corrupt or mislabelled"
    if head.startswith(b"PK\x03\x04"):
        return ("docx", None) if claimed == "docx" else (None, f"zip content behind a {ext} extension")
    if claimed == "docx":
        return None, "not a DOCX (not a zip archive): corrupt or mislabelled"
    encoding = text_encoding(head)
    problem = _text_problem(head, 0, codecs.getincrementaldecoder(encoding)(), ext, encoding)
    return (claimed, None) if problem is None else (None, problem)


# byte order marks, UTF-32's first: its little-endian mark starts with UTF-16's
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def text_encoding(head: bytes) -> str:
    """The codec of a text file: UTF-16/32 (either byte order) or UTF-8 with a byte order
    mark when it starts with one (the codec drops the mark), else UTF-8."""
    return next((name for bom, name in _BOMS if head.startswith(bom)), "utf-8")


@dataclass
class FileCheck:
    """One file read whole: its bytes and hash, or why it is refused."""

    fmt: str | None
    reason: str | None = None
    data: bytes = b""  # text formats: as UTF-8 without a byte order mark, whatever the file's encoding
    sha256: str = ""
    warnings: list[str] = field(default_factory=list)  # about the file itself (e.g. a PDF cut short)


def read_document(path: Path, block_size: int = READ_BLOCK) -> FileCheck:
    """Read a file once, in blocks: hash it, tell its format, check text files whole.

    The format comes from the first :data:`HEAD_BYTES` (:func:`detect_format`). A
    text format is then checked to its last byte, block by block as it is read: a
    NUL byte or invalid UTF-8 anywhere refuses the file with the same kind of
    reason as in its first block, and reading stops there (a huge binary file is
    never loaded). A FIFO, socket, device or symlink loop is refused unread, with its reason. Raises
    ``OSError`` when the file cannot be read.
    """
    opened = _open_regular(path)
    if isinstance(opened, str):
        return FileCheck(None, opened)
    with opened as f:
        first = f.read(max(block_size, HEAD_BYTES))
        fmt, reason = detect_format(path, first[:HEAD_BYTES])
        if fmt is None:
            return FileCheck(None, reason or "unsupported")
        encoding = text_encoding(first)
        blocks: list[bytes] = []
        decoder = codecs.getincrementaldecoder(encoding)() if fmt in TEXT_FORMATS else None
        offset = 0  # bytes of the file before `block`
        block = first
        while block:
            if decoder is not None:
                problem = _text_problem(block, offset, decoder, path.suffix.lower(), encoding)
                if problem:
                    return FileCheck(None, problem)
            blocks.append(block)
            offset += len(block)
            block = f.read(block_size)
        if decoder is not None:
            try:
                decoder.decode(b"", final=True)
            except UnicodeDecodeError as err:
                at = offset - len(err.object) + err.start
                return FileCheck(None, f"not {_codec_label(encoding)} text ({err.reason} at byte {at})")
    data = blocks[0] if len(blocks) == 1 else b"".join(blocks)
    del blocks
    sha = digest(data)  # of the bytes as read, before any re-encoding
    if fmt in TEXT_FORMATS and encoding != "utf-8":  # the parsers read UTF-8: hand the text on as such
        data = data.decode(encoding).encode("utf-8")
    warnings = []
    if fmt == "pdf" and b"%%EOF" not in data[-1024:]:
        warnings.append(PDF_TRUNCATED)
    return FileCheck(fmt, None, data, sha, warnings)


def _open_regular(path: Path) -> BinaryIO | str:
    """The file opened for reading, or why it is not read: a FIFO, socket or device is never read (a FIFO
    would block the read until something writes to it, a device may never end)."""
    try:
        mode = path.stat().st_mode
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "a symlink loop: not read"
        raise
    if not stat.S_ISREG(mode):
        return f"{_kind_of(mode)}, not a regular file: not read"
    return path.open("rb")


def _kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a folder" if stat.S_ISDIR(mode) else "a special file"


PDF_TRUNCATED = "the PDF looks truncated (no %%EOF marker at the end of the file)"


def _codec_label(encoding: str) -> str:
    return {"utf-8": "UTF-8", "utf-8-sig": "UTF-8", "utf-16": "UTF-16", "utf-32": "UTF-32"}[encoding]


def _text_problem(
    block: bytes, offset: int, decoder: codecs.IncrementalDecoder, ext: str, encoding: str = "utf-8"
) -> str | None:
    """Why this block of a text file refuses the file (None: it does not).

    UTF-8 text holds no NUL byte; UTF-16/32 text has NUL bytes in most characters, so there
    a decoded NUL character is what tells binary content.
    """
    if encoding.startswith("utf-8"):
        nul = block.find(b"\0")
        if nul >= 0:
            return f"binary content behind a {ext} extension (NUL byte at byte {offset + nul})"
    pending = len(decoder.getstate()[0])  # bytes of a character cut by the previous block
    try:
        text = decoder.decode(block)
    except UnicodeDecodeError as err:
        return f"not {_codec_label(encoding)} text ({err.reason} at byte {offset - pending + err.start})"
    if "\0" in text:
        return f"binary content behind a {ext} extension (a NUL character in its {_codec_label(encoding)} text)"
    return None


def layout_models_available() -> bool:
    """True when Docling's layout model is on this machine (never downloads)."""
    ensure_offline()
    artifacts = environment.docling_artifacts_path()
    if artifacts and any(Path(artifacts).glob("*layout*")):
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache("docling-project/docling-layout-heron", "model.safetensors")
        return isinstance(found, str)
    except Exception:
        return False


@lru_cache(maxsize=2)
def _converter(standard_pdf: bool) -> DocumentConverter:
    ensure_offline()
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.pipeline_options import NativePdfPipelineOptions, PdfPipelineOptions
    from docling.document_converter import (
        DocumentConverter,
        NativePdfFormatOption,
        PdfFormatOption,
    )

    if standard_pdf:
        pdf_option = PdfFormatOption(
            pipeline_options=PdfPipelineOptions(
                do_ocr=False,
                do_table_structure=False,
                artifacts_path=environment.docling_artifacts_path(),
            )
        )
    else:
        # ragsweep keeps only the text: rendering page and picture images (PNG-encoded into the
        # document) was half the parse time on datasets/cuad, for the same text on all 40 PDFs
        pdf_option = NativePdfFormatOption(
            pipeline_options=NativePdfPipelineOptions(generate_page_images=False, generate_picture_images=False)
        )
    return DocumentConverter(
        allowed_formats=[InputFormat.PDF, InputFormat.DOCX, InputFormat.HTML, InputFormat.MD],
        format_options={InputFormat.PDF: pdf_option},
    )


# ---------------------------------------------------------------- parsing

# Docling's stream name decides its backend: give it the detected type's extension.
_STREAM_SUFFIX = {"pdf": ".pdf", "docx": ".docx", "html": ".html", "md": ".md"}


def plain_text(data: bytes) -> str:
    """A plain text file's text: its characters as they are, in NFKC (see the module docstring).

    Nothing is read as markup (``<script>``, ``&amp;``, ``# `` stay as written), no white space
    or control character is changed or stripped: an evidence offset computed on the file is an
    offset in this text. A file of white space only has no text.
    """
    text = unicodedata.normalize("NFKC", data.decode("utf-8"))
    return text if text.strip() else ""


def convert(
    data: bytes, fmt: str, name: str, standard_pdf: bool
) -> tuple[str, list[str]] | tuple[str, list[str], Outline]:
    """The default parse: plain text as it is (:func:`plain_text`), every other format by Docling."""
    if fmt == "txt":
        return plain_text(data), []
    return docling_convert(data, fmt, name, standard_pdf)


# the reason :func:`read_without_parsing` gives a document it leaves to a parse
NEEDS_PARSING = "left unread: only a parse reads this format"


class Unread(Exception):
    """A document :func:`read_without_parsing` does not read."""


def read_without_parsing(data: bytes, fmt: str, name: str, standard_pdf: bool) -> tuple[str, list[str]]:
    """A parse function that parses nothing: a plain text file's text (:func:`plain_text`, as
    :func:`convert` gives it), every other format skipped with :data:`NEEDS_PARSING`. Given to
    :func:`parse_corpus`, the documents parsed before still come from the parse cache."""
    if fmt == "txt":
        return plain_text(data), []
    raise Unread(NEEDS_PARSING)


def docling_convert(data: bytes, fmt: str, name: str, standard_pdf: bool) -> tuple[str, list[str], Outline]:
    """Parse one document's bytes with Docling, without its chunking.

    Returns the plain text, the conversion's warnings (pages that failed, a partial
    conversion) and its :class:`Outline`; raises ``ValueError`` when Docling converts nothing.
    """
    from docling.datamodel.base_models import ConversionStatus, DocumentStream

    if fmt not in _STREAM_SUFFIX:
        raise ValueError(f"Docling does not parse {fmt!r} documents here (plain text is read as it is)")
    stream = DocumentStream(name=Path(name).stem + _STREAM_SUFFIX[fmt], stream=BytesIO(data))
    result = _converter(standard_pdf).convert(stream, raises_on_error=False)
    problems = conversion_problems(result.errors, getattr(result.input, "page_count", 0) or 0)
    if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
        raise ValueError(f"Docling could not convert it: {'; '.join(problems) or result.status}")
    if result.status == ConversionStatus.PARTIAL_SUCCESS and not problems:
        problems = ["Docling converted it only in part (status PARTIAL_SUCCESS, no error detail)"]
    text = unicodedata.normalize("NFKC", result.document.export_to_text()).strip()
    return text, problems, docling_outline(result.document, text)


def docling_outline(document: DoclingDocument, text: str) -> Outline:
    """The title and section headings of a Docling document, located in its parsed ``text``:
    every item's text is searched from where the previous one was found (the export keeps
    the items' order), so a heading is never placed at an earlier mention of its words."""
    from docling_core.types.doc.labels import DocItemLabel

    outline = Outline()
    cursor = 0
    for item, _level in document.iterate_items():
        raw = getattr(item, "text", None)
        needle = unicodedata.normalize("NFKC", raw).strip() if isinstance(raw, str) else ""
        pos = text.find(needle, cursor) if needle else -1
        if pos < 0:  # a table, or an item the export renders otherwise
            continue
        cursor = pos + len(needle)
        label = getattr(item, "label", None)  # a DocItem's (what carries text)
        if label == DocItemLabel.TITLE and outline.title is None:
            outline.title = needle
        elif label == DocItemLabel.SECTION_HEADER:
            outline.headings.append((pos, needle))
    return outline


def docling_parse(data: bytes, fmt: str, name: str, standard_pdf: bool) -> str:
    """The default parse's text alone (:func:`convert`: plain text as it is, the rest by Docling)."""
    return convert(data, fmt, name, standard_pdf)[0]


_PAGE_PREFIX = re.compile(r"^(page failed to parse[.:]?\s*)?(error rendering page \d+ of key=[0-9a-f.]+:\s*)?", re.I)
_LONG_HEX = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{28,}\b")


def conversion_problems(errors: Iterable[object], page_count: int = 0) -> list[str]:
    """Docling's error items as short, readable warnings.

    Page failures become one line naming the pages (``pages 2-4, 9 of 10 failed
    to parse (page 2: ...)``); every other error is one line of its own.
    """
    pages: dict[int, str] = {}
    other: list[str] = []
    for error in errors:
        message = _LONG_HEX.sub(r"\1...", " ".join(str(getattr(error, "error_message", error)).split()))
        page_no = getattr(error, "page_no", None)
        if page_no is not None:
            pages.setdefault(int(page_no), _PAGE_PREFIX.sub("", message).strip())
        elif message not in other:
            other.append(message)
    problems = []
    if pages:
        numbers = sorted(pages)
        of = f" of {page_count}" if page_count else ""
        label = "page" if len(numbers) == 1 else "pages"
        detail = next((f" (page {n}: {pages[n]})" for n in numbers if pages[n]), "")
        problems.append(f"{label} {_ranges(numbers)}{of} failed to parse{detail}")
    return problems + other


def _ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 7, 9, 10] -> '1-3, 7, 9-10'."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def parser_name(fmt: str, standard_pdf: bool) -> str:
    if fmt == "txt":
        return PLAIN_TEXT_PARSER
    if fmt == "pdf":
        return "docling-standard-pdf" if standard_pdf else "docling-native-pdf"
    return f"docling-{fmt}"


def iter_files(docs_dir: Path, follow_symlinks: bool = False) -> Iterable[Path]:
    """The files under the folder, sorted; hidden ones (a part starting with ``.``) left out.

    A symlinked folder is not walked into: one inside the folder holds files already walked
    under their own path; one leading outside is yielded itself, to be skipped with its reason
    (:func:`outside_target`), or, with ``follow_symlinks``, its files are.
    """
    for path in sorted(docs_dir.rglob("*")):
        if _hidden(docs_dir, path):
            continue
        if path.is_symlink() and path.is_dir():
            if outside_target(docs_dir, path) is None:
                continue
            if follow_symlinks:
                yield from (p for p in sorted(path.rglob("*")) if not _hidden(docs_dir, p) and not p.is_dir())
            else:
                yield path
            continue
        if path.is_dir():
            continue
        yield path


def _hidden(docs_dir: Path, path: Path) -> bool:
    return any(p.startswith(".") for p in path.relative_to(docs_dir).parts)


def outside_target(docs_dir: Path, path: Path) -> Path | None:
    """Where ``path`` leads when a symlink (its own or a folder's above it) takes it out of
    ``docs_dir``; None when it stays inside, or leads nowhere (a dangling link: reading it fails)."""
    try:
        target = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: reading it fails, and says so
        return None
    if not target.exists() or target.is_relative_to(docs_dir.resolve()):
        return None
    return target


def outside_reason(target: Path) -> str:
    return (
        f"a symlink to {str(target)!r}, outside the documents folder: not indexed "
        "(--follow-symlinks, or follow_symlinks=True, indexes it)"
    )


def shown_name(name: str) -> str:
    """A file name as one line of a table: backslashes and characters that are not printable
    (a newline, a tab, an escape, a zero-width space) written as escapes (``\\n``, ``\\x1b``)."""
    return "".join(c if c.isprintable() and c != "\\" else repr(c)[1:-1] for c in name)


class ParseCache:
    """Parsed text on disk, keyed by content hash, format and parser version."""

    def __init__(self, root: Path | None):
        self.root = root / "parsed" if root else None

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The cached text, or None; a damaged entry is moved aside (warned) and counts as a miss."""
        if self.root is None:
            return None
        path = self._path(key)
        try:
            text = json.loads(path.read_text(encoding="utf-8"))["text"]
            if not isinstance(text, str):
                raise TypeError(f"'text' is {type(text).__name__}, not a string")
            return text
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as err:  # garbage, truncated, wrong shape
            import logging

            moved = quarantine(path) if path.is_file() else None
            logging.getLogger(__name__).warning(
                "ragsweep parse cache entry %s is unreadable (%s: %s); %s, parsing the document again",
                path,
                type(err).__name__,
                str(err)[:120],
                f"moved aside to {moved}" if moved else "ignored",
            )
            return None

    def put(self, key: str, text: str) -> None:
        """Store atomically; a cache that cannot be written is warned about, never fatal."""
        if self.root is None:
            return
        path = self._path(key)
        tmp = path.with_suffix(".tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"text": text}), encoding="utf-8")
            tmp.replace(path)
        except OSError as err:
            import logging

            logging.getLogger(__name__).warning("ragsweep parse cache entry %s not written: %s", path, err)


def default_workers() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def parse_corpus(
    docs_dir: str | Path,
    cache_dir: Path | None = None,
    use_cache: bool = True,
    on_progress: Callable[[str], None] | None = None,
    parse_fn: ParseFn = convert,
    progress: bool = False,
    workers: int | None = None,
    follow_symlinks: bool = False,
    dispatch: Dispatch | None = None,
    parser_id: str | None = None,
) -> Corpus:
    """Parse every file under ``docs_dir``; skip bad ones with a reason.

    Raises :class:`CorpusError` when the folder is missing, not a folder, or holds
    no file at all. A folder whose every file is skipped is returned as is: the
    caller decides (``index`` reports it, ``eval`` refuses to run on it).

    ``workers``: how many processes parse the documents the cache does not hold
    (1: this process; a lone cache miss is parsed here too). The default is the
    number of cores, but at most one worker per :data:`DOCS_PER_WORKER` files: a
    worker costs seconds to start (importing Docling), more than a few small
    documents take to parse. Documents, skips and reasons come out in the files'
    sorted order whatever the number of workers. ``parse_fn`` (bytes, format,
    doc_id, standard_pdf) returns the text, or the text and its warnings; it runs
    in the workers only when it can be pickled (a module-level function),
    otherwise the parse is serial. ``follow_symlinks``: index the targets of symlinks that
    lead outside ``docs_dir`` (by default each is skipped, its reason naming where it leads).
    ``dispatch``: each cache miss is handed to it instead of to ``workers`` (see :data:`Dispatch`);
    reading, the cache and the corpus's order stay here. ``parser_id``: the parser ``parse_fn`` runs when it
    is not ragsweep's own (an app's, :mod:`ragsweep.pipeline.parsing`: its class and the arguments that decide
    its output), part of every cache key and each document's ``parser``.
    """
    docs_path = Path(docs_dir)
    if not docs_path.exists():
        raise CorpusError(f"documents folder {str(docs_path)!r} does not exist")
    if not docs_path.is_dir():
        raise CorpusError(f"documents folder {str(docs_path)!r} is not a folder")
    files = list(iter_files(docs_path, follow_symlinks))
    if not files:
        raise CorpusError(f"documents folder {str(docs_path)!r} holds no files")
    n_workers = _worker_count(workers, parse_fn, len(files)) if dispatch is None else 1

    import sys

    from tqdm import tqdm

    with tqdm(
        total=len(files), desc="parse", unit="doc", file=sys.stderr, leave=False, disable=not progress or len(files) < 2
    ) as bar:
        corpus = _parse_files(
            docs_path, files, cache_dir, use_cache, on_progress, parse_fn, bar.update, n_workers, follow_symlinks,
            dispatch, parser_id,
        )  # fmt: skip
    return corpus


# the default number of workers is capped at one per this many files
DOCS_PER_WORKER = 8


def _worker_count(workers: int | None, parse_fn: ParseFn, n_files: int) -> int:
    if workers is None:
        n = max(1, min(default_workers(), n_files // DOCS_PER_WORKER))
    else:
        n = int(workers)
    if n < 1:
        raise ValueError(f"workers must be >= 1, not {n}")
    if n > 1:
        try:
            pickle.dumps(parse_fn)
        except Exception:  # a closure or a lambda: it cannot reach a worker process
            log.debug("parse_fn %r cannot be pickled: parsing in this process", parse_fn)
            return 1
    return n


@dataclass
class _Job:
    """One cache miss: a document to parse."""

    index: int  # position among the folder's sorted files
    doc_id: str
    fmt: str
    parser: str
    sha256: str
    key: str
    data: bytes
    file_warnings: list[str]
    lookup_seconds: float


@dataclass
class ParseOutcome:
    """What parsing one document gave: its text, warnings, outline and elements, or an error."""

    text: str | None
    warnings: list[str]
    error: str | None
    seconds: float
    outline: Outline = field(default_factory=Outline)
    elements: list[ParsedElement] = field(default_factory=list)


# A parse handed elsewhere (``ragsweep.execution``: one Ray task per document): given the document's id
# and its parse (a picklable call that never raises), start it and return what waits for its outcome.
# The waiting call returns :func:`crashed` when the process that parsed it died every time it tried.
Dispatch = Callable[[str, Callable[[], "ParseOutcome"]], Callable[[], "ParseOutcome"]]


def crashed() -> ParseOutcome:
    """The outcome of a document whose parser process died on it."""
    return ParseOutcome(None, [], CRASHED, 0.0)


def _parse_job(parse_fn: ParseFn, data: bytes, fmt: str, doc_id: str, standard_pdf: bool) -> ParseOutcome:
    """Parse one document (in this process or in a worker); never raises."""
    started = time.perf_counter()
    try:
        out = parse_fn(data, fmt, doc_id, standard_pdf)
    except Exception as err:  # one bad document must never sink the run
        return ParseOutcome(None, [], f"parse failed: {err}", time.perf_counter() - started)
    text, warnings, *rest = (out, ()) if isinstance(out, str) else out
    outline = rest[0] if rest and isinstance(rest[0], Outline) else Outline()
    elements = join_elements(rest[1])[1] if len(rest) > 1 and isinstance(rest[1], list) else []
    return ParseOutcome(text, [str(w) for w in warnings], None, time.perf_counter() - started, outline, elements)


def _warnings_key(key: str) -> str:
    return cache_key("parse-warnings", key)


def _outline_key(key: str) -> str:
    return cache_key("parse-outline", key)


def _elements_key(key: str) -> str:
    return cache_key("parse-elements", key)


# an app's parser's documents are known by "app:" and the parser's identity (ragsweep.pipeline.parsing)
APP_PARSER_PREFIX = "app:"


def _cached(cache: ParseCache, key: str, parser: str) -> ParseOutcome | None:
    """A parsed text, its warnings, outline and elements from the cache; None unless all are there (a
    plain text file has no outline to miss, ragsweep's own parse no elements)."""
    text = cache.get(key)
    if text is None:
        return None
    raw = cache.get(_warnings_key(key))  # missing: cached before warnings were kept, parse again
    outline = cache.get(_outline_key(key)) if parser != PLAIN_TEXT_PARSER else "{}"
    stored = cache.get(_elements_key(key)) if parser.startswith(APP_PARSER_PREFIX) else "[]"
    if raw is None or outline is None or stored is None:  # no outline: cached before outlines were kept
        return None
    try:
        warnings = json.loads(raw)
        found = Outline.model_validate_json(outline)
        elements = [ParsedElement.model_validate(e) for e in json.loads(stored)]
    except ValueError:
        return None
    if not isinstance(warnings, list):
        return None
    return ParseOutcome(text, [str(w) for w in warnings], None, 0.0, found, elements)


def _cache_put(cache: ParseCache, key: str, outcome: ParseOutcome) -> None:
    # first: a text is only used with its warnings, outline and elements
    cache.put(_warnings_key(key), json.dumps(outcome.warnings))
    cache.put(_outline_key(key), outcome.outline.model_dump_json())
    if outcome.elements:
        cache.put(_elements_key(key), json.dumps([e.model_dump() for e in outcome.elements]))
    cache.put(key, outcome.text or "")


def _no_text(warnings: list[str]) -> str:
    return "no text extracted" + (f" ({'; '.join(warnings)})" if warnings else "")


def _parse_files(
    docs_path: Path,
    files: list[Path],
    cache_dir: Path | None,
    use_cache: bool,
    on_progress: Callable[[str], None] | None,
    parse_fn: ParseFn,
    tick: Callable[[int], object],
    workers: int = 1,
    follow_symlinks: bool = False,
    dispatch: Dispatch | None = None,
    parser_id: str | None = None,
) -> Corpus:
    """The parsing loop of :func:`parse_corpus` (``tick`` advances its progress bar).

    Files are read, checked and looked up in the cache here (in sorted order;
    largest first when workers share them); the misses go to a :class:`_Runner`.
    Every result lands in its file's slot, so the order of the corpus never
    depends on which worker finishes first.
    """
    standard_pdf = layout_models_available()
    cache = ParseCache((cache_dir or default_cache_dir()) if use_cache else None)
    slots = _Slots(len(files), tick, cache)
    runner = _Runner(parse_fn, standard_pdf, workers, slots.parsed, dispatch)
    try:
        # tasks share the misses as workers do: the largest are handed out first
        for index in _scan_order(files, workers if dispatch is None else 2):
            path = files[index]
            target = None if follow_symlinks else outside_target(docs_path, path)
            if target is not None:
                slots.skip(index, path.relative_to(docs_path).as_posix(), outside_reason(target))
                continue
            job = _read_job(docs_path, path, index, on_progress, standard_pdf, cache, slots, parser_id)
            if job is not None:
                runner.submit(job)
        runner.finish()
    finally:
        runner.close()
    return slots.corpus(docs_path, standard_pdf)


def _read_job(
    docs_path: Path,
    path: Path,
    index: int,
    on_progress: Callable[[str], None] | None,
    standard_pdf: bool,
    cache: ParseCache,
    slots: _Slots,
    parser_id: str | None = None,
) -> _Job | None:
    """Read, check and look up one file: the job that parses it, or None when its slot is
    already filled (skipped, or its text from the cache)."""
    doc_id = path.relative_to(docs_path).as_posix()
    if on_progress:
        on_progress(doc_id)
    try:
        check = read_document(path)
    except OSError as err:
        slots.skip(index, doc_id, f"cannot read: {err.strerror or err}")
        return None
    if check.fmt is None:
        slots.skip(index, doc_id, check.reason or "unsupported")
        return None
    parser = APP_PARSER_PREFIX + parser_id if parser_id else parser_name(check.fmt, standard_pdf)
    key = cache_key("parse", check.sha256, parser, PARSER_VERSION)
    started = time.perf_counter()
    hit = _cached(cache, key, parser)
    job = _Job(
        index,
        doc_id,
        check.fmt,
        parser,
        check.sha256,
        key,
        check.data,
        check.warnings,
        time.perf_counter() - started,
    )
    if hit is not None:
        hit.warnings = check.warnings + hit.warnings
        hit.seconds = job.lookup_seconds
        slots.keep(job, hit, True)
        return None
    return job


class _Slots:
    """Each file's result in its slot (the files' sorted order), whatever order they come in;
    a parsed text is written to the cache."""

    def __init__(self, n: int, tick: Callable[[int], object], cache: ParseCache):
        self.slots: list[ParsedDocument | SkippedDocument | None] = [None] * n
        self.tick = tick
        self.cache = cache

    def skip(self, index: int, doc_id: str, reason: str) -> None:
        self.slots[index] = SkippedDocument(doc_id=doc_id, reason=reason)
        self.tick(1)

    def keep(self, job: _Job, outcome: ParseOutcome, cached: bool) -> None:
        """A parsed document in its slot (its warnings and seconds those of ``outcome``)."""
        if not outcome.text:
            self.skip(job.index, job.doc_id, _no_text(outcome.warnings))
            return
        self.slots[job.index] = ParsedDocument(
            doc_id=job.doc_id,
            text=outcome.text,
            elements=outcome.elements,
            format=job.fmt,
            parser=job.parser,
            sha256=job.sha256,
            seconds=outcome.seconds,
            cached=cached,
            warnings=outcome.warnings,
            title=outcome.outline.title,
            headings=outcome.outline.headings,
        )
        self.tick(1)

    def parsed(self, job: _Job, outcome: ParseOutcome) -> None:
        """What the :class:`_Runner` gives back for a job."""
        if outcome.error is not None:
            # the file's own warnings (a PDF that looks cut short) explain the failure
            self.skip(job.index, job.doc_id, "; ".join([outcome.error, *job.file_warnings]))
            return
        if outcome.text:
            _cache_put(self.cache, job.key, outcome)
        outcome.seconds += job.lookup_seconds
        outcome.warnings = job.file_warnings + outcome.warnings
        self.keep(job, outcome, False)

    def corpus(self, docs_path: Path, standard_pdf: bool) -> Corpus:
        return Corpus(
            docs_dir=str(docs_path),
            documents=[s for s in self.slots if isinstance(s, ParsedDocument)],
            skipped=[s for s in self.slots if isinstance(s, SkippedDocument)],
            pdf_pipeline="standard" if standard_pdf else "native",
        )


def _scan_order(files: list[Path], workers: int) -> list[int]:
    """The order files are read in: sorted; largest first when workers share them.

    Handing the largest documents out first keeps one worker from finishing the
    run alone on a big one. Results still land in sorted order (their slots).
    """
    if workers <= 1:
        return list(range(len(files)))

    def size(index: int) -> int:
        try:
            return files[index].stat().st_size
        except OSError:
            return 0

    return sorted(range(len(files)), key=lambda i: (-size(i), i))


# ---------------------------------------------------------------- worker processes

CRASHED = "parse failed: the parser process died on it (a crash in native code, or out of memory)"


def _init_worker(standard_pdf: bool, warm: bool, threads: int) -> None:
    """Run once in each worker process: offline set-up and one Docling converter.

    Two start-up costs of a worker are cut (``benchmarks/parse_parallel.py``):

    - Docling imports ``transformers`` only for a VLM option's type (``StoppingCriteria``) and
      falls back to a placeholder when it is missing (its slim installs). The native PDF
      pipeline uses no model, so a worker that only runs it does not import it (0.5-1 s).
      The standard pipeline's layout model does need it: it is left alone there.
    - A spawned process ends with a full interpreter shutdown, which tears down torch and
      Docling module by module (0.7-1.5 s, measured, while the parent waits). Each result is
      already written back when a worker exits, so the worker leaves with ``os._exit`` as
      soon as the pool lets it go.
    """
    import atexit
    import signal
    import sys

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # the cores are shared by the workers
        os.environ.setdefault(name, str(threads))
    if warm and not standard_pdf and "transformers" not in sys.modules:
        sys.modules["transformers"] = None  # type: ignore[assignment]  # "not installed" to Docling
    ensure_offline()
    if warm:
        try:
            _converter(standard_pdf)
        except Exception:  # the parse of each document reports it, as a serial parse would
            pass
    atexit.register(os._exit, 0)  # after Docling's imports: it runs first of the exit handlers


class _Runner:
    """Parses cache misses: in this process (one worker), or in a pool of processes.

    The pool uses the ``spawn`` start method: the parent may hold pathway's and
    torch's threads, which a fork would copy in an undefined state. At most
    ``2 * workers`` documents are in flight, so the bytes held stay bounded. A lone
    miss is parsed here (no pool is started for one document). When a worker
    dies, the documents it may have held are parsed again one at a time in a
    fresh process, so only the one that kills it is skipped. With ``dispatch``, every miss is
    handed to it as it is read and the outcomes are taken in that order at the end.
    """

    def __init__(
        self,
        parse_fn: ParseFn,
        standard_pdf: bool,
        workers: int,
        done: Callable[[_Job, ParseOutcome], None],
        dispatch: Dispatch | None = None,
    ):
        self.parse_fn = parse_fn
        self.dispatch = dispatch
        self.dispatched: list[tuple[_Job, Callable[[], ParseOutcome]]] = []
        self.standard_pdf = standard_pdf
        self.workers = workers
        self.done = done
        self.waiting: list[_Job] = []
        self.running: dict[Future[ParseOutcome], _Job] = {}
        self.suspects: list[_Job] = []  # in flight when a worker died
        self.pool: ProcessPoolExecutor | None = None
        self.pool_started = False

    def submit(self, job: _Job) -> None:
        if self.dispatch is not None:
            parse = partial(_parse_job, self.parse_fn, job.data, job.fmt, job.doc_id, self.standard_pdf)
            self.dispatched.append((job, self.dispatch(job.doc_id, parse)))
            job.data = b""
            return
        if self.workers <= 1:
            self._inline(job)
            return
        self.waiting.append(job)
        if self.pool_started or len(self.waiting) >= 2:
            self._pump()

    def finish(self) -> None:
        """Parse everything submitted; return when every result is in."""
        for job, outcome in self.dispatched:
            self.done(job, outcome())
        self.dispatched = []
        if not self.pool_started and len(self.waiting) == 1:
            self._inline(self.waiting.pop())
        self._pump()
        while self.running:
            self._harvest()
        self._isolate()

    def close(self) -> None:
        """Stop the pool (at once, killing its workers, when documents are still in flight)."""
        pool, self.pool = self.pool, None
        if pool is None:
            return
        if self.running or self.waiting:
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
        else:
            pool.shutdown(wait=True)

    # -- internals

    def _inline(self, job: _Job) -> None:
        outcome = _parse_job(self.parse_fn, job.data, job.fmt, job.doc_id, self.standard_pdf)
        job.data = b""
        self.done(job, outcome)

    def _new_pool(self, workers: int) -> ProcessPoolExecutor:
        import multiprocessing

        warm = self.parse_fn in (convert, docling_convert, docling_parse)
        threads = max(1, default_workers() // self.workers)
        self.pool_started = True
        return ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(self.standard_pdf, warm, threads),
        )

    def _start(self, job: _Job) -> bool:
        if self.pool is None:
            self.pool = self._new_pool(self.workers)
        try:
            future = self.pool.submit(_parse_job, self.parse_fn, job.data, job.fmt, job.doc_id, self.standard_pdf)
        except BrokenProcessPool:
            return False
        self.running[future] = job
        return True

    def _pump(self) -> None:
        while self.waiting:
            while len(self.running) >= 2 * self.workers:
                self._harvest()
            job = self.waiting.pop(0)
            if not self._start(job):
                self.suspects.append(job)
                self._drop_pool()

    def _harvest(self) -> None:
        finished, _ = wait(list(self.running), return_when=FIRST_COMPLETED)
        broken = False
        for future in finished:
            job = self.running.pop(future)
            try:
                outcome = future.result()
            except BrokenProcessPool:
                self.suspects.append(job)
                broken = True
                continue
            except Exception as err:  # e.g. a result that could not be sent back
                outcome = ParseOutcome(None, [], f"parse failed: {err}", 0.0)
            job.data = b""
            self.done(job, outcome)
        if broken:
            self._drop_pool()

    def _drop_pool(self) -> None:
        """A worker died: every document still in flight died with the pool."""
        log.warning("a parser worker process died; its documents will be parsed again one at a time")
        while self.running:
            finished, _ = wait(list(self.running))
            for future in finished:
                job = self.running.pop(future)
                try:
                    outcome = future.result()
                except Exception:
                    self.suspects.append(job)
                    continue
                job.data = b""
                self.done(job, outcome)
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def _isolate(self) -> None:
        """Parse each suspect alone in a one-worker pool: a crash names its document."""
        pool: ProcessPoolExecutor | None = None
        try:
            for job in sorted(self.suspects, key=lambda j: j.index):
                if pool is None:
                    pool = self._new_pool(1)
                future = pool.submit(_parse_job, self.parse_fn, job.data, job.fmt, job.doc_id, self.standard_pdf)
                try:
                    outcome = future.result()
                except BrokenProcessPool:
                    outcome = ParseOutcome(None, [], CRASHED, 0.0)
                    pool.shutdown(wait=True)
                    pool = None
                except Exception as err:
                    outcome = ParseOutcome(None, [], f"parse failed: {err}", 0.0)
                job.data = b""
                self.done(job, outcome)
            self.suspects = []
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
