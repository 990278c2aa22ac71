"""The watch benchmark's PDF edit (benchmarks/_pdf_reword.py): a shipped CUAD PDF with one line's words
reversed reads, through PDFium and through ragsweep's own parse, the same but for that line."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pypdfium2

from ragsweep.pipeline.corpus import parse_corpus

ROOT = Path(__file__).resolve().parent.parent
PDF = (
    ROOT
    / "datasets"
    / "cuad"
    / "docs"
    / "AMERICASSHOPPINGMALLINC_12_10_1999-EX-10.2-SITE DEVELOPMENT AND HOSTING AGREEMENT.PDF"
)


def _reword_pdf():
    spec = importlib.util.spec_from_file_location("_pdf_reword", ROOT / "benchmarks" / "_pdf_reword.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reword_pdf


def _lines(path: Path) -> list[str]:
    doc = pypdfium2.PdfDocument(str(path))
    try:
        return [line for page in doc for line in page.get_textpage().get_text_range().splitlines()]
    finally:
        doc.close()


def test_one_line_reworded_and_nothing_else(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    edited = docs / PDF.name
    shutil.copy(PDF, edited)
    _reword_pdf()(edited)
    before, after = _lines(PDF), _lines(edited)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(changed) == 1 and sorted(changed[0][0].split()) == sorted(changed[0][1].split())
    assert changed[0][1].split() == list(reversed(changed[0][0].split()))
    (parsed,) = parse_corpus(docs).documents
    assert " ".join(changed[0][1].split()) in " ".join(parsed.text.split())
