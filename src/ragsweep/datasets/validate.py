"""Validate a dataset folder or a cases file, collecting ALL problems (never stopping at the first).

Each :class:`~ragsweep.datasets.loader.Problem` names the file, line and field, e.g.
``cases.jsonl:12: relevant_ids[0]: case 'q7': relevant id 'x.pdf' is not among the dataset's
documents (docs/)``.

Checks: empty file, malformed JSON, non-object lines, field errors (pydantic), duplicate ids,
an answerable case without relevance information (no ``relevant_ids`` and no ``evidence``;
allowed for a case carrying a pre-computed ``response``), an unanswerable case with relevance
information, ids in ``relevant_ids`` / ``doc_scope`` / ``evidence[].doc_id`` missing from
``docs/`` (after resolving unique file stems; a stem of several documents is named with
them), evidence or relevant documents outside the case's ``doc_scope``, a ``doc_scope`` id
Pathway's metadata filter cannot express (a backtick or ``"``: the eval skips the case), a
question with nothing left to search once cleaned for the query parser (``?!``, emoji only),
rule-specific needs (``relevance: doc_id`` needs relevant_ids or evidence doc ids),
``dataset.yaml`` errors, missing ``docs/`` or ``README.md``. Problems about one case name its id.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .loader import (
    Problem,
    cases_file_name,
    read_cases,
    read_settings,
    relevance_from_settings,
    resolve_doc_ids,
)
from .pathway_limits import clean_query, unscopable_reason
from .schema import Case, list_doc_ids

__all__ = ["Problem", "validate_cases", "validate_cases_file", "validate_dataset", "main"]


def validate_cases(
    cases: Sequence[Case],
    file: str,
    doc_ids: set[str] | None = None,
    rule: str | None = None,
) -> list[Problem]:
    """Case-level checks on already-parsed cases (``doc_ids`` = ids in docs/, None to skip)."""
    problems: list[Problem] = []
    first_line: dict[str, int | None] = {}
    for case in cases:
        line = case._line
        if case.id in first_line:
            problems.append(
                Problem(file, line, "id", f"duplicate id {case.id!r} (first on line {first_line[case.id]})")
            )
        else:
            first_line[case.id] = line
        if case.unanswerable and case.has_relevance:
            what = " and ".join(
                n for n, v in (("relevant_ids", case.relevant_ids), ("evidence", case.evidence)) if v
            )
            problems.append(Problem(file, line, "unanswerable", f"an unanswerable case must not have {what}"))
        # a case with a pre-computed response is scored on its answer as given: retrieval
        # relevance is optional for it (retrieval metrics count it as missing)
        if not case.unanswerable and not case.has_relevance and case.response is None:
            problems.append(
                Problem(file, line, "relevant_ids", "answerable case without relevance information (no relevant_ids and no evidence)")
            )
        if rule == "doc_id" and not case.unanswerable and not case.relevant_ids and case.evidence:
            if not any(e.doc_id for e in case.evidence):
                problems.append(
                    Problem(file, line, "relevant_ids", "relevance rule doc_id needs relevant_ids or evidence with doc_id")
                )
        if not clean_query(case.question):
            problems.append(Problem(
                file, line, "question",
                f"case {case.id!r}: question empty after cleaning (nothing but punctuation, symbols or "
                "emoji is left for the query parser): there is nothing to search for",
            ))
        for i, d in enumerate(case.doc_scope or []):
            reason = unscopable_reason(d)
            if reason:
                problems.append(Problem(file, line, f"doc_scope[{i}]", f"case {case.id!r}: {d!r}: {reason}"))
        if doc_ids is not None:
            missing = "is not among the dataset's documents (docs/)"
            for i, r in enumerate(case.relevant_ids):
                if r.id not in doc_ids:
                    problems.append(Problem(file, line, f"relevant_ids[{i}]", f"case {case.id!r}: relevant id {r.id!r} {missing}"))
            for i, d in enumerate(case.doc_scope or []):
                if d not in doc_ids:
                    problems.append(Problem(file, line, f"doc_scope[{i}]", f"case {case.id!r}: {d!r} {missing}"))
            for i, e in enumerate(case.evidence):
                if e.doc_id is not None and e.doc_id not in doc_ids:
                    problems.append(Problem(file, line, f"evidence[{i}].doc_id", f"case {case.id!r}: {e.doc_id!r} {missing}"))
        if case.doc_scope:
            scope = set(case.doc_scope)
            for i, r in enumerate(case.relevant_ids):
                if r.grade >= 1 and r.id not in scope:
                    problems.append(Problem(file, line, f"relevant_ids[{i}]", f"case {case.id!r}: {r.id!r} is outside doc_scope"))
            for i, e in enumerate(case.evidence):
                if e.doc_id is not None and e.doc_id not in scope:
                    problems.append(Problem(file, line, f"evidence[{i}].doc_id", f"case {case.id!r}: {e.doc_id!r} is outside doc_scope"))
    return problems


def validate_cases_file(path: str | Path, doc_ids: set[str] | None = None, rule: str | None = None) -> list[Problem]:
    """Validate one cases file (JSONL or JSON) on its own or against a set of document ids
    (unique file stems among them are resolved first)."""
    path = Path(path)
    cases, problems = read_cases(path)
    ambiguous = resolve_doc_ids(cases, doc_ids, path.name) if doc_ids is not None else []
    return problems + _merge(ambiguous, validate_cases(cases, path.name, doc_ids, rule))


def _merge(ambiguous: list[Problem], problems: list[Problem]) -> list[Problem]:
    """``ambiguous`` (stems naming several documents) and ``problems`` without the "not among the
    dataset's documents" problem of the same references."""
    where = {(p.line, p.field) for p in ambiguous}
    return ambiguous + [
        p for p in problems if (p.line, p.field) not in where or "among the dataset's documents" not in p.message
    ]


