"""Regenerate the shipped datasets from the raw releases.

``python -m ragsweep.datasets.build --source RAW_RELEASES_DIR --dest datasets`` (the folder holding
the original cuad/, pathway-rag-evals/ and cranfield/ releases)

Writes ``cuad/`` (40 contract PDFs x 41 categories), ``cuad-open/`` (the same cases without a
scope, each question naming its contract; its ``docs:`` is ``../cuad/docs``), ``cuad-pathway/`` (Pathway's labelled
categories for the labelled contracts whose PDF is among those 40), ``cuad-mini/`` (3
contracts as plain text, all categories) and ``cranfield/`` (1400 abstracts, 225 queries),
each with ``dataset.yaml`` and a ``README.md`` (provenance, licence, counts). Only this
builder reads the raw data; tests and evaluations read the shipped copies.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from .cuad import import_cuad
from .pathway_tsv import PATHWAY_QUESTIONS, import_pathway_labeled
from .trec import import_cranfield

MINI_CONTRACTS = (
    "DataCallTechnologies_20060918_SB-2A_EX-10.9_944510_EX-10.9_Content License Agreement.pdf",
    "LUCIDINC_04_15_2011-EX-10.9-DISTRIBUTOR AGREEMENT.PDF",
    "GAINSCOINC_01_21_2010-EX-10.41-SPONSORSHIP AGREEMENT.PDF",
)

CUAD_SOURCE = (
    "CUAD v1 (Contract Understanding Atticus Dataset), The Atticus Project, licence CC BY 4.0\n"
    '(https://www.atticusprojectai.org/cuad; Hendrycks et al., "CUAD: An Expert-Annotated NLP\n'
    'Dataset for Legal Contract Review", NeurIPS 2021 Datasets and Benchmarks).\n'
    "Copied from: github maastrichtlawtech/law3027-advanced-legal-analytics @\n"
    "77c8f5a3cc2e6e5e3793b43f84a3bc097a414f9e, data/CUAD_v1/ (master_clauses.csv, full_contract_pdf,\n"
    "full_contract_txt); category_descriptions.csv from github TheAtticusProject/cuad @\n"
    "67faa0e6023b04fcaae6cc09497ab00e5d63a2a2. The contracts are public SEC EDGAR filings."
)


def _write(path: Path, text: str) -> None:
    path.write_text(text.rstrip() + "\n", encoding="utf-8")


def _counts(cases) -> tuple[int, int, int, int]:
    n = len(cases)
    un = sum(c.unanswerable for c in cases)
    dev = sum(c.split == "dev" for c in cases)
    ev = sum(len(c.evidence) for c in cases)
    return n, un, dev, ev


def build_cuad(src: Path, dest: Path) -> None:
    out = dest / "cuad"
    cases = import_cuad(src / "cuad/master_clauses.csv", src / "cuad/category_descriptions.csv", out, src / "cuad/pdf")
    n, un, dev, ev = _counts(cases)
    n_docs = len(list((out / "docs").iterdir()))
    _write(
        out / "dataset.yaml",
        "name: cuad\nrelevance: evidence_offsets\nevidence_min_overlap_fraction: 0.5\nevidence_min_overlap_chars: 100\n",
    )
    _write(
        out / "README.md",
        f"""# cuad — 40 CUAD contracts (PDF) x 41 clause categories

{CUAD_SOURCE}

## What is here
- `docs/`: {n_docs} original contract PDFs (the 40 of the release shipped as PDF in our source
  copy); doc id = file name.
- `cases.jsonl`: {n} cases = every one of the 41 categories of every contract
  ({un} unanswerable: the contract has no such clause, i.e. an empty clause list in
  `master_clauses.csv`; {n - un} answerable with {ev} evidence spans).
- `dataset.yaml`: relevance rule `evidence_offsets`.

## How the cases were made (`python -m ragsweep.datasets.build`, `ragsweep.datasets.cuad`)
- question: the official category description when it is a question, else a question written
  from it (Document Name, Parties, Agreement Date, Effective Date, Competitive Restriction
  Exception); `type` = category; `doc_scope` = the contract.
