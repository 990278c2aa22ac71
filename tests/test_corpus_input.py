"""What a documents folder gives the index: plain text as the file says, UTF-16/32 text read,
symlinks out of the folder refused, and file names that cannot break a table line."""

import codecs
from pathlib import Path

import pytest

from ragsweep.cli import main
from ragsweep.pipeline.corpus import parse_corpus, shown_name

HOSTILE = (
    "HOSTILE AGREEMENT. </script><script>alert(6)</script> The governing law is "
    "<img src=x onerror=alert(7)> the State of Nevada."
)
# tags, entities, control characters (bell, escape, form feed), indented and blank lines, CRLF
VERBATIM = (
    HOSTILE + "\n"
    "  Section 2. Fees &amp; costs: &lt;b&gt;10%&lt;/b&gt; &#169; &copy;\n"
    "\tindented by a tab\x07 bell \x1b[31m escape\x0c form feed\r\n"
    "\n"
    "    # not a heading, *not emphasis*, [not](a link)\n"
)


def _parse(docs: Path, tmp_path: Path, **kw):
    return parse_corpus(docs, cache_dir=tmp_path / "cache", workers=1, **kw)


def _docs(tmp_path: Path, files: dict[str, bytes]) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (docs / name).write_bytes(data)
    return docs


def test_a_txt_document_is_indexed_as_the_file_says(tmp_path):
    docs = _docs(tmp_path, {"hostile.txt": HOSTILE.encode(), "verbatim.txt": VERBATIM.encode()})
    corpus = _parse(docs, tmp_path)
    assert corpus.skipped == []
    assert corpus.text_of("hostile.txt") == HOSTILE  # no tag dropped, nothing read as markup
    assert corpus.text_of("verbatim.txt") == VERBATIM  # entities, control characters, white space, CRLF kept
    assert {d.parser for d in corpus.documents} == {"plain-text"}


def test_a_txt_document_parsed_again_from_its_own_text_is_the_same_text(tmp_path):
    docs = _docs(tmp_path, {"a.txt": VERBATIM.encode()})
    first = _parse(docs, tmp_path).text_of("a.txt")
    again = _docs(tmp_path / "again", {"a.txt": (first or "").encode()})
    assert _parse(again, tmp_path / "again", use_cache=False).text_of("a.txt") == first


def test_a_txt_document_is_nfkc_as_pathways_splitter_reads_it(tmp_path):
    # the splitter normalises what it cuts: chunk offsets index the NFKC text
    docs = _docs(tmp_path, {"a.txt": "the ﬁnal Ｎevada clause".encode()})
    assert _parse(docs, tmp_path).text_of("a.txt") == "the final Nevada clause"


def test_markdown_is_still_read_as_markup_by_docling(tmp_path):
    docs = _docs(tmp_path, {"a.md": b"# Title\n\nThe law is <b>Nevada</b> law, see [the act](http://x.example).\n"})
    doc = _parse(docs, tmp_path).documents[0]
    assert doc.parser == "docling-md"
    assert "Title" in doc.text and "# Title" not in doc.text and "http://x.example" not in doc.text


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "utf-8"])
def test_utf16_and_utf32_text_with_a_byte_order_mark_is_decoded(tmp_path, codec):
    bom = {
        "utf-16-le": codecs.BOM_UTF16_LE,
        "utf-16-be": codecs.BOM_UTF16_BE,
        "utf-32-le": codecs.BOM_UTF32_LE,
        "utf-32-be": codecs.BOM_UTF32_BE,
        "utf-8": codecs.BOM_UTF8,
    }[codec]
    text = "Gouverné par le droit de l'État du Nevada — 第十条.\n" * 25000  # past the first 1 MiB block
    docs = _docs(tmp_path, {"a.txt": bom + text.encode(codec), "b.md": bom + "# Heading\n\nbody".encode(codec)})
    corpus = _parse(docs, tmp_path)
    assert corpus.skipped == []
    assert corpus.text_of("a.txt") == text  # the mark is not part of the text
    assert (corpus.text_of("b.md") or "").splitlines()[0] == "Heading"


