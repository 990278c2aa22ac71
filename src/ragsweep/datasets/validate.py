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

Evidence offsets (``evidence[i].start``/``.end``): always ``0 <= start < end``, both or neither,
with a ``doc_id`` (the schema). When some case carries offsets and ``docs/`` exists, its
documents are parsed as the eval parses them (:func:`ragsweep.pipeline.corpus.parse_corpus`, from the
parse cache when they were parsed before, e.g. by ``ragsweep generate``) and each span's
``[start, end)`` must lie inside its document's parsed text and equal the quote after the
normalisation the generator locates quotes with (:func:`ragsweep.datasets.textnorm.normalize`);
a document that cannot be parsed is named. Datasets without offsets parse nothing.

``--parse`` (``parse=True``) parses the documents in any case and locates every evidence span
in them as the eval does (:func:`ragsweep.metrics.relevance.unlocated_evidence`, the dataset's
rule): each span found in no parsed document is a problem naming the case, the span and its
document, with the closest passage of that document's text (rapidfuzz) so the label can be
fixed. The eval leaves a case none of whose spans is found out of its retrieval metrics.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .loader import (
    Problem,
    cases_file_name,
    read_cases,
    read_settings,
    relevance_from_settings,
    resolve_doc_ids,
)
from .pathway_limits import clean_query, unscopable_reason
from .schema import Case, Evidence, RelevanceConfig, list_doc_ids
from .textnorm import normalize

__all__ = [
    "Problem",
    "validate_cases",
    "validate_cases_file",
    "validate_dataset",
    "validate_offsets",
    "unlocated_problems",
    "closest_passage",
    "main",
]

QUOTE_SHOWN = 80  # characters of a quote or of the text at its offsets shown in a problem


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
        problems += _relevance_problems(case, file, rule)
        problems += _query_problems(case, file)
        if doc_ids is not None:
            problems += _missing_doc_problems(case, file, doc_ids)
        if case.doc_scope:
            problems += _scope_problems(case, file)
    return problems


def _relevance_problems(case: Case, file: str, rule: str | None) -> list[Problem]:
    """Relevance information present where it must not be, or missing where it is needed."""
    problems: list[Problem] = []
    line = case._line
    if case.unanswerable and case.has_relevance:
        what = " and ".join(n for n, v in (("relevant_ids", case.relevant_ids), ("evidence", case.evidence)) if v)
        problems.append(Problem(file, line, "unanswerable", f"an unanswerable case must not have {what}"))
    # a case with a pre-computed response is scored on its answer as given: retrieval
    # relevance is optional for it (retrieval metrics count it as missing)
    if not case.unanswerable and not case.has_relevance and case.response is None:
        problems.append(
            Problem(
                file,
                line,
                "relevant_ids",
                "answerable case without relevance information (no relevant_ids and no evidence)",
            )
        )
    if rule == "doc_id" and not case.unanswerable and not case.relevant_ids and case.evidence:
        if not any(e.doc_id for e in case.evidence):
            problems.append(
                Problem(file, line, "relevant_ids", "relevance rule doc_id needs relevant_ids or evidence with doc_id")
            )
    return problems


def _query_problems(case: Case, file: str) -> list[Problem]:
    """A question the query parser gets nothing from, and doc_scope ids Pathway's filter cannot express."""
    problems: list[Problem] = []
    line = case._line
    if not clean_query(case.question):
        problems.append(
            Problem(
                file,
                line,
                "question",
                f"case {case.id!r}: question empty after cleaning (nothing but punctuation, symbols or "
                "emoji is left for the query parser): there is nothing to search for",
            )
        )
    for i, d in enumerate(case.doc_scope or []):
        reason = unscopable_reason(d)
        if reason:
            problems.append(Problem(file, line, f"doc_scope[{i}]", f"case {case.id!r}: {d!r}: {reason}"))
    return problems


