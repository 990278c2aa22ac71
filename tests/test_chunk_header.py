"""The chunk header lever (``$chunk_header``: none | title | title+heading).

The header is part of the chunk text Pathway indexes (BM25 and the embedder see it), its
offsets are those of the chunk without a header, and every cache keys on it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.chunking import OffsetTokenCountSplitter, header_of
from ragsweep.pipeline.config import PipelineConfig
from support import PIPELINE, ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "corpus"
MODES = ("none", "title", "title+heading")

# the question names the document only by its title: none of its words is in that document's text
ZANZIBAR = "The tenant pays rent on the first day of each month. Repairs are the landlord's duty. " * 3
OSLO = "This supply agreement replaces any earlier lease of equipment between the parties. " * 3
QUESTION = "Zanzibar lease"


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    """Two plain text files (titles: their stems) and a Markdown file with a title and a heading."""
    root = tmp_path_factory.mktemp("header-docs")
    (root / "zanzibar-lease.txt").write_text(ZANZIBAR)
    (root / "oslo-supply.txt").write_text(OSLO)
    shutil.copy(FIXTURES / "notes" / "borrow-checker.md", root / "borrow-checker.md")
    return root


@pytest.fixture(scope="module")
def corpus(docs, tmp_path_factory):
    from ragsweep.pipeline.corpus import parse_corpus

    return parse_corpus(docs, cache_dir=tmp_path_factory.mktemp("parse-cache"))


def _config(mode: str | None, **overrides) -> PipelineConfig:
    knobs = {"retriever_mode": "bm25", "min_tokens": 5, "max_tokens": 30, **overrides}
    return PipelineConfig.load(PIPELINE, knobs if mode is None else {**knobs, "chunk_header": mode})


# ------------------------------------------------------------------ the splitter and the outline


def test_the_splitter_prepends_the_header_and_keeps_the_offsets():
    text = "Intro words come first here. " * 4 + "Payment terms follow now. " * 4
    heading_at = text.index("Payment")
    meta = {"doc_id": "deals/acme-supply.txt", "headings": [[heading_at, "Payment"]]}
    plain = OffsetTokenCountSplitter(min_tokens=5, max_tokens=12).chunk(text, meta)
    assert len(plain) > 2
    for mode in ("title", "title+heading"):
        headed = OffsetTokenCountSplitter(min_tokens=5, max_tokens=12, chunk_header=mode).chunk(text, meta)
        assert [(m["start"], m["end"]) for _, m in headed] == [(m["start"], m["end"]) for _, m in plain]
        for (piece, _), (served, m) in zip(plain, headed):
            assert served == m["header"] + piece and "headings" not in m
            heading = "Payment" if mode == "title+heading" and m["start"] >= heading_at else None
            assert m["header"] == "acme-supply\n" + (f"{heading}\n" if heading else "") + "\n"
    assert all("header" not in m for _, m in plain)
    # a heading at the chunk's first character is its section; Docling's title replaces the stem
    assert header_of("title+heading", {**meta, "title": "Supply"}, heading_at) == "Supply\nPayment\n\n"
    with pytest.raises(ValueError, match="chunk_header = 'titel': must be one of none, title, title\\+heading"):
        OffsetTokenCountSplitter(chunk_header="titel")


def test_docling_keeps_the_title_and_where_each_heading_starts(corpus):
    by_id = {d.doc_id: d for d in corpus.documents}
    md = by_id["borrow-checker.md"]
    assert md.title == "Ownership in Rust"
    assert [(md.text[pos : pos + len(h)], h) for pos, h in md.headings] == [
        ("The borrow checker", "The borrow checker")
    ]
    assert md.headings[0][0] > md.text.index("single owner")  # the heading's place, not its first mention
    assert by_id["zanzibar-lease.txt"].title is None and by_id["zanzibar-lease.txt"].headings == []


def test_the_outline_comes_back_from_the_parse_cache(docs, tmp_path):
    from ragsweep.pipeline.corpus import parse_corpus

    first = parse_corpus(docs, cache_dir=tmp_path)
    again = parse_corpus(docs, cache_dir=tmp_path)
    assert all(d.cached for d in again.documents)
    assert [(d.title, d.headings) for d in again.documents] == [(d.title, d.headings) for d in first.documents]
    assert again.outline_hash == first.outline_hash != ""


# ------------------------------------------------------------------ the store (real Pathway, real tantivy)


@pytest.fixture(scope="module")
def runs(corpus):
    """mode -> the store's run for the title-only question (k=1) and a probe reaching every chunk."""
    from ragsweep.pipeline.store import Query, RagStore

    return {
        mode: RagStore(_config(mode), corpus).run([Query(QUESTION, 1), Query("borrow checker", 1)]) for mode in MODES
    }


def test_a_question_matching_only_the_title_finds_the_document(runs):
    assert [h.doc_id for h in runs["none"].hits[0]] == ["oslo-supply.txt"]  # the word "lease" alone
    for mode in ("title", "title+heading"):
        (hit,) = runs[mode].hits[0]
        assert hit.doc_id == "zanzibar-lease.txt", mode
        assert hit.header == "zanzibar-lease\n\n" and hit.served_text == hit.header + hit.text
        assert "Zanzibar" not in hit.text and "zanzibar" not in hit.text.lower()


