"""Docling parsing of every supported format, and every bad-input case."""

import hashlib
import json
import os
from pathlib import Path

import pytest

from ragsweep.pipeline.corpus import CorpusError, detect_format, parse_corpus


def test_every_format_is_parsed_by_docling_but_plain_text(fixture_corpus_dir, tmp_path):
    corpus = parse_corpus(fixture_corpus_dir, cache_dir=tmp_path)
    by_id = {d.doc_id: d for d in corpus.documents}
    assert corpus.skipped == []
    assert len(corpus.documents) == 5
    assert by_id["lucid-distributor-agreement.pdf"].parser == f"docling-{corpus.pdf_pipeline}-pdf"
    assert by_id["sourdough.docx"].parser == "docling-docx"
    assert by_id["jupiter.html"].parser == "docling-html"
    assert by_id["notes/borrow-checker.md"].parser == "docling-md"
    assert by_id["cranfield-1-slipstream.txt"].parser == "plain-text"  # read as it is, not by Docling
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
        from ragsweep.pipeline.corpus import docling_parse

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
    assert set(reasons) == {
        "corrupt.pdf",
        "empty.txt",
        "binary.md",
        "text-not-pdf.pdf",
        "picture.png",
        "unreadable.txt",
    }
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
        ("a.html", b"\xfe<html>" + b"x" * 20, (None, "not UTF-8 text (invalid start byte at byte 0)")),
        ("a.html", "\ufeff<html>".encode("utf-16-le"), ("html", None)),  # UTF-16 with its byte order mark
        ("a", b"hello", (None, "unsupported file type '(no extension)'")),
    ],
)
def test_detect_format(name, head, expected):
    assert detect_format(Path(name), head) == expected


# ---------------------------------------------------------------- whole-file checks (issue 11)


def test_nul_byte_after_the_first_4kb_skips_the_file(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "late-nul.txt").write_bytes(b"plain text line\n" * 400 + b"\x00\x01\x02" + b"more text\n" * 10)
    (docs / "good.txt").write_text("a small good text file\n")
    corpus = parse_corpus(docs, cache_dir=tmp_path / "cache", workers=1)
    assert [d.doc_id for d in corpus.documents] == ["good.txt"]
    assert [(s.doc_id, s.reason) for s in corpus.skipped] == [
        ("late-nul.txt", "binary content behind a .txt extension (NUL byte at byte 6400)")
    ]


