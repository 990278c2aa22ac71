"""Import the CUAD v1 release (``master_clauses.csv`` + ``category_descriptions.csv``).

Every one of the 41 categories of every selected contract becomes a case:

* question: the category's official description when it is a question (whitespace
  collapsed), else a question written from the description (4 categories, see
  :data:`STATEMENT_QUESTIONS`);
* ``doc_scope`` = ``[the contract]``; ``type`` = the category name; or, unscoped (``--unscoped``),
  no scope and the question names its contract ("In the Co-Branding Agreement between Snap
  Technologies, Inc. and United Airlines, Inc., which state/country's law governs ...?", the
  rule in :mod:`.cuad_naming`), with its title and parties in ``meta``;
* an empty clause list (``[]``) is an **unanswerable** case (the contract has no such clause);
* otherwise ``evidence`` = the annotated excerpts, an excerpt made of pieces joined by
  ``<omitted>`` giving one evidence span per piece, each with the contract's ``doc_id``;
  ``reference_answer`` = the ``<category>-Answer`` column (header quirk:
  ``Notice Period To Terminate Renewal- Answer``);
* ``split`` = dev/test from a hash of the contract's normalised name.

File-name quirk: 11 names in the CSV differ from the files; contracts are matched to
documents on :func:`~ragsweep.datasets._util.contract_key`.

CLI: ``python -m ragsweep.datasets.cuad MASTER_CSV DESCRIPTIONS_CSV OUT_DIR --docs PDF_DIR``.
"""

from __future__ import annotations

import argparse
import ast
import csv
import re
from collections.abc import Sequence
from pathlib import Path

from ._util import contract_key, copy_doc, csv_rows, index_files, short_hash, slug, split_for
from .cuad_naming import contract_parties, contract_question, contract_title
from .loader import write_cases
from .schema import Case, CaseLimits

OMITTED = "<omitted>"

# descriptions that are statements, not questions
STATEMENT_QUESTIONS = {
    "document name": "What is the name of the contract?",
    "parties": "Who are the two or more parties who signed the contract?",
    "agreement date": "What is the date of the contract?",
    "effective date": "What is the date when the contract is effective?",
    "competitive restriction exception": (
        "Are there exceptions or carveouts to Non-Compete, Exclusivity and No-Solicit of Customers?"
    ),
}


def _strip_label(value: str, label: str) -> str:
    value = value.strip()
    prefix = f"{label}:"
    return value[len(prefix) :].strip() if value.startswith(prefix) else value


