"""Import Pathway's rag_evals ``labeled.tsv`` (a CUAD subset labelled by Pathway).

Pathway (github pathwaycom/pathway, ``integration_tests/rag_evals/``) evaluates 14 CUAD
categories per contract, each rewritten as a natural question (``eval_questions.py``,
:data:`PATHWAY_QUESTIONS`). For each contract row and each of those categories:

* question = Pathway's question for the span column (the one its retrieval metrics use);
  Pathway's wording for the ``-Answer`` column, when different, is kept in
  ``meta["answer_question"]``;
* ``doc_scope`` = ``[file]`` (Pathway filters retrieval to the file with ``globmatch``);
* ``evidence`` = the span list of the category column, one span per list item (as Pathway
  uses them: no ``<omitted>`` split); an empty list is an unanswerable case;
* ``reference_answer`` = the ``<category>-Answer`` column (header quirk:
  ``Notice Period To Terminate Renewal- Answer``; only used for the 14, which do not include it).

Pathway's retrieval hit rule is the ``word_overlap`` relevance rule.

CLI: ``python -m ragsweep.datasets.pathway_tsv LABELED_TSV OUT_DIR [--docs PDF_DIR]``.
"""

from __future__ import annotations

import argparse
import ast
import csv
import sys
from collections.abc import Sequence
from pathlib import Path

from ._util import contract_key, copy_doc, csv_rows, index_files, short_hash, slug, split_for
from .loader import write_cases
from .schema import Case

# integration_tests/rag_evals/eval_questions.py (question_mapper), span-column questions
PATHWAY_QUESTIONS: dict[str, str] = {
    "Parties": "Who are the parties in the contract (licensee and licensor)?",
    "Agreement Date": "What is the agreement day of the contract?",
    "Effective Date": "What is the effective date of the start of contract?",
    "Expiration Date": "What is the expiration date?",
    "Governing Law": "Governing law clause (State, Country)?",
    "Competitive Restriction Exception": "Is there Competitive Restriction Exception?",
    "Exclusivity": "Is there exclusivity clause in the contract?",
    "Non-Disparagement": "Does the contract include a clause prohibiting either party from making negative statements about the other party?",
    "Anti-Assignment": "Does the contract contain a provision that restricts or prohibits the assignment of rights or obligations to a third party?",
    "Minimum Commitment": "Is there a minimum commitment required from either party under the terms of the contract?",
    "License Grant": "What rights or privileges are granted to the licensee under the contract?",
    "Non-Transferable License": "Does the contract specify that the license granted is non-transferable?",
    "Audit Rights": "Are there provisions in the contract allowing one party to audit the other party\u2019s compliance with the contract terms?",
    "Cap On Liability": "Is there a limit or cap on the amount of liability that one party can incur under the contract?",
}
# the -Answer column questions where Pathway's wording differs
PATHWAY_ANSWER_QUESTIONS: dict[str, str] = {
    "License Grant": "Are there any rights or privileges granted to the licensee under the contract?",
    "Audit Rights": "Are there any provisions in the contract allowing one party to audit the other party\u2019s compliance with the contract terms?",
}


def _answer_column(header: Sequence[str], category: str) -> str | None:
    for name in (f"{category}-Answer", f"{category}- Answer"):
        if name in header:
            return name
    return None


def read_labeled(tsv: str | Path) -> tuple[list[str], list[dict[str, str]]]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    with open(tsv, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader)
        rows = csv_rows(header, reader)
    return header, rows


def pathway_cases(
    tsv: str | Path,
    doc_ids: dict[str, str] | None = None,
    categories: Sequence[str] | None = None,
    id_prefix: str = "pathway",
) -> list[Case]:
    """Cases for Pathway's 14 categories (or ``categories``) of every row (only rows in ``doc_ids``)."""
    header, rows = read_labeled(tsv)
    cats = list(categories or PATHWAY_QUESTIONS)
    for c in cats:
        if c not in header:
            raise ValueError(f"column {c!r} not in {tsv}")
    cases: list[Case] = []
    for row in rows:
        filename = row["file"].strip()
        key = contract_key(filename)
        if doc_ids is not None and key not in doc_ids:
            continue
        doc_id = doc_ids[key] if doc_ids is not None else filename
        for cat in cats:
            cell = row[cat].strip()
            spans = [str(s) for s in ast.literal_eval(cell)] if cell else []
            spans = [s for s in spans if s.strip()]
            ans_col = _answer_column(header, cat)
            answer = (row[ans_col] if ans_col else "").strip() or None
            meta = {"contract": filename, "category": cat}
            if cat in PATHWAY_ANSWER_QUESTIONS:
                meta["answer_question"] = PATHWAY_ANSWER_QUESTIONS[cat]
            if answer is not None and not spans:
                meta["pathway_answer"] = answer
            cases.append(
                Case(
                    id=f"{id_prefix}-{short_hash(key)}-{slug(cat)}",
                    question=PATHWAY_QUESTIONS.get(cat, f"{cat}?"),
                    type=cat,
                    doc_scope=[doc_id],
                    evidence=[{"text": s, "doc_id": doc_id} for s in spans],
                    reference_answer=answer if spans else None,
                    unanswerable=not spans,
                    split=split_for(key),
                    meta=meta,
                )
            )
    return cases


def import_pathway_labeled(
    tsv: str | Path,
    out_dir: str | Path,
    docs_src: str | Path | None = None,
    id_prefix: str = "pathway",
) -> tuple[list[Case], list[str]]:
    """Write ``out_dir/cases.jsonl``; with ``docs_src`` copy the labelled contracts found there
    into ``out_dir/docs/`` and keep only their cases. Returns (cases, labelled files not found)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _, rows = read_labeled(tsv)
    missing: list[str] = []
    doc_ids: dict[str, str] | None = None
    if docs_src is not None:
        files = index_files(Path(docs_src))
        doc_ids = {}
        for row in rows:
            key = contract_key(row["file"])
            if key in files:
                doc_ids[key] = copy_doc(files[key], out / "docs")
            else:
                missing.append(row["file"].strip())
    cases = pathway_cases(tsv, doc_ids, id_prefix=id_prefix)
    write_cases(out / "cases.jsonl", cases)
    return cases, missing


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragsweep.datasets.pathway_tsv", description=__doc__.splitlines()[0])
    p.add_argument("tsv")
    p.add_argument("out_dir")
    p.add_argument("--docs", help="folder with contract files; only labelled contracts found there are kept")
    p.add_argument("--id-prefix", default="pathway")
    a = p.parse_args(argv)
    cases, missing = import_pathway_labeled(a.tsv, a.out_dir, a.docs, a.id_prefix)
    print(f"{len(cases)} cases ({sum(c.unanswerable for c in cases)} unanswerable) -> {a.out_dir}")
    if missing:
        print(f"{len(missing)} labelled contracts have no document in {a.docs}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
