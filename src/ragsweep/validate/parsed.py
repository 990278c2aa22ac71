"""A dataset checked against its documents as the eval parses them, on top of its own checks
(:mod:`ragsweep.validate.dataset`): every problem sorted by file and line.

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

``locate=True`` (``ragsweep validate`` without ``--parse``) locates the spans the same way in the
text it can read without parsing: plain text files, and the documents the parse cache holds (or
every document, when offsets had them parsed anyway). A span that may lie in a document only a
parse can read is left alone, and its case counted (:attr:`DatasetCheck.parse_only`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragsweep.datasets.loader import (
    Problem,
    cases_file_name,
    limits_from_settings,
    read_cases,
    read_settings,
    relevance_from_settings,
    resolve_doc_ids,
)
from ragsweep.datasets.schema import Case, RelevanceConfig, list_doc_ids
from ragsweep.metrics.relevance import unlocated_evidence, word_overlap_ratio
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import NEEDS_PARSING, CorpusError, parse_corpus, read_without_parsing
from ragsweep.validate.dataset import closest_passage, shown, unsafe_characters, validate_cases, validate_offsets


def parsed_texts(
    docs_dir: Path, workers: int | None = None, follow_symlinks: bool = False, pipeline: str | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """``({doc_id: parsed text}, {doc_id: why it was skipped})``, parsed as the eval parses: by ``pipeline``'s
    parser (the app's, headings and all, as it serves them), else by ragsweep's own."""
    chosen: dict[str, Any] = {}
    if pipeline is not None:
        # deferred: pipeline.parsing imports pathway (~1.5 s); validate without --parse must not
        from ragsweep.pipeline.parsing import check_parser

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


def _unlocated_message(
    case: Case, span: Any, relevance: RelevanceConfig, texts: Mapping[str, str], unparsed: Mapping[str, str]
) -> str:
    where = repr(span.doc_id) if span.doc_id else "any document of its scope"
    head = f"case {case.id!r}: evidence {shown(span.text)} is found in no parsed text of {where}"
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
    message = f"{head}; closest passage ({score:.0f}% alike, in {doc!r}): {shown(passage)}"
    if relevance.rule == "word_overlap":
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
    return located_problems(cases, file, relevance, texts, unparsed, frozenset())[0]


def located_problems(
    cases: Sequence[Case],
    file: str,
    relevance: RelevanceConfig,
    texts: Mapping[str, str],
    unparsed: Mapping[str, str],
    unread: Set[str],
) -> tuple[list[Problem], int]:
    """:func:`unlocated_problems` over the texts at hand, and how many cases have a span not found
    there that may lie in an ``unread`` document (those spans are no problem yet: a parse decides).
    A span whose documents are none of the folder's is left to the problem naming them."""
    problems, parse_only = [], 0
    every_doc = {*texts, *unparsed, *unread}
    for case in cases:
        deferred = False
        for span in unlocated_evidence(case, relevance, texts):
            docs = _span_docs(case, span) or every_doc
            if every_doc.isdisjoint(docs):
                continue
            if not unread.isdisjoint(docs):
                deferred = True
                continue
            message = _unlocated_message(case, span, relevance, texts, unparsed)
            problems.append(Problem(file, case._line, f"evidence[{span.index}]", message))
        parse_only += deferred
    return problems, parse_only


def readable_texts(docs_dir: Path, follow_symlinks: bool = False) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """``({doc_id: text}, {doc_id: why it was skipped}, {doc_ids only a parse reads})`` without parsing:
    plain text files as the eval reads them, other documents from the parse cache when parsed before."""
    try:
        corpus = parse_corpus(docs_dir, workers=1, follow_symlinks=follow_symlinks, parse_fn=read_without_parsing)
    except CorpusError:
        return {}, {}, set()
    unread = {s.doc_id for s in corpus.skipped if s.reason.endswith(NEEDS_PARSING)}
    skipped = {s.doc_id: s.reason for s in corpus.skipped if s.doc_id not in unread}
    return {d.doc_id: d.text for d in corpus.documents}, skipped, unread


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


def _document_name_problems(docs_name: str, doc_ids: Set[str] | None) -> list[Problem]:
    """Document names holding a control character or a bidirectional mark (a report would show them raw)."""
    found = ((d, unsafe_characters(d, line_breaks_allowed=False)) for d in sorted(doc_ids or ()))
    return [Problem(f"{docs_name}/", None, None, f"document {d!r}: {why}") for d, why in found if why is not None]


def _merge(ambiguous: list[Problem], problems: list[Problem]) -> list[Problem]:
    """``ambiguous`` (stems naming several documents) and ``problems`` without the "not among the
    dataset's documents" problem of the same references."""
    where = {(p.line, p.field) for p in ambiguous}
    return ambiguous + [
        p for p in problems if (p.line, p.field) not in where or "among the dataset's documents" not in p.message
    ]


@dataclass
class DatasetCheck:
    """What :func:`check_dataset` found: every problem (sorted by file and line), and how many cases
    have evidence only a parse can look for (``locate`` without ``parse``)."""

    problems: list[Problem] = field(default_factory=list)
    parse_only: int = 0


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
    return check_dataset(path, parse, workers, follow_symlinks, pipeline).problems


def check_dataset(
    path: str | Path,
    parse: bool = False,
    workers: int | None = None,
    follow_symlinks: bool = False,
    pipeline: str | None = None,
    locate: bool = False,
) -> DatasetCheck:
    """:func:`validate_dataset`; with ``locate`` (and no ``parse``), the evidence spans are located in
    the text readable without parsing (see the module docstring)."""
    root = Path(path)
    if not root.is_dir():
        return DatasetCheck([Problem(str(root), None, None, "dataset folder not found")])
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
    limits, limit_problems = limits_from_settings(settings)
    problems += rel_problems + limit_problems + _document_name_problems(docs_name, doc_ids)
    problems += _merge(ambiguous, validate_cases(cases, cases_name, doc_ids, relevance.rule, limits))
    parsed = parsed_texts(docs_dir, workers, follow_symlinks, pipeline) if parse and docs_dir.is_dir() else None
    if locate and parsed is None and docs_dir.is_dir() and any(e.has_offsets for c in cases for e in c.evidence):
        parsed = parsed_texts(docs_dir, workers, follow_symlinks)  # the offsets have every document parsed anyway
    problems += _offset_problems(cases, cases_name, docs_dir, parsed)
    parse_only = 0
    if parsed is not None:
        problems += unlocated_problems(cases, cases_name, relevance, *parsed)
    elif locate and docs_dir.is_dir():
        located, parse_only = located_problems(cases, cases_name, relevance, *readable_texts(docs_dir, follow_symlinks))
        problems += located
    return DatasetCheck(sorted(problems, key=lambda p: (p.file, p.line or 0)), parse_only)
