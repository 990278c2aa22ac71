"""Documents folder -> Docling -> parsed text per document, cached by content.

Where documents enter ragsweep. Every file under the folder is either parsed or
skipped with a reason naming it; one bad file never sinks the corpus.

The parsed text is NFKC-normalised (as Pathway's ``TokenCountSplitter`` would do),
so chunk offsets computed by :mod:`ragsweep.chunking` index into exactly this text.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import unicodedata
from collections.abc import Callable, Iterable
from functools import lru_cache
from io import BytesIO
from pathlib import Path

from pydantic import BaseModel

from ragsweep.offline import ensure_offline

# bump when the way text is extracted changes: invalidates the parse cache
PARSER_VERSION = "1"

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


class ParsedDocument(BaseModel):
    doc_id: str  # path relative to the documents folder, '/'-separated
    text: str
    format: str  # pdf | docx | html | md | txt
    parser: str  # e.g. docling-native-pdf, docling-standard-pdf, docling-html
    sha256: str
    seconds: float
    cached: bool = False


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
        h = hashlib.sha256()
        for doc in sorted(self.documents, key=lambda d: d.doc_id):
            h.update(doc.doc_id.encode())
            h.update(b"\0")
            h.update(hashlib.sha256(doc.text.encode()).digest())
        return h.hexdigest()

    def text_of(self, doc_id: str) -> str | None:
        for doc in self.documents:
            if doc.doc_id == doc_id:
                return doc.text
        return None


def default_cache_dir() -> Path:
    return Path(os.environ.get("RAGSWEEP_CACHE_DIR", ".cache/ragsweep"))


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
    if b"\0" in head:
        return None, f"binary content behind a {ext} extension"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        # a multi-byte character may be cut at the end of the sample
        if err.start < len(head) - 4:
            return None, f"not UTF-8 text ({err.reason} at byte {err.start})"
    return claimed, None


def layout_models_available() -> bool:
    """True when Docling's layout model is on this machine (never downloads)."""
    ensure_offline()
    artifacts = os.environ.get("DOCLING_ARTIFACTS_PATH")
    if artifacts and any(Path(artifacts).glob("*layout*")):
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache("docling-project/docling-layout-heron", "model.safetensors")
        return isinstance(found, str)
    except Exception:
        return False


@lru_cache(maxsize=2)
def _converter(standard_pdf: bool):
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
                artifacts_path=os.environ.get("DOCLING_ARTIFACTS_PATH") or None,
            )
        )
    else:
        pdf_option = NativePdfFormatOption(pipeline_options=NativePdfPipelineOptions())
    return DocumentConverter(
        allowed_formats=[InputFormat.PDF, InputFormat.DOCX, InputFormat.HTML, InputFormat.MD],
        format_options={InputFormat.PDF: pdf_option},
    )


# ---------------------------------------------------------------- parsing

# Docling's stream name decides its backend: give it the detected type's extension.
_STREAM_SUFFIX = {"pdf": ".pdf", "docx": ".docx", "html": ".html", "md": ".md", "txt": ".md"}


def docling_parse(data: bytes, fmt: str, name: str, standard_pdf: bool) -> str:
    """Parse one document's bytes with Docling, without its chunking; return plain text."""
    from docling.datamodel.base_models import ConversionStatus, DocumentStream

    stream = DocumentStream(name=Path(name).stem + _STREAM_SUFFIX[fmt], stream=BytesIO(data))
    result = _converter(standard_pdf).convert(stream, raises_on_error=False)
    if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
        errors = "; ".join(e.error_message for e in result.errors) or str(result.status)
        raise ValueError(f"Docling could not convert it: {errors}")
    text = result.document.export_to_text()
    return unicodedata.normalize("NFKC", text).strip()


def parser_name(fmt: str, standard_pdf: bool) -> str:
    if fmt == "pdf":
        return "docling-standard-pdf" if standard_pdf else "docling-native-pdf"
    return f"docling-{fmt}"


