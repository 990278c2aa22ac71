"""``write_html_report(run_dir)``: one self-contained ``report.html`` per eval or sweep run folder.

No server, no network: inline CSS, inline JS, inline SVG charts drawn here in Python. All
text from the run (questions, contract chunks, answers) is HTML-escaped.
"""

from __future__ import annotations

import datetime as _dt
import gc
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from ragsweep.cost.html import cost_section
from ragsweep.evaluation.records import (
    Aggregate,
    Baseline,
    CaseResult,
    ConfigResult,
    RunResult,
    SweepResult,
    UnlocatedReport,
)
from ragsweep.judge.html import judge_html, judge_warnings_html
from ragsweep.metrics.intervals import bootstrap_interval
from ragsweep.metrics.registry import (
    CASE_BARS,
    DOC_TYPE_HEAT,
    FACT_COVERAGE,
    PAGE_ANSWERS,
    REPEATS,
    SWEEP_DEPTH_10,
    at_k_families,
    at_served,
    curve_families,
    headline,
    metric_sort_key,
)
from ragsweep.metrics.uninformative import answerer_way, uninformative
from ragsweep.report import svg
from ragsweep.report.assets import CSS, JS
from ragsweep.report.drilldown import PACKED_TYPE, drilldown_html, pack
from ragsweep.report.funnel_html import funnel_html, sweep_funnel_html
from ragsweep.report.history import history_html
from ragsweep.report.live import LIVE_CSP, live_script
from ragsweep.report.runs import (
    Manifest,
    correctness_metric,
    doc_label,
    failing_text,
    has_values,
    lower_is_better,
    natural_key,
    num,
    ordered,
    read_config_cases,
    read_run,
    read_sweep,
    run_kind,
    split_at_k,
)
from ragsweep.report.svg import esc, fmt
from ragsweep.report.values import mean_of

MAX_HEATMAP_DOCS = 40  # document rows of the document x type heatmap
GROUP_CI_RESAMPLES = 1000  # bootstrap resamples for per-type intervals
PACKED_PANEL_CHARS = 50_000  # a figure panel larger than this is stored compressed (a heatmap: ~0.5 MB, ~30 kB packed)


def write_html_report(run_dir: str | Path, out: str | Path | None = None, *, live: bool = False) -> Path:
    """Write ``<run_dir>/report.html`` (or ``out``) for an eval or a sweep run folder; return its path.
    ``live``: a watch's evaluation, whose page follows the watch when served (report/live.py)."""
    run_dir = Path(run_dir)
    kind = run_kind(run_dir)
    with _collection_paused():
        page = _sweep_page(run_dir) if kind == "sweep" else _eval_page(run_dir, live)
    path = Path(out) if out is not None else run_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


@contextmanager
def _collection_paused() -> Iterator[None]:
    """No cyclic garbage collection while a page is built: it allocates a case object per case, which
    live until the page is written, and each full collection meanwhile scans the whole process (after
    an eval: its corpus and lists) to find no garbage. Refcounting still frees what the page drops."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ----------------------------------------------------------------------------- page assembly


def _page(title: str, subtitle: str, sections: list[tuple[str, str, str]], live: str = "") -> str:
    """The page; ``live``: the script of a watch's page (report/live.py), which may fetch from its server."""
    nav = "".join(f'<a href="#{sid}">{esc(name)}</a>' for sid, name, _ in sections)
    body = "".join(f'<section id="{sid}"><h2>{esc(name)}</h2>{html}</section>' for sid, name, html in sections)
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        f"style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:{LIVE_CSP if live else ''}\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>{esc(title)}</h1><div class="sub">{subtitle} · generated {esc(generated)} by ragsweep</div></header>'
        f"<nav>{nav}</nav><main>{body}</main><script>{JS}</script>{live}</body></html>\n"
    )


def _switcher(fig_id: str, panels: dict[str, str], label: str = "metric", wide: bool = False) -> str:
    """Several pre-rendered figures, one shown at a time via a <select> (first shown without JS).
    ``wide``: a figure that may be wider than the page scrolls inside its own framed box, its scrollbar
    always drawn, and a line above it says so when it does not fit (the page's script decides)."""
    if not panels:
        return '<p class="note">No data.</p>'
    options = "".join(f'<option value="{esc(k)}">{esc(k)}</option>' for k in panels)
    sel = (
        f'<div class="switch-row">{esc(label)}: <select class="switch" data-target="{fig_id}">{options}</select></div>'
        if len(panels) > 1
        else ""
    )
    figs = "".join(
        f'<div data-panel="{esc(k)}"{"" if i == 0 else " hidden"}>{_packed_if_large(v)}</div>'
        for i, (k, v) in enumerate(panels.items())
    )
    if not wide:
        return f'{sel}<div id="{fig_id}" class="scroll">{figs}</div>'
    hint = (
        f'<p class="scroll-hint" data-for="{fig_id}" hidden>Wider than the page: scroll sideways inside the box '
        "for the other columns.</p>"
    )
    return f'{sel}{hint}<div id="{fig_id}" class="scroll wide">{figs}</div>'


def _packed_if_large(html: str) -> str:
    """A large figure as gzip + base64, which the page's script inflates in place on load."""
    if len(html) <= PACKED_PANEL_CHARS:
        return html
    return (
        f'<script type="{PACKED_TYPE}" data-fragment>{pack(html)}</script>'
        '<noscript><p class="note">This figure is stored compressed: it needs JavaScript.</p></noscript>'
    )


def _meta(items: list[tuple[str, str]]) -> str:
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in items if v not in (None, ""))
    return f'<dl class="meta">{rows}</dl>'


def _chips(d: dict | None) -> str:
    if not d:
        return ""
    return "".join(f'<span class="chip">{esc(k)}={esc(_short(v))}</span>' for k, v in d.items())


def _short(v: object, n: int = 120) -> str:
    s = v if isinstance(v, str) else str(v)
    return s if len(s) <= n else s[: n - 1] + "…"


