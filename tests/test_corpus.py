"""Docling parsing of every supported format, and every bad-input case."""

import os
from pathlib import Path

import pytest

from ragsweep.corpus import CorpusError, detect_format, parse_corpus


def test_every_format_is_parsed_by_docling(fixture_corpus_dir, tmp_path):
    corpus = parse_corpus(fixture_corpus_dir, cache_dir=tmp_path)
    by_id = {d.doc_id: d for d in corpus.documents}
    assert corpus.skipped == []
    assert len(corpus.documents) == 5
    assert by_id["lucid-distributor-agreement.pdf"].parser == f"docling-{corpus.pdf_pipeline}-pdf"
    assert by_id["sourdough.docx"].parser == "docling-docx"
    assert by_id["jupiter.html"].parser == "docling-html"
    assert by_id["notes/borrow-checker.md"].parser == "docling-md"
    assert by_id["cranfield-1-slipstream.txt"].parser == "docling-txt"
    assert "DISTRIBUTOR AGREEMENT" in by_id["lucid-distributor-agreement.pdf"].text.upper()
    assert "stretch and fold" in by_id["sourdough.docx"].text
    assert "Ganymede is the largest moon" in by_id["jupiter.html"].text
    assert "<p>" not in by_id["jupiter.html"].text
    assert "borrow checker" in by_id["notes/borrow-checker.md"].text
    assert "slipstream" in by_id["cranfield-1-slipstream.txt"].text


def test_parse_cache_is_used_on_second_parse(fixture_corpus_dir, tmp_path):
    calls = []

    def counting_parse(data, fmt, name, standard):
        calls.append(name)
        from ragsweep.corpus import docling_parse

        return docling_parse(data, fmt, name, standard)

    first = parse_corpus(fixture_corpus_dir, cache_dir=tmp_path, parse_fn=counting_parse)
    n = len(calls)
    second = parse_corpus(fixture_corpus_dir, cache_dir=tmp_path, parse_fn=counting_parse)
    assert n == len(first.documents) and len(calls) == n, "second parse must come from the cache"
    assert all(d.cached for d in second.documents)
    assert first.content_hash == second.content_hash


@pytest.fixture()
def bad_corpus(tmp_path, fixture_corpus_dir) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.html").write_text((fixture_corpus_dir / "jupiter.html").read_text())
    (docs / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage" + os.urandom(300))
    (docs / "empty.txt").write_bytes(b"")
    (docs / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(200))
    (docs / "text-not-pdf.pdf").write_text("this is plain text wearing a pdf extension")
    (docs / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(100))
    (docs / "unreadable.txt").symlink_to(tmp_path / "missing-target.txt")
    return docs


def test_each_bad_file_is_skipped_with_its_reason_and_the_rest_is_indexed(bad_corpus, tmp_path):
    corpus = parse_corpus(bad_corpus, cache_dir=tmp_path / "cache")
    assert [d.doc_id for d in corpus.documents] == ["good.html"]
    reasons = {s.doc_id: s.reason for s in corpus.skipped}
    assert set(reasons) == {"corrupt.pdf", "empty.txt", "binary.md", "text-not-pdf.pdf", "picture.png", "unreadable.txt"}
    assert reasons["corrupt.pdf"].startswith("parse failed")
    assert reasons["empty.txt"] == "empty file"
    assert "binary content" in reasons["binary.md"]
    assert "not a PDF" in reasons["text-not-pdf.pdf"]
    assert "unsupported file type '.png'" in reasons["picture.png"]
    assert reasons["unreadable.txt"].startswith("cannot read")


def test_missing_or_empty_folder_is_a_clear_error(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        parse_corpus(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusError, match="holds no files"):
        parse_corpus(tmp_path / "empty")


@pytest.mark.parametrize(
    "name,head,expected",
    [
        ("a.pdf", b"%PDF-1.7", ("pdf", None)),
        ("a.PDF", b"%PDF-1.7", ("pdf", None)),
        ("a.txt", b"%PDF-1.7", (None, "PDF content behind a .txt extension")),
        ("a.docx", b"PK\x03\x04rest", ("docx", None)),
        ("a.docx", b"hello", (None, "not a DOCX (not a zip archive): corrupt or mislabelled")),
        ("a.md", "caf\u00e9 # title".encode(), ("md", None)),
        ("a.html", b"\xff\xfe<html>" + b"x" * 20, (None, "not UTF-8 text (invalid start byte at byte 0)")),
        ("a", b"hello", (None, "unsupported file type '(no extension)'")),
    ],
)
def test_detect_format(name, head, expected):
    assert detect_format(Path(name), head) == expected