- evidence: the annotated excerpts; an excerpt whose pieces are joined by `<omitted>` gives one
  evidence span per piece. `reference_answer` = the `<category>-Answer` column (for Yes/No
  categories this is just "Yes"); for unanswerable cases the column's value (usually "No") is
  kept in `meta.cuad_answer`.
- split: dev/test by a SHA-256 of the contract's normalised name ({dev} dev / {n - dev} test cases).
- File-name quirk: 11 names in master_clauses.csv differ from the files (`&`, `'` -> `_`, trailing
  spaces or `-`); contracts are matched on a normalised key (letters and digits, lower case).
- Relevance caveat: the CSV has no character offsets (CUAD_v1.json, which has them, is not in our
  copy), so a span is located by searching the parsed text; short spans such as party aliases
  ("Company", "Licensor") occur many times and any occurrence counts.
- Note: the source notes say 13,901 of 20,459 cells are empty; counting `[]` cells of the
  master_clauses.csv we copied gives 14,208 of 20,910 (510 x 41); for these 40 contracts 1,127
  of 1,640.
""",
    )


MEASURED = "## Measured"


def _measured_section(readme: Path) -> str:
    """The README's section of measured results (written by hand after a run), kept on a rebuild."""
    if not readme.exists():
        return ""
    text = readme.read_text(encoding="utf-8")
    at = text.find(MEASURED)
    return "" if at < 0 else "\n" + text[at:]


def build_cuad_open(src: Path, dest: Path) -> None:
    out = dest / "cuad-open"
    docs = dest / "cuad" / "docs"
    if not docs.is_dir():
        raise SystemExit(f"{docs}: not found; build cuad first (cuad-open reads its documents there)")
    cases = import_cuad(
        src / "cuad/master_clauses.csv",
        src / "cuad/category_descriptions.csv",
        out,
        docs,
        id_prefix="cuadopen",
        unscoped=True,
        copy_docs=False,
    )
    n, un, dev, ev = _counts(cases)
    n_docs = len({c.meta["contract"] for c in cases})
    _write(
        out / "dataset.yaml",
        "name: cuad-open\ndocs: ../cuad/docs\nrelevance: evidence_offsets\n"
        "evidence_min_overlap_fraction: 0.5\nevidence_min_overlap_chars: 100\n",
    )
    measured = _measured_section(out / "README.md")
    readme = CUAD_OPEN_README.format(
        source=CUAD_SOURCE, docs=n_docs, n=n, un=un, answerable=n - un, ev=ev, dev=dev, test=n - dev
    )
    _write(out / "README.md", readme + measured)


CUAD_OPEN_README = """# cuad-open — the 40 CUAD contracts, unscoped: each question names its contract

{source}

## What is here
- No `docs/` of its own: `dataset.yaml` has `docs: ../cuad/docs`, the {docs} contract PDFs of
  `../cuad/` (doc id = file name). Every question is asked of all of them at once.
- `cases.jsonl`: {n} cases, one per case of `../cuad/` (every one of the 41 categories of every
  contract): the same evidence spans, reference answers, types and split; ids `cuadopen-<contract
  hash>-<category>` where `../cuad/` has `cuad-...`, so a case of one set pairs with the other's.
  No `doc_scope`: to be answerable without one, each question names its contract the way a user
  would, by its title and its parties ("In the Co-Branding Agreement between Snap Technologies,
  Inc. and United Airlines, Inc., which state/country's law governs the interpretation of the
  contract?"); `meta.contract_title` and `meta.contract_parties` hold the names used.
- Unanswerable cases are kept ({un}: the contract has no such clause): with the contract named,
  "none" is the right answer, so they test abstention as in `../cuad/`; retrieval metrics leave
  them out. {answerable} answerable cases carry {ev} evidence spans.
- Split: as in `../cuad/`, by contract ({dev} dev / {test} test cases): a sweep chooses on dev and
  verifies on test.
- `dataset.yaml`: relevance rule `evidence_offsets`, as `../cuad/`.

## How the questions name their contract (`python -m ragsweep.datasets.build --only cuad-open`, `ragsweep.datasets.cuad_naming`)
Built from `master_clauses.csv` alone, by rule, not by hand:
- title: the `Document Name-Answer` cell, white space collapsed, a leading "the" and trailing
  `(`, `-`, `,` dropped, words in capitals put in title case ("CO-BRANDING AGREEMENT" -> "Co-Branding
  Agreement"; small words such as "of", "and" in lower case); the CSV's spelling is kept otherwise
  (its "JOINT VENTURE AGREEMEN" stays); an empty cell (none of the 510) gives the file's stem.
- parties: the `Parties-Answer` cell split on `;`; a piece's name is its text before the first
  double quote, less the parentheses that end it (the defined aliases: "Geno Auriemma (Auriemma)";
  a parenthesis inside a name stays: "Fonterra (USA) Inc."), in the CSV's spelling and case. Left
  out: a piece with no letter or digit (`[*]`, a redaction), one speaking of the parties collectively
  ("collectively referred to as Parties", "MS and MSCI individually ..."), one made only of earlier
  aliases ("NVOS and HGF"), a repeated name. A piece defining a group name (`(collectively, the
  "ValueAct Group")`) is called by it.
- phrase: "the <title> between A and B" ("A, B and C"; one party: "with A"; a title that already says
  "between", as NETGEAR's amendment, alone; more than four parties: the first three "and others").
  The question: "In <phrase>, <the category's question of ../cuad/, first letter in lower case>".
- The two categories that ask for the name or the parties name the contract by what they do not ask:
  Document Name by its parties ("In the contract between Snap Technologies, Inc. and United Airlines,
  Inc., what is the name of the contract?"), Parties by its title and first party ("In the
  Co-Branding Agreement with Snap Technologies, Inc., who are ...?").
- The 40 phrases are distinct, and so is each category's question across the contracts. Names are
  the CSV's, typos included ("Mount Kowledge Holdings Inc." for the document's KNOWLEDGE), as a user
  copying them from a listing would have them.
"""