def _n_missing(result: Aggregate, metric: str, unknown: str = "") -> tuple[int | str, int | str]:
    """(cases with a value, cases without) of ``metric``; each says how many of them are cases
    whose evidence occurs in no parsed document (left out, or scored 0 with --unlocated zero)."""
    count = result.count(metric)
    if count is None:
        return unknown, unknown
    n: int | str = count.n
    missing: int | str = count.missing
    if count.unlocated_in_n:
        n = f"{n} ({count.unlocated_in_n} unlocated, scored 0)"
    if count.unlocated:
        missing = f"{missing} ({count.unlocated} unlocated)"
    return n, missing


def _param(config: ConfigResult, name: str | None) -> Any:
    return config.param(name) if name is not None else None


def _manifest_items(manifest: Manifest, run: RunResult | None = None) -> list[tuple[str, str]]:
    pipe = manifest.pipeline
    ds, corpus, stages = manifest.dataset, manifest.corpus, manifest.stage_seconds
    items = [
        (
            "pipeline",
            esc(pipe.path) + (f' <span class="ci-text">{esc(pipe.hash)}</span>' if pipe.hash else ""),
        ),
        ("overrides", _chips(pipe.overrides)),
        ("variables", _chips(pipe.variables)),
        ("dataset", _chips(ds) if isinstance(ds, dict) else esc(ds)),
        ("corpus", _chips(corpus) if isinstance(corpus, dict) else esc(corpus)),
    ]
    if run is not None:
        items += [
            ("answerer", esc(run.answerer)),
            ("no LLM", esc(run.no_llm)),
            ("relevance rule", esc(run.relevance_rule)),
            ("top_k", esc(run.top_k)),
            ("ks", esc(", ".join(str(k) for k in run.ks))),
        ]
    items += [
        ("timestamps", _chips(manifest.timestamps)),
        ("stage seconds", _chips({k: fmt(num(v), 1) for k, v in stages.items()})),
        ("git commit", esc(manifest.git_commit)),
    ]
    return items


# ----------------------------------------------------------------------------- summary / curves


def _interval(agg: Aggregate, name: str) -> tuple[float | None, float | None]:
    lo, hi = agg.interval(name)
    return num(lo), num(hi)


def _at_k_cell(agg: Aggregate, name: str) -> str:
    """One cell of the family x k matrix: the mean, its interval, its n in the tooltip."""
    v = mean_of(agg, name)
    lo, hi = _interval(agg, name)
    n, missing = _n_missing(agg, name, "?")
    tip = f' title="{esc(name)}: n={esc(n)}, missing={esc(missing)}"'
    ci = f'<br><span class="ci-text">[{fmt(lo)}, {fmt(hi)}]</span>' if lo is not None and hi is not None else ""
    return f'<td class="num"{tip} data-v="{"" if v is None else v}">{fmt(v)}{ci}</td>'


def _at_k_matrix(agg: Aggregate, at_k: dict[str, tuple[str, int]], main_k: int | None) -> str:
    """The family x k matrix of the metric@k values (``at_k``: name -> (family, k)); the main k's
    column marked."""
    if not at_k:
        return ""
    ks = sorted({k for _, k in at_k.values()})
    fams = [f for f in at_k_families() if any(fam == f for fam, _ in at_k.values())]
    fams += sorted({fam for fam, _ in at_k.values()} - set(fams))
    head = (
        "<tr><th>metric</th>"
        + "".join(
            f'<th class="num main-k" title="the depth the pipeline serves">@{k}</th>'
            if k == main_k
            else f'<th class="num">@{k}</th>'
            for k in ks
        )
        + "</tr>"
    )
    rows = [f"<tr><td>{esc(fam)}</td>{''.join(_at_k_cell(agg, f'{fam}@{k}') for k in ks)}</tr>" for fam in fams]
    return (
        f'<div class="scroll"><table class="summary-k"><thead>{head}</thead><tbody>{"".join(rows)}'
        "</tbody></table></div>"
    )


def _metric_row(agg: Aggregate, name: str, why_not: str | None = None) -> str:
    """One row of the table of the other metrics: mean, interval (and its glyph), n, missing;
    ``why_not``: why the metric says nothing about this run's answerer (the row is marked)."""
    v = num(agg.metrics[name])
    lo, hi = _interval(agg, name)
    n, missing = _n_missing(agg, name)
    ci = f"[{fmt(lo)}, {fmt(hi)}]" if lo is not None and hi is not None else "–"
    glyph = "" if lower_is_better(name) else svg.ci_glyph(v, lo, hi)
    mark = f' <span class="badge warn" title="{esc(why_not)}">no information here</span>' if why_not else ""
    row = ' class="uninformative"' if why_not else ""
    return (
        f"<tr{row}><td>{esc(name)}{' ↓' if lower_is_better(name) else ''}{mark}</td>"
        f'<td class="num" data-v="{"" if v is None else v}">{fmt(v)}</td>'
        f'<td class="num ci-text">{ci}</td><td>{glyph}</td>'
        f'<td class="num">{esc(n)}</td><td class="num">{esc(missing)}</td></tr>'
    )


# the header of each group of metric_sort_key's first part (0, a metric at a depth, falls under "Other")
_TABLE_GROUPS = ("Other", "Retrieval", "Answer", "ragas", "LLM judge", "Other")


def _metrics_table(agg: Aggregate, names: Sequence[str], answerer: str | None = None) -> str:
    """A table of the metrics ``names`` (in order), under a header row per group of metrics; a metric
    that says nothing about ``answerer``'s answers is marked, with why under the table."""
    rows, group = [], None
    for name in names:
        g = _TABLE_GROUPS[metric_sort_key(name)[0]]
        if g != group:
            rows.append(f'<tr class="group"><td colspan="6">{esc(g)}</td></tr>')
            group = g
        rows.append(_metric_row(agg, name, uninformative(name, answerer)))
    if not rows:
        return ""
    why = [(name, reason) for name in names if (reason := uninformative(name, answerer))]
    note = (
        f'<p class="note uninformative-note">No information here about the {esc(answerer)} answerer\'s answers '
        f"({esc(answerer_way(answerer))}): "
        + "; ".join(f"<b>{esc(name)}</b>: {esc(reason)}" for name, reason in why)
        + ".</p>"
        if why
        else ""
    )
    return (
        '<div class="scroll"><table class="summary"><thead><tr><th>metric</th><th class="num">mean</th>'
        '<th class="num">95% CI</th><th>interval on [0, 1]</th><th class="num">n</th>'
        f'<th class="num">missing</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>{note}'
    )