def test_offsets_and_texts_are_those_of_none(runs, corpus):
    def table(mode):
        return [(c.doc_id, c.start, c.end, c.text) for c in runs[mode].chunks]

    assert table("title") == table("title+heading") == table("none")
    texts = {d.doc_id: d.text for d in corpus.documents}
    assert all(texts[c.doc_id][c.start : c.end] == c.text for c in runs["title"].chunks)
    headed = {(c.doc_id, c.start): c for c in runs["title+heading"].chunks}
    assert {c.header for c in headed.values() if c.doc_id == "borrow-checker.md"} == {
        "Ownership in Rust\n\n",
        "Ownership in Rust\nThe borrow checker\n\n",
    }
    for plain in runs["none"].chunks:  # the header counts in the tokens the index holds
        assert plain.header == "" and headed[(plain.doc_id, plain.start)].tokens > plain.tokens


def test_none_serves_what_a_file_without_the_knob_serves(runs, corpus, tmp_path):
    from ragsweep.pipeline.store import Query, RagStore

    text = PIPELINE.read_text()
    without = "\n".join(line for line in text.splitlines() if "chunk_header" not in line)
    assert without != text
    path = tmp_path / "no-knob.yaml"
    path.write_text(without)
    config = PipelineConfig.load(path, {"retriever_mode": "bm25", "min_tokens": 5, "max_tokens": 30})
    run = RagStore(config, corpus).run([Query(QUESTION, 1), Query("borrow checker", 1)])
    assert [[h.model_dump() for h in hits] for hits in run.hits] == [
        [h.model_dump() for h in hits] for hits in runs["none"].hits
    ]
    assert run.chunks == runs["none"].chunks


# ------------------------------------------------------------------ the knob and the caches


def test_a_bad_value_is_one_line_naming_the_knob():
    with pytest.raises(ConfigError) as err:
        _config("titles")
    message = str(err.value)
    assert "\n" not in message and "$chunk_header = 'titles'" in message
    assert "must be none, title or title+heading" in message


def test_a_splitter_that_does_not_make_the_header_is_refused(tmp_path):
    text = PIPELINE.read_text().replace("  chunk_header: $chunk_header\n", "")
    path = tmp_path / "no-splitter-arg.yaml"
    path.write_text(text)
    PipelineConfig.load(path).build()  # none: nothing to refuse
    with pytest.raises(ConfigError, match=r"\$chunk_header = title, but the splitter .* makes chunk_header = none"):
        PipelineConfig.load(path, {"chunk_header": "title"}).build()


def test_every_cache_keys_on_the_header(corpus):
    from ragsweep.pipeline import served_cache

    configs = {mode: _config(mode) for mode in MODES}
    assert len({c.chunking_key for c in configs.values()}) == 3
    assert len({served_cache.index_fingerprint(c, corpus) for c in configs.values()}) == 3
    # the outline is part of a corpus' key once a document has one
    retitled = corpus.model_copy(deep=True)
    retitled.documents[0].title = "Another title"
    assert retitled.content_hash == corpus.content_hash
    key = served_cache.index_fingerprint(configs["title"], corpus)
    assert served_cache.index_fingerprint(configs["title"], retitled) != key


def test_answerers_get_the_served_text_and_relevance_the_document_text():
    from ragsweep.answer.llm import format_context
    from ragsweep.core.hits import Hit

    hit = Hit(rank=1, score=1.0, text="Rent is due monthly.", doc_id="a.txt", start=0, end=20, header="a\n\n")
    assert format_context([hit]) == "[1] a\n\nRent is due monthly."
    assert Hit(**hit.model_dump()).served_text == hit.served_text


# ------------------------------------------------------------------ eval and sweep


@pytest.fixture(scope="module")
def dataset(docs, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("header-dataset")
    shutil.copytree(docs, root / "docs")
    span = {"doc_id": "zanzibar-lease.txt", "text": "The tenant pays rent on the first day of each month."}
    (root / "cases.jsonl").write_text(json.dumps({"id": "z", "question": QUESTION, "evidence": [span]}) + "\n")
    (root / "README.md").write_text("Written by tests/test_chunk_header.py; no licence needed.\n")
    return root


def test_eval_and_a_sweep_over_the_header(dataset, tmp_path, monkeypatch):
    import ragsweep

    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    overrides = {"retriever_mode": "bm25", "min_tokens": 5, "max_tokens": 30, "top_k": 1}
    report = ragsweep.evaluate(PIPELINE, dataset, overrides={**overrides, "chunk_header": "title"}, ks=[1])
    assert report.metrics["recall@1"] == 1.0
    assert [h.header for h in report.cases[0].hits] == ["zanzibar-lease\n\n"]

    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "grid:\n  chunk_header: [none, title, title+heading]\n"
        "baseline: {chunk_header: none}\nobjectives: [recall@k]\nks: [1]\n"
    )
    sweep = ragsweep.sweep(PIPELINE, dataset, grid, overrides=overrides, out=tmp_path / "sweeps")
    by_header = {c.params["chunk_header"]: c for c in sweep.configs}
    assert sorted(by_header) == sorted(MODES)
    assert len({c.index_key for c in by_header.values()}) == 3  # one index group each
    # served lists never mixed across configurations (the caches key on the header)
    assert {h: c.metrics["recall@k"] for h, c in by_header.items()} == {"none": 0.0, "title": 1.0, "title+heading": 1.0}


def test_the_dry_run_counts_the_header_and_generation_quotes_the_document(corpus):
    from ragsweep.dry_run.run import split_corpus as dry_run_chunks
    from ragsweep.generate.sampling import split_corpus as passages

    config = _config("title")
    counted = dry_run_chunks(config.build().splitter, corpus)
    assert all(t.startswith("zanzibar-lease\n\n") for t in counted["zanzibar-lease.txt"])
    texts = {d.doc_id: d.text for d in corpus.documents}
    sources = passages(corpus, config)
    assert sources and all(texts[c.doc_id][c.start : c.end] == c.text for c in sources)