def build_cuad_pathway(src: Path, dest: Path) -> None:
    out = dest / "cuad-pathway"
    cases, missing = import_pathway_labeled(src / "pathway-rag-evals/labeled.tsv", out, src / "cuad/pdf")
    n, un, dev, _ = _counts(cases)
    present = sorted(p.name for p in (out / "docs").iterdir())
    _write(out / "dataset.yaml", "name: cuad-pathway\nrelevance: word_overlap\nword_overlap_threshold: 0.65\n")
    _write(
        out / "README.md",
        f"""# cuad-pathway — Pathway's own RAG-eval labels (a CUAD subset)

Source: github pathwaycom/pathway @ 8e7f101e, `integration_tests/rag_evals/dataset/labeled.tsv`
(25 contracts x the CUAD columns) and the 14 questions of `integration_tests/rag_evals/eval_questions.py`
(labels are CUAD annotations, CC BY 4.0; the question wording is Pathway's, see that repository's licence). Documents: the CUAD PDFs, see
`../cuad/README.md`.

## What is here
- `docs/`: the {len(present)} labelled contracts whose PDF is among the 40 PDFs we ship in `../cuad/`:
{chr(10).join("  - `" + p + "`" for p in present)}
  The other {len(missing)} of the 25 labelled contracts are **not** included: we have no PDF for them
  (one of them, TomOnlineInc, is a .docx in Pathway's set).
- `cases.jsonl`: {n} cases = {len(PATHWAY_QUESTIONS)} categories x {len(present)} contracts, question =
  Pathway's rewritten question (e.g. Parties -> "Who are the parties in the contract (licensee and
  licensor)?"), `doc_scope` = the contract, evidence = the span list (one span per list item, as Pathway
  uses them), `reference_answer` = the `-Answer` column; {un} have an empty span list and are unanswerable
  (Pathway's own retrieval numbers keep such rows in the denominator, mostly as misses; ours exclude
  them from retrieval metrics and count them).
  Split as in `../cuad/`, by contract, so the two datasets never disagree ({dev} dev / {n - dev} test:
  with only {len(present)} contracts the hash happens to put them all in one split).
- `dataset.yaml`: relevance rule `word_overlap` = Pathway's retrieval hit rule
  (|words(span) & words(chunk)| / |words(span)| >= 0.65, words split on spaces). Note: Pathway's
  `evaluator.py` at commit 1f86733 sets `STRDIFF_MIN_SIMILARITY = 0.68`; the 0.65 here follows the
  project brief and can be changed in `dataset.yaml`.
""",
    )


