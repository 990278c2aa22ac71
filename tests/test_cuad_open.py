"""datasets/cuad-open: the CUAD cases without a scope, each question naming its contract; the
builder's unscoped variant, the naming rule, and a dataset whose documents live in another
dataset's folder (``docs: ../cuad/docs``)."""

import shutil
from collections import defaultdict
from pathlib import Path

import pytest

import ragsweep
from ragsweep.datasets import load_dataset
from ragsweep.datasets.build import build_cuad_open
from ragsweep.datasets.cuad import import_cuad
from ragsweep.datasets.cuad_naming import contract_parties, contract_phrase, contract_question, contract_title
from ragsweep.validate.parsed import validate_dataset
from support import DATASETS, ROOT

SMALL = ROOT / "tests" / "fixtures" / "datasets" / "cuad_small"


def _import(out: Path, docs: Path, unscoped: bool):
    return import_cuad(
        SMALL / "master_clauses.csv",
        SMALL / "category_descriptions.csv",
        out,
        docs,
        id_prefix="cuadopen" if unscoped else "cuad",
        unscoped=unscoped,
        copy_docs=not unscoped,
    )


def _names_contract(question: str, title: str, parties: list[str]) -> bool:
    """The question names its contract by its title or its parties (every one it lists)."""
    return question.startswith("In the ") and (title in question or all(p in question for p in parties[:3]))


# ---------------------------------------------------------------- the naming rule


def test_titles_read_as_a_user_writes_them():
    assert contract_title("CO-BRANDING AND ADVERTISING AGREEMENT", "x.pdf") == "Co-Branding and Advertising Agreement"
    assert (
        contract_title("SITE DEVELOPMENT AND HOSTING AGREEMENT (", "x.pdf") == "Site Development and Hosting Agreement"
    )
    assert contract_title("TURN - KEY MANUFACTURING AGREEMENT", "x.pdf") == "Turn-Key Manufacturing Agreement"
    assert contract_title("   AMENDMENT NO. 1\n\nWireless Content License", "x.pdf") == (
        "Amendment No. 1 Wireless Content License"
    )
    assert contract_title("e-business Hosting Agreement", "x.pdf") == "e-business Hosting Agreement"
    assert contract_title(" ", "FOO-EX-10.1-SUPPLY AGREEMENT.PDF") == "FOO-EX-10.1-SUPPLY AGREEMENT"


def test_parties_leave_out_aliases_redactions_and_collective_names():
    assert contract_parties('Lucid Inc.; [*] ("Distributor")') == ["Lucid Inc."]
    assert contract_parties('Geno Auriemma (Auriemma); Berkshire Bank (Berkshire)("Party" or "Parties")') == [
        "Geno Auriemma",
        "Berkshire Bank",
    ]
    assert contract_parties(
        "Novo Integrated Sciences Inc. (“NVOS”); Harvest Gold Farms Inc. (“HGF”); "
        "NVOS and HGF (collectively as the “Parties” and separately as a “Party”)"
    ) == ["Novo Integrated Sciences Inc.", "Harvest Gold Farms Inc."]
    assert contract_parties(
        'JSC NOC KazakhOil ("Company"); JSC Karakudukmunay ("Principal"); collectively referred to as "Parties"'
    ) == ["JSC NOC KazakhOil", "JSC Karakudukmunay"]
    # a parenthesis inside a name stays; the one defining an alias goes
    assert contract_parties(
        'Premier Nutrition Company, LLC, ("Buyer" or "PNC"); Fonterra (USA) Inc., ("Supplier")'
    ) == [
        "Premier Nutrition Company, LLC",
        "Fonterra (USA) Inc.",
    ]
    # a group is called by its group name
    assert contract_parties(
        "VA Partners I, LLC, ValueAct Holdings, L.P. (collectively, the “ValueAct Group”, and individually a "
        "“member”); Allison Transmission Holdings, Inc. (the “Company”)"
    ) == ["the ValueAct Group", "Allison Transmission Holdings, Inc."]


def test_phrases_and_the_questions_that_ask_for_the_name_or_the_parties():
    title, parties = "Co-Branding Agreement", ["Snap Technologies, Inc.", "United Airlines, Inc."]
    assert (
        contract_phrase(title, parties)
        == "the Co-Branding Agreement between Snap Technologies, Inc. and United Airlines, Inc."
    )
    assert contract_phrase(title, parties[:1]) == "the Co-Branding Agreement with Snap Technologies, Inc."
    assert (
        contract_phrase("Amendment to the Agreement Between A and B", parties)
        == "the Amendment to the Agreement Between A and B"
    )
    assert contract_phrase(title, list("ABCDE")) == "the Co-Branding Agreement between A, B, C and others"
    assert contract_question("Which law governs?", "governing law", title, parties) == (
        "In the Co-Branding Agreement between Snap Technologies, Inc. and United Airlines, Inc., which law governs?"
    )
    # the answer is not in the question: Document Name by its parties, Parties by title and first party
    asked = contract_question("What is the name of the contract?", "document name", title, parties)
    assert title not in asked and all(p in asked for p in parties)
    asked = contract_question("Who are the parties?", "parties", title, parties)
    assert title in asked and parties[1] not in asked


# ---------------------------------------------------------------- the builder on the small fixture


