"""Mark retrieved chunks relevant, by one of three rules chosen per dataset.

The rule that ran is recorded on every :class:`~ragsweep.metrics.retrieval.Judgement`
(``judgement.rule``), so a report can say it.

``doc_id``
    A chunk is relevant when ``hit.doc_id`` is in the case's ``relevant_ids`` (grade >= 1);
    its grade is that document's grade. Items = the relevant documents, so recall@k is the
    fraction of relevant *documents* retrieved (repeated chunks of one document count once).
    A case without ``relevant_ids`` uses the ``doc_id`` of its evidence (grade 1).

``evidence_offsets``
    Items = the evidence spans (grade 1 each). A span is first *located* in the parsed text
    of its document with :func:`locate_spans` (exact search after normalisation — case,
    whitespace, quotes, dashes, ligatures —, then the same on letters and digits only, then
    a rapidfuzz fuzzy alignment for spans of 20+ characters). A chunk covers the span when
    it comes from the span's document and ``[hit.start, hit.end)`` overlaps one located
    occurrence by at least ``min(min_chars, ceil(min_fraction * span length))`` characters
    (defaults: 100 chars or half the span, whichever is smaller; so a short span must be at
    least half inside the chunk and a long clause needs 100 characters of it). When the
    document's parsed text is not available (or the span cannot be located in it), the same
    criterion is applied to the chunk's own text: the normalised overlap between chunk text
    and span (span inside chunk, chunk inside span, or a suffix/prefix overlap of at least
    30 characters, see :func:`text_overlap`). Evidence
    without ``doc_id`` may come from any document of the case's ``doc_scope`` (any document
    when there is no scope).

``word_overlap``
    Pathway's rag_evals rule: a chunk covers a span when
    ``|set(span.split(" ")) & set(chunk.split(" "))| / |set(span.split(" "))| >= 0.65``
    (words split on single spaces, case-sensitive, exactly as Pathway's ``compare_intersect``).
    Like Pathway, the spans joined by one space are tried as one more candidate: a chunk
    matching only the joined text is relevant (hit rate, MRR, precision) but covers no
    single span (recall). Spans with a ``doc_id`` only match chunks of that document.

A case whose dataset rule is ``evidence_offsets``/``word_overlap`` but which has no evidence
is judged by ``doc_id`` (and the judgement says so).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Union

from ragsweep.datasets.schema import Case, RelevanceConfig
from ragsweep.hits import Hit

from .retrieval import JudgedHit, Judgement

__all__ = [
    "ParsedTexts",
    "normalize",
    "locate_span",
    "locate_spans",
    "word_overlap_ratio",
    "text_overlap",
    "mark_hits",
    "judge_cases",
]

ParsedTexts = Union[Mapping[str, str], Callable[[str], Union[str, None]], None]

_CHAR_MAP = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\u00ad": "", "\u200b": "", "\ufeff": "",
}


@lru_cache(maxsize=256)
def _normalize_map(text: str, alnum_only: bool = False) -> tuple[str, tuple[int, ...]]:
    """Normalised text and, for each of its characters, the index in ``text`` it came from."""
    out: list[str] = []
    idx: list[int] = []
    pending_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            pending_space = bool(out)
            continue
        rep = _CHAR_MAP.get(ch)
        if rep is None:
            rep = unicodedata.normalize("NFKC", ch) if ord(ch) > 127 else ch
        rep = rep.lower()
        if alnum_only:
            rep = "".join(c for c in rep if c.isalnum())
            pending_space = False
        if not rep:
            continue
        if pending_space:
            out.append(" ")
            idx.append(i)
            pending_space = False
        for c in rep:
            out.append(c)
            idx.append(i)
    return "".join(out), tuple(idx)


def normalize(text: str) -> str:
    """Lower-case, NFKC, straight quotes and dashes, whitespace runs collapsed to one space."""
    return _normalize_map(text)[0]


def _find_all(hay: str, needle: str, limit: int) -> list[int]:
    found: list[int] = []
    start = hay.find(needle)
    while start != -1 and len(found) < limit:
        found.append(start)
        start = hay.find(needle, start + 1)
    return found


@lru_cache(maxsize=4096)
def _locate(text: str, span: str, fuzzy_min_score: float, limit: int) -> tuple[str, tuple[tuple[int, int], ...]]:
    for alnum in (False, True):
        ntext, idx = _normalize_map(text, alnum)
        nspan = _normalize_map(span, alnum)[0]
        if not nspan:
            return "empty", ()
        hits = _find_all(ntext, nspan, limit)
        if hits:
            return ("exact" if not alnum else "alnum"), tuple(
                (idx[p], idx[p + len(nspan) - 1] + 1) for p in hits
            )
    ntext, idx = _normalize_map(text)
    nspan = normalize(span)
    if fuzzy_min_score > 0 and len(nspan) >= 20 and ntext:
        from rapidfuzz import fuzz

        al = fuzz.partial_ratio_alignment(nspan, ntext, score_cutoff=fuzzy_min_score)
        if al is not None and al.dest_end > al.dest_start:
            return "fuzzy", ((idx[al.dest_start], idx[al.dest_end - 1] + 1),)
    return "not_found", ()


def locate_spans(
    parsed_text: str, span: str, fuzzy_min_score: float = 90.0, limit: int = 10_000
) -> tuple[str, list[tuple[int, int]]]:
    """All occurrences ``[(start, end), ...]`` of ``span`` in ``parsed_text`` and how they were found.

    The method is ``"exact"`` (normalised text), ``"alnum"`` (letters and digits only),
    ``"fuzzy"`` (rapidfuzz ``partial_ratio_alignment`` >= ``fuzzy_min_score``, one occurrence,
    spans of 20+ characters) or ``"not_found"``. Offsets index ``parsed_text``.
    """
    how, spans = _locate(parsed_text, span, float(fuzzy_min_score), int(limit))
    return how, list(spans)


def locate_span(parsed_text: str, span: str, fuzzy_min_score: float = 90.0) -> tuple[int, int] | None:
    """``(start, end)`` of the first occurrence of ``span`` in ``parsed_text`` (see :func:`locate_spans`), or None."""
    _, spans = locate_spans(parsed_text, span, fuzzy_min_score)
    return spans[0] if spans else None


def word_overlap_ratio(span: str, chunk: str) -> float:
    """Pathway's ``compare_intersect``: |set(span words) & set(chunk words)| / |set(span words)|, split on " "."""
    words = set(span.split(" "))
    return len(words.intersection(chunk.split(" "))) / len(words)


