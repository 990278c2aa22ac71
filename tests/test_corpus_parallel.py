"""parse_corpus with a pool of worker processes: same result as serial (issue 13)."""

import os
import shutil
from pathlib import Path

import pytest

from ragsweep.pipeline.corpus import CRASHED, parse_corpus


@pytest.fixture()
def mixed_docs(tmp_path, fixture_corpus_dir) -> Path:
    """The fixture corpus (every format) plus files that must be skipped."""
    docs = tmp_path / "docs"
    shutil.copytree(fixture_corpus_dir, docs)
    (docs / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage" + bytes(range(256)))
    (docs / "late-nul.txt").write_bytes(b"text\n" * 1000 + b"\x00")
    (docs / "empty.md").write_bytes(b"")
    (docs / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    lucid = (fixture_corpus_dir / "lucid-distributor-agreement.pdf").read_bytes()
    (docs / "z-lucid-half.pdf").write_bytes(lucid[: len(lucid) // 2])
    return docs


def _summary(corpus):
    docs = [(d.doc_id, d.text, d.format, d.parser, d.sha256, d.warnings) for d in corpus.documents]
    return docs, [(s.doc_id, s.reason) for s in corpus.skipped]


def test_two_workers_give_exactly_the_serial_result(mixed_docs, tmp_path):
    serial = parse_corpus(mixed_docs, cache_dir=tmp_path / "cache-serial", workers=1)
    parallel = parse_corpus(mixed_docs, cache_dir=tmp_path / "cache-parallel", workers=2)
    assert not any(d.cached for d in serial.documents + parallel.documents), "both must really parse"
    assert _summary(parallel) == _summary(serial)
    assert parallel.content_hash == serial.content_hash
    docs, skipped = _summary(serial)
    assert [d[0] for d in docs] == sorted(d[0] for d in docs) and len(docs) == 5
    assert [s[0] for s in skipped] == ["corrupt.pdf", "empty.md", "late-nul.txt", "picture.png", "z-lucid-half.pdf"]


# module-level parse functions: a worker process imports them by name


def upper_parse(data, fmt, name, standard_pdf):
    if name.startswith("fail"):
        raise ValueError(f"cannot parse {name}")
    return data.decode().upper(), [f"parsed in process {os.getpid()}"]


def crashing_parse(data, fmt, name, standard_pdf):
    if name == "crash.txt":
        os._exit(3)  # as a segfault in native code would: the worker dies
    return data.decode().upper()


def exploding_parse(data, fmt, name, standard_pdf):
    raise AssertionError("a cached document must not be parsed again")


def _text_docs(tmp_path, names) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir(parents=True)
    for name in names:
        (docs / name).write_text(f"text of {name}\n")
    return docs


def test_workers_run_in_other_processes_and_keep_order_and_errors(tmp_path):
    names = [f"{c}.txt" for c in "abcdefgh"] + ["fail-1.txt", "fail-2.txt"]
    docs = _text_docs(tmp_path, names)
    serial = parse_corpus(docs, use_cache=False, parse_fn=upper_parse, workers=1)
    parallel = parse_corpus(docs, use_cache=False, parse_fn=upper_parse, workers=2)
    assert [d.doc_id for d in parallel.documents] == [f"{c}.txt" for c in "abcdefgh"]
    assert [(d.doc_id, d.text) for d in parallel.documents] == [(d.doc_id, d.text) for d in serial.documents]
    assert (
        [(s.doc_id, s.reason) for s in parallel.skipped]
        == [(s.doc_id, s.reason) for s in serial.skipped]
        == [
            ("fail-1.txt", "parse failed: cannot parse fail-1.txt"),
            ("fail-2.txt", "parse failed: cannot parse fail-2.txt"),
        ]
    )
    assert {d.warnings[0] for d in serial.documents} == {f"parsed in process {os.getpid()}"}
    assert f"parsed in process {os.getpid()}" not in {d.warnings[0] for d in parallel.documents}


def test_a_worker_crash_skips_only_the_document_that_caused_it(tmp_path):
    names = ["a.txt", "b.txt", "crash.txt", "d.txt", "e.txt", "f.txt"]
    docs = _text_docs(tmp_path, names)
    corpus = parse_corpus(docs, use_cache=False, parse_fn=crashing_parse, workers=2)
    assert [d.doc_id for d in corpus.documents] == ["a.txt", "b.txt", "d.txt", "e.txt", "f.txt"]
    assert all(d.text.startswith("TEXT OF") for d in corpus.documents)
    assert [(s.doc_id, s.reason) for s in corpus.skipped] == [("crash.txt", CRASHED)]


def test_only_cache_misses_are_parsed(tmp_path):
    docs = _text_docs(tmp_path, ["a.txt", "b.txt", "c.txt"])
    first = parse_corpus(docs, cache_dir=tmp_path / "cache", parse_fn=upper_parse, workers=2)
    again = parse_corpus(docs, cache_dir=tmp_path / "cache", parse_fn=exploding_parse, workers=2)
    assert again.skipped == [] and all(d.cached for d in again.documents)
    assert [(d.doc_id, d.text, d.warnings) for d in again.documents] == [
        (d.doc_id, d.text, d.warnings) for d in first.documents
    ]


def test_a_parse_function_that_cannot_be_pickled_runs_serially(tmp_path):
    docs = _text_docs(tmp_path, ["a.txt", "b.txt", "c.txt"])
    seen = []

    def local_parse(data, fmt, name, standard_pdf):  # a closure: no worker process can import it
        seen.append(name)
        return data.decode()

    corpus = parse_corpus(docs, use_cache=False, parse_fn=local_parse, workers=2)
    assert seen == ["a.txt", "b.txt", "c.txt"] and len(corpus.documents) == 3


def test_workers_must_be_positive(tmp_path):
    docs = _text_docs(tmp_path, ["a.txt"])
    with pytest.raises(ValueError, match="workers must be >= 1"):
        parse_corpus(docs, use_cache=False, workers=0)


def test_default_workers_parse_a_small_folder_in_this_process(tmp_path, monkeypatch):
    from ragsweep.pipeline import corpus as corpus_mod

    monkeypatch.setattr(corpus_mod, "default_workers", lambda: 2)
    small = parse_corpus(
        _text_docs(tmp_path / "small", ["a.txt", "b.txt", "c.txt"]), use_cache=False, parse_fn=upper_parse
    )
    assert {d.warnings[0] for d in small.documents} == {f"parsed in process {os.getpid()}"}
    big = parse_corpus(
        _text_docs(tmp_path / "big", [f"{i:02}.txt" for i in range(16)]), use_cache=False, parse_fn=upper_parse
    )
    assert len(big.documents) == 16
    assert f"parsed in process {os.getpid()}" not in {d.warnings[0] for d in big.documents}