def validate_dataset(path: str | Path) -> list[Problem]:
    """Validate a dataset folder; returns every problem sorted by file and line (empty = valid)."""
    root = Path(path)
    if not root.is_dir():
        return [Problem(str(root), None, None, "dataset folder not found")]
    settings, problems = read_settings(root)
    cases_name = cases_file_name(root, settings)
    docs_name = str(settings.get("docs", "docs"))
    docs_dir = root / docs_name
    doc_ids: set[str] | None
    if docs_dir.is_dir():
        doc_ids = set(list_doc_ids(docs_dir))
        if not doc_ids:
            problems.append(Problem(f"{docs_name}/", None, None, "docs folder is empty"))
    else:
        problems.append(Problem(f"{docs_name}/", None, None, "docs folder not found"))
        doc_ids = None
    if not (root / "README.md").is_file():
        problems.append(Problem("README.md", None, None, "missing (a dataset needs its provenance and licence)"))
    cases, case_problems = read_cases(root / cases_name, display_name=cases_name)
    problems += case_problems
    ambiguous = resolve_doc_ids(cases, doc_ids, cases_name) if doc_ids is not None else []
    relevance, rel_problems = relevance_from_settings(settings, cases)
    problems += rel_problems
    problems += _merge(ambiguous, validate_cases(cases, cases_name, doc_ids, relevance.rule))
    return sorted(problems, key=lambda p: (p.file, p.line or 0))


def main(argv: Sequence[str] | None = None, out=None) -> int:
    """``ragsweep validate --dataset D``: print every problem; exit code 0 when valid, 1 otherwise."""
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="ragsweep validate", description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", help="dataset folder (or a cases .jsonl file)")
    parser.add_argument("--dataset", "-d", dest="dataset", help="dataset folder (or a cases .jsonl file)")
    args = parser.parse_args(argv)
    target = args.dataset or args.path
    if not target:
        parser.error("give a dataset folder")
    path = Path(target)
    if path.is_file():  # a cases file: checked against the docs/ folder next to it, if any
        settings, _ = read_settings(path.parent)
        docs_dir = path.parent / str(settings.get("docs", "docs"))
        doc_ids = set(list_doc_ids(docs_dir)) if docs_dir.is_dir() else None
        problems = validate_cases_file(path, doc_ids)
    else:
        problems = validate_dataset(path)
    for problem in problems:
        print(problem, file=out)
    if problems:
        print(f"{len(problems)} problem(s) in {path}", file=out)
        return 1
    n = len(read_cases(path if path.is_file() else path / _cases_name(path))[0])
    print(f"OK: {path} ({n} cases)", file=out)
    return 0


def _cases_name(root: Path) -> str:
    settings, _ = read_settings(root)
    return cases_file_name(root, settings)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