def read_categories(descriptions_csv: str | Path) -> dict[str, dict[str, str]]:
    """``{category.lower(): {category, description, answer_format, group, question}}``."""
    out: dict[str, dict[str, str]] = {}
    with open(descriptions_csv, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        for row in reader:
            if not row or not row[0].strip():
                continue
            name = _strip_label(row[0], "Category")
            desc = re.sub(r"\s+", " ", _strip_label(row[1], "Description")).strip()
            fmt = _strip_label(row[2], "Answer Format") if len(row) > 2 else ""
            group = _strip_label(row[3], "Group") if len(row) > 3 else ""
            question = STATEMENT_QUESTIONS.get(name.lower()) or (
                desc if "?" in desc else f"What does the contract say about {name}? ({desc})"
            )
            out[name.lower()] = {
                "category": name,
                "description": desc,
                "answer_format": fmt,
                "group": group,
                "question": question,
            }
    return out


def read_master(master_csv: str | Path) -> tuple[list[tuple[str, str]], list[dict[str, str]]]:
    """``([(clause column, answer column), ...], rows)``; columns alternate clause / answer."""
    with open(master_csv, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = csv_rows(header, reader)
    pairs = []
    for clause, answer in zip(header[1::2], header[2::2]):
        if not answer.replace(" ", "").lower().startswith(clause.replace(" ", "").lower()):
            raise ValueError(f"unexpected column order: {clause!r} then {answer!r}")
        pairs.append((clause, answer))
    return pairs, rows


MIN_EVIDENCE_CHARS = CaseLimits().evidence_min_chars  # what validate accepts


def split_excerpts(cell: str) -> list[str]:
    """A clause cell (Python-list string) -> evidence pieces (``<omitted>`` splits an excerpt)."""
    cell = cell.strip()
    if not cell:
        return []
    excerpts = ast.literal_eval(cell)
    if not isinstance(excerpts, list):
        raise ValueError(f"clause cell is not a list: {cell[:80]!r}")
    pieces: list[str] = []
    for excerpt in excerpts:
        for piece in str(excerpt).split(OMITTED):
            piece = piece.strip()
            if len("".join(piece.split())) >= MIN_EVIDENCE_CHARS:  # a stray "." left by <omitted> is no evidence
                pieces.append(piece)
    return pieces


def cuad_cases(
    master_csv: str | Path,
    descriptions_csv: str | Path,
    doc_ids: dict[str, str] | None = None,
    id_prefix: str = "cuad",
    unscoped: bool = False,
) -> list[Case]:
    """Cases for every category of every contract (only contracts in ``doc_ids`` if given).

    ``doc_ids`` maps :func:`contract_key` of a contract to the doc id to use; without it the
    CSV's file name is the doc id. ``unscoped``: no ``doc_scope``; each question names its
    contract instead (:mod:`.cuad_naming`).
    """
    categories = read_categories(descriptions_csv)
    pairs, rows = read_master(master_csv)
    cases: list[Case] = []
    for row in rows:
        filename = row[next(iter(row))].strip()
        key = contract_key(filename)
        if doc_ids is not None and key not in doc_ids:
            continue
        doc_id = doc_ids[key] if doc_ids is not None else filename
        naming = _naming(row, filename) if unscoped else None
        for clause_col, answer_col in pairs:
            cat = categories.get(clause_col.lower())
            if cat is None:
                raise ValueError(f"category {clause_col!r} has no description")
            pieces = split_excerpts(row[clause_col])
            answer = row[answer_col].strip() or None
            question, named = cat["question"], {}
            scope: list[str] | None = [doc_id]
            if naming is not None:
                title, parties = naming
                question = contract_question(question, clause_col.lower(), title, parties)
                scope, named = None, {"contract_title": title, "contract_parties": parties}
            case = Case(
                id=f"{id_prefix}-{short_hash(key)}-{slug(cat['category'])}",
                question=question,
                type=cat["category"],
                doc_scope=scope,
                evidence=[{"text": p, "doc_id": doc_id} for p in pieces],
                reference_answer=answer if pieces else None,
                unanswerable=not pieces,
                split=split_for(key),
                meta={
                    "contract": filename,
                    "category": cat["category"],
                    "description": cat["description"],
                    "answer_format": cat["answer_format"],
                    **({"cuad_answer": answer} if answer is not None and not pieces else {}),
                    **named,
                },
            )
            cases.append(case)
    return cases


def _naming(row: dict[str, str], filename: str) -> tuple[str, list[str]]:
    """The contract's title and parties, from its Document Name and Parties answers."""
    return contract_title(row["Document Name-Answer"], filename), contract_parties(row["Parties-Answer"])


def import_cuad(
    master_csv: str | Path,
    descriptions_csv: str | Path,
    out_dir: str | Path,
    docs_src: str | Path | None = None,
    contracts: Sequence[str] | None = None,
    id_prefix: str = "cuad",
    cases_name: str = "cases.jsonl",
    unscoped: bool = False,
    copy_docs: bool = True,
) -> list[Case]:
    """Write ``out_dir/cases.jsonl`` (and copy the documents into ``out_dir/docs/``).

    ``docs_src``: folder with the contract files (PDF or txt); only contracts with a file
    there are imported, and the file name is the doc id. ``contracts``: optional subset
    (file names, matched on the normalised key). ``copy_docs=False`` leaves the documents
    where they are (a dataset whose ``dataset.yaml`` points ``docs:`` at them); ``unscoped``:
    see :func:`cuad_cases`.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc_ids: dict[str, str] | None = None
    if docs_src is not None:
        files = index_files(Path(docs_src))
        wanted = {contract_key(c) for c in contracts} if contracts else None
        doc_ids = {}
        for key, src in files.items():
            if wanted is None or key in wanted:
                doc_ids[key] = copy_doc(src, out / "docs") if copy_docs else src.name
    elif contracts:
        doc_ids = {contract_key(c): c for c in contracts}
    cases = cuad_cases(master_csv, descriptions_csv, doc_ids, id_prefix, unscoped)
    write_cases(out / cases_name, cases)
    return cases


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragsweep.datasets.cuad", description=__doc__.splitlines()[0])
    p.add_argument("master_csv")
    p.add_argument("descriptions_csv")
    p.add_argument("out_dir")
    p.add_argument("--docs", help="folder with the contract files to ship (PDF or txt)")
    p.add_argument("--contract", action="append", help="restrict to this contract (repeatable)")
    p.add_argument("--id-prefix", default="cuad")
    p.add_argument("--unscoped", action="store_true", help="no doc_scope: each question names its contract")
    a = p.parse_args(argv)
    cases = import_cuad(
        a.master_csv, a.descriptions_csv, a.out_dir, a.docs, a.contract, a.id_prefix, unscoped=a.unscoped
    )
    n_un = sum(c.unanswerable for c in cases)
    print(f"{len(cases)} cases ({n_un} unanswerable) -> {a.out_dir}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
