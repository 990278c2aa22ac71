"""The dataset formats users bring (issue 11: items 6, 10, 14, 15, 16, 17), on small fixtures."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ragsweep.datasets import (
    UNSCOPABLE_REASON,
    Case,
    DatasetError,
    clean_query,
    load_cases,
    load_dataset,
    read_cases,
    unscopable_reason,
    write_cases,
)
from ragsweep.validate.command import main
from ragsweep.validate.parsed import validate_dataset

FIX = Path(__file__).resolve().parent / "fixtures" / "datasets"


def _dataset(root: Path, docs: list[str], records: list[dict], cases_name: str = "cases.jsonl") -> Path:
    (root / "docs").mkdir(parents=True)
    for name in docs:
        (root / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / name).write_text(f"Text of {name}.\n", encoding="utf-8")
    (root / "README.md").write_text("test dataset\n")
    (root / cases_name).write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8"
    )
    return root


def _problems(root: Path) -> list[str]:
    return [str(p) for p in validate_dataset(root)]


# ---------------------------------------------------------------- item 6: unscopable document ids


def test_unscopable_reason():
    assert unscopable_reason("a.pdf") is None
    assert unscopable_reason("O'Brien & Co.pdf") is None  # Pathway escapes a single quote
    assert unscopable_reason("the `best` plan.txt") == UNSCOPABLE_REASON
    assert unscopable_reason('the "best" plan.txt') == UNSCOPABLE_REASON
    assert "backtick or double quote" in UNSCOPABLE_REASON and "the case will be skipped" in UNSCOPABLE_REASON


def test_validate_names_cases_scoped_to_an_unscopable_document(tmp_path):
    tick, quote = "the `best` plan.txt", 'the "best" plan.txt'
    root = _dataset(
        tmp_path / "ds",
        ["plain.txt", tick, quote],
        [
            {"id": "ok", "question": "What is plain?", "doc_scope": ["plain.txt"], "relevant_ids": ["plain.txt"]},
            {"id": "tick", "question": "What is best?", "doc_scope": [tick], "relevant_ids": [tick]},
            {"id": "quote", "question": "What is best?", "doc_scope": ["plain.txt", quote], "relevant_ids": [quote]},
            {"id": "unscoped", "question": "What is best?", "relevant_ids": [quote]},  # no filter: fine
        ],
    )
    assert _problems(root) == [
        f"cases.jsonl:2: doc_scope[0]: case 'tick': {tick!r}: {UNSCOPABLE_REASON}",
        f"cases.jsonl:3: doc_scope[1]: case 'quote': {quote!r}: {UNSCOPABLE_REASON}",
    ]
    # the dataset still loads: the eval skips those cases with that reason
    assert len(load_dataset(root).cases) == 4


# ---------------------------------------------------------------- item 10: silent zeros


def test_clean_query():
    assert clean_query("Who pays (the) royalties?") == "Who pays the royalties"
    assert clean_query("cats AND dogs\u00a0OR birds") == "cats and dogs or birds"
    assert clean_query("Qui paie\u00a0? 谁付款？") == "Qui paie 谁付款"
    for empty in ("", "   ", "?!", "...", "🙂🎉", "👍 ?"):
        assert clean_query(empty) == ""


def test_clean_query_is_what_the_store_searches():
    """validate's "empty after cleaning" and the store agree: a question is searched as given
    unless it holds Tantivy syntax (then minimally changed), and nothing is left exactly when
    clean_query leaves nothing."""
    from ragsweep.datasets.pathway_limits import tantivy_safe

    store = pytest.importorskip("ragsweep.pipeline.store")
    assert store.sanitize_query("Which state's law governs?") == "Which state's law governs?"
    for text in ("Who pays (the) royalties?", "cats AND dogs\u00a0OR birds", "?!", "🙂🎉", 'a "b" c:d'):
        assert store.sanitize_query(text) == tantivy_safe(text)
        assert (tantivy_safe(text) == "") == (clean_query(text) == "")
    assert store.sanitize_query('a "b" c:d') == "a b c d"
    assert store.sanitize_query("cats AND dogs\u00a0OR birds") == "cats and dogs or birds"


def test_validate_names_missing_relevant_ids_and_empty_questions(tmp_path):
    root = _dataset(
        tmp_path / "ds",
        ["a.txt"],
        [
            {"id": "fine", "question": "What is a?", "relevant_ids": ["a.txt"]},
            {"id": "lost", "question": "What is b?", "relevant_ids": ["b.txt"]},  # unscoped, missing doc
            {"id": "punct", "question": "?!", "relevant_ids": ["a.txt"]},
            {"id": "emoji", "question": "🙂🎉", "relevant_ids": ["a.txt"]},
            {"id": "blank", "question": "", "relevant_ids": ["a.txt"]},
        ],
    )
    empty = "question empty after cleaning (nothing but punctuation, symbols or emoji is left for the query parser): there is nothing to search for"
    assert _problems(root) == [
        "cases.jsonl:2: relevant_ids[0]: case 'lost': relevant id 'b.txt' is not among the dataset's documents (docs/)",
        f"cases.jsonl:3: question: case 'punct': {empty}",
        f"cases.jsonl:4: question: case 'emoji': {empty}",
        "cases.jsonl:5: question: String should have at least 1 character",
    ]


def test_validate_a_cases_file_checks_the_docs_next_to_it(tmp_path):
    root = _dataset(tmp_path / "ds", ["a.txt"], [{"id": "lost", "question": "What is b?", "relevant_ids": ["b.txt"]}])
    out = io.StringIO()
    assert main([str(root / "cases.jsonl")], out=out) == 1
    assert (
        "cases.jsonl:1: relevant_ids[0]: case 'lost': relevant id 'b.txt' is not among the dataset's documents"
        in out.getvalue()
    )


# ---------------------------------------------------------------- item 14: ragas field names


def test_ragas_legacy_and_new_names():
    ds = load_dataset(FIX / "ragas_legacy")
    old, several, new = ds.cases
    # legacy: answer is the system's answer, ground_truth the reference, contexts the retrieved ones
    assert old.question == "How much power does a residential solar panel produce?"
    assert old.response == "Between 250 and 400 watts."
    assert old.reference_answer == "250 to 400 watts."
    assert old.retrieved_contexts == ["A typical residential solar panel produces between 250 and 400 watts."]
    assert old.evidence == [] and old.meta == {}
    # ground_truths: the first is the reference (as ragas did), all are kept
    assert several.reference_answer == "About half a percent per year."
    assert several.meta == {"reference_answers": ["About half a percent per year.", "0.5% per year."]}
    assert several.response == "About 0.5% a year."
    # the newer names map the same way; reference_contexts are evidence
    assert new.question == "How fast do panels degrade?"
    assert new.response == "Roughly 0.5% per year." and new.reference_answer == "About half a percent per year."
    assert new.retrieved_contexts == ["Panels lose about half a percent of their output each year."]
    assert [e.text for e in new.evidence] == ["Panels lose about half a percent of their output each year."]
    assert new.meta == {}
    # pre-computed answers need no retrieval relevance: the set is valid
    assert _problems(FIX / "ragas_legacy") == []


def test_answer_of_a_plain_question_answer_pair_is_the_reference(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text(
        json.dumps({"question": "Capital of France?", "answer": "Paris"})
        + "\n"
        + json.dumps({"question": "Capital of Italy?", "answer": "Rome", "response": "Milan"})
        + "\n"
        + json.dumps({"question": "Capital of Spain?", "answer": "Madrid", "reference": "Madrid", "response": "Madrid"})
        + "\n"
    )
    pair, with_response, everything = load_cases(path)
    assert (pair.reference_answer, pair.response) == ("Paris", None)
    assert (with_response.reference_answer, with_response.response) == ("Rome", "Milan")
    # nothing left for answer to be: kept in meta, never dropped
    assert everything.meta == {"answer": "Madrid"} and everything.response == "Madrid"


def test_new_fields_round_trip_and_are_documented(tmp_path):
    case = Case(id="1", question="q", response="r", retrieved_contexts="one context", knowledge_ids=["K1", 2])
    assert case.retrieved_contexts == ["one context"] and case.knowledge_ids == ["K1", "2"]
    write_cases(tmp_path / "c.jsonl", [case])
    assert load_cases(tmp_path / "c.jsonl")[0].model_dump() == case.model_dump()
    for name in ("response", "retrieved_contexts", "knowledge_ids", "sub_questions"):
        assert Case.model_fields[name].description, name
    assert "scored as given" in Case.model_fields["response"].description


# ---------------------------------------------------------------- item 15: seed 003's JSON object


def test_seed003_json_object_with_samples():
    ds = load_dataset(FIX / "seed003")  # its only cases file is eval_set.json
    assert ds.cases_file == FIX / "seed003" / "eval_set.json"
    assert ds.description == "Answers of the support bot on refund questions"
    assert ds.cases_header == {
        "name": "support-bot-eval",
        "description": "Answers of the support bot on refund questions",
    }
    one, two = ds.cases
    assert one.id == "eval_set-5" and two.id == "eval_set-12"  # derived from the line each sample starts on
    assert one.question == "How long do refunds take?"
    assert one.reference_answer == "Within 14 days of the return being received."
    assert one.response == "Refunds take up to 14 days after we receive the return."
    assert one.retrieved_contexts == ["Refunds are issued within 14 days of the return being received."]
    assert one.meta == {"source": "refund-policy.md", "difficulty": "easy"}
    assert two.retrieved_contexts == [
        "Shipping costs are not refunded.",
        "Refunds are issued within 14 days of the return being received.",
    ]
    assert two.meta == {"source": "refund-policy.md", "difficulty": "easy", "reviewer": "ops"}
    assert _problems(FIX / "seed003") == []


def test_json_object_problems_carry_the_sample_line(tmp_path):
    path = tmp_path / "set.json"
    path.write_text(
        '{"name": "x",\n'
        ' "samples": [\n'
        '  {"query": "fine?", "response": "yes"},\n'
        '  {"ground_truth": "no query"},\n'
        '  ["not", "a record"]\n'
        " ]}\n"
    )
    assert [str(p) for p in read_cases(path)[1]] == [
        "set.json:4: question: Field required",
        "set.json:5: expected a JSON object, got list",
    ]
    (tmp_path / "other.json").write_text('{"name": "x", "rows": []}')
    problems = [str(p) for p in read_cases(tmp_path / "other.json")[1]]
    assert len(problems) == 1 and "'samples'" in problems[0] and "list of records" in problems[0]


def test_json_array_problems_carry_the_record_line(tmp_path):
    path = tmp_path / "arr.json"
    path.write_text('[\n  {"id": "1", "question": "q", "relevant_ids": ["a"]},\n\n  {"id": "2"}\n]\n')
    assert [str(p) for p in read_cases(path)[1]] == ["arr.json:4: question: Field required"]


# ---------------------------------------------------------------- item 16: ids given as file stems


def test_seed001_stems_resolve_to_document_ids():
    ds = load_dataset(FIX / "seed001")
    by_id = ds.by_id()
    assert [r.id for r in by_id["s1-1"].relevant_ids] == ["product-manual.md"]
    assert by_id["s1-2"].doc_scope == ["warranty-terms.txt"]
    assert [r.id for r in by_id["s1-2"].relevant_ids] == ["warranty-terms.txt"]
    assert [r.id for r in by_id["s1-3"].relevant_ids] == ["product-manual.md"]  # full ids still work
    assert _problems(FIX / "seed001") == []


def test_ambiguous_stem_is_an_error_naming_both(tmp_path):
    root = _dataset(
        tmp_path / "ds",
        ["a.pdf", "a.txt", "sub/b.md"],
        [
            {"id": "amb", "question": "What is a?", "relevant_ids": ["a"]},
            {
                "id": "nested",
                "question": "What is b?",
                "doc_scope": ["b"],
                "evidence": [{"text": "Text", "doc_id": "sub/b"}],
            },
        ],
    )
    message = (
        "cases.jsonl:1: relevant_ids[0]: case 'amb': 'a' names 2 documents: 'a.pdf', 'a.txt' (give the file extension)"
    )
    with pytest.raises(DatasetError) as err:
        load_dataset(root)
    assert message in str(err.value)
    assert _problems(root) == [message]  # said once; "b" and "sub/b" both name sub/b.md


# ---------------------------------------------------------------- item 17: knowledge ids, sub-questions


def test_seed004_knowledge_ids_are_not_facts():
    ds = load_dataset(FIX / "seed004")
    hard, easy = ds.cases
    assert hard.knowledge_ids == ["KP-001", "KP-002", "KP-003"]
    assert hard.expected_facts == []  # never searched in answers
    assert hard.sub_questions == [
        "How much does the Orion plan cost?",
        "How much storage does it include?",
        "How much does extra storage cost?",
    ]
    assert hard.reference_answer == "24 euros a month." and hard.response is None
    assert hard.meta == {"difficulty": "hard"}
    assert easy.knowledge_ids == ["KP-002"] and easy.sub_questions == []
    assert _problems(FIX / "seed004") == []
