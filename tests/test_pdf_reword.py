"""The watch benchmark's PDF edit (benchmarks/pdf_reword.py): a shipped CUAD PDF with one line's words
reversed reads, through PDFium and through ragsweep's own parse, the same but for that line."""

from __future__ import annotations

from ragsweep.pipeline.corpus import parse_corpus
from support import ROOT
from support.scripts import benchmark_module

PDF = (
    ROOT
    / "datasets"
    / "cuad"
    / "docs"
    / "AMERICASSHOPPINGMALLINC_12_10_1999-EX-10.2-SITE DEVELOPMENT AND HOSTING AGREEMENT.PDF"
)


def test_one_line_reworded_and_nothing_else(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    changed = benchmark_module("pdf_reword").changed_lines(PDF, docs)
    assert changed is not None and len(changed) == 1
    assert changed[0][1].split() == list(reversed(changed[0][0].split()))
    (parsed,) = parse_corpus(docs).documents  # the reworded copy, as ragsweep's parse reads it
    assert " ".join(changed[0][1].split()) in " ".join(parsed.text.split())
