"""validate_dataset lists every problem of the deliberately broken fixture, each with its line."""

from __future__ import annotations

import io
from pathlib import Path

from ragsweep.datasets import load_dataset
from ragsweep.validate.command import main
from ragsweep.validate.parsed import validate_cases_file, validate_dataset

FIX = Path(__file__).resolve().parent / "fixtures" / "datasets"

EXPECTED = [
    "cases.jsonl:2: id: duplicate id 'ok-1' (first on line 1)",
    "cases.jsonl:3: relevant_ids: answerable case without relevance information (no relevant_ids and no evidence)",
    "cases.jsonl:4: unanswerable: an unanswerable case must not have relevant_ids",
    "cases.jsonl:5: malformed JSON: Expecting ',' delimiter (column 55)",
    "cases.jsonl:6: relevant_ids[0]: case 'missing-doc': relevant id 'missing.pdf' is not among the dataset's documents (docs/)",
    "cases.jsonl:7: doc_scope[0]: case 'missing-scope': 'gone.txt' is not among the dataset's documents (docs/)",
    "cases.jsonl:7: evidence[0].doc_id: case 'missing-scope': 'nowhere.txt' is not among the dataset's documents (docs/)",
    "cases.jsonl:7: evidence[0].doc_id: case 'missing-scope': 'nowhere.txt' is outside doc_scope",
    "cases.jsonl:8: split: Input should be 'dev' or 'test'",
    "cases.jsonl:8: relevant_ids[0].grade: Input should be greater than or equal to 0",
    "cases.jsonl:10: id: Field required",
    "cases.jsonl:11: relevent_ids: Extra inputs are not permitted",
    "cases.jsonl:13: expected a JSON object, got list",
    "cases.jsonl:14: id: String should have at least 1 character",
    "cases.jsonl:14: question: String should have at least 1 character",
]


def test_broken_fixture_lists_every_problem_with_its_line():
    got = [str(p) for p in validate_dataset(FIX / "broken")]
    assert sorted(got) == sorted(EXPECTED)
    # sorted by line, and each problem carries file/line/field
    problems = validate_dataset(FIX / "broken")
    assert [p.line for p in problems] == sorted(p.line for p in problems)
    assert all(p.file == "cases.jsonl" and p.line for p in problems)
    # the lines without problems: 1 (valid), 9 (blank), 12 (a ragas record)
    assert {p.line for p in problems} == {2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 14}


def test_main_prints_all_problems_and_fails():
    out = io.StringIO()
    assert main(["--dataset", str(FIX / "broken")], out=out) == 1
    text = out.getvalue()
    for line in EXPECTED:
        assert line in text
    assert f"{len(EXPECTED)} problem(s)" in text


def test_main_ok_on_a_valid_dataset():
    out = io.StringIO()
    root = Path(__file__).resolve().parents[1] / "datasets" / "cuad-mini"
    assert main([str(root)], out=out) == 0
    assert "OK" in out.getvalue() and "123 cases" in out.getvalue()


def test_empty_file_and_missing_folders(tmp_path):
    assert [str(p) for p in validate_cases_file(FIX / "empty.jsonl")] == ["empty.jsonl: empty file: no cases"]
    (tmp_path / "cases.jsonl").write_text("\n\n")
    got = [str(p) for p in validate_dataset(tmp_path)]
    assert got == [
        "README.md: missing (a dataset needs its provenance and licence)",
        "cases.jsonl: empty file: no cases",
        "docs/: docs folder not found",
    ]
    assert [str(p) for p in validate_dataset(tmp_path / "nope")] == [f"{tmp_path / 'nope'}: dataset folder not found"]


def test_settings_problems(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("xyz")
    (tmp_path / "README.md").write_text("r")
    (tmp_path / "cases.jsonl").write_text('{"id": "1", "question": "q", "evidence": ["xyz"]}\n')
    (tmp_path / "dataset.yaml").write_text("relevance: doc_id\nword_overlap_threshold: 3\n")
    got = [str(p) for p in validate_dataset(tmp_path)]
    assert "dataset.yaml: word_overlap_threshold: Input should be less than or equal to 1" in got
    assert "cases.jsonl:1: relevant_ids: relevance rule doc_id needs relevant_ids or evidence with doc_id" in got
    (tmp_path / "dataset.yaml").write_text("relevance: [unclosed\n")
    got = [str(p) for p in validate_dataset(tmp_path)]
    assert got and got[0].startswith("dataset.yaml:") and "malformed YAML" in got[0]
    (tmp_path / "dataset.yaml").write_text("name: 2024\ndocs: [docs, more]\n")  # a key of the wrong type: left out
    got = [str(p) for p in validate_dataset(tmp_path)]
    assert "dataset.yaml: docs: Input should be a valid string" in got
    assert not any(p.startswith("docs/") for p in got)  # the default folder, docs/, is checked
    (tmp_path / "dataset.yaml").write_text("name: 2024\nrelevance: evidence_offsets\n")
    ds = load_dataset(tmp_path)
    assert ds.name == "2024" and ds.settings == {"name": "2024", "relevance": "evidence_offsets"}