def test_invalid_utf8_after_the_first_4kb_skips_the_file(tmp_path):
    """Skipped with a named reason, as invalid UTF-8 in the first 4 KB always was."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "late-latin1.md").write_bytes(b"# notes\n" + b"x" * 8000 + "caf\u00e9".encode("latin-1") + b"\n")
    (docs / "cut-at-end.md").write_bytes(b"y" * 5000 + "\u00e9".encode()[:1])
    # a multi-byte character across the 4 KB mark is valid UTF-8
    (docs / "boundary.md").write_bytes(b"z" * 4095 + "\u00e9".encode() + b" fine\n")
    corpus = parse_corpus(docs, cache_dir=tmp_path / "cache", workers=1)
    assert [d.doc_id for d in corpus.documents] == ["boundary.md"]
    assert {s.doc_id: s.reason for s in corpus.skipped} == {
        "late-latin1.md": "not UTF-8 text (invalid continuation byte at byte 8011)",
        "cut-at-end.md": "not UTF-8 text (unexpected end of data at byte 5000)",
    }


@pytest.mark.parametrize("block_size", [4096, 4097, 5000, 1 << 20])
def test_whole_file_check_finds_the_same_byte_whatever_the_block_size(tmp_path, block_size):
    from ragsweep.pipeline.corpus import read_document

    good = tmp_path / "good.md"
    # two-, three- and four-byte characters cut by every block boundary
    good.write_bytes(("\u00e9\u20ac\U0001f600 ok " * 2000).encode())
    check = read_document(good, block_size=block_size)
    assert (check.fmt, check.reason, check.data) == ("md", None, good.read_bytes())
    assert check.sha256 == hashlib.sha256(good.read_bytes()).hexdigest()

    bad = tmp_path / "bad.md"
    bad.write_bytes(("\u20ac" * 3000).encode() + b"\xe2\x82" + b"tail")  # cut 3-byte character at byte 9000
    check = read_document(bad, block_size=block_size)
    assert check.fmt is None and check.reason == "not UTF-8 text (invalid continuation byte at byte 9000)"

    nul = tmp_path / "nul.html"
    nul.write_bytes(b"<p>" + b"a" * 9000 + b"\x00")
    check = read_document(nul, block_size=block_size)
    assert check.reason == "binary content behind a .html extension (NUL byte at byte 9003)"


def test_a_binary_text_file_is_not_read_past_its_first_bad_block(tmp_path, monkeypatch):
    from ragsweep.pipeline import corpus as corpus_mod

    big = tmp_path / "huge.txt"
    big.write_bytes(b"ok\n" * 2000 + b"\x00" + b"z" * 200_000)
    reads = []
    real_open = Path.open

    def counting_open(self, *args, **kwargs):
        f = real_open(self, *args, **kwargs)
        real_read = f.read

        class Reader:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                f.close()

            def read(self, n=-1):
                reads.append(n)
                return real_read(n)

        return Reader()

    monkeypatch.setattr(Path, "open", counting_open)
    check = corpus_mod.read_document(big, block_size=8192)
    assert check.reason == "binary content behind a .txt extension (NUL byte at byte 6000)"
    assert reads == [8192], "reading must stop at the block holding the NUL byte"


# ---------------------------------------------------------------- parse warnings (issue 11)


def _cut(src: Path, dst: Path, fraction: float) -> None:
    data = src.read_bytes()
    dst.write_bytes(data[: int(len(data) * fraction)])


def test_pdf_cut_at_half_is_skipped_with_a_reason_saying_it_looks_truncated(tmp_path, fixture_corpus_dir):
    docs = tmp_path / "docs"
    docs.mkdir()
    _cut(fixture_corpus_dir / "lucid-distributor-agreement.pdf", docs / "lucid-half.pdf", 0.5)
    corpus = parse_corpus(docs, cache_dir=tmp_path / "cache", workers=1)
    # Docling yields nothing for this one: skipped, with Docling's error and the truncation named
    assert corpus.documents == []
    [skipped] = corpus.skipped
    assert skipped.doc_id == "lucid-half.pdf"
    assert skipped.reason.startswith("parse failed: Docling could not convert it: ")
    assert skipped.reason.endswith("the PDF looks truncated (no %%EOF marker at the end of the file)")


CUAD_DOCS = Path(__file__).resolve().parent.parent / "datasets" / "cuad" / "docs"


@pytest.mark.skipif(not CUAD_DOCS.is_dir(), reason="datasets/cuad is not here")
def test_partly_parsed_pdf_is_kept_with_warnings_naming_the_failed_pages(tmp_path):
    """Docling reads 1 page of 5 (PARTIAL_SUCCESS): kept, and the pages that failed are listed."""
    [source] = CUAD_DOCS.glob("KUBIENT*")
    docs = tmp_path / "docs"
    docs.mkdir()
    _cut(source, docs / "kubient-cut.pdf", 0.8)
    corpus = parse_corpus(docs, cache_dir=tmp_path / "cache", workers=1)
    [doc] = corpus.documents
    assert doc.text and corpus.skipped == []
    assert doc.warnings[0] == "the PDF looks truncated (no %%EOF marker at the end of the file)"
    assert doc.warnings[1].startswith("pages 1-4 of 5 failed to parse (page 1: ")
    assert "truncated or damaged" in doc.warnings[1]
    assert corpus.warnings == {"kubient-cut.pdf": doc.warnings}
    # the warnings come back with the text from the parse cache
    again = parse_corpus(docs, cache_dir=tmp_path / "cache", workers=1)
    assert again.documents[0].cached and again.documents[0].warnings == doc.warnings


def test_a_complete_document_has_no_warnings(fixture_corpus_dir, tmp_path):
    corpus = parse_corpus(fixture_corpus_dir, cache_dir=tmp_path, workers=1)
    assert corpus.warnings == {}


def test_text_cached_without_its_warnings_is_parsed_again(tmp_path):
    """A cache entry with a text but no warnings (written before warnings were kept) is not used."""
    from ragsweep.pipeline.corpus import PARSER_VERSION, ParseCache

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# a\nsome text\n")
    sha = hashlib.sha256((docs / "a.md").read_bytes()).hexdigest()
    key = hashlib.sha256(f"{sha}:docling-md:{PARSER_VERSION}".encode()).hexdigest()
    ParseCache(tmp_path / "cache").put(key, "stale text from an older cache")
    corpus = parse_corpus(docs, cache_dir=tmp_path / "cache", workers=1)
    assert not corpus.documents[0].cached
    assert "some text" in corpus.documents[0].text
    again = parse_corpus(docs, cache_dir=tmp_path / "cache", workers=1)
    assert again.documents[0].cached and again.documents[0].text == corpus.documents[0].text


def test_conversion_problems_name_the_pages():
    from types import SimpleNamespace as Error

    from ragsweep.pipeline.corpus import conversion_problems

    errors = [
        Error(
            page_no=n, error_message=f"Page failed to parse: Error rendering page {n - 1} of key={'ab' * 32}: bad xref"
        )
        for n in (2, 3, 4, 9)
    ] + [
        Error(page_no=None, error_message="Document processing timeout"),
        Error(page_no=None, error_message="Document processing timeout"),
    ]
    assert conversion_problems(errors, page_count=10) == [
        "pages 2-4, 9 of 10 failed to parse (page 2: bad xref)",
        "Document processing timeout",
    ]
    assert conversion_problems([Error(page_no=7, error_message="Page failed to parse.")]) == ["page 7 failed to parse"]