def build_cuad_mini(src: Path, dest: Path) -> None:
    out = dest / "cuad-mini"
    cases = import_cuad(
        src / "cuad/master_clauses.csv",
        src / "cuad/category_descriptions.csv",
        out,
        src / "cuad/txt",
        contracts=MINI_CONTRACTS,
        id_prefix="cuadmini",
    )
    n, un, dev, ev = _counts(cases)
    names = sorted(p.name for p in (out / "docs").iterdir())
    _write(
        out / "dataset.yaml",
        "name: cuad-mini\nrelevance: evidence_offsets\nevidence_min_overlap_fraction: 0.5\nevidence_min_overlap_chars: 100\n",
    )
    _write(
        out / "README.md",
        f"""# cuad-mini — 3 CUAD contracts (plain text) x 41 categories, for quick runs and tests

{CUAD_SOURCE}

## What is here
- `docs/`: 3 small contracts as CUAD's plain-text version (no PDF parsing needed; every evidence span
  occurs verbatim in them after whitespace normalisation):
{chr(10).join("  - `" + p + "`" for p in names)}
- `cases.jsonl`: {n} cases ({un} unanswerable, {n - un} answerable with {ev} evidence spans), made exactly
  as in `../cuad/` (see its README) but with the `.txt` doc ids. Split: {dev} dev / {n - dev} test.
- `dataset.yaml`: relevance rule `evidence_offsets`.
""",
    )


def build_cranfield(src: Path, dest: Path) -> None:
    out = dest / "cranfield"
    cases = import_cranfield(src / "cranfield", out)
    n = len(cases)
    rel = sum(1 for c in cases for r in c.relevant_ids if r.grade >= 1)
    zero = sum(1 for c in cases for r in c.relevant_ids if r.grade == 0)
    dev = sum(c.split == "dev" for c in cases)
    _write(out / "dataset.yaml", "name: cranfield\nrelevance: doc_id\n")
    _write(
        out / "README.md",
        f"""# cranfield — the Cranfield collection (classic IR test collection)

Source: University of Glasgow IR test collections (Cleverdon, Cranfield experiments, 1960s), copied
from github mirahmed39/cosine_similarity @ 05a82beddadabbca5cfc5b0a597a3b713fffeddb
(`cran.all.1400`, `cran.qry`, `cranqrel`). No licence is stated by the source; the collection has been
distributed freely for research for decades.

## What is here
- `docs/<id>.txt`: the 1,400 abstracts, one file each: title, blank line, text (two abstracts have an
  empty body and hold only the title). Doc id = `<id>.txt`.
- `cases.jsonl`: {n} queries, id `cran-<n>` where n is the query's position in `cran.qry` (the `.I`
  numbers in that file skip — 001, 002, 004, ... 365 — but `cranqrel` numbers queries by position; the
  `.I` number is in `meta.qry_number`).
- `relevant_ids`: graded, grade = 5 - code for Cleverdon's codes 1 (complete answer) .. 4 (minimum
  interest): {rel} relevant judgements; the {zero} code -1 ("no interest") judgements are kept with
  grade 0 (judged, not relevant). {rel} + {zero} = {rel + zero} lines of `cranqrel`.
- `dataset.yaml`: relevance rule `doc_id`. Split: {dev} dev / {n - dev} test (hash of the case id).
""",
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragsweep.datasets.build", description=__doc__.splitlines()[0])
    p.add_argument("--source", required=True, help="folder with cuad/, pathway-rag-evals/, cranfield/")
    p.add_argument("--dest", default="datasets")
    p.add_argument("--only", choices=["cuad", "cuad-open", "cuad-pathway", "cuad-mini", "cranfield"], action="append")
    a = p.parse_args(argv)
    src, dest = Path(a.source), Path(a.dest)
    builders = {
        "cuad": build_cuad,
        "cuad-open": build_cuad_open,  # after cuad: it reads cuad/docs
        "cuad-pathway": build_cuad_pathway,
        "cuad-mini": build_cuad_mini,
        "cranfield": build_cranfield,
    }
    for name in a.only or builders:
        builders[name](src, dest)
        print(f"built {dest / name}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