def _summary_table(agg: Aggregate, main_k: int | None = None, answerer: str | None = None) -> str:
    """A family x k matrix for the metric@k values (the main k's column marked), then a table of
    every other metric (once: a name repeating another's mean is left out)."""
    at_k = {m: at for m in agg.metrics if (at := split_at_k(m))}
    matrix = _at_k_matrix(agg, at_k, main_k)
    repeated = {m for m, same in REPEATS.items() if same in agg.metrics}
    table = _metrics_table(agg, ordered(m for m in agg.metrics if m not in at_k and m not in repeated), answerer)
    return (
        f'<div class="figs">{matrix}{table}</div>'
        '<p class="note">Means over cases with 95% bootstrap confidence intervals, as the evaluator computed '
        "them (hover a retrieval cell for its n). ↓: lower is better. n: cases with a value; missing: cases "
        "where the metric does not apply (e.g. retrieval metrics of unanswerable questions, or of cases whose "
        "evidence occurs in no parsed document: unlocated).</p>"
    )


def _curve_series(agg: Aggregate) -> tuple[list[str], dict]:
    families = curve_families()
    ks = sorted({at[1] for m in agg.metrics if (at := split_at_k(m)) and at[0] in families})
    series = {}
    for fam in families:
        pts = []
        for k in ks:
            name = f"{fam}@{k}"
            lo, hi = agg.interval(name)
            pts.append((mean_of(agg, name), num(lo), num(hi)))
        if any(p[0] is not None for p in pts):
            series[fam] = pts
    return [str(k) for k in ks], series


def _curves(agg: Aggregate, title: str) -> str:
    x, series = _curve_series(agg)
    if not series:
        return '<p class="note">No metric@k values in this run.</p>'
    return svg.line_chart(x, series, title, x_title="k (retrieved chunks)", y_title="mean over cases")


# ----------------------------------------------------------------------------- case-level figures


def _ci(values: list[float]) -> tuple[float | None, float | None]:
    return bootstrap_interval(values, n_resamples=GROUP_CI_RESAMPLES) if len(values) >= 2 else (None, None)


def _type_bars(cases: Sequence[CaseResult], metrics: Sequence[str]) -> str:
    panels = {}
    for m in metrics:
        by_type: dict[str, list[float]] = defaultdict(list)
        for c in cases:
            v = num(c.metric(m))
            if v is not None:
                by_type[c.type or "(no type)"].append(v)
        items: list[tuple[str, float | None, float | None, float | None, int]] = []
        for t in sorted(by_type, key=natural_key):
            vals = by_type[t]
            lo, hi = _ci(vals)
            items.append((t, sum(vals) / len(vals), lo, hi, len(vals)))
        if items:
            unit = all(0.0 <= x <= 1.0 for vals in by_type.values() for x in vals)
            panels[m] = svg.bar_chart(items, f"{m} by question type (95% bootstrap CI)", unit=unit)
    return _switcher("type-bars", panels)


def _doc_type_heatmap(cases: Sequence[CaseResult], metrics: Sequence[str]) -> str:
    panels = {}
    note = ""
    for m in metrics:
        cell_vals: dict[tuple[str, str], list[float]] = defaultdict(list)
        row_vals: dict[str, list[float]] = defaultdict(list)
        col_vals: dict[str, list[float]] = defaultdict(list)
        for c in cases:
            v = num(c.metric(m))
            if v is None:
                continue
            d, t = doc_label(c), c.type or "(no type)"
            cell_vals[(d, t)].append(v)
            row_vals[d].append(v)
            col_vals[t].append(v)
        if not cell_vals:
            continue
        docs = sorted(row_vals, key=natural_key)
        if len(docs) > MAX_HEATMAP_DOCS:
            docs = sorted(
                sorted(docs, key=lambda d: sum(row_vals[d]) / len(row_vals[d]))[:MAX_HEATMAP_DOCS], key=natural_key
            )
            note = (
                f'<p class="note">Showing the {MAX_HEATMAP_DOCS} documents with the lowest mean of {len(row_vals)}.</p>'
            )
        types = sorted(col_vals, key=natural_key)
        cells: dict[tuple[str, str], tuple[float | None, str]] = {}
        for (d, t), vals in cell_vals.items():
            cells[(d, t)] = (sum(vals) / len(vals), f"{d} × {t}: {m} = {fmt(sum(vals) / len(vals))} (n={len(vals)})")
        for d in docs:
            vals = row_vals[d]
            cells[(d, "all types")] = (
                sum(vals) / len(vals),
                f"{d}, all types: {fmt(sum(vals) / len(vals))} (n={len(vals)})",
            )
        for t in types:
            vals = col_vals[t]
            cells[("all documents", t)] = (
                sum(vals) / len(vals),
                f"{t}, all documents: {fmt(sum(vals) / len(vals))} (n={len(vals)})",
            )
        allv = [v for vals in row_vals.values() for v in vals]
        cells[("all documents", "all types")] = (
            sum(allv) / len(allv),
            f"overall: {fmt(sum(allv) / len(allv))} (n={len(allv)})",
        )
        values = [v for v, _ in cells.values() if v is not None]
        unit = all(0.0 <= v <= 1.0 for v in values)
        vmin, vmax = (0.0, 1.0) if unit else (min(values), max(values))
        panels[m] = svg.heatmap(
            docs + ["all documents"],
            types + ["all types"],
            cells,
            f"{m}: document × question type (cell = mean over its cases)",
            vmin=vmin,
            vmax=vmax,
            row_title="document",
            col_title="question type",
        )
    return note + _switcher("doc-type", panels, wide=True)


_NO_CASES = '<p class="note">This run folder has no cases.jsonl.</p>'


