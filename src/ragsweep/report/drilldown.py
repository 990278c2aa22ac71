"""The case drilldown of report.html: every case of a run, at any size.

With each case as HTML (its chunks' texts once per case and rank) a page of 20,000 cases
would weigh about 80 MB. So the drilldown holds, as HTML, the failing cases (up to
:data:`MAX_EMBEDDED_FAILURES`, spread over the run) and a sample of the others
(:data:`EMBEDDED_SAMPLE`), and every case once more as data: one :class:`CaseView` per case,
each chunk's text once (as far as it is shown), numbers rounded as they are shown, gzip +
base64 in the page (:func:`pack`). The page's script opens that data with the browser's
DecompressionStream when it is needed (the "load all" button, any filter or search, a link
to a case that is not embedded) and renders each case from the same view the HTML here is
rendered from, its body when it is opened. A page whose cases are all embedded holds no data.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple, TypedDict

from ragsweep.core.hits import chunk_id
from ragsweep.evaluation.records import CaseResult
from ragsweep.funnel.stages import FOUND, stage_order
from ragsweep.report.runs import FAILURE_KINDS, case_failures, doc_label, natural_key, num, ordered
from ragsweep.report.svg import esc, fmt

HIT_TEXT_CHARS = 800  # text shown of a relevant retrieved chunk (chunks.jsonl has it whole)
OTHER_HIT_TEXT_CHARS = 300  # ... and of a chunk that is not relevant
MAX_EMBEDDED_FAILURES = 50  # failing cases embedded as HTML, spread over the run
EMBEDDED_SAMPLE = 10  # other cases embedded as HTML, spread over the run
PACKED_TYPE = "application/x-gzip-base64"  # the type of the page's data blocks (never run as a script)


class AnswerView(NamedTuple):
    text: str
    answerer: str
    abstained: bool
    error: str | None
    cited: list[int]


class HitView(NamedTuple):
    chunk: int  # its chunk's position in the chunk table
    rank: int
    score: float | int | None  # rounded as shown
    relevant: bool
    grade: int


class ChunkView(NamedTuple):
    doc_id: str
    start: int
    end: int
    text: str  # cut one character after the most the page shows of it


class CaseView(NamedTuple):
    """What the drilldown shows of one case (a JSON array in the page's data, in this order)."""

    id: str
    type: str
    question: str
    docs: str
    unanswerable: bool
    reference: str | None
    answer: AnswerView
    judge: tuple[bool | None, str] | None  # (is_correct, reason) when the case was judged
    kinds: list[str]  # why it fails (keys of runs.FAILURE_KINDS); empty: it passes
    values: list[float | int | None]  # one per metric of Drilldown.metrics, rounded as shown
    hits: list[HitView]
    lost_at: str | None  # the stage that lost it at its top_k (ragsweep.funnel); None: found or outside the funnel
    lost: str  # its stage at every reported depth, as the stage filter matches it: "1:retrieval 5:found"


class Drilldown(NamedTuple):
    metrics: list[str]
    chunks: list[ChunkView]
    cases: list[CaseView]


class PageData(TypedDict):
    """The drilldown as the page's script reads it (:func:`page_data`)."""

    metrics: list[str]
    chunks: dict[str, list[object]]  # a field of ChunkView -> its column
    cases: dict[str, list[object]]  # a field of CaseView -> its column
    kinds: dict[str, str]
    limits: list[int]


def drilldown_html(cases: Sequence[CaseResult], k: int | None) -> str:
    """Controls, the embedded cases and, when some cases are not embedded, every case as data;
    ``k``: the depth the run served (each case fails or passes at its own ``top_k``)."""
    if not cases:
        return '<p class="note">No cases.</p>'
    view = build_drilldown(cases)
    embedded = embedded_cases(view.cases)
    partial = len(embedded) < len(view.cases)
    items = "".join(case_html(view, i) for i in embedded)
    data = f'<script type="{PACKED_TYPE}" id="case-data">{pack(page_data(view))}</script>' if partial else ""
    return (
        _controls(view.cases, len(embedded), k)
        + (_embedded_note(view.cases, embedded) if partial else "")
        + f'<div id="cases" data-total="{len(view.cases)}" data-visible="{len(embedded)}" '
        f'data-filter="all">{items}</div>{data}'
    )


def build_drilldown(cases: Sequence[CaseResult]) -> Drilldown:
    """Every case's view; each chunk once, its text cut one character past the most a case shows."""
    metrics = ordered({m for c in cases for m in c.metrics})
    values = _Values(metrics)
    position: dict[str, int] = {}
    rows: list[ChunkView] = []  # each text whole
    relevant: list[bool] = []  # each row: shown as relevant somewhere
    views = []
    for case in cases:
        hits = []
        for h in case.hits:
            key = chunk_id(h.doc_id, h.start, h.end)
            if key not in position:
                position[key] = len(rows)
                rows.append(ChunkView(h.doc_id, h.start, h.end, h.text))
                relevant.append(False)
            relevant[position[key]] |= h.relevant
            hits.append(HitView(position[key], h.rank, shown(h.score), h.relevant, h.grade))
        views.append(_case_view(case, values(case), hits))
    chunks = [
        row._replace(text=row.text[: (HIT_TEXT_CHARS if shown_relevant else OTHER_HIT_TEXT_CHARS) + 1])
        for row, shown_relevant in zip(rows, relevant)
    ]
    return Drilldown(metrics, chunks, views)


def shown(value: float | None) -> float | int | None:
    """A number as the page shows it (:func:`svg.fmt`: 3 decimals, none from 100 on), so the
    page's script, given this, prints the same digits; integral values as integers."""
    v = num(value)
    if v is None:
        return None
    rounded = float(f"{v:.0f}") if abs(v) >= 100 else float(f"{v:.3f}")
    return int(rounded) if rounded.is_integer() else rounded


class _Values:
    """Each case's values of ``metrics`` as shown: every case shows one value per metric, and most
    values recur (0, 1), so each distinct value is rounded once."""

    def __init__(self, metrics: list[str]):
        self.metrics = metrics
        self.own_k = [m.endswith("@k") for m in metrics]  # at the case's own top_k (CaseResult.metric)
        self.shown: dict[float | None, float | int | None] = {}  # equal values (1, 1.0) are shown alike

    def __call__(self, case: CaseResult) -> list[float | int | None]:
        by_name, seen = case.metrics, self.shown
        out = []
        for m, own_k in zip(self.metrics, self.own_k, strict=True):
            value = case.metric(m) if own_k else by_name.get(m)
            if value not in seen:
                seen[value] = shown(value)
            out.append(seen[value])
        return out


def embedded_cases(views: list[CaseView]) -> list[int]:
    """The positions of the cases embedded as HTML: failures and a sample of the others, each spread over the run."""
    failing = [i for i, v in enumerate(views) if v.kinds]
    passing = [i for i, v in enumerate(views) if not v.kinds]
    return sorted(_spread(failing, MAX_EMBEDDED_FAILURES) + _spread(passing, EMBEDDED_SAMPLE))


def _spread(items: list[int], n: int) -> list[int]:
    if len(items) <= n:
        return items
    return [items[i * len(items) // n] for i in range(n)]


def page_data(view: Drilldown) -> PageData:
    """What the page's script reads: the drilldown and how it is shown. Cases and chunks go
    column by column (a list per field), which gzip packs a quarter smaller than row by row."""
    return {
        "metrics": view.metrics,
        "chunks": _columns(view.chunks, ChunkView._fields),
        "cases": _columns(view.cases, CaseView._fields),
        "kinds": FAILURE_KINDS,
        "limits": [HIT_TEXT_CHARS, OTHER_HIT_TEXT_CHARS],
    }


def _columns(rows: Sequence[tuple[object, ...]], fields: tuple[str, ...]) -> dict[str, list[object]]:
    return {field: [row[i] for row in rows] for i, field in enumerate(fields)}


def pack(data: str | PageData) -> str:
    """JSON, gzip, base64: what the page's script opens with DecompressionStream("gzip")."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def _case_view(case: CaseResult, values: list[float | int | None], hits: list[HitView]) -> CaseView:
    answer, judge = case.answer, case.judge
    return CaseView(
        id=case.id,
        type=case.type or "(no type)",
        question=case.question,
        docs=doc_label(case),
        unanswerable=case.unanswerable,
        reference=case.reference_answer,
        answer=AnswerView(answer.text, answer.answerer, answer.abstained, answer.error or None, list(answer.cited))
        if answer is not None
        else AnswerView("", "", False, None, []),
        judge=(judge.is_correct, judge.reason) if judge is not None else None,
        kinds=case_failures(case),
        values=values,
        hits=hits,
        lost_at=case.lost_at,
        lost=" ".join(lost_token(k, stage) for k, stage in sorted(case.lost_at_k.items())),
    )


def lost_token(k: int, stage: str) -> str:
    """What the stage filter matches: a case lost at ``stage`` (or ``found``) at depth ``k``."""
    return f"{k}:{stage}"


# ----------------------------------------------------------------------------- HTML (the page's script mirrors it)


def _controls(views: list[CaseView], n_embedded: int, k: int | None) -> str:
    types = sorted({v.type for v in views}, key=natural_key)
    kinds_present = {kind for v in views for kind in v.kinds}
    n_fail = sum(1 for v in views if v.kinds)
    opts = [("all", "all cases"), ("failures", f"failures ({n_fail})")] + [
        (kind, label) for kind, label in FAILURE_KINDS.items() if kind in kinds_present
    ]
    show = "".join(f'<option value="{esc(v)}">{esc(lab)}</option>' for v, lab in opts)
    type_opts = '<option value="">all types</option>' + "".join(
        f'<option value="{esc(t)}">{esc(t)}</option>' for t in types
    )
    return (
        '<div class="controls">'
        '<label><input type="checkbox" id="only-failures"> failures only</label>'
        f'<label>show <select id="case-show">{show}</select></label>'
        f'<label>type <select id="case-type">{type_opts}</select></label>'
        + _stage_select(views, k)
        + '<label>search <input type="search" id="case-search" placeholder="id, question, text…"></label>'
        f'<span id="case-count">{n_embedded} of {len(views)} cases shown</span></div>'
        f'<p class="note">A case fails on: no relevant chunk in the top {esc(k)} of an answerable question, an '
        "answer judged wrong (LLM judge), abstained on an answerable question, answered an unanswerable question, "
        "or its answerer failed. Open a link ending in <code>#failures</code> to start filtered, "
        f"<code>#case=ID</code> to open a case{_stage_link(views, k)}. Chunk texts are cut at {HIT_TEXT_CHARS} characters "
        f"({OTHER_HIT_TEXT_CHARS} for chunks that are not relevant); chunks.jsonl has them whole.</p>"
    )


def _stage_select(views: list[CaseView], k: int | None) -> str:
    """The stage filter (the funnel's bars link to it): each depth's stages present, the served depth's first."""
    counts = Counter(token for v in views for token in v.lost.split())
    if not counts:
        return ""
    depth = {token: int(token.split(":", 1)[0]) for token in counts}
    first = sorted(counts, key=lambda t: (depth[t] != k, depth[t], stage_order(t.split(":", 1)[1])))
    opts = "".join(f'<option value="{esc(t)}">{esc(_stage_label(t))} ({counts[t]})</option>' for t in first)
    return f'<label>stage <select id="case-lost"><option value="">any stage</option>{opts}</select></label>'


def _stage_link(views: list[CaseView], k: int | None) -> str:
    """How a link names a stage's cases, where the page has a funnel."""
    if not any(v.lost for v in views):
        return ""
    return f", <code>#lost={esc(k)}:retrieval</code> for the cases lost at retrieval at k = {esc(k)}"


def _stage_label(token: str) -> str:
    k, stage = token.split(":", 1)
    return f"found @{k}" if stage == FOUND else f"lost at {stage} @{k}"


def _embedded_note(views: list[CaseView], embedded: list[int]) -> str:
    n_fail = sum(1 for v in views if v.kinds)
    shown_fail = sum(1 for i in embedded if views[i].kinds)
    return (
        f'<p class="note" id="case-more">This page shows {len(embedded)} of the {len(views)} cases at first: '
        f"{shown_fail} of the {n_fail} failing ones and {len(embedded) - shown_fail} of the others, spread over "
        f'the run. <button type="button" id="load-cases">Load all {len(views)} cases</button> (they are in '
        "this page, compressed; a filter, a search or a link to a case loads them too).</p>"
    )


def case_html(view: Drilldown, i: int) -> str:
    """One case as a closed ``<details>``; the page's script renders a loaded case the same way."""
    c = view.cases[i]
    return (
        f'<details class="case" data-i="{i}" data-id="{esc(c.id)}" data-type="{esc(c.type)}" '
        f'data-fail="{1 if c.kinds else 0}" data-kinds="{esc(" ".join(c.kinds))}" data-lost="{esc(c.lost)}">'
        f"{_summary(c)}"
        f'<div class="case-body">{_body(view, c)}</div></details>'
    )


def _summary(c: CaseView) -> str:
    badges = (
        "".join(f'<span class="badge fail">{esc(FAILURE_KINDS[x])}</span>' for x in c.kinds)
        or '<span class="badge ok">pass</span>'
    )
    if c.unanswerable:
        badges += '<span class="badge info">unanswerable</span>'
    if c.lost_at:
        badges += f'<span class="badge warn">lost at {esc(c.lost_at)}</span>'
    return (
        f'<summary>{badges}<span class="qid">{esc(c.id)}</span><span class="qtype">{esc(c.type)}</span>'
        f"{esc(_short(c.question, 160))}</summary>"
    )


def _body(view: Drilldown, c: CaseView) -> str:
    meta = f"<dt>documents</dt><dd>{esc(c.docs)}</dd>"
    if c.reference:
        meta += f"<dt>reference</dt><dd>{esc(c.reference)}</dd>"
    parts = [f'<h4>Question</h4><div>{esc(c.question)}</div><dl class="meta">{meta}</dl>', _answer(c.answer)]
    if c.judge is not None:
        ok, reason = c.judge
        verdict = (
            '<span class="badge ok">judge: correct</span>'
            if ok
            else '<span class="badge fail">judge: incorrect</span>'
            if ok is not None
            else ""
        )
        parts.append(f"<h4>Verdict</h4>{verdict} {esc(reason)}")
    values = [(m, v) for m, v in zip(view.metrics, c.values) if v is not None]
    if values:
        parts.append(
            '<h4>Metrics</h4><div class="mgrid">'
            + "".join(f"<span>{esc(m)} {fmt(v)}</span>" for m, v in values)
            + "</div>"
        )
    if c.hits:
        items = "".join(_hit(view.chunks[h.chunk], h) for h in c.hits)
        parts.append(f'<h4>Retrieved chunks ({len(c.hits)})</h4><ol class="hits">{items}</ol>')
    else:
        parts.append('<h4>Retrieved chunks</h4><p class="note">none</p>')
    return "".join(parts)


def _answer(a: AnswerView) -> str:
    cites = " · cites " + esc(", ".join(str(x) for x in a.cited)) if a.cited else ""
    badges = '<span class="badge warn">abstained</span>' if a.abstained else ""
    if a.error:
        badges += f'<span class="badge fail">error</span> {esc(a.error)}'
    return (
        f'<h4>Answer <span class="ci-text">{esc(a.answerer)}{cites}</span></h4>{badges}'
        f'<div class="answer">{esc(a.text)}</div>'
    )


def _hit(chunk: ChunkView, h: HitView) -> str:
    limit = HIT_TEXT_CHARS if h.relevant else OTHER_HIT_TEXT_CHARS
    text = chunk.text if len(chunk.text) <= limit else chunk.text[:limit] + " …"
    span = f" [{esc(chunk.start)}–{esc(chunk.end)}]" if chunk.start is not None else ""
    grade = f" · grade {esc(h.grade)}" if h.grade not in (None, 0, 1) else ""
    mark = "✓ relevant" if h.relevant else "✗"
    return (
        f'<li class="{"rel" if h.relevant else "irr"}"><div class="hit-head"><span class="mark">{mark}</span>'
        f"#{esc(h.rank)} · score {fmt(h.score)} · {esc(chunk.doc_id)}{span}{grade}</div>"
        f'<div class="chunk">{esc(text)}</div></li>'
    )


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"
