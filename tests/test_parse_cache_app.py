"""An app's own parser runs once per document and configuration: a second run parses nothing (issue 30)."""

from __future__ import annotations

from counting_parser import app_yaml

APP = app_yaml("upper: $upper", extra="$upper: false\n")


def test_a_second_run_parses_nothing_and_a_parser_argument_parses_again(tmp_path, monkeypatch):
    from ragsweep.pipeline.config import PipelineConfig
    from ragsweep.pipeline.corpus import parse_corpus
    from ragsweep.pipeline.store import RagStore

    log = tmp_path / "parse.log"
    log.write_text("")
    monkeypatch.setenv("RAGSWEEP_TEST_PARSE_LOG", str(log))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Rent is due on the first day.\n\nRepairs are the landlord's duty.\n")
    (docs / "b.txt").write_text("The supplier delivers within fourteen days.\n")
    app = tmp_path / "app.yaml"
    app.write_text(APP)

    def parse(overrides=None):
        spec = PipelineConfig.load(app, overrides).parser_spec()
        return parse_corpus(docs, cache_dir=tmp_path / "cache", parse_fn=spec.parse_fn(), parser_id=spec.identity)

    first = parse()
    assert len(log.read_text().splitlines()) == 2
    a = next(d for d in first.documents if d.doc_id == "a.txt")
    assert [e.metadata for e in a.elements] == [{"paragraph": 0}, {"paragraph": 1}]
    again = parse()
    assert len(log.read_text().splitlines()) == 2 and all(d.cached for d in again.documents)  # nothing parsed
    assert [d.model_dump(exclude={"cached", "seconds"}) for d in again.documents] == [
        d.model_dump(exclude={"cached", "seconds"}) for d in first.documents
    ]
    upper = parse({"upper": True})  # another parser configuration: each document parsed once more
    assert len(log.read_text().splitlines()) == 4 and upper.documents[0].text.startswith("RENT")

    # each element split on its own, with the parser's metadata; offsets into the parsed text
    config = PipelineConfig.load(app)
    hits = RagStore(config, again).retrieve(["landlord repairs"], k=3)[0]
    assert hits[0].doc_id == "a.txt" and hits[0].text.startswith("Repairs")
    assert a.text[hits[0].start : hits[0].end] == hits[0].text