def _present(cases: Sequence[CaseResult], answerer: str | None, ms: Sequence[str | None]) -> list[str]:
    """The metrics of ``ms`` with values in ``cases`` that say something about ``answerer``'s answers."""
    return [m for m in dict.fromkeys(ms) if m and has_values(cases, m) and not uninformative(m, answerer)]


def _types_html(cases: Sequence[CaseResult], k: int | None, answerer: str | None) -> str:
    kk = f"@{k}" if k is not None else ""
    correct = correctness_metric(cases, k)
    bars = [correct, *at_served(CASE_BARS, kk), *PAGE_ANSWERS]
    return _type_bars(cases, _present(cases, answerer, [*bars, FACT_COVERAGE])[:7])


def _doc_type_html(cases: Sequence[CaseResult], k: int | None, answerer: str | None) -> str:
    kk = f"@{k}" if k is not None else ""
    correct = correctness_metric(cases, k)
    heat = _present(cases, answerer, [correct, *at_served(DOC_TYPE_HEAT, kk)])[:5]
    return (
        f'<p class="note">Correctness measure: <b>{esc(correct)}</b> '
        "(judge_correct when an LLM judge ran, else hit rate at the pipeline's k, else Pathway's string "
        "similarity). Grey: no case of that type for that document.</p>" + _doc_type_heatmap(cases, heat)
    )


# ----------------------------------------------------------------------------- eval page


_Of = TypeVar("_Of")


@dataclass(frozen=True)
class Section(Generic[_Of]):
    """One section of a report.html: its anchor, its heading, and its body from what the page shows (an
    eval page's :class:`RunResult`, a sweep page's :class:`SweepView`; None: the section is left out of
    that page)."""

    id: str
    title: str
    render: Callable[[_Of], str | None]


def _summary_html(run: RunResult) -> str:
    k, answerer = run.top_k, run.answerer
    summary = _headline(run, k, answerer) + _summary_table(run, k, answerer)
    return _served_app_html(run) + judge_warnings_html(run.judge) + summary


def _run_html(run: RunResult) -> str:
    return _meta(_manifest_items(Manifest.of(run.manifest), run))


EVAL_SECTIONS: list[Section[RunResult]] = [
    Section("summary", "Summary", _summary_html),
    Section("history", "Over time (ragsweep watch)", history_html),
    Section("baselines", "Against chance and oracle", lambda run: _baselines_table(run.baselines) or None),
    Section("funnel", "Where cases are lost", lambda run: funnel_html(run.diagnosis)),
    Section("judge", "LLM judge", lambda run: judge_html(run.judge) if run.judge else None),
    Section("curves", "Metrics vs k", lambda run: _curves(run, "retrieval metrics at each k (95% CI)")),
    Section(
        "unlocated", "Unlocated evidence", lambda run: _unlocated_html(run.unlocated) if run.unlocated.cases else None
    ),
    Section(
        "types", "By question type", lambda run: _types_html(run.cases, run.top_k, run.answerer) if run.cases else None
    ),
    Section(
        "doc-type-map",
        "Document × question type",
        lambda run: _doc_type_html(run.cases, run.top_k, run.answerer) if run.cases else None,
    ),
    Section("drilldown", "Cases", lambda run: drilldown_html(run.cases, run.top_k) if run.cases else _NO_CASES),
    Section("run", "Run", _run_html),
]


def _sections(page: Literal["eval", "sweep"]) -> list[Section[Any]]:
    return EVAL_SECTIONS if page == "eval" else SWEEP_SECTIONS


def register_section(
    section: Section[Any], *, before: str | None = None, page: Literal["eval", "sweep"] = "eval"
) -> Section[Any]:
    """Add ``section`` to every report.html of ``page`` (an eval run's or a sweep's) written from now
    on: before the section ``before`` (an id), else last."""
    sections = _sections(page)
    if any(s.id == section.id for s in sections):
        raise ValueError(f"a report section {section.id!r} is already registered")
    ids = [s.id for s in sections]
    sections.insert(ids.index(before) if before is not None else len(ids), section)
    return section


def unregister_section(section_id: str, page: Literal["eval", "sweep"] = "eval") -> None:
    sections = _sections(page)
    sections[:] = [s for s in sections if s.id != section_id]


def _eval_page(run_dir: Path, live: bool = False) -> str:
    run = read_run(run_dir)
    cases = run.cases
    k = run.top_k  # the depth the pipeline served: the headline k
    subtitle = (
        f"eval run · {len(cases)} cases · {esc(failing_text(cases, k))} · top_k {esc(k)} · "
        f"{esc(run.answerer or '')} · relevance: {esc(run.relevance_rule or '?')}"
    )
    sections = [(s.id, s.title, html) for s in EVAL_SECTIONS if (html := s.render(run)) is not None]
    return _page(f"ragsweep report: {run_dir.name}", subtitle, sections, live_script(run_dir) if live else "")


def _served_app_html(run: RunResult) -> str:
    """Where the scored run departs from the app it stands for: documents parsed by ragsweep in place of the
    app's parser (``--set parser=native``), and questions the app's own server cannot take."""
    pipeline = Manifest.of(run.manifest).pipeline
    parse = pipeline.parser
    parts = []
    if pipeline.served_metadata:
        parts.append(f'<p class="warning"><b>{esc(pipeline.served_metadata)}</b></p>')
    origin = str(pipeline.top_k.origin or "") if pipeline.top_k is not None else ""
    if "widens" in origin:  # an adaptive answerer: the headline is its first ask, the other depths its later ones
        parts.append(f'<p class="note">top_k from {esc(origin)}</p>')
    if parse.replaced:
        parts.append(f'<p class="warning"><b>{esc(parse.note)}</b></p>')
    elif parse.by == "app":
        parts.append(f'<p class="note">documents parsed by the app\'s parser: {esc(parse.parser)}</p>')
    failed = [c for c in run.cases if "served_app" in c.notes]
    if failed:
        first = ", ".join(esc(c.id) for c in failed[:5])
        parts.append(
            f'<p class="warning"><b>the served app fails on {len(failed)} of {len(run.cases)} question(s)</b>: '
            f"{esc(failed[0].notes['served_app'])} (first: {first}); their numbers are for ragsweep's cleaned "
            "question</p>"
        )
    return "".join(parts)