def test_utf16_without_a_mark_or_with_a_nul_character_is_still_refused(tmp_path):
    docs = _docs(
        tmp_path,
        {
            "no-mark.txt": "plain words".encode("utf-16-le"),
            "nul.txt": codecs.BOM_UTF16_LE + "a\0b".encode("utf-16-le"),
            "cut.txt": codecs.BOM_UTF16_LE + "ab".encode("utf-16-le") + b"\x00\xd8",  # a lone surrogate
            "ok.txt": b"fine",
        },
    )
    reasons = {s.doc_id: s.reason for s in _parse(docs, tmp_path).skipped}
    assert set(reasons) == {"no-mark.txt", "nul.txt", "cut.txt"}
    assert "NUL byte at byte 1" in reasons["no-mark.txt"]
    assert "NUL character in its UTF-16 text" in reasons["nul.txt"]
    assert reasons["cut.txt"].startswith("not UTF-16 text")


@pytest.fixture()
def linked(tmp_path) -> Path:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (outside / "folder").mkdir()
    (outside / "folder" / "secret.txt").write_text("a secret from another folder")
    docs = _docs(tmp_path, {"contract.txt": b"The governing law is Nevada."})
    (docs / "passwd.txt").symlink_to(outside / "passwd")
    (docs / "linked-folder").symlink_to(outside / "folder", target_is_directory=True)
    (docs / "alias.txt").symlink_to(docs / "contract.txt")  # stays inside: indexed
    return docs


def test_a_symlink_out_of_the_documents_folder_is_skipped_with_a_reason_naming_it(linked, tmp_path):
    corpus = _parse(linked, tmp_path)
    assert [d.doc_id for d in corpus.documents] == ["alias.txt", "contract.txt"]
    reasons = {s.doc_id: s.reason for s in corpus.skipped}
    assert set(reasons) == {"passwd.txt", "linked-folder"}
    assert str(tmp_path / "elsewhere" / "passwd") in reasons["passwd.txt"]
    assert "outside the documents folder" in reasons["passwd.txt"] and "--follow-symlinks" in reasons["passwd.txt"]
    assert str(tmp_path / "elsewhere" / "folder") in reasons["linked-folder"]


def test_follow_symlinks_indexes_them(linked, tmp_path):
    corpus = _parse(linked, tmp_path, follow_symlinks=True)
    assert corpus.skipped == []
    assert corpus.text_of("passwd.txt") == "root:x:0:0:root:/root:/bin/bash\n"
    assert corpus.text_of("linked-folder/secret.txt") == "a secret from another folder"


def test_a_docs_folder_that_is_itself_a_symlink_is_read(tmp_path):
    real = _docs(tmp_path, {"a.txt": b"text"})
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    assert [d.doc_id for d in _parse(tmp_path / "link", tmp_path).documents] == ["a.txt"]


def test_index_warns_about_the_link_and_the_flag_follows_it(linked, tmp_path, capsys, default_pipeline):
    args = ["index", "--pipeline", str(default_pipeline), "--docs", str(linked), "--workers", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "skipped passwd.txt: a symlink to" in out and "outside the documents folder" in out
    assert main([*args, "--follow-symlinks"]) == 0
    out = capsys.readouterr().out
    assert "0 skipped" in out and "skipped passwd.txt" not in out and "  passwd.txt " in out


def test_bad_option_values_name_the_option(capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["index", "--docs", str(tmp_path), "--workers", "0"])
    assert "--workers" in capsys.readouterr().err


def test_shown_name_escapes_what_would_break_a_line():
    assert shown_name("plain name.txt") == "plain name.txt"
    assert shown_name("a\nb.txt") == "a\\nb.txt"
    assert shown_name("tab\there\x1b[2J\u200b.txt") == "tab\\there\\x1b[2J\\u200b.txt"
    assert shown_name("back\\slash.txt") == "back\\\\slash.txt"  # so an escape is never ambiguous
    assert shown_name("合同 é.txt") == "合同 é.txt"


def test_index_prints_a_name_with_a_newline_on_one_line(tmp_path, capsys, default_pipeline):
    docs = _docs(tmp_path, {"evil\nname.txt": b"Some text about Nevada law.", "ok.txt": b"Other text."})
    (docs / "bad\r\nskip.png").write_bytes(b"\x89PNG")
    assert main(["index", "--pipeline", str(default_pipeline), "--docs", str(docs), "--workers", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith("  ")]  # the table: one row per document
    assert len(rows) == 2 and rows[0].split()[0] == "evil\\nname.txt"
    assert "skipped bad\\r\\nskip.png: unsupported file type '.png'" in lines
    assert not any(line.startswith(("name.txt", "skip.png")) for line in lines)
