"""Evidence offsets in the canonical record (issue 15): `{text, doc_id, start, end}`.

Checked by `ragsweep validate` against the parsed documents; datasets without offsets load,
validate (without parsing anything) and score exactly as before.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ragsweep.core.hits import Hit
from ragsweep.datasets.loader import case_to_json, load_dataset, read_cases
from ragsweep.datasets.schema import Case, Evidence
from ragsweep.metrics.relevance import mark_hits
from ragsweep.pipeline.corpus import parse_corpus
from ragsweep.validate.command import main
from ragsweep.validate.parsed import validate_dataset
from support import ROOT

CLAUSE = "This Agreement is governed by the laws of the State of New York."
DOC = (
    "The Licensor is Acme Corp. The term is five years.\n\n" + CLAUSE + "\n\n"
    "Notices go to the addresses above. The agreement was signed on March 24, 2006.\n"
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> tuple[Path, str]:
    """A dataset folder with one document, and that document's parsed text."""
    root = tmp_path_factory.mktemp("offsets")
    (root / "docs").mkdir()
    (root / "docs" / "contract.txt").write_text(DOC, encoding="utf-8")
    (root / "README.md").write_text("written by tests/test_evidence_offsets.py\n")
    text = parse_corpus(root / "docs").documents[0].text
    return root, text


def _write(root: Path, evidence: list[dict], name: str = "cases.jsonl") -> None:
    row = {
        "id": "law",
        "question": "Which state's law governs?",
        "doc_scope": ["contract.txt"],
        "evidence": evidence,
        "reference_answer": "New York",
    }
    (root / name).write_text(json.dumps(row) + "\n", encoding="utf-8")


def _span(text: str, quote: str) -> dict:
    start = text.index(quote)
    return {"text": quote, "doc_id": "contract.txt", "start": start, "end": start + len(quote)}


def test_offsets_that_point_at_the_quote_validate(folder):
    root, text = folder
    span = _span(text, CLAUSE)
    _write(root, [span])
    assert validate_dataset(root) == []
    evidence = load_dataset(root).cases[0].evidence[0]
    assert (evidence.start, evidence.end) == (span["start"], span["end"]) and evidence.has_offsets
    # the quote matches after the generator's normalisation: case, curly quotes, whitespace runs
    _write(root, [{**span, "text": "THIS  Agreement is governed by the laws of the State of New York."}])
    assert validate_dataset(root) == []


def test_a_wrong_offset_is_named_with_file_line_and_field(folder):
    root, text = folder
    span = _span(text, CLAUSE)
    _write(root, [{**span, "start": span["start"] + 5, "end": span["end"] + 5}])
    problems = [str(p) for p in validate_dataset(root)]
    found = text[span["start"] + 5 : span["end"] + 5]
    assert problems == [
        f"cases.jsonl:1: evidence[0]: case 'law': the parsed text of 'contract.txt' at [{span['start'] + 5}, "
        f"{span['end'] + 5}) is {found!r}, not the quote {CLAUSE!r} (compared after normalising quotes, dashes, "
        "Unicode forms, case and whitespace)"
    ]

    _write(root, [{**span, "end": len(text) + 3}])
    assert [str(p) for p in validate_dataset(root)] == [
        f"cases.jsonl:1: evidence[0]: case 'law': offsets [{span['start']}, {len(text) + 3}) run past the end of "
        f"the parsed text of 'contract.txt' ({len(text)} characters)"
    ]

    # a lone cases file next to docs/ is checked the same way (`ragsweep validate cases.jsonl`)
    _write(root, [{**span, "start": span["start"] + 5, "end": span["end"] + 5}], name="other.jsonl")
    out = io.StringIO()
    assert main([str(root / "other.jsonl")], out=out) == 1
    assert "other.jsonl:1: evidence[0]: case 'law': the parsed text of 'contract.txt' at [" in out.getvalue()
    (root / "other.jsonl").unlink()


@pytest.mark.parametrize(
    "evidence, message",
    [
        ({"start": 3}, "cases.jsonl:1: evidence[0]: start and end are given together (character offsets [start, end))"),
        ({"start": 9, "end": 9}, "cases.jsonl:1: evidence[0]: end (9) must be greater than start (9)"),
        ({"start": -1, "end": 4}, "cases.jsonl:1: evidence[0].start: Input should be greater than or equal to 0"),
        (
            {"start": 0, "end": 4, "doc_id": None},
            "cases.jsonl:1: evidence[0]: offsets need the doc_id of the document they point into",
        ),
    ],
)
def test_offsets_without_the_document_are_checked_for_shape(tmp_path, evidence, message):
    row = {
        "id": "law",
        "question": "Which law?",
        "evidence": [{"text": "New York", "doc_id": "contract.txt", **evidence}],
    }
    (tmp_path / "cases.jsonl").write_text(json.dumps(row) + "\n")
    cases, problems = read_cases(tmp_path / "cases.jsonl")
    assert cases == [] and [str(p) for p in problems] == [message]


def test_an_unparsable_document_is_named(folder, tmp_path):
    root, text = folder
    other = tmp_path / "ds"
    (other / "docs").mkdir(parents=True)
    (other / "docs" / "contract.txt").write_bytes(b"binary\x00data\x00" * 10)
    (other / "README.md").write_text("test\n")
    _write(other, [_span(text, CLAUSE)])
    problems = [str(p) for p in validate_dataset(other)]
    assert (
        len(problems) == 1
        and problems[0].startswith("cases.jsonl:1: evidence[0]: case 'law': offsets [")
        and "cannot be checked: 'contract.txt' could not be parsed (" in problems[0]
    )


def test_datasets_without_offsets_load_and_validate_as_before(monkeypatch):
    mini = ROOT / "datasets" / "cuad-mini"
    raw = [json.loads(line) for line in (mini / "cases.jsonl").read_text().splitlines() if line.strip()]
    dataset = load_dataset(mini)
    assert [case_to_json(c) for c in dataset.cases] == raw  # no start/end appears, nothing else moves
    assert not any(e.has_offsets or e.start is not None or e.end is not None for c in dataset.cases for e in c.evidence)

    def no_parse(*args, **kwargs):
        raise AssertionError("validate parsed documents for a dataset without offsets")

    monkeypatch.setattr("ragsweep.validate.parsed.parse_corpus", no_parse)
    assert validate_dataset(mini) == []


def test_offsets_do_not_change_how_relevance_is_judged(folder):
    _, text = folder
    span = _span(text, CLAUSE)
    hits = [
        Hit(rank=1, score=1.0, text=text[:60], doc_id="contract.txt", start=0, end=60),
        Hit(rank=2, score=0.5, text=text[span["start"] :], doc_id="contract.txt", start=span["start"], end=len(text)),
    ]
    plain = Case(id="q", question="Which law?", evidence=[Evidence(text=CLAUSE, doc_id="contract.txt")])
    with_offsets = Case(id="q", question="Which law?", evidence=[Evidence(**span)])
    texts = {"contract.txt": text}
    judged = mark_hits(with_offsets, hits, "evidence_offsets", texts)
    assert judged == mark_hits(plain, hits, "evidence_offsets", texts)
    assert [h.relevant for h in judged.hits] == [False, True]
    assert judged.detail.located == {"e0@contract.txt": "exact"}
