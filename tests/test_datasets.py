"""Schema, loaders, importers and the shipped datasets (only files inside the repository)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsweep.datasets import (
    Case,
    DatasetError,
    load_cases,
    load_dataset,
    read_cases,
    write_cases,
)
from ragsweep.datasets._util import contract_key, split_for
from ragsweep.datasets.cuad import import_cuad, read_categories, split_excerpts
from ragsweep.datasets.pathway_tsv import PATHWAY_QUESTIONS, import_pathway_labeled
from ragsweep.datasets.trec import cranfield_grade, import_cranfield, parse_dotted
from ragsweep.validate.parsed import validate_dataset
from support import DATASETS

FIX = Path(__file__).resolve().parent / "fixtures" / "datasets"


def _jsonl(path: Path, records: list) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------- schema / loader


def test_case_normalises_relevant_ids_and_evidence():
    c = Case(
        id="x",
        question="q?",
        relevant_ids=["a.pdf", {"id": "b.pdf", "grade": 2}],
        evidence=["plain span", {"text": "with doc", "doc_id": "a.pdf"}],
        expected_facts="one fact",
    )
    assert [(r.id, r.grade) for r in c.relevant_ids] == [("a.pdf", 1), ("b.pdf", 2)]
    assert [(e.text, e.doc_id) for e in c.evidence] == [("plain span", None), ("with doc", "a.pdf")]
    assert c.expected_facts == ["one fact"]
    assert c.relevant_grades() == {"a.pdf": 1, "b.pdf": 2}


def test_write_then_load_round_trip(tmp_path):
    cases = [
        Case(id="1", question="q1", relevant_ids=["a", {"id": "b", "grade": 3}], split="dev"),
        Case(id="2", question="q2", unanswerable=True, meta={"k": [1, 2]}),
        Case(id="3", question="q3", evidence=["s", {"text": "t", "doc_id": "a"}], expected_facts=["f"]),
    ]
    write_cases(tmp_path / "cases.jsonl", cases)
    back = load_cases(tmp_path / "cases.jsonl")
    assert [c.model_dump() for c in back] == [c.model_dump() for c in cases]
    first = json.loads((tmp_path / "cases.jsonl").read_text().splitlines()[0])
    assert first["relevant_ids"] == ["a", {"id": "b", "grade": 3}]  # compact form


def test_foreign_formats_are_mapped(tmp_path):
    path = _jsonl(
        tmp_path / "mixed.jsonl",
        [
            {  # ragas
                "user_input": "What is X?",
                "reference": "X is Y.",
                "reference_contexts": ["X is Y because Z.", "More on X."],
                "synthesizer_name": "single_hop_specific_query_synthesizer",
                "response": "ignored",
                "retrieved_contexts": None,
                "split": None,
            },
            {  # expected_knowledge / answer / source_sections / sub_questions
                "question": "How do A and B relate?",
                "answer": "Via C.",
                "type": "multi_hop",
                "expected_knowledge": ["A uses C", "B uses C"],
                "source_sections": [{"text": "A uses C.", "source": "a.md"}, "B uses C."],
                "sub_questions": [{"question": "What does A use?"}, "What does B use?"],
            },
            {  # relevant_ids / expected_facts / unanswerable, with an id and an alias field
                "qid": 7,
                "query": "Is there a Q?",
                "relevant_ids": [],
                "expected_facts": [],
                "unanswerable": True,
            },
        ],
    )
    cases = load_cases(path)
    ragas, know, unans = cases
    assert ragas.id == "mixed-1" and ragas.question == "What is X?"
    assert ragas.reference_answer == "X is Y."
    assert [e.text for e in ragas.evidence] == ["X is Y because Z.", "More on X."]
    assert ragas.type == "single_hop_specific_query_synthesizer"
    # ragas' response is the system's pre-computed answer, kept as such (not in meta)
    assert ragas.response == "ignored" and ragas.retrieved_contexts is None and ragas.meta == {}
    # a plain question/answer pair (no ragas reference or contexts): answer is the reference
    assert know.id == "mixed-2" and know.reference_answer == "Via C." and know.response is None
    # expected_knowledge holds knowledge-point ids: kept as ids, never as facts
    assert know.knowledge_ids == ["A uses C", "B uses C"] and know.expected_facts == []
    assert [(e.text, e.doc_id) for e in know.evidence] == [("A uses C.", "a.md"), ("B uses C.", None)]
    assert know.sub_questions == ["What does A use?", "What does B use?"]
    assert know.meta == {"sub_questions": [{"question": "What does A use?"}, "What does B use?"]}
    assert unans.id == "7" and unans.unanswerable and unans.question == "Is there a Q?"


def test_canonical_requires_ids_unless_derived(tmp_path):
    path = _jsonl(tmp_path / "c.jsonl", [{"question": "q", "relevant_ids": ["a"]}])
    with pytest.raises(DatasetError) as err:
        load_cases(path)
    assert "c.jsonl:1: id: Field required" in str(err.value)
    assert load_cases(path, derive_ids=True)[0].id == "c-1"


def test_load_dataset_split_and_default_rule(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("a")
    _jsonl(
        tmp_path / "cases.jsonl",
        [
            {"id": "1", "question": "q", "relevant_ids": ["a.txt"], "split": "dev"},
            {"id": "2", "question": "q", "relevant_ids": ["a.txt"], "split": "test"},
        ],
    )
    ds = load_dataset(tmp_path)
    assert ds.relevance.rule == "doc_id" and ds.docs_dir == tmp_path / "docs"
    assert [c.id for c in load_dataset(tmp_path, split="dev").cases] == ["1"]
    (tmp_path / "dataset.yaml").write_text("relevance: word_overlap\nword_overlap_threshold: 0.7\n")
    ds = load_dataset(tmp_path)
    assert ds.relevance.rule == "word_overlap" and ds.relevance.word_overlap_threshold == 0.7
    (tmp_path / "dataset.yaml").write_text("relevance: bogus\n")
    with pytest.raises(DatasetError, match="unknown rule 'bogus'"):
        load_dataset(tmp_path)


# ---------------------------------------------------------------- importers on fixtures


def test_cuad_importer_on_fixture(tmp_path):
    src = FIX / "cuad_small"
    cats = read_categories(src / "category_descriptions.csv")
    assert len(cats) == 41
    assert cats["parties"]["question"].startswith("Who are")
    assert all(c["question"].endswith("?") or "?" in c["question"] for c in cats.values())
    cases = import_cuad(src / "master_clauses.csv", src / "category_descriptions.csv", tmp_path, docs_src=src / "docs")
    # 3 contracts whose CSV names differ from the file names (', & trailing '-') all resolve
    assert len(cases) == 3 * 41
    docs = sorted(p.name for p in (tmp_path / "docs").iterdir())
    assert docs == sorted(p.name for p in (src / "docs").iterdir())
    assert {c.doc_scope[0] for c in cases} == set(docs)
    # the unanswerable count equals the number of empty clause cells in the CSV
    import csv

    with open(src / "master_clauses.csv", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    empty = sum(1 for r in rows[1:] for i in range(1, len(r), 2) if r[i].strip() == "[]")
    assert sum(c.unanswerable for c in cases) == empty
    answerable = [c for c in cases if not c.unanswerable]
    assert all(c.evidence for c in answerable)  # (a few have an empty -Answer cell in CUAD)
    assert all(not c.evidence and c.reference_answer is None for c in cases if c.unanswerable)
    assert len({c.id for c in cases}) == len(cases)
    # the importer writes no README (the builder does): the validator says so, and nothing else
    assert [str(p) for p in validate_dataset(tmp_path)] == [
        "README.md: missing (a dataset needs its provenance and licence)"
    ]


def test_omitted_splits_evidence_pieces():
    cell = "['First part <omitted> second part', 'Other excerpt']"
    assert split_excerpts(cell) == ["First part", "second part", "Other excerpt"]
    assert split_excerpts("['Term <omitted> . <omitted> ends']") == ["Term", "ends"]  # no one-character span
    assert split_excerpts("[]") == []


def test_contract_key_quirks():
    assert contract_key("MACY'S,INC_05_11_2020-EX-99.4-JOINT FILING AGREEMENT.PDF") == contract_key(
        "MACY_S,INC_05_11_2020-EX-99.4-JOINT FILING AGREEMENT.txt"
    )
    assert contract_key("MOELIS&CO_03_24_2014-EX-10.19-X.PDF") == contract_key("MOELIS_CO_03_24_2014-EX-10.19-X.txt")
    assert contract_key("Foo - Bar Agreement .PDF") == contract_key("Foo - Bar Agreement.txt")
    assert contract_key("Foo Bar -.pdf") == contract_key("Foo Bar.txt")
    assert split_for("x") == split_for("x") and split_for("x") in ("dev", "test")


def test_contract_key_release_quirks_and_old_keys_unchanged():
    # the two names of the full release that no file matched (every CUAD case of them was lost):
    # a quote after the extension, and É composed in the file name but decomposed (E + U+0301) in the CSV
    assert contract_key("KALLOINC_11_03_2011-EX-10.1-STRATEGIC ALLIANCE AGREEMENT.PDF'") == contract_key(
        "KALLOINC_11_03_2011-EX-10.1-STRATEGIC ALLIANCE AGREEMENT.txt"
    )
    assert contract_key("LECLANCH\u00c9 S.A. - JOINT.PDF") == contract_key("LECLANCHE\u0301 S.A. - JOINT.txt")
    assert contract_key("LECLANCH\u00c9 S.A. - JOINT.PDF") == "leclanchesajoint"
    # ASCII names keep their keys (case ids and splits of the shipped datasets depend on them)
    assert contract_key("Foo Bar -.pdf") == "foobar"
    assert contract_key("MOELIS&CO_03_24_2014-EX-10.19-X.PDF") == "moelisco03242014ex1019x"
    assert contract_key("Notes.docx") == "notes" and contract_key("a.pdf.txt") == "apdf"


def test_pathway_importer_on_fixture(tmp_path):
    src = FIX / "pathway_small"
    cases, missing = import_pathway_labeled(src / "labeled.tsv", tmp_path, docs_src=src / "docs")
    assert len(missing) == 1 and missing[0].startswith("EuromediaHoldingsCorp")
    assert len(cases) == len(PATHWAY_QUESTIONS) == 14
    by_type = {c.type: c for c in cases}
    parties = by_type["Parties"]
    assert parties.question == "Who are the parties in the contract (licensee and licensor)?"
    assert [e.text for e in parties.evidence][:2] == ["BIRCH FIRST GLOBAL INVESTMENTS INC.", "MA"]
    assert parties.reference_answer.startswith("Birch First Global Investments Inc.")
    assert by_type["Audit Rights"].meta["answer_question"].startswith("Are there any provisions")
    assert all(c.doc_scope == [parties.doc_scope[0]] for c in cases)
    # without docs: every row is imported
    all_cases, _ = import_pathway_labeled(src / "labeled.tsv", tmp_path / "all")
    assert len(all_cases) == 2 * 14


def test_cranfield_importer_on_fixture(tmp_path):
    src = FIX / "cranfield_small"
    docs = parse_dotted(src / "cran.all.1400")
    assert [d["I"] for d in docs] == ["1", "2", "3", "4"]
    assert docs[2].get("W", "") == ""  # empty body
    cases = import_cranfield(src, tmp_path)
    assert [c.id for c in cases] == ["cran-1", "cran-2", "cran-3"]
    assert cases[2].meta["qry_number"] == "004"  # 3rd query in the file is qid 3
    assert {r.id: r.grade for r in cases[0].relevant_ids} == {"1.txt": 3, "4.txt": 1, "2.txt": 0}
    assert (tmp_path / "docs" / "3.txt").read_text() == "the boundary layer in simple shear flow past a flat plate .\n"
    assert (tmp_path / "docs" / "1.txt").read_text().startswith("experimental investigation")
    assert [cranfield_grade(c) for c in (1, 2, 3, 4, -1)] == [4, 3, 2, 1, 0]
    # query 3 has only a -1 judgement: no relevance information -> validation says so
    problems = [str(p) for p in validate_dataset(tmp_path)]
    assert (
        "cases.jsonl:3: relevant_ids: answerable case without relevance information (no relevant_ids and no evidence)"
        in problems
    )


# ---------------------------------------------------------------- shipped datasets


def _cases(name: str) -> list[Case]:
    return read_cases(DATASETS / name / "cases.jsonl")[0]


@pytest.mark.parametrize("name", ["cuad", "cuad-pathway", "cuad-mini", "cranfield"])
def test_shipped_dataset_is_valid(name):
    assert [str(p) for p in validate_dataset(DATASETS / name)] == []
    assert (DATASETS / name / "README.md").read_text().strip()


def test_shipped_cuad_counts():
    ds = load_dataset(DATASETS / "cuad")
    assert ds.relevance.rule == "evidence_offsets"
    docs = ds.doc_ids()
    assert len(docs) == 40 and all(d.lower().endswith(".pdf") for d in docs)
    assert len(ds.cases) == 40 * 41
    assert sum(c.unanswerable for c in ds.cases) == 1127  # empty clause cells of these 40 rows
    per_doc: dict[str, int] = {}
    for c in ds.cases:
        per_doc[c.doc_scope[0]] = per_doc.get(c.doc_scope[0], 0) + 1
    assert set(per_doc) == set(docs) and set(per_doc.values()) == {41}
    assert {c.split for c in ds.cases} == {"dev", "test"}
    # one split per contract
    split_of: dict[str, set] = {}
    for c in ds.cases:
        split_of.setdefault(c.doc_scope[0], set()).add(c.split)
    assert all(len(s) == 1 for s in split_of.values())


def test_shipped_cuad_pathway_and_mini():
    pw = load_dataset(DATASETS / "cuad-pathway")
    assert pw.relevance.rule == "word_overlap" and pw.relevance.word_overlap_threshold == 0.65
    assert len(pw.doc_ids()) == 4 and len(pw.cases) == 4 * 14
    assert set(pw.doc_ids()) <= set(load_dataset(DATASETS / "cuad").doc_ids())
    mini = load_dataset(DATASETS / "cuad-mini")
    assert len(mini.doc_ids()) == 3 and len(mini.cases) == 3 * 41
    assert all(d.endswith(".txt") for d in mini.doc_ids())


def test_shipped_cranfield_counts():
    ds = load_dataset(DATASETS / "cranfield")
    assert ds.relevance.rule == "doc_id"
    assert len(ds.doc_ids()) == 1400
    assert len(ds.cases) == 225
    grades = [r.grade for c in ds.cases for r in c.relevant_ids]
    assert len(grades) == 1837  # every cranqrel line
    assert grades.count(0) == 225  # the -1 codes: judged not relevant
    assert len([g for g in grades if g >= 1]) == 1837 - 225
    assert sorted(set(grades)) == [0, 1, 2, 3, 4]
    assert all(c.relevant_grades() for c in ds.cases)


def test_shipped_data_stays_small():
    total = sum(p.stat().st_size for p in DATASETS.rglob("*") if p.is_file())
    assert total < 30 * 1024 * 1024