def text_overlap(chunk: str, span: str, need: int = 1, min_partial: int = 30) -> int:
    """Length of the normalised overlap between a chunk's text and a span.

    Span inside chunk -> len(span); chunk inside span -> len(chunk); otherwise the longest
    suffix of one that is a prefix of the other, provided it is at least
    ``max(need, min_partial)`` characters long (shorter edge overlaps report 0: a chunk that
    merely ends with the span's first word says nothing about where the span is).
    """
    c, s = normalize(chunk), normalize(span)
    if not c or not s:
        return 0
    if s in c:
        return len(s)
    if c in s:
        return len(c)
    need = max(1, need, min_partial)
    probe = min(16, need)
    best = 0
    for a, b in ((c, s), (s, c)):  # suffix of a == prefix of b
        head = b[:probe]
        start = a.find(head, max(0, len(a) - len(b)))
        while start != -1:
            length = len(a) - start
            if length < need:
                break
            if a[start:] == b[:length]:
                best = max(best, length)
                break  # first match from the left is the longest
            start = a.find(head, start + 1)
    return best


def _needed(span_len: int, cfg: RelevanceConfig) -> int:
    return max(1, min(cfg.evidence_min_overlap_chars, math.ceil(cfg.evidence_min_overlap_fraction * span_len)))


def _get_text(parsed_texts: ParsedTexts, doc_id: str) -> str | None:
    if parsed_texts is None:
        return None
    if callable(parsed_texts):
        return parsed_texts(doc_id)
    return parsed_texts.get(doc_id)


def _norm_doc(doc_id: str) -> str:
    doc_id = doc_id.replace("\\", "/")
    while doc_id.startswith("./"):
        doc_id = doc_id[2:]
    return doc_id


def _config(rule: str | RelevanceConfig | None) -> RelevanceConfig:
    if isinstance(rule, RelevanceConfig):
        return rule
    return RelevanceConfig(rule=rule) if rule else RelevanceConfig()