def _unlocated_html(report: UnlocatedReport, counted: str = "beside n and missing in the summary") -> str:
    """The cases whose evidence occurs in no parsed document: each span, its document and why;
    ``counted``: where the page counts them."""
    none = len(report.none_located)
    what = (
        f"left out of every retrieval metric (their count is {counted})"
        if report.mode == "exclude"
        else "scored 0 on every retrieval metric (--unlocated zero)"
    )
    rows = "".join(
        f"<tr><td>{esc(case.id)}</td><td>{'all' if case.none_located else 'some'}</td>"
        f"<td>{esc(_short(span.text, 200) or '(the relevant document itself)')}</td>"
        f"<td>{esc(span.doc_id or '(its scope)')}</td>"
        f"<td>{esc(span.reason)}</td></tr>"
        for case in report.cases
        for span in case.spans
    )
    return (
        f'<p class="note">{none} case(s) have no evidence span found in the parsed documents: their label cannot '
        f"be located in the text the index holds, so no chunk can be judged relevant. They are {esc(what)}. "
        f"{len(report.partly)} more case(s) are scored with some spans unlocated. "
        "<code>ragsweep validate --parse</code> shows the closest passage of each span.</p>"
        '<div class="scroll"><table class="summary"><thead><tr><th>case</th><th>spans unlocated</th><th>span</th>'
        f"<th>document</th><th>why</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _headline(run: RunResult, k: int | None, answerer: str | None = None) -> str:
    """The run's key numbers at the depth the pipeline serves (none that says nothing about ``answerer``)."""
    picks = [m.format(k=k) for m in headline() if (k is not None or "{k}" not in m) and not uninformative(m, answerer)]
    chips = [_chip(run, m, v) for m in picks if (v := mean_of(run, m)) is not None]
    if not chips:
        return ""
    served = f'<span class="ci-text">at k = {esc(k)}, the depth the pipeline serves</span>' if k is not None else ""
    return f'<p class="headline" data-k="{esc(k)}">{"".join(chips)} {served}</p>'


def _chip(run: RunResult, metric: str, value: float) -> str:
    """A headline number, with its chance level (a random order of each case's candidates) when it has one."""
    chance = run.chance(metric)
    beside = "" if chance is None else f' <span class="chance">chance {fmt(chance)}</span>'
    return f'<span class="chip"><b>{esc(metric)}</b> {fmt(value)}{beside}</span>'


def _baselines_table(baselines: dict[str, Baseline]) -> str:
    """Pipeline, chance and oracle side by side for each retrieval metric, with the lift over chance."""
    if not baselines:
        return ""
    rows = []
    for name in ordered(baselines):
        b = baselines[name]
        cells = "".join(
            f'<td class="num">{fmt(num(b[key] if key in b else None))}</td>'
            for key in ("pipeline", "chance", "oracle", "lift")
        )
        rows.append(f'<tr><td>{esc(name)}</td>{cells}<td class="num">{esc(b["n"] if "n" in b else "")}</td></tr>')
    return (
        '<div class="scroll"><table class="baselines"><thead><tr><th>metric</th><th class="num">pipeline</th>'
        '<th class="num">chance</th><th class="num">oracle</th><th class="num">lift over chance</th>'
        f'<th class="num">n</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
        '<p class="note">chance: the expected value if the candidate chunks of each case (those of its scoped '
        "documents, or of the whole corpus) were served in a uniformly random order; oracle: the best value "
        "any order of those chunks reaches at that k. Means over the same cases as the pipeline value.</p>"
    )


# ----------------------------------------------------------------------------- sweep page


def _axis_values(configs: Sequence[ConfigResult], var: str, grid: dict[str, list[Any]]) -> list:
    vals = list(grid.get(var) or [])
    for c in configs:
        v = _param(c, var)
        if v not in vals:
            vals.append(v)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        vals = sorted(vals)
    return vals


def _sweep_axes(
    configs: Sequence[ConfigResult], grid: dict[str, list[Any]]
) -> tuple[str | None, str | None, str | None]:
    """(rows, columns, panels): max_tokens x top_k per retriever_mode when those vary; other
    varying variables fill the free slots in grid order."""
    varying = [
        v
        for v in dict.fromkeys([*grid, *(p for c in configs for p in c.params)])
        if len({repr(_param(c, v)) for c in configs}) > 1
    ]
    slots: list[str | None] = [v if v in varying else None for v in ("max_tokens", "top_k", "retriever_mode")]
    rest = iter(v for v in varying if v not in slots)
    slots = [v if v is not None else next(rest, None) for v in slots]
    y, x, panel = slots
    if y is None and x is not None:
        y, x = x, None
    return y, x, panel


def _sig_mark(cfg: ConfigResult, base: ConfigResult | None, metric: str) -> tuple[str, str]:
    """(html mark, plain mark) for a configuration's metric vs the baseline."""
    if not cfg.is_significant(metric) or base is None:
        return "", ""
    a, b = mean_of(cfg, metric), mean_of(base, metric)
    if a is None or b is None or a == b:
        return "", ""
    better = (a > b) != lower_is_better(metric)
    p = _p_adjusted(cfg, metric)
    title = f"significantly {'better' if better else 'worse'} than the baseline (Holm-adjusted p = {fmt(p, 4)})"
    if better:
        return f' <span class="sig-up" title="{esc(title)}">▲*</span>', "▲"
    return f' <span class="sig-down" title="{esc(title)}">▼*</span>', "▼"


def _reference(sweep: SweepResult, cfg: ConfigResult, metric: str, base: ConfigResult | None) -> ConfigResult | None:
    """What ``cfg``'s test on ``metric`` was against: the baseline's pipeline at its depth for an @k objective."""
    against = cfg.compared_with.get(metric)
    return _find(sweep, against) if against else base


def _p_adjusted(cfg: ConfigResult, metric: str) -> float | None:
    """The Holm-adjusted p-value of a configuration's ``metric`` against the baseline (None: not tested)."""
    return num(cfg.p_adjusted.get(metric))


def _label(v: object) -> str:
    return "" if v is None else str(v)


def _find(sweep: SweepResult, config_id: str | None) -> ConfigResult | None:
    return next((c for c in sweep.configs if c.id == config_id), None)


def _heat_range(configs: Sequence[ConfigResult], metric: str) -> tuple[float, float] | None:
    """The colour scale's (vmin, vmax) over every configuration's value; None when none has one."""
    values = [v for c in configs if (v := mean_of(c, metric)) is not None]
    if not values:
        return None
    vmin, vmax = min(values), max(values)
    if vmax - vmin < 1e-9:
        vmin, vmax = vmin - 0.5, vmax + 0.5
    return vmin, vmax


_Axes = tuple[str, str | None, str | None]  # the heatmaps' (rows, columns, panels) variables
_Cell = tuple[str, str]


def _cell_configs(
    configs: Sequence[ConfigResult], metric: str, axes: _Axes, where: tuple[object, object, object]
) -> list[tuple[float, ConfigResult]]:
    """(value, configuration) of each configuration with a value of ``metric`` at one cell
    (``where``: its row, column and panel values)."""
    y, x, panel = axes
    yv, xv, pv = where
    return [
        (v, c)
        for c in configs
        if _param(c, y) == yv
        and (x is None or _param(c, x) == xv)
        and (panel is None or _param(c, panel) == pv)
        and (v := mean_of(c, metric)) is not None
    ]


def _heat_panel(
    sweep: SweepResult, metric: str, axes: _Axes, pv: object, ys: list, xs: list, base: ConfigResult | None
) -> tuple[dict[_Cell, tuple[float | None, str]], dict[_Cell, str], dict[_Cell, str]]:
    """(cells, marks, outline) of the panel ``pv``: each cell shows its best configuration,
    marked when it differs significantly from the baseline, outlined when it is a best one or
    the baseline."""
    best_ids = set(sweep.best.values())
    cells: dict[_Cell, tuple[float | None, str]] = {}
    marks: dict[_Cell, str] = {}
    outline: dict[_Cell, str] = {}
    for yv in ys:
        for xv in xs:
            scored = _cell_configs(sweep.configs, metric, axes, (yv, xv, pv))
            if not scored:
                continue
            pick = min if lower_is_better(metric) else max
            v, cfg = pick(scored, key=lambda vc: vc[0])
            key = (str(yv), _label(xv))
            lo, hi = cfg.interval(metric)
            others = f" (best of {len(scored)} configurations over the other variables)" if len(scored) > 1 else ""
            cells[key] = (v, f"{cfg.id}: {metric} = {fmt(v)} [{fmt(num(lo))}, {fmt(num(hi))}]{others}")
            marks[key] = "*" if _sig_mark(cfg, _reference(sweep, cfg, metric, base), metric)[1] else ""
            if cfg.id in best_ids:
                outline[key] = "#e15759"
            elif base is not None and cfg.id == base.id:
                outline[key] = "#111111"
    return cells, marks, outline


def _sweep_heatmaps(sweep: SweepResult, metric: str) -> str:
    configs, grid = sweep.configs, sweep.grid
    y, x, panel = _sweep_axes(configs, grid)
    if y is None:
        return '<p class="note">The sweep varies fewer than one variable.</p>'
    base = _find(sweep, sweep.baseline)
    scale = _heat_range(configs, metric)
    if scale is None:
        return f'<p class="note">No configuration has {esc(metric)}.</p>'
    vmin, vmax = scale
    panel_values = _axis_values(configs, panel, grid) if panel else [None]
    ys, xs = _axis_values(configs, y, grid), _axis_values(configs, x, grid) if x else [None]
    figs = []
    for pv in panel_values:
        cells, marks, outline = _heat_panel(sweep, metric, (y, x, panel), pv, ys, xs, base)
        title = f"{metric}" + (f" · {panel} = {pv}" if panel else "")
        figs.append(
            svg.heatmap(
                [str(v) for v in ys],
                [_label(v) for v in xs],
                cells,
                title,
                vmin=vmin,
                vmax=vmax,
                row_title=y,
                col_title=x or "",
                cell_w=58,
                cell_h=30,
                marks=marks,
                outline=outline,
            )
        )
    return f'<div class="figs">{"".join(figs)}</div>'


def _short_plain(cid: str, n: int = 22) -> str:
    """A config id as shown: whole when short; else its last '-' part when that looks like a hash
    (ids may spell out every parameter, which the table shows anyway); else its tail."""
    s = str(cid)
    if len(s) <= n:
        return s
    last = s.rsplit("-", 1)[-1]
    if 4 <= len(last) <= 16 and last.isalnum():
        return last
    return "…" + s[-(n - 1) :]


def _short_id(cid: str, n: int = 22) -> str:
    short = _short_plain(cid, n)
    return esc(short) if short == str(cid) else f'<span title="{esc(cid)}">{esc(short)}</span>'


def _param_columns(configs: Sequence[ConfigResult]) -> list[str]:
    """Every parameter a configuration sets (a grid axis may set several), varying ones first."""
    names = list(dict.fromkeys(p for c in configs for p in c.params))
    varying = [n for n in names if len({repr(_param(c, n)) for c in configs}) > 1]
    return varying + [n for n in names if n not in varying]


def _config_label(sweep: SweepResult) -> Callable[[ConfigResult], str]:
    """A configuration named by the values it varies (its short id where it varies none)."""
    configs = sweep.configs
    varying = [n for n in _param_columns(configs) if len({repr(_param(c, n)) for c in configs}) > 1]
    return lambda c: ", ".join(f"{n}={_param(c, n)}" for n in varying) or _short_plain(c.id)


def _gridmean_of(v: object) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={x}" for k, x in v.items())
    return str(v)


def _sweep_table(sweep: SweepResult, metrics: list[str]) -> str:
    configs = sweep.configs
    grid = _param_columns(configs)
    base = _find(sweep, sweep.baseline)
    pareto = set(sweep.pareto)
    head = (
        "<tr><th>flags</th><th>id</th>"
        + "".join(f"<th>{esc(g)}</th>" for g in grid)
        + "".join(f'<th class="num">{esc(m)}{" ↓" if lower_is_better(m) else ""}</th>' for m in metrics)
        + '<th class="num">seconds</th><th class="num">ms / query</th><th class="num">peak RSS MB</th></tr>'
    )
    rows = []
    for c in configs:
        cid = c.id
        flags = []
        if cid == sweep.baseline:
            flags.append('<span class="badge info" title="baseline of the significance tests">baseline</span>')
        best_by = [obj for obj, bid in sweep.best.items() if bid == cid]
        if best_by:
            flags.append(
                f'<span class="badge ok" title="best by {esc(", ".join(best_by))}">best: '
                f"{esc(', '.join(best_by))}</span>"
            )
        if cid in pareto:
            flags.append('<span class="badge warn" title="on the Pareto front of the objectives">pareto</span>')
        cells = [f'<td>{"".join(flags)}</td><td class="cid" data-v="{esc(cid)}">{_short_id(cid)}</td>']
        cells += [f'<td data-v="{esc(_param(c, g))}">{esc(_param(c, g))}</td>' for g in grid]
        for m in metrics:
            v = mean_of(c, m)
            lo, hi = (num(x) for x in c.interval(m))
            ci = f'<br><span class="ci-text">[{fmt(lo)}, {fmt(hi)}]</span>' if lo is not None else ""
            mark, _ = _sig_mark(c, _reference(sweep, c, m, base), m)
            p = _p_adjusted(c, m)
            title = f' title="Holm-adjusted p vs baseline = {fmt(p, 4)}"' if p is not None else ""
            cells.append(
                f'<td class="num" data-v="{"" if v is None else v}"{title}>{fmt(v)}{mark}{ci}{_chance_lift(c, m)}</td>'
            )
        for value, d in ((c.seconds, 1), (c.latency_ms_per_query, 1), (c.peak_rss_mb, 0)):
            v = num(value)
            cells.append(f'<td class="num" data-v="{"" if v is None else v}">{fmt(v, d)}</td>')
        rows.append(f'<tr data-id="{esc(cid)}">{"".join(cells)}</tr>')
    return (
        f'<div class="scroll"><table class="sortable sweep"><thead>{head}</thead><tbody>{"".join(rows)}'
        '</tbody></table></div><p class="note">Value with its 95% bootstrap CI; under an objective, its chance level '
        "(a random order of each case's candidate chunks) and the lift over it (value - chance): an objective at "
        "each configuration's own top_k is chosen on the lift, since its chance level rises with depth. ▲* / ▼*: "
        "significantly better / worse than what it is compared with (paired randomization test over cases, "
        "Holm-adjusted, α = 0.05; an @k objective at equal depth, the baseline's pipeline at the row's top_k); hover "
        "for the adjusted p-value. Click a header to sort. ↓: lower is better.</p>"
    )


def _chance_lift(config: ConfigResult, metric: str) -> str:
    """An objective's chance level and the lift over it, under its value."""
    chance, lift = config.chance_on(metric), config.lift(metric)
    if chance is None or lift is None:
        return ""
    return f'<br><span class="ci-text">chance {fmt(chance)} · lift {"+" if lift >= 0 else ""}{fmt(lift)}</span>'


def _best_chip(sweep: SweepResult, objective: str, best: str) -> str:
    """The best on an objective, what it was chosen on, and a tie named as one."""
    on = "lift over chance" if sweep.chosen_on(objective) == "lift" else "its value"
    tied = sweep.tied(objective)
    tie = f"; a tie of {len(tied)} configurations: the cheapest (fewest chunks, then fastest)" if len(tied) > 1 else ""
    return f'<span class="chip">{esc(objective)}: {esc(best)} (chosen on {on}{tie})</span>'


def _focus(sweep: SweepResult) -> tuple[str | None, ConfigResult | None]:
    """The drilled-down configuration's id and result: the best by the first objective, else
    the baseline, else the first configuration."""
    configs, objectives = sweep.configs, sweep.objectives
    focus_id = sweep.best_on(objectives[0]) if objectives else None
    focus_id = focus_id or sweep.baseline or (configs[0].id if configs else None)
    return focus_id, _find(sweep, focus_id)


def _shown_metrics(sweep: SweepResult, k: int | None, answerer: str | None = None) -> list[str]:
    """Up to 8 metrics for the heatmaps and the table: the objectives first, then the main ones at ``k``
    (an answer metric that says nothing about ``answerer``'s answers only when it is an objective)."""
    all_metrics = ordered({m for c in sweep.configs for m in c.metrics})
    kk = at_served(CASE_BARS, f"@{k}") if k is not None else []
    more = [m for m in PAGE_ANSWERS if not uninformative(m, answerer)]
    preferred = [*sweep.objectives, *kk, *SWEEP_DEPTH_10, *more]
    return [m for m in dict.fromkeys(preferred) if m in all_metrics][:8]


def _sweep_curves(focus: ConfigResult | None, base: ConfigResult | None) -> str:
    """The metric@k curves of the drilled-down configuration and of the baseline (once when they are one)."""
    curve_figs = []
    for label, cfg in (("best", focus), ("baseline", base)):
        if cfg is None or (label == "baseline" and base is focus):
            continue
        curve_figs.append(_curves(cfg, f"{label} configuration {_short_plain(cfg.id)}: metrics at each k"))
    return f'<div class="figs">{"".join(curve_figs)}</div>'


def _params_of(config: ConfigResult | None) -> str:
    return _chips(config.params) if config else ""


def _sweep_overview(sweep: SweepResult, focus_id: str | None, focus: ConfigResult | None) -> str:
    """The grid, objectives, best configurations, Pareto front, baseline and drilled-down configuration."""
    base_id = sweep.baseline
    return _meta(
        [
            (
                "grid",
                "".join(
                    f'<span class="chip">{esc(g)} ∈ {{{esc(" | ".join(_gridmean_of(v) for v in vals))}}}</span>'
                    for g, vals in sweep.grid.items()
                ),
            ),
            ("objectives", esc(", ".join(sweep.objectives))),
            ("best", "".join(_best_chip(sweep, o, b) for o, b in sweep.best.items())),
            ("pareto front", esc(", ".join(str(p) for p in sweep.pareto))),
            ("baseline", f"{esc(base_id)} {_params_of(_find(sweep, base_id))}{_failed_mark(sweep, base_id)}"),
            ("drilled-down configuration", f"{esc(focus_id)} {_params_of(focus)}"),
        ]
    )


def _failed_mark(sweep: SweepResult, cid: str) -> str:
    if all(f.id != cid for f in sweep.failed):
        return ""
    return ' <span class="badge fail">failed: no numbers; nothing is compared with it</span>'


def _failed_html(sweep: SweepResult) -> str:
    """The configurations without numbers, each with its one-line reason: listed, never ranked or compared."""
    rows = "".join(
        f'<tr><td class="cid">{esc(f.id)}{" (baseline)" if f.id == sweep.baseline else ""}</td>'
        f"<td>{_chips(f.params)}</td><td>{esc(f.reason)}</td></tr>"
        for f in sweep.failed
    )
    return (
        f'<p class="note">{len(sweep.failed)} of {len(sweep.configs) + len(sweep.failed)} configurations have no '
        "numbers: they are not in the table, the heatmaps or the Pareto set, never best, and no configuration is "
        "compared with them. <code>ragsweep sweep --resume</code> runs them again.</p>"
        '<div class="scroll"><table><thead><tr><th>id</th><th>values</th><th>reason</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


def _heat_note(sweep: SweepResult) -> str:
    y, x, panel = _sweep_axes(sweep.configs, sweep.grid)
    return (
        f'<p class="note">Rows: {esc(y)}; columns: {esc(x)}; one panel per {esc(panel)}. '
        "Red border: a best configuration; black border: the baseline; *: significantly different from "
        "the baseline (Holm-adjusted). Colour scale spans the range over all configurations.</p>"
    )


SWEEP_COUNTED = "in each configuration's counts, the same in all of them"


@dataclass(frozen=True)
class SweepView:
    """What a sweep page's sections read: the sweep, its baseline, the drilled-down configuration (the best
    by the first objective) and that configuration's cases."""

    sweep: SweepResult
    focus_id: str | None
    focus: ConfigResult | None
    base: ConfigResult | None
    k: int | None  # the depth the drilled-down configuration serves
    cases: list[CaseResult]
    answerer: str | None
    shown: list[str]  # the metrics of the heatmaps and the table

    @classmethod
    def of(cls, run_dir: Path) -> SweepView:
        sweep = read_sweep(run_dir)
        focus_id, focus = _focus(sweep)
        k = focus.top_k if focus is not None else None
        cases_dir = run_dir / "configs" / str(focus_id)
        cases = read_config_cases(cases_dir) if (cases_dir / "cases.jsonl").is_file() else []
        answerer = next((c.answer.answerer for c in cases if c.answer is not None), None)
        shown = _shown_metrics(sweep, k, answerer)
        return cls(sweep, focus_id, focus, _find(sweep, sweep.baseline), k, cases, answerer, shown)

    def labelled(self, body: str) -> str:
        """A section of the drilled-down configuration's cases, under the line that names it."""
        objectives = self.sweep.objectives
        label = (
            f"Configuration {esc(self.focus_id)} (best by {esc(objectives[0]) if objectives else '?'}; "
            f"top_k {esc(self.k)}): {_params_of(self.focus)}"
        )
        return f'<p class="note">{label}</p>' + body


def _sweep_heat_html(view: SweepView) -> str:
    heat = {m: _sweep_heatmaps(view.sweep, m) for m in view.shown}
    return _heat_note(view.sweep) + _switcher("sweep-heat", heat)


def _sweep_run_html(view: SweepView) -> str | None:
    manifest = view.sweep.manifest
    return _meta(items) if manifest and (items := _manifest_items(Manifest.of(manifest))) else None


def _sweep_unlocated_html(view: SweepView) -> str | None:
    unlocated = view.sweep.unlocated
    return _unlocated_html(unlocated, SWEEP_COUNTED) if unlocated.cases else None


SWEEP_SECTIONS: list[Section[SweepView]] = [
    Section("overview", "Sweep", lambda v: _sweep_overview(v.sweep, v.focus_id, v.focus)),
    Section("failed", "Failed configurations", lambda v: _failed_html(v.sweep) if v.sweep.failed else None),
    Section("heatmap", "Chunk size × top_k", _sweep_heat_html),
    Section("table", "Configurations", lambda v: _sweep_table(v.sweep, v.shown[:6])),
    Section("funnel", "Where cases are lost", lambda v: sweep_funnel_html(v.sweep.configs, _config_label(v.sweep))),
    Section("curves", "Metrics vs k", lambda v: _sweep_curves(v.focus, v.base)),
    Section("cost", "Quality vs cost", lambda v: cost_section(v.sweep)),
    Section("unlocated", "Unlocated evidence", _sweep_unlocated_html),
    Section(
        "types",
        "By question type",
        lambda v: v.labelled(_types_html(v.cases, v.k, v.answerer)) if v.cases else None,
    ),
    Section(
        "doc-type-map",
        "Document × question type",
        lambda v: v.labelled(_doc_type_html(v.cases, v.k, v.answerer)) if v.cases else None,
    ),
    Section("drilldown", "Cases", lambda v: v.labelled(drilldown_html(v.cases, v.k)) if v.cases else _NO_CASES),
    Section("run", "Run", _sweep_run_html),
]


def _sweep_page(run_dir: Path) -> str:
    view = SweepView.of(run_dir)
    sweep = view.sweep
    subtitle = (
        f"sweep · {len(sweep.configs)} configurations over {esc(', '.join(sweep.grid))} · baseline "
        f"{_short_id(sweep.baseline)} · " + " · ".join(f"best {esc(o)}: {_short_id(b)}" for o, b in sweep.best.items())
    )
    sections = [(s.id, s.title, html) for s in SWEEP_SECTIONS if (html := s.render(view)) is not None]
    return _page(f"ragsweep sweep: {run_dir.name}", subtitle, sections)


__all__ = ["Section", "SweepView", "register_section", "unregister_section", "write_html_report"]