def iter_files(docs_dir: Path) -> Iterable[Path]:
    for path in sorted(docs_dir.rglob("*")):
        if path.name.startswith(".") or any(p.startswith(".") for p in path.relative_to(docs_dir).parts):
            continue
        if path.is_dir():
            continue
        yield path


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

            from ragsweep.llm.sqlite_cache import quarantine

            moved = quarantine(path) if path.is_file() else None
            logging.getLogger(__name__).warning(
                "ragsweep parse cache entry %s is unreadable (%s: %s); %s, parsing the document again",
                path, type(err).__name__, str(err)[:120], f"moved aside to {moved}" if moved else "ignored")
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


def parse_corpus(
    docs_dir: str | Path,
    cache_dir: Path | None = None,
    use_cache: bool = True,
    on_progress: Callable[[str], None] | None = None,
    parse_fn: Callable[[bytes, str, str, bool], str] = docling_parse,
    progress: bool = False,
) -> Corpus:
    """Parse every file under ``docs_dir``; skip bad ones with a reason.

    Raises :class:`CorpusError` when the folder is missing, not a folder, or holds
    no file at all. A folder whose every file is skipped is returned as is: the
    caller decides (``index`` reports it, ``eval`` refuses to run on it).
    """
    docs_path = Path(docs_dir)
    if not docs_path.exists():
        raise CorpusError(f"documents folder {str(docs_path)!r} does not exist")
    if not docs_path.is_dir():
        raise CorpusError(f"documents folder {str(docs_path)!r} is not a folder")
    files = list(iter_files(docs_path))
    if not files:
        raise CorpusError(f"documents folder {str(docs_path)!r} holds no files")

    import sys

    from tqdm import tqdm

    with tqdm(total=len(files), desc="parse", unit="doc", file=sys.stderr, leave=False,
              disable=not progress or len(files) < 2) as bar:
        corpus = _parse_files(docs_path, files, cache_dir, use_cache, on_progress, parse_fn, bar.update)
    return corpus


def _parse_files(
    docs_path: Path,
    files: list[Path],
    cache_dir: Path | None,
    use_cache: bool,
    on_progress: Callable[[str], None] | None,
    parse_fn: Callable[[bytes, str, str, bool], str],
    tick: Callable[[int], object],
) -> Corpus:
    """The parsing loop of :func:`parse_corpus` (``tick`` advances its progress bar)."""
    standard_pdf = layout_models_available()
    cache = ParseCache((cache_dir or default_cache_dir()) if use_cache else None)
    documents: list[ParsedDocument] = []
    skipped: list[SkippedDocument] = []
    for path in files:
        doc_id = path.relative_to(docs_path).as_posix()
        tick(1)
        if on_progress:
            on_progress(doc_id)
        try:
            data = path.read_bytes()
        except OSError as err:
            skipped.append(SkippedDocument(doc_id=doc_id, reason=f"cannot read: {err.strerror or err}"))
            continue
        fmt, reason = detect_format(path, data[:4096])
        if fmt is None:
            skipped.append(SkippedDocument(doc_id=doc_id, reason=reason or "unsupported"))
            continue
        parser = parser_name(fmt, standard_pdf)
        sha = hashlib.sha256(data).hexdigest()
        key = hashlib.sha256(f"{sha}:{parser}:{PARSER_VERSION}".encode()).hexdigest()
        started = time.perf_counter()
        text = cache.get(key)
        cached = text is not None
        if text is None:
            try:
                text = parse_fn(data, fmt, doc_id, standard_pdf)
            except Exception as err:  # one bad document must never sink the run
                skipped.append(SkippedDocument(doc_id=doc_id, reason=f"parse failed: {err}"))
                continue
            if text:
                cache.put(key, text)
        if not text:
            skipped.append(SkippedDocument(doc_id=doc_id, reason="no text extracted"))
            continue
        documents.append(
            ParsedDocument(
                doc_id=doc_id,
                text=text,
                format=fmt,
                parser=parser,
                sha256=sha,
                seconds=time.perf_counter() - started,
                cached=cached,
            )
        )
    return Corpus(
        docs_dir=str(docs_path),
        documents=documents,
        skipped=skipped,
        pdf_pipeline="standard" if standard_pdf else "native",
    )
