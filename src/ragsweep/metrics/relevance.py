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
    of its document with :func:`locate_spans` (see "How a span is matched" below: exact
    search after normalisation, then the same on letters and digits only, then a rapidfuzz
    fuzzy alignment for spans of 20+ characters). A chunk covers the span when
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
    The only normalisation added to Pathway's rule is Unicode NFC on both texts before
    splitting: canonically equivalent spellings ("café" precomposed or as "e" + combining
    accent) are the same word. NFC never creates or removes a U+0020 space and never
    changes case, so the split, the case sensitivity and the ratio stay Pathway's;
    casefolding, NFKC and substring matching are *not* applied (they would change
    Pathway's rule), and word boundaries are inherent to the rule (whole words only).

A case whose dataset rule is ``evidence_offsets``/``word_overlap`` but which has no evidence
is judged by ``doc_id`` (and the judgement says so).

Unlocated evidence (:func:`unlocated_evidence`)
-----------------------------------------------
Before its hits are judged, each evidence span is looked for in the parsed text of every
document it may come from (its ``doc_id``, else the case's ``doc_scope``, else every
document): ``evidence_offsets`` locates it as below (exact, letters and digits, fuzzy);
``word_overlap`` asks whether the whole document reaches the threshold (a chunk holds no word
its document lacks). A span found nowhere is *unlocated* and named (its text, its document,
why: not in the parsed text, or the document not parsed). A case none of whose spans is found
(nor, for ``word_overlap``, the spans joined) cannot have a relevant chunk: a 0 on its
retrieval metrics would say the retriever failed when the label could not be found. With
``RelevanceConfig.unlocated = "exclude"`` (the default) such a case is left out of every
retrieval metric (``Judgement.excluded == "unlocated evidence"``), and counted; ``"zero"``
scores it as before. A case with some spans found is scored; its unlocated spans are named.
Under ``doc_id`` the same holds for documents: a case whose relevant documents all have no parsed
text (their parse failed, or the corpus lacks them) is unlocated
(:func:`unparsed_relevant_documents`); each such document is named with an empty span text.

How a span is matched (``evidence_offsets``: :func:`locate_spans`, :func:`text_overlap`)
-----------------------------------------------------------------------------------------

1. *Normalisation*, the same on both sides (span and document/chunk): each character
   together with the combining marks that follow it is mapped through straight quotes
   (curly/prime quotes -> ``'``/``"``), ASCII hyphens (Unicode dashes and minus -> ``-``),
   soft hyphen and zero-width characters removed, then Unicode NFKC (canonical
   composition as in NFC, plus compatibility forms: ligatures, full-width forms), then
   ``str.casefold()`` (full case folding: "ß" -> "ss", so "Hauptstraße" equals
   "HAUPTSTRASSE"), then NFKC again; runs of whitespace become one space, leading and
   trailing whitespace is dropped. Decomposed (NFD) and precomposed (NFC) accents therefore
   match. Normalisation may change the length of the text (``ß`` -> ``ss``, ``ﬁ`` -> ``fi``,
   ``e`` + U+0301 -> ``é``); every normalised character remembers the original characters
   it came from, so located offsets are exact offsets into the original text (a match never
   ends in the middle of an original character sequence).
2. *Boundaries*: a match must not start or end inside a word or a number of the text it is
   found in. A position splits a *word* when the characters on both sides of it are
   letters/digits (``str.isalnum``) or combining marks; it splits a *number* when it
   separates a digit from a ``,``/``.`` that is itself followed (or preceded) by a digit.
   So ``$5,000`` is not found in ``$15,000`` nor in ``$5,000,000``, ``Sponsor`` is not found
   in ``Sponsorship``, ``Section 12`` is not found in ``Section 12.3``; ``Licensor`` is
   found in ``Licensor's`` and ``(Licensor)``.
3. *Exact*: every boundary-respecting occurrence of the normalised span in the normalised
   text (method ``"exact"``).
4. *Letters and digits only*: otherwise both sides keep only their letters and digits
   (so ``non-\\ntransferable`` matches ``non-transferable``); an occurrence must still
   respect the boundaries of step 2 in the normalised text, and the numbers in the matched
   text must equal the span's numbers (method ``"alnum"``).
5. *Fuzzy* (spans of 20+ normalised characters, ``fuzzy_min_score`` > 0): rapidfuzz
   ``partial_ratio_alignment`` >= ``fuzzy_min_score``; the aligned region is widened to the
   boundaries of step 2 (never cutting a word or number), and it is accepted only when it
   contains exactly the span's numbers (method ``"fuzzy"``). When the best alignment fails
   that check, alignments around the occurrences of the span's rarest number in the text
   (up to 200) are tried, and the best-scoring one that passes is used.
6. *Numbers* (steps 4 and 5): a number is a run of digits with single ``,``/``.`` between
   digits (``5,000``, ``12.3``, ``2011``); numbers are compared as strings with the ``,``
   thousands separators removed (``$5,000`` = ``$5000``; ``12.3`` != ``12.4`` != ``123``;
   ``5,000`` != ``5.000``), in order, and the count must agree.

A span that its annotator cut inside a word (CUAD has a few: "JOINT VENTURE AGREEMEN",
"SIMPLY HERBAL" for "SIMPLY HERBALS") is therefore not found by steps 3-4; with 20+
characters step 5 locates it widened to the whole words, a shorter one is ``"not_found"``.

:func:`text_overlap` (chunk text without the parsed document) uses the normalisation of
step 1 and the boundaries of step 2 where the *span's* edges fall inside the chunk: a span
inside a chunk must sit on boundaries of the chunk text; a chunk's own edges are cut by the
splitter (possibly inside a word) and are not checked.
"""

from __future__ import annotations

import math
import re
import unicodedata
from array import array
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Union

from ragsweep.core.hits import Hit
from ragsweep.datasets.schema import Case, RelevanceConfig
from ragsweep.datasets.textnorm import normalize, normalize_map

from .retrieval import Judgement, RankVerdict, RelevanceDetail, UnlocatedSpan

if TYPE_CHECKING:
    from rapidfuzz.distance import ScoreAlignment

__all__ = [
    "ParsedTexts",
    "normalize",
    "locate_span",
    "locate_spans",
    "word_overlap_ratio",
    "text_overlap",
    "mark_hits",
    "UnlocatedSpan",
    "unlocated_evidence",
    "unparsed_relevant_documents",
    "UNLOCATED",
]

UNLOCATED = "unlocated evidence"  # Judgement.excluded of a case none of whose evidence spans is found

ParsedTexts = Union[Mapping[str, str], Callable[[str], Union[str, None]], None]

_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")


def _is_word_char(c: str) -> bool:
    return c.isalnum() or (c >= "\x80" and unicodedata.category(c)[0] == "M")


def _splits(text: str, k: int) -> bool:
    """Whether position ``k`` (between ``text[k-1]`` and ``text[k]``) is inside a word or a number."""
    if k <= 0 or k >= len(text):
        return False
    a, b = text[k - 1], text[k]
    if _is_word_char(a) and _is_word_char(b):
        return True
    if a in ",." and b.isdigit() and k >= 2 and text[k - 2].isdigit():
        return True
    return b in ",." and a.isdigit() and k + 1 < len(text) and text[k + 1].isdigit()


def _numbers(text: str) -> tuple[str, ...]:
    """The numbers of a normalised text, thousands separators removed (rule 6)."""
    return tuple(m.group().replace(",", "") for m in _NUMBER_RE.finditer(text))


def _find_bounded(hay: str, needle: str, limit: int, start: int = 0) -> list[int]:
    """Start positions of ``needle`` in ``hay`` that begin and end on boundaries (rule 2)."""
    found: list[int] = []
    n = len(needle)
    pos = hay.find(needle, start)
    while pos != -1 and len(found) < limit:
        if not _splits(hay, pos) and not _splits(hay, pos + n):
            found.append(pos)
        pos = hay.find(needle, pos + 1)
    return found


@lru_cache(maxsize=256)
def _alnum_map(text: str) -> tuple[str, array[int]]:
    """Letters and digits of the normalised document, with their positions in it."""
    ntext = normalize_map(text)[0]
    pos = array("l", (k for k, c in enumerate(ntext) if c.isalnum()))
    return "".join(ntext[k] for k in pos), pos


@lru_cache(maxsize=256)
def _text_numbers(text: str) -> tuple[tuple[str, int, int], ...]:
    """``(number, start, end)`` of every number of the normalised document."""
    ntext = normalize_map(text)[0]
    return tuple((m.group().replace(",", ""), m.start(), m.end()) for m in _NUMBER_RE.finditer(ntext))


def _snap(ntext: str, s: int, e: int) -> tuple[int, int]:
    """Widen ``[s, e)`` so that it starts and ends on boundaries; drop edge spaces."""
    while s < e and ntext[s] == " ":
        s += 1
    while e > s and ntext[e - 1] == " ":
        e -= 1
    while s > 0 and _splits(ntext, s):
        s -= 1
    while e < len(ntext) and _splits(ntext, e):
        e += 1
    return s, e


def _fuzzy(text: str, nspan: str, min_score: float) -> tuple[int, int] | None:
    from rapidfuzz import fuzz

    ntext = normalize_map(text)[0]
    want = _numbers(nspan)

    def accept(al: ScoreAlignment | None, offset: int) -> tuple[float, int, int] | None:
        if al is None or al.dest_end <= al.dest_start:
            return None
        s, e = _snap(ntext, offset + al.dest_start, offset + al.dest_end)
        if e <= s or _numbers(ntext[s:e]) != want:
            return None
        return al.score, s, e

    best = accept(fuzz.partial_ratio_alignment(nspan, ntext, score_cutoff=min_score), 0)
    if best is None and want:
        # the best alignment has other numbers: try around each occurrence of the span's rarest number
        numbers = _text_numbers(text)
        anchor = min(set(want), key=lambda v: sum(1 for n, _, _ in numbers if n == v))
        width = len(nspan)
        tried = 0
        for value, ns, ne in numbers:
            if value != anchor:
                continue
            tried += 1
            if tried > 200:
                break
            w0, w1 = max(0, ns - width), min(len(ntext), ne + width)
            cand = accept(fuzz.partial_ratio_alignment(nspan, ntext[w0:w1], score_cutoff=min_score), w0)
            if cand is not None and (best is None or cand[0] > best[0]):
                best = cand
    return None if best is None else (best[1], best[2])


@lru_cache(maxsize=4096)
def _locate(text: str, span: str, fuzzy_min_score: float, limit: int) -> tuple[str, tuple[tuple[int, int], ...]]:
    nspan = normalize(span)
    if not nspan:
        return "empty", ()
    ntext, starts, ends = normalize_map(text)
    hits = _find_bounded(ntext, nspan, limit)
    if hits:
        return "exact", tuple((starts[p], ends[p + len(nspan) - 1]) for p in hits)
    aspan = "".join(c for c in nspan if c.isalnum())
    if aspan:
        atext, apos = _alnum_map(text)
        want = _numbers(nspan)
        found: list[tuple[int, int]] = []
        p = atext.find(aspan)
        while p != -1 and len(found) < limit:
            s, e = apos[p], apos[p + len(aspan) - 1] + 1
            if not _splits(ntext, s) and not _splits(ntext, e) and _numbers(ntext[s:e]) == want:
                found.append((starts[s], ends[e - 1]))
            p = atext.find(aspan, p + 1)
        if found:
            return "alnum", tuple(found)
    if fuzzy_min_score > 0 and len(nspan) >= 20 and ntext:
        got = _fuzzy(text, nspan, fuzzy_min_score)
        if got is not None:
            return "fuzzy", ((starts[got[0]], ends[got[1] - 1]),)
    return "not_found", ()


def locate_spans(
    parsed_text: str, span: str, fuzzy_min_score: float = 90.0, limit: int = 10_000
) -> tuple[str, list[tuple[int, int]]]:
    """All occurrences ``[(start, end), ...]`` of ``span`` in ``parsed_text`` and how they were found.

    The method is ``"exact"`` (normalised text), ``"alnum"`` (letters and digits only),
    ``"fuzzy"`` (rapidfuzz ``partial_ratio_alignment`` >= ``fuzzy_min_score``, one occurrence,
    spans of 20+ characters, same numbers as the span), ``"empty"`` (nothing left of the span
    after normalisation) or ``"not_found"``. Every occurrence starts and ends on word/number
    boundaries (see the module docstring). Offsets index ``parsed_text`` (the original, not
    the normalised text).
    """
    how, spans = _locate(parsed_text, span, float(fuzzy_min_score), int(limit))
    return how, list(spans)


def locate_span(parsed_text: str, span: str, fuzzy_min_score: float = 90.0) -> tuple[int, int] | None:
    """``(start, end)`` of the first occurrence of ``span`` in ``parsed_text`` (see :func:`locate_spans`), or None."""
    _, spans = locate_spans(parsed_text, span, fuzzy_min_score)
    return spans[0] if spans else None


def word_overlap_ratio(span: str, chunk: str) -> float:
    """Pathway's ``compare_intersect``: |set(span words) & set(chunk words)| / |set(span words)|, split on " ".

    Both texts are put in Unicode NFC first (the only addition to Pathway's rule, see the
    module docstring); the split on single spaces and the case sensitivity are Pathway's.
    """
    words = set(unicodedata.normalize("NFC", span).split(" "))
    return len(words.intersection(unicodedata.normalize("NFC", chunk).split(" "))) / len(words)


def text_overlap(chunk: str, span: str, need: int = 1, min_partial: int = 30) -> int:
    """Length of the normalised overlap between a chunk's text and a span.

    Span inside chunk (on word/number boundaries of the chunk text) -> len(span); chunk
    inside span -> len(chunk); otherwise the longest suffix of one that is a prefix of the
    other, provided it is at least ``max(need, min_partial)`` characters long (shorter edge
    overlaps report 0: a chunk that merely ends with the span's first word says nothing about
    where the span is) and the span's edge inside the chunk falls on a boundary. Lengths are
    in normalised characters.
    """
    c, s = normalize(chunk), normalize(span)
    if not c or not s:
        return 0
    if s in c and _find_bounded(c, s, 1):
        return len(s)
    if s not in c and c in s:
        return len(c)
    need = max(1, need, min_partial)
    probe = min(16, need)
    best = 0
    for a, b, chunk_first in ((c, s, True), (s, c, False)):  # suffix of a == prefix of b
        head = b[:probe]
        start = a.find(head, max(0, len(a) - len(b)))
        while start != -1:
            length = len(a) - start
            if length < need:
                break
            if a[start:] == b[:length]:
                # the span's edge inside the chunk: where the span starts (a = chunk) or ends (b = chunk)
                edge_ok = not _splits(c, start) if chunk_first else not _splits(c, length)
                if edge_ok:
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


def _applied_rule(case: Case, cfg: RelevanceConfig) -> str:
    """The rule that judges ``case``: ``doc_id`` when the dataset rule needs evidence the case lacks."""
    if cfg.rule != "doc_id" and not case.evidence and not case.unanswerable and case.relevant_grades():
        return "doc_id"
    return cfg.rule


def _doc_id_covers(case: Case, ranked: Sequence[Hit]) -> tuple[dict[str, int], list[tuple[frozenset[str], bool]]]:
    items = case.relevant_grades()
    if not items:
        items = {e.doc_id: 1 for e in case.evidence if e.doc_id}
    covers_list: list[tuple[frozenset[str], bool]] = []
    for h in ranked:
        d = _norm_doc(h.doc_id)
        cov = frozenset([d]) if d in items else frozenset()
        covers_list.append((cov, bool(cov)))
    return items, covers_list


def _allowed(case: Case) -> Callable[[int, str], bool]:
    """Whether evidence ``i`` may be matched by a chunk of document ``doc`` (its doc_id, else the scope)."""
    scope = set(case.doc_scope) if case.doc_scope else None

    def allowed(i: int, doc: str) -> bool:
        ev_doc = case.evidence[i].doc_id
        if ev_doc is not None:
            return _norm_doc(ev_doc) == doc
        return scope is None or doc in scope

    return allowed


def _word_overlap_covers(case: Case, ranked: Sequence[Hit], cfg: RelevanceConfig) -> list[tuple[frozenset[str], bool]]:
    allowed = _allowed(case)
    thr = cfg.word_overlap_threshold
    spans = [e.text for e in case.evidence]
    joined = " ".join(spans)
    covers_list: list[tuple[frozenset[str], bool]] = []
    for h in ranked:
        d = _norm_doc(h.doc_id)
        if not h.text:
            covers_list.append((frozenset(), False))
            continue
        cov = frozenset(f"e{i}" for i, s in enumerate(spans) if allowed(i, d) and word_overlap_ratio(s, h.text) >= thr)
        rel = bool(cov)
        if not rel and len(spans) > 1 and any(allowed(i, d) for i in range(len(spans))):
            rel = word_overlap_ratio(joined, h.text) >= thr
        covers_list.append((frozenset(cov), rel))
    return covers_list


def _offset_covers(
    case: Case, ranked: Sequence[Hit], cfg: RelevanceConfig, parsed_texts: ParsedTexts, detail: RelevanceDetail
) -> list[tuple[frozenset[str], bool]]:
    """``evidence_offsets``: the spans each hit covers; ``detail.located`` = how each span was found."""
    allowed = _allowed(case)
    located: dict[tuple[int, str], tuple[str, list[tuple[int, int]]]] = {}
    covers_list: list[tuple[frozenset[str], bool]] = []
    for h in ranked:
        d = _norm_doc(h.doc_id)
        text = None
        covered: set[str] = set()
        for i, ev in enumerate(case.evidence):
            if not allowed(i, d):
                continue
            key = (i, d)
            if key not in located:
                if text is None:
                    text = _get_text(parsed_texts, d) or _get_text(parsed_texts, h.doc_id) or ""
                located[key] = locate_spans(text, ev.text, cfg.evidence_fuzzy_min_score) if text else ("no_text", [])
            how, occ = located[key]
            if occ:
                ok = any(min(h.end, e) - max(h.start, s) >= _needed(e - s, cfg) for s, e in occ)
            else:
                need = _needed(len(normalize(ev.text)), cfg)
                ok = text_overlap(h.text, ev.text, need) >= need
            if ok:
                covered.add(f"e{i}")
        covers_list.append((frozenset(covered), bool(covered)))
    detail.located = {f"e{i}@{d}": how for (i, d), (how, _) in located.items()}
    return covers_list


def _doc_ids(parsed_texts: ParsedTexts) -> list[str] | None:
    return sorted(parsed_texts) if isinstance(parsed_texts, Mapping) else None


@lru_cache(maxsize=64)
def _words(text: str) -> frozenset[str]:
    return frozenset(unicodedata.normalize("NFC", text).split(" "))


def _found(text: str, span: str, cfg: RelevanceConfig, rule: str) -> bool:
    if rule == "word_overlap":
        words = set(unicodedata.normalize("NFC", span).split(" "))
        return len(words & _words(text)) / len(words) >= cfg.word_overlap_threshold
    return bool(locate_spans(text, span, cfg.evidence_fuzzy_min_score)[1])


def _candidates(case: Case, ev_doc: str | None, parsed_texts: ParsedTexts) -> list[str] | None:
    """The documents a span may come from (None: any, and they cannot be listed)."""
    if ev_doc is not None:
        return [_norm_doc(ev_doc)]
    if case.doc_scope:
        return [_norm_doc(d) for d in case.doc_scope]
    return _doc_ids(parsed_texts)


def _unlocated_span(
    case: Case, i: int, span: str, ev_doc: str | None, cfg: RelevanceConfig, rule: str, parsed_texts: ParsedTexts
) -> UnlocatedSpan | None:
    docs = _candidates(case, ev_doc, parsed_texts)
    if docs is None:  # any document of texts given as a function: nothing to search
        return None
    texts = {d: t for d in docs if (t := _get_text(parsed_texts, d))}
    if any(_found(t, span, cfg, rule) for t in texts.values()):
        return None
    reason = "not in the parsed text" if texts else "document not parsed"
    scoped = ev_doc is not None or bool(case.doc_scope)  # a corpus-wide search is not listed document by document
    return UnlocatedSpan(index=i, text=span, doc_id=ev_doc, reason=reason, searched=sorted(texts) if scoped else [])


def unlocated_evidence(
    case: Case, rule: str | RelevanceConfig | None, parsed_texts: ParsedTexts
) -> list[UnlocatedSpan]:
    """The case's evidence spans that occur in no parsed document they may come from (see the
    module docstring); empty for a rule that judges documents, an unanswerable case, or
    without parsed texts."""
    cfg = _config(rule)
    applied = _applied_rule(case, cfg)
    if applied == "doc_id" or case.unanswerable or not case.evidence or parsed_texts is None:
        return []
    out = []
    for i, ev in enumerate(case.evidence):
        missing = _unlocated_span(case, i, ev.text, ev.doc_id, cfg, applied, parsed_texts)
        if missing is not None:
            out.append(missing)
    return out


def _none_located(case: Case, cfg: RelevanceConfig, parsed_texts: ParsedTexts, unlocated: list[UnlocatedSpan]) -> bool:
    """Whether no chunk of the case can be relevant: no span found (nor Pathway's joined spans)."""
    if not unlocated or len(unlocated) < len(case.evidence):
        return False
    if _applied_rule(case, cfg) == "word_overlap" and len(case.evidence) > 1:
        joined = " ".join(e.text for e in case.evidence)
        docs = {d for i, e in enumerate(case.evidence) for d in (_candidates(case, e.doc_id, parsed_texts) or [])}
        return not any((t := _get_text(parsed_texts, d)) and _found(t, joined, cfg, "word_overlap") for d in docs)
    return True


def unparsed_relevant_documents(case: Case, items: Mapping[str, int], parsed_texts: ParsedTexts) -> list[UnlocatedSpan]:
    """``doc_id``: the case's relevant documents that have no parsed text (the parse failed, or the
    corpus lacks them): no chunk of theirs can be served. Each is named with an empty span text."""
    if case.unanswerable or parsed_texts is None:
        return []
    return [
        UnlocatedSpan(index=i, text="", doc_id=d, reason="document not parsed")
        for i, d in enumerate(items)
        if _get_text(parsed_texts, _norm_doc(d)) is None and _get_text(parsed_texts, d) is None
    ]


def _excluded(case: Case, items: dict[str, int]) -> str | None:
    if case.unanswerable:
        return "unanswerable"
    if not items:
        return "no relevance information"
    return None


def mark_hits(
    case: Case,
    hits: Sequence[Hit],
    rule: str | RelevanceConfig | None = None,
    parsed_texts: ParsedTexts = None,
    cited: Sequence[int] | None = None,
) -> Judgement:
    """Judge one case's ranked hits (sorted by ``hit.rank``) with the given rule/config.

    ``parsed_texts`` maps a doc id to its parsed text (a dict or a function): ``evidence_offsets``
    locates spans in it, and both evidence rules name the spans found in no document
    (``detail.unlocated``; ``detail.none_located``: none of them is found, and the case is
    excluded as :data:`UNLOCATED` unless ``unlocated="zero"``). ``cited`` = 1-based chunk
    numbers the answer cites.
    """
    cfg = _config(rule)
    ranked = sorted(hits, key=lambda h: h.rank)
    applied = _applied_rule(case, cfg)
    detail = RelevanceDetail()
    items: dict[str, int]
    if applied == "doc_id":
        items, covers_list = _doc_id_covers(case, ranked)
    else:
        items = {f"e{i}": 1 for i in range(len(case.evidence))}
        if applied == "word_overlap":
            covers_list = _word_overlap_covers(case, ranked, cfg)
        else:  # evidence_offsets
            covers_list = _offset_covers(case, ranked, cfg, parsed_texts, detail)
    judged = [
        RankVerdict(
            rank=pos,
            covers=cov,
            relevant=rel,
            grade=max((items[c] for c in cov), default=0),
            doc_id=h.doc_id,
        )
        for pos, (h, (cov, rel)) in enumerate(zip(ranked, covers_list), start=1)
    ]
    if applied == "doc_id":
        detail.unlocated = unparsed_relevant_documents(case, items, parsed_texts)
        detail.none_located = bool(items) and len(detail.unlocated) == len(items)
    else:
        detail.unlocated = unlocated_evidence(case, cfg, parsed_texts)
        detail.none_located = _none_located(case, cfg, parsed_texts, detail.unlocated)
    excluded = _excluded(case, items)
    if excluded is None and detail.none_located and cfg.unlocated == "exclude":
        excluded = UNLOCATED
    return Judgement(
        case_id=case.id,
        rule=applied,
        items=items if excluded is None else {},
        hits=judged,
        cited=list(cited) if cited is not None else None,
        excluded=excluded,
        detail=detail,
    )