def _missing_doc_problems(case: Case, file: str, doc_ids: set[str]) -> list[Problem]:
    """Ids in relevant_ids, doc_scope and evidence[].doc_id that are not among ``doc_ids``."""
    problems: list[Problem] = []
    line = case._line
    missing = "is not among the dataset's documents (docs/)"
    for i, r in enumerate(case.relevant_ids):
        if r.id not in doc_ids:
            problems.append(
                Problem(file, line, f"relevant_ids[{i}]", f"case {case.id!r}: relevant id {r.id!r} {missing}")
            )
    for i, d in enumerate(case.doc_scope or []):
        if d not in doc_ids:
            problems.append(Problem(file, line, f"doc_scope[{i}]", f"case {case.id!r}: {d!r} {missing}"))
    for i, e in enumerate(case.evidence):
        if e.doc_id is not None and e.doc_id not in doc_ids:
            problems.append(Problem(file, line, f"evidence[{i}].doc_id", f"case {case.id!r}: {e.doc_id!r} {missing}"))
    return problems


def _scope_problems(case: Case, file: str) -> list[Problem]:
    """Relevant documents and evidence outside the case's doc_scope."""
    problems: list[Problem] = []
    line = case._line
    scope = set(case.doc_scope or [])
    for i, r in enumerate(case.relevant_ids):
        if r.grade >= 1 and r.id not in scope:
            problems.append(
                Problem(file, line, f"relevant_ids[{i}]", f"case {case.id!r}: {r.id!r} is outside doc_scope")
            )
    for i, e in enumerate(case.evidence):
        if e.doc_id is not None and e.doc_id not in scope:
            problems.append(
                Problem(file, line, f"evidence[{i}].doc_id", f"case {case.id!r}: {e.doc_id!r} is outside doc_scope")
            )
    return problems


def _shown(text: str) -> str:
    return repr(text if len(text) <= QUOTE_SHOWN else text[:QUOTE_SHOWN] + "...")


def offset_mismatch(evidence: Evidence, parsed_text: str) -> str | None:
    """Why ``evidence``'s offsets do not point at its quote in ``parsed_text`` (None: they do)."""
    start, end = evidence.start, evidence.end
    if start is None or end is None:
        return None
    if end > len(parsed_text):
        return (
            f"offsets [{start}, {end}) run past the end of the parsed text of {evidence.doc_id!r} "
            f"({len(parsed_text)} characters)"
        )
    found = parsed_text[start:end]
    if normalize(found) != normalize(evidence.text):
        return (
            f"the parsed text of {evidence.doc_id!r} at [{start}, {end}) is {_shown(found)}, not the quote "
            f"{_shown(evidence.text)} (compared after normalising quotes, dashes, Unicode forms, case and "
            "whitespace)"
        )
    return None


def validate_offsets(
    cases: Sequence[Case], file: str, texts: Mapping[str, str], unparsed: Mapping[str, str] | None = None
) -> list[Problem]:
    """Evidence offsets checked against the parsed texts (``{doc_id: text}``); ``unparsed``:
    ``{doc_id: reason}`` of documents the parse skipped. A document in neither is not checked
    here (an id missing from docs/ is its own problem)."""
    unparsed = unparsed or {}
    problems: list[Problem] = []
    for case in cases:
        for i, ev in enumerate(case.evidence):
            if not ev.has_offsets:
                continue
            doc_id = ev.doc_id
            why: str | None
            if doc_id is None:
                why = None
            elif doc_id in unparsed:
                why = (
                    f"offsets [{ev.start}, {ev.end}) cannot be checked: {doc_id!r} could not be parsed "
                    f"({unparsed[doc_id]})"
                )
            elif doc_id in texts:
                why = offset_mismatch(ev, texts[doc_id])
            else:
                why = None
            if why:
                problems.append(Problem(file, case._line, f"evidence[{i}]", f"case {case.id!r}: {why}"))
    return problems