def test_unscoped_builder_names_each_contract_and_keeps_the_scoped_cases(tmp_path):
    scoped = _import(tmp_path / "scoped", SMALL / "docs", unscoped=False)
    opened = _import(tmp_path / "open", SMALL / "docs", unscoped=True)
    assert not (tmp_path / "open" / "docs").exists()  # the documents stay where they are
    assert len(opened) == len(scoped) == 3 * 41
    for s, o in zip(scoped, opened):
        assert o.id == s.id.replace("cuad-", "cuadopen-", 1) and o.split == s.split and o.type == s.type
        assert o.evidence == s.evidence and o.unanswerable == s.unanswerable
        assert s.doc_scope and o.doc_scope is None
        assert o.question != s.question and o.question.endswith(s.question[1:])
        assert _names_contract(o.question, o.meta["contract_title"], o.meta["contract_parties"]), o.question
    by_type = {(c.meta["contract"][:5], c.type): c.question for c in opened}
    # a redacted party is left out; a title that names its parties stands alone; three parties listed
    assert by_type[("LUCID", "Governing Law")] == (
        "In the Distributor Agreement with Lucid Inc., which state/country's law governs the interpretation of the contract?"
    )
    assert by_type[("NETGE", "Governing Law")].startswith(
        "In the Amendment to the Distributor Agreement between Ingram Micro and Netgear, which"
    )
    assert by_type[("MACY'", "Expiration Date")].startswith(
        "In the Joint Filing Agreement between VESA EQUITY INVESTMENT S.À R.L., EP INVESTMENT S.À R.L. and DANIEL"
    )


def test_the_builder_writes_a_valid_dataset_over_cuads_documents_and_keeps_its_measurements(tmp_path):
    src, dest = tmp_path / "raw", tmp_path / "datasets"
    (src / "cuad").mkdir(parents=True)
    for name in ("master_clauses.csv", "category_descriptions.csv"):
        shutil.copy(SMALL / name, src / "cuad" / name)
    with pytest.raises(SystemExit, match="build cuad first"):
        build_cuad_open(src, dest)
    shutil.copytree(SMALL / "docs", dest / "cuad" / "docs")
    build_cuad_open(src, dest)
    readme = dest / "cuad-open" / "README.md"
    assert "CC BY 4.0" in readme.read_text() and "123 cases" in readme.read_text()
    readme.write_text(readme.read_text() + "\n## Measured\nrecall@5 0.5 on this run\n")
    build_cuad_open(src, dest)  # a rebuild keeps what was measured
    assert readme.read_text().endswith("## Measured\nrecall@5 0.5 on this run\n")
    assert [str(p) for p in validate_dataset(dest / "cuad-open")] == []
    ds = load_dataset(dest / "cuad-open")
    assert ds.docs_dir.resolve() == (dest / "cuad" / "docs").resolve() and len(ds.doc_ids()) == 3
    assert all(c.doc_scope is None and c.question.startswith("In the ") for c in ds.cases)


# ---------------------------------------------------------------- the shipped dataset


def test_shipped_cuad_open_is_unscoped_names_its_contracts_and_splits_as_cuad():
    assert [str(p) for p in validate_dataset(DATASETS / "cuad-open")] == []
    ds = load_dataset(DATASETS / "cuad-open")
    cuad = load_dataset(DATASETS / "cuad")
    assert ds.docs_dir.resolve() == cuad.docs_dir.resolve() and len(ds.doc_ids()) == 40
    assert "CC BY 4.0" in ds.provenance and ds.relevance.rule == "evidence_offsets"
    assert len(ds.cases) == len(cuad.cases) == 1640
    assert all(c.doc_scope is None for c in ds.cases)
    scoped = {c.id.replace("cuad-", "cuadopen-", 1): c for c in cuad.cases}
    assert set(scoped) == {c.id for c in ds.cases}
    for case in ds.cases:
        twin = scoped[case.id]
        assert case.split == twin.split and case.evidence == twin.evidence and case.type == twin.type
        assert [e.doc_id for e in case.evidence] == [twin.doc_scope[0]] * len(case.evidence)
        assert _names_contract(case.question, case.meta["contract_title"], case.meta["contract_parties"]), case.id
    # each question tells its contract from the other 39
    per_type: dict[str, set[str]] = defaultdict(set)
    for case in ds.cases:
        per_type[case.type].add(case.question)
    assert len(per_type) == 41 and all(len(q) == 40 for q in per_type.values())


# ---------------------------------------------------------------- documents in another dataset's folder


@pytest.fixture()
def shared_docs_dataset(tmp_path: Path) -> Path:
    """The fixture CSV's Lucid contract, unscoped, over cuad-mini's three texts kept in a sibling folder."""
    shutil.copytree(DATASETS / "cuad-mini" / "docs", tmp_path / "mini" / "docs")
    root = tmp_path / "open"
    cases = _import(root, tmp_path / "mini" / "docs", unscoped=True)
    assert {c.meta["contract"][:5] for c in cases} == {"LUCID"}  # the one contract of both
    (root / "dataset.yaml").write_text("docs: ../mini/docs\nrelevance: evidence_offsets\n")
    (root / "README.md").write_text("a test fixture: CUAD (CC BY 4.0) cases over ../mini/docs\n")
    return root


def test_docs_in_a_sibling_folder_load_validate_and_evaluate(shared_docs_dataset, tmp_path):
    ds = load_dataset(shared_docs_dataset)
    assert len(ds.doc_ids()) == 3 and not (shared_docs_dataset / "docs").exists()
    assert [str(p) for p in validate_dataset(shared_docs_dataset)] == []
    pipeline = str(ROOT / "pipelines" / "default.yaml")
    report = ragsweep.evaluate(pipeline, str(shared_docs_dataset), limit=6)
    served = {h.doc_id for c in report.cases for h in c.hits}
    assert served and served <= set(ds.doc_ids())
    assert report.metrics["recall@5"] > 0  # the evidence was found in the shared documents
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  top_k: [3, 5]\nobjectives: [recall@k]\n")
    sweep = ragsweep.sweep(pipeline, str(shared_docs_dataset), str(grid), limit=6)
    assert len(sweep.configs) == 2 and all(c.metrics["recall@k"] > 0 for c in sweep.configs)