def mark_hits(
    case: Case,
    hits: Sequence[Hit],
    rule: str | RelevanceConfig | None = None,
    parsed_texts: ParsedTexts = None,
    cited: Sequence[int] | None = None,
) -> Judgement:
    """Judge one case's ranked hits (sorted by ``hit.rank``) with the given rule/config.

    ``parsed_texts`` maps a doc id to its parsed text (a dict or a function; only used by
    ``evidence_offsets``). ``cited`` = 1-based chunk numbers the answer cites.
    """
    cfg = _config(rule)
    ranked = sorted(hits, key=lambda h: h.rank)
    applied = cfg.rule
    if applied != "doc_id" and not case.evidence and not case.unanswerable and case.relevant_grades():
        applied = "doc_id"
    detail: dict[str, Any] = {}
    items: dict[str, int]
    covers_list: list[tuple[frozenset[str], bool]] = []

    if applied == "doc_id":
        items = case.relevant_grades()
        if not items:
            items = {e.doc_id: 1 for e in case.evidence if e.doc_id}
        for h in ranked:
            d = _norm_doc(h.doc_id)
            cov = frozenset([d]) if d in items else frozenset()
            covers_list.append((cov, bool(cov)))
    else:
        items = {f"e{i}": 1 for i in range(len(case.evidence))}
        scope = set(case.doc_scope) if case.doc_scope else None

        def allowed(i: int, doc: str) -> bool:
            ev_doc = case.evidence[i].doc_id
            if ev_doc is not None:
                return _norm_doc(ev_doc) == doc
            return scope is None or doc in scope

        if applied == "word_overlap":
            thr = cfg.word_overlap_threshold
            spans = [e.text for e in case.evidence]
            joined = " ".join(spans)
            for h in ranked:
                d = _norm_doc(h.doc_id)
                if not h.text:
                    covers_list.append((frozenset(), False))
                    continue
                cov = frozenset(
                    f"e{i}" for i, s in enumerate(spans) if allowed(i, d) and word_overlap_ratio(s, h.text) >= thr
                )
                rel = bool(cov)
                if not rel and len(spans) > 1 and any(allowed(i, d) for i in range(len(spans))):
                    rel = word_overlap_ratio(joined, h.text) >= thr
                covers_list.append((frozenset(cov), rel))
        else:  # evidence_offsets
            located: dict[tuple[int, str], tuple[str, list[tuple[int, int]]]] = {}
            for h in ranked:
                d = _norm_doc(h.doc_id)
                text = None
                cov: set[str] = set()
                for i, ev in enumerate(case.evidence):
                    if not allowed(i, d):
                        continue
                    key = (i, d)
                    if key not in located:
                        if text is None:
                            text = _get_text(parsed_texts, d) or _get_text(parsed_texts, h.doc_id) or ""
                        located[key] = (
                            locate_spans(text, ev.text, cfg.evidence_fuzzy_min_score) if text else ("no_text", [])
                        )
                    how, occ = located[key]
                    if occ:
                        ok = any(
                            min(h.end, e) - max(h.start, s) >= _needed(e - s, cfg) for s, e in occ
                        )
                    else:
                        need = _needed(len(normalize(ev.text)), cfg)
                        ok = text_overlap(h.text, ev.text, need) >= need
                    if ok:
                        cov.add(f"e{i}")
                covers_list.append((frozenset(cov), bool(cov)))
            detail["located"] = {f"e{i}@{d}": how for (i, d), (how, _) in located.items()}

    judged = [
        JudgedHit(
            rank=pos,
            covers=cov,
            relevant=rel,
            grade=max((items[c] for c in cov), default=0),
            doc_id=h.doc_id,
        )
        for pos, (h, (cov, rel)) in enumerate(zip(ranked, covers_list), start=1)
    ]
    excluded = None
    if case.unanswerable:
        excluded = "unanswerable"
    elif not items:
        excluded = "no relevance information"
    return Judgement(
        case_id=case.id,
        rule=applied,
        items=items if excluded is None else {},
        hits=judged,
        cited=list(cited) if cited is not None else None,
        excluded=excluded,
        detail=detail,
    )


def judge_cases(
    cases: Iterable[Case],
    hits_by_case: Mapping[str, Sequence[Hit]],
    rule: str | RelevanceConfig | None = None,
    parsed_texts: ParsedTexts = None,
    cited_by_case: Mapping[str, Sequence[int]] | None = None,
) -> list[Judgement]:
    """:func:`mark_hits` for every case (a case missing from ``hits_by_case`` has an empty ranking)."""
    cited_by_case = cited_by_case or {}
    return [
        mark_hits(c, hits_by_case.get(c.id, ()), rule, parsed_texts, cited_by_case.get(c.id))
        for c in cases
    ]