def parsed_texts(
    docs_dir: Path, workers: int | None = None, follow_symlinks: bool = False, pipeline: str | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """``({doc_id: parsed text}, {doc_id: why it was skipped})``, parsed as the eval parses: by ``pipeline``'s
    parser (the app's, headings and all, as it serves them), else by ragsweep's own."""
    from ragsweep.pipeline.corpus import CorpusError, parse_corpus

    chosen: dict[str, Any] = {}
    if pipeline is not None:
        from ragsweep.pipeline.config import PipelineConfig
        from ragsweep.pipeline.retrieval import check_parser

        spec = check_parser(PipelineConfig.load(pipeline), docs_dir)
        chosen = {"parse_fn": spec.parse_fn(), "parser_id": spec.identity}
    try:
        corpus = parse_corpus(docs_dir, workers=workers, follow_symlinks=follow_symlinks, **chosen)
    except CorpusError:  # no folder / no file: reported as such by the folder checks
        return {}, {}
    return {d.doc_id: d.text for d in corpus.documents}, {s.doc_id: s.reason for s in corpus.skipped}


def _offset_problems(
    cases: Sequence[Case], file: str, docs_dir: Path | None, parsed: tuple[dict[str, str], dict[str, str]] | None
) -> list[Problem]:
    """Offsets against the parsed documents; nothing is parsed when no case carries offsets."""
    if docs_dir is None or not docs_dir.is_dir() or not any(e.has_offsets for c in cases for e in c.evidence):
        return []
    texts, unparsed = parsed if parsed is not None else parsed_texts(docs_dir)
    return validate_offsets(cases, file, texts, unparsed)


def closest_passage(text: str, span: str) -> tuple[float, str] | None:
    """The passage of ``text`` most like ``span`` (rapidfuzz ``partial_ratio_alignment`` on the
    normalised texts), cut from the original text and widened to whole words, and how alike the
    two are (``fuzz.ratio`` of span and passage, normalised, 0-100)."""
    from rapidfuzz import fuzz

    from .textnorm import normalize_map

    nspan = normalize(span)
    ntext, starts, ends = normalize_map(text)
    if not nspan or not ntext:
        return None
    found = fuzz.partial_ratio_alignment(nspan, ntext)
    if found is None or found.dest_end <= found.dest_start:
        return None
    s, e = starts[found.dest_start], ends[found.dest_end - 1]
    low, high = s - 20, e + 20
    while s > max(0, low) and not text[s - 1].isspace():
        s -= 1
    while e < min(len(text), high) and not text[e].isspace():
        e += 1
    passage = " ".join(text[s:e].split())
    return fuzz.ratio(nspan, normalize(passage)), passage


def _unlocated_message(
    case: Case, span: Any, relevance: RelevanceConfig, texts: Mapping[str, str], unparsed: Mapping[str, str]
) -> str:
    where = repr(span.doc_id) if span.doc_id else "any document of its scope"
    head = f"case {case.id!r}: evidence {_shown(span.text)} is found in no parsed text of {where}"
    if span.reason == "document not parsed":
        why = "; ".join(f"{d!r}: {unparsed[d]}" for d in _span_docs(case, span) if d in unparsed)
        return f"{head}: not parsed ({why or 'not among the documents'})"
    best = max(
        ((got, d) for d in span.searched or sorted(texts) if (got := closest_passage(texts[d], span.text)) is not None),
        key=lambda item: item[0][0],
        default=None,
    )
    if best is None:
        return head
    (score, passage), doc = best
    message = f"{head}; closest passage ({score:.0f}% alike, in {doc!r}): {_shown(passage)}"
    if relevance.rule == "word_overlap":
        from ragsweep.metrics.relevance import word_overlap_ratio

        share = word_overlap_ratio(span.text, texts[doc])
        message += (
            f"; the word_overlap rule (words split on single spaces, case-sensitive) finds {share:.0%} of its "
            f"words in the document, {relevance.word_overlap_threshold:.0%} needed"
        )
    return message


def _span_docs(case: Case, span: Any) -> list[str]:
    return [span.doc_id] if span.doc_id else list(case.doc_scope or [])


def unlocated_problems(
    cases: Sequence[Case], file: str, relevance: RelevanceConfig, texts: Mapping[str, str], unparsed: Mapping[str, str]
) -> list[Problem]:
    """One problem per evidence span found in no parsed document, with the closest passage."""
    from ragsweep.metrics.relevance import unlocated_evidence

    problems = []
    for case in cases:
        for span in unlocated_evidence(case, relevance, texts):
            message = _unlocated_message(case, span, relevance, texts, unparsed)
            problems.append(Problem(file, case._line, f"evidence[{span.index}]", message))
    return problems


def validate_cases_file(
    path: str | Path, doc_ids: set[str] | None = None, rule: str | None = None, docs_dir: str | Path | None = None
) -> list[Problem]:
    """Validate one cases file (JSONL or JSON) on its own or against a set of document ids
    (unique file stems among them are resolved first); with ``docs_dir``, evidence offsets
    are checked against its parsed documents."""
    path = Path(path)
    cases, problems = read_cases(path)
    ambiguous = resolve_doc_ids(cases, doc_ids, path.name) if doc_ids is not None else []
    return (
        problems
        + _merge(ambiguous, validate_cases(cases, path.name, doc_ids, rule))
        + _offset_problems(cases, path.name, Path(docs_dir) if docs_dir is not None else None, None)
    )


def _merge(ambiguous: list[Problem], problems: list[Problem]) -> list[Problem]:
    """``ambiguous`` (stems naming several documents) and ``problems`` without the "not among the
    dataset's documents" problem of the same references."""
    where = {(p.line, p.field) for p in ambiguous}
    return ambiguous + [
        p for p in problems if (p.line, p.field) not in where or "among the dataset's documents" not in p.message
    ]


def validate_dataset(
    path: str | Path,
    parse: bool = False,
    workers: int | None = None,
    follow_symlinks: bool = False,
    pipeline: str | None = None,
) -> list[Problem]:
    """Validate a dataset folder; returns every problem sorted by file and line (empty = valid).

    ``parse``: parse the documents and locate every evidence span in them (see the module
    docstring); ``workers`` and ``follow_symlinks`` are the parse's."""
    root = Path(path)
    if not root.is_dir():
        return [Problem(str(root), None, None, "dataset folder not found")]
    settings, problems = read_settings(root)
    cases_name = cases_file_name(root, settings)
    docs_name = settings.docs
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
    parsed = parsed_texts(docs_dir, workers, follow_symlinks, pipeline) if parse and docs_dir.is_dir() else None
    problems += _offset_problems(cases, cases_name, docs_dir, parsed)
    if parsed is not None:
        problems += unlocated_problems(cases, cases_name, relevance, *parsed)
    return sorted(problems, key=lambda p: (p.file, p.line or 0))


def main(argv: Sequence[str] | None = None, out=None) -> int:
    """``ragsweep validate --dataset D``: print every problem; exit code 0 when valid, 1 otherwise."""
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="ragsweep validate", description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", help="dataset folder (or a cases .jsonl file)")
    add_arguments(parser, short=True)
    args = parser.parse_args(argv)
    target = args.dataset or args.path
    if not target:
        parser.error("give a dataset folder")
    path = Path(target)
    if path.is_file():  # a cases file: checked against the docs/ folder next to it, if any
        settings, _ = read_settings(path.parent)
        docs_dir = path.parent / settings.docs
        doc_ids = set(list_doc_ids(docs_dir)) if docs_dir.is_dir() else None
        problems = validate_cases_file(path, doc_ids, docs_dir=docs_dir if docs_dir.is_dir() else None)
    else:
        problems = validate_dataset(path, **parse_options(args))
    for problem in problems:
        print(problem, file=out)
    if problems:
        print(f"{len(problems)} problem(s) in {path}", file=out)
        return 1
    n = len(read_cases(path if path.is_file() else path / _cases_name(path))[0])
    print(f"OK: {path} ({n} cases)", file=out)
    return 0


def add_arguments(parser: argparse.ArgumentParser, short: bool = False) -> None:
    """``ragsweep validate``'s options (``--dataset``, ``--parse`` and the documents' options)."""
    from ragsweep.argtypes import add_options
    from ragsweep.evaluation.inputs import DocumentOptions

    flags = ("--dataset", "-d") if short else ("--dataset",)
    parser.add_argument(*flags, dest="dataset", required=not short, help="dataset folder (or a cases .jsonl file)")
    parser.add_argument(
        "--parse",
        action="store_true",
        help="parse the documents and locate every evidence span in them; each span found in no parsed text is a "
        "problem, shown with the closest passage",
    )
    parser.add_argument(
        "--pipeline",
        help="with --parse: parse with this pipeline's parser (your app's, as it serves the text), not ragsweep's own",
    )
    add_options(parser, DocumentOptions)


def parse_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of :func:`validate_dataset` that ``args`` gives."""
    from ragsweep.argtypes import options_from
    from ragsweep.evaluation.inputs import DocumentOptions

    pipeline = getattr(args, "pipeline", None)
    return {"parse": bool(args.parse), "pipeline": pipeline, **options_from(DocumentOptions, args).model_dump()}


def _cases_name(root: Path) -> str:
    settings, _ = read_settings(root)
    return cases_file_name(root, settings)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
