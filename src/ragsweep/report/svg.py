"""Small hand-written SVG charts (no JS, no network): line chart with error bars, horizontal
bars with confidence intervals, bars of counts (each may be a link), stacked bars, heatmap, and an
inline CI glyph for tables.

Every text that reaches the SVG goes through :func:`esc`. Every chart is an ``<svg class="plot">``
with a ``<title>`` per mark, so hovering shows the exact numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import NamedTuple

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]
# viridis, 9 stops
_VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"]
FONT = 'font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif"'


# control characters (tab and line breaks aside) and bidirectional marks, which a page would show raw or
# let reorder what is read around them (a question, an id, an answer): shown as <U+202E>; the page's
# script (assets.JS's esc) mirrors it
_UNSEEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _code_point(found: re.Match[str]) -> str:
    return f"<U+{ord(found.group()):04X}>"


def esc(value: object) -> str:
    """``value`` as HTML text or attribute: escaped, each unseen character named by its code point."""
    return escape(_UNSEEN.sub(_code_point, "" if value is None else str(value)), quote=True)


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.{digits}f}"


def _hex(c: str) -> tuple[int, int, int]:
    return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)


_VIRIDIS_RGB = [_hex(c) for c in _VIRIDIS]  # parsed once: a heatmap colours thousands of cells


def color(t: float | None) -> str:
    """Viridis colour of ``t`` in [0, 1]; light grey for missing."""
    if t is None or math.isnan(t):
        return "#e5e5e5"
    t = min(1.0, max(0.0, t))
    pos = t * (len(_VIRIDIS) - 1)
    i = min(int(pos), len(_VIRIDIS) - 2)
    f = pos - i
    a, b = _VIRIDIS_RGB[i], _VIRIDIS_RGB[i + 1]
    r, g, bl = (round(a[j] + (b[j] - a[j]) * f) for j in range(3))
    return f"#{r:02x}{g:02x}{bl:02x}"


def text_color(t: float | None) -> str:
    return "#222" if t is None or math.isnan(t) or t > 0.55 else "#fff"


def _truncate(label: str, n: int) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def _text_width(label: str, size: float = 12) -> float:
    return len(label) * size * 0.58


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    return (
        f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{esc(label)}" {FONT}>'
        + "".join(body)
        + "</svg>"
    )


def _nice_range(values: Sequence[float], unit: bool) -> tuple[float, float]:
    if unit:
        return 0.0, 1.0
    finite = [v for v in values if v is not None and not math.isnan(v)]
    if not finite:
        return 0.0, 1.0
    lo, hi = min(0.0, min(finite)), max(finite)
    if hi <= lo:
        hi = lo + 1
    step = 10 ** math.floor(math.log10(hi - lo))
    return lo, math.ceil(hi / step) * step


def _y_grid(y0: float, y1: float, Y: Callable[[float], float], ml: int, pw: int) -> list[str]:
    """Six horizontal grid lines with their values."""
    out = []
    for j in range(6):
        v = y0 + (y1 - y0) * j / 5
        out.append(
            f'<line x1="{ml}" x2="{ml + pw}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#e3e3e3"/>'
            f'<text x="{ml - 6}" y="{Y(v) + 4:.1f}" font-size="11" text-anchor="end" fill="#555">{fmt(v, 1)}</text>'
        )
    return out


def _line_frame(
    x_labels: Sequence[str],
    X: Callable[[int], float],
    box: tuple[int, int, int, int],
    height: int,
    x_title: str,
    y_title: str,
) -> list[str]:
    """The x labels, the axis titles and the plot's border; ``box``: (left, top, width, height)."""
    ml, mt, pw, ph = box
    out = [
        f'<text x="{X(i):.1f}" y="{mt + ph + 16}" font-size="11" text-anchor="middle" fill="#555">{esc(lab)}</text>'
        for i, lab in enumerate(x_labels)
    ]
    out.append(
        f'<text x="{ml + pw / 2:.1f}" y="{height - 6}" font-size="12" text-anchor="middle" fill="#333">{esc(x_title)}</text>'
    )
    if y_title:
        out.append(
            f'<text transform="translate(16,{mt + ph / 2:.1f}) rotate(-90)" font-size="12" '
            f'text-anchor="middle" fill="#333">{esc(y_title)}</text>'
        )
    out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#bbb"/>')
    return out


def _line_series(
    s: int,
    n_series: int,
    name: str,
    pts: Sequence[tuple[float | None, float | None, float | None]],
    x_labels: Sequence[str],
    X: Callable[[int], float],
    Y: Callable[[float], float],
    legend_at: tuple[int, int],
) -> list[str]:
    """Series ``s`` of ``n_series``: its line, error bars, points and legend entry
    (``legend_at``: the plot's right edge and top)."""
    col = PALETTE[s % len(PALETTE)]
    dx = (s - (n_series - 1) / 2) * 5  # small dodge so error bars don't overlap
    coords = [(X(i) + dx, Y(v), lo, hi, v) for i, (v, lo, hi) in enumerate(pts) if v is not None]
    out = []
    if len(coords) > 1:
        d = " ".join(f"{'M' if n == 0 else 'L'}{x:.1f},{y:.1f}" for n, (x, y, *_r) in enumerate(coords))
        out.append(f'<path d="{d}" fill="none" stroke="{col}" stroke-width="2"/>')
    for i, (x, y, lo, hi, v) in enumerate(coords):
        if lo is not None and hi is not None:
            out.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{Y(lo):.1f}" y2="{Y(hi):.1f}" stroke="{col}" '
                f'stroke-width="1.2" opacity="0.8"/>'
            )
        ci = f" [{fmt(lo)}, {fmt(hi)}]" if lo is not None and hi is not None else ""
        out.append(
            f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{col}">'
            f"<title>{esc(name)} @ {esc(x_labels[i] if i < len(x_labels) else '')}: {fmt(v)}{esc(ci)}</title></circle>"
        )
    right, mt = legend_at
    ly = mt + 8 + s * 18
    out.append(
        f'<rect x="{right + 14}" y="{ly - 6}" width="14" height="4" fill="{col}"/>'
        f'<text x="{right + 34}" y="{ly}" font-size="12">{esc(_truncate(name, 18))}</text>'
    )
    return out


def line_chart(
    x_labels: Sequence[str],
    series: Mapping[str, Sequence[tuple[float | None, float | None, float | None]]],
    title: str,
    x_title: str = "k",
    y_title: str = "",
    unit: bool = True,
    width: int = 560,
    height: int = 320,
) -> str:
    """Categorical x; ``series[name][i] = (value, ci_low, ci_high)`` at ``x_labels[i]``."""
    ml, mr, mt, mb = 54, 150, 30, 42
    pw, ph = width - ml - mr, height - mt - mb
    all_vals = [v for pts in series.values() for p in pts for v in p if v is not None]
    y0, y1 = _nice_range(all_vals, unit)

    def X(i: int) -> float:
        return ml + (pw * (i + 0.5) / max(1, len(x_labels)))

    def Y(v: float) -> float:
        return mt + ph - (v - y0) / (y1 - y0) * ph

    body = [f'<text x="{ml}" y="18" font-size="14" font-weight="600">{esc(title)}</text>']
    body += _y_grid(y0, y1, Y, ml, pw)
    body += _line_frame(x_labels, X, (ml, mt, pw, ph), height, x_title, y_title)
    for s, (name, pts) in enumerate(series.items()):
        body += _line_series(s, len(series), name, pts, x_labels, X, Y, (ml + pw, mt))
    return _svg(width, height, body, title)


def bar_chart(
    items: Sequence[tuple[str, float | None, float | None, float | None, int]],
    title: str,
    unit: bool = True,
    width: int = 620,
) -> str:
    """Horizontal bars ``(label, value, ci_low, ci_high, n)`` with CI whiskers."""
    labels = [_truncate(lab, 38) for lab, *_ in items]
    ml = min(280, max(60, max((_text_width(lab) for lab in labels), default=60) + 14))
    mr, mt, row = 96, 30, 22
    height = mt + row * max(1, len(items)) + 30
    width = max(width, int(_text_width(title, 14)) + 16)
    pw = width - ml - mr
    vals = [v for _, v, lo, hi, _n in items for v in (v, lo, hi) if v is not None]
    x0, x1 = _nice_range(vals, unit)

    def X(v: float) -> float:
        return ml + (v - x0) / (x1 - x0) * pw

    body = [f'<text x="4" y="18" font-size="14" font-weight="600">{esc(title)}</text>']
    for j in range(6):
        tick = x0 + (x1 - x0) * j / 5
        body.append(
            f'<line x1="{X(tick):.1f}" x2="{X(tick):.1f}" y1="{mt}" y2="{height - 24}" stroke="#e3e3e3"/>'
            f'<text x="{X(tick):.1f}" y="{height - 10}" font-size="11" text-anchor="middle" fill="#555">'
            f"{fmt(tick, 1)}</text>"
        )
    for i, ((label, v, lo, hi, n), short) in enumerate(zip(items, labels, strict=False)):
        y = mt + i * row
        body.append(
            f'<text x="{ml - 6}" y="{y + 15}" font-size="12" text-anchor="end"><title>{esc(label)}</title>{esc(short)}</text>'
        )
        ci = f" 95% CI [{fmt(lo)}, {fmt(hi)}]" if lo is not None and hi is not None else ""
        if v is not None:
            body.append(
                f'<rect class="bar" x="{X(x0):.1f}" y="{y + 4}" width="{max(0.5, X(v) - X(x0)):.1f}" height="{row - 8}" '
                f'fill="{PALETTE[0]}" opacity="0.85"><title>{esc(label)}: {fmt(v)}{esc(ci)} (n={n})</title></rect>'
            )
        if lo is not None and hi is not None:
            yc = y + row / 2
            body.append(
                f'<path d="M{X(lo):.1f},{yc - 5:.1f}v10M{X(lo):.1f},{yc:.1f}H{X(hi):.1f}M{X(hi):.1f},{yc - 5:.1f}v10" '
                f'stroke="#222" stroke-width="1.2" fill="none"/>'
            )
        body.append(f'<text x="{ml + pw + 6}" y="{y + 15}" font-size="11" fill="#333">{fmt(v)} (n={n})</text>')
    return _svg(width, height, body, title)


ROW_LABEL_CHARS = 40  # a heatmap row label longer than this wraps onto more lines (never cut)
ROW_LINE_H = 13  # the height of one line of a row label
# the widest a character of the labels' font gets, on average, per point of size: uppercase-heavy file
# names (CUAD's) run wider than the 0.58 of mixed text, and a label must fit its column
_LABEL_WIDTH = 0.7


def wrap_label(label: str, n: int = ROW_LABEL_CHARS) -> list[str]:
    """``label`` in lines of at most ``n`` characters, broken after a space, ``_``, ``-``, ``.``, ``,``
    or ``/`` where one is near the end of a line (else at ``n``); joined, the lines are the label."""
    lines = []
    rest = label
    while len(rest) > n:
        cut = max(rest.rfind(ch, 0, n) for ch in " _-.,/") + 1
        cut = cut if cut > n // 2 else n
        lines.append(rest[:cut])
        rest = rest[cut:]
    return [*lines, rest]


def _row_label(lines: Sequence[str], full: str, x: float, y_mid: float) -> str:
    """A row label of one or more lines, left-aligned at ``x`` (nothing reaches past the SVG's left
    edge), centred on ``y_mid``; its ``<title>`` is the whole label."""
    top = y_mid + 4 - ROW_LINE_H * (len(lines) - 1) / 2
    spans = "".join(
        f'<tspan x="{x}" y="{top + ROW_LINE_H * i:.1f}">{esc(line)}</tspan>' for i, line in enumerate(lines)
    )
    return f'<text class="row-label" font-size="11" text-anchor="start" fill="#333"><title>{esc(full)}</title>{spans}</text>'


def _heatmap_margins(rlabels: Sequence[Sequence[str]], clabels: Sequence[str], row_title: str) -> tuple[float, float]:
    """(left margin, top margin): room for the (wrapped) row labels and the (rotated) column labels."""
    ml = max(
        50,
        max((len(line) * 11 * _LABEL_WIDTH for r in rlabels for line in r), default=40) + 16,
        _text_width(row_title + " ↓", 11) + 12 if row_title else 0,
    )
    col_label_h = max(30, max((_text_width(c, 11) for c in clabels), default=20) * 0.72 + 16)
    return ml, 30 + col_label_h


def _heatmap_col_labels(cols: Sequence[str], clabels: Sequence[str], ml: float, mt: float, cell_w: int) -> list[str]:
    """The column labels, rotated when any is longer than 5 characters."""
    rotate = any(len(c) > 5 for c in clabels)
    out = []
    for j, (c, short) in enumerate(zip(cols, clabels, strict=False)):
        x = ml + cell_w * (j + 0.5)
        if rotate:
            out.append(
                f'<text transform="translate({x + 4:.1f},{mt - 6}) rotate(-45)" font-size="11" fill="#333">'
                f"<title>{esc(c)}</title>{esc(short)}</text>"
            )
        else:
            out.append(
                f'<text x="{x:.1f}" y="{mt - 6}" font-size="11" text-anchor="middle" fill="#333">{esc(short)}</text>'
            )
    return out


def _heatmap_cell(
    key: tuple[str, str],
    at: tuple[float, float],
    cells: Mapping[tuple[str, str], tuple[float | None, str]],
    scale: tuple[float, float],
    size: tuple[int, int],
    marks: Mapping[tuple[str, str], str],
    outline: Mapping[tuple[str, str], str],
) -> list[str]:
    """One cell (``key`` = (row, col), top-left corner ``at``): its coloured rectangle with a
    tooltip, and its value as text. ``scale``: (vmin, span); ``size``: (cell_w, cell_h)."""
    r, c = key
    x, y = at
    vmin, span = scale
    cell_w, cell_h = size
    v, tip = cells.get((r, c), (None, ""))
    t = None if v is None else (v - vmin) / span
    stroke = outline.get((r, c))
    label = fmt(v, 2) + marks.get((r, c), "") if v is not None else "·"
    return [
        f'<rect class="cell" x="{x}" y="{y}" width="{cell_w - 1}" height="{cell_h - 1}" fill="{color(t)}"'
        + (f' stroke="{stroke}" stroke-width="3"' if stroke else "")
        + f"><title>{esc(tip or f'{r} × {c}: {fmt(v)}')}</title></rect>",
        f'<text x="{x + cell_w / 2 - 0.5:.1f}" y="{y + cell_h / 2 + 4:.1f}" font-size="10.5" '
        f'text-anchor="middle" fill="{text_color(t)}" pointer-events="none">{esc(label)}</text>',
    ]


def _heatmap_axis_titles(
    row_title: str, col_title: str, ml: float, mt: float, cell_w: int, n_cols: int, height: float
) -> list[str]:
    out = []
    if row_title:
        out.append(f'<text x="4" y="{mt - 6}" font-size="11" font-style="italic" fill="#555">{esc(row_title)} ↓</text>')
    if col_title:
        out.append(
            f'<text x="{ml + cell_w * n_cols / 2:.1f}" y="{height - 8}" font-size="11" font-style="italic" '
            f'text-anchor="middle" fill="#555">{esc(col_title)} →</text>'
        )
    return out


def _heatmap_legend(lx: float, ly: float, lh: int, vmin: float, vmax: float) -> list[str]:
    """The colour scale: 20 steps from ``vmin`` (bottom) to ``vmax`` (top)."""
    out = [
        f'<rect x="{lx}" y="{ly + lh * (19 - s) / 20:.1f}" width="12" height="{lh / 20 + 0.5:.1f}" '
        f'fill="{color(s / 19)}"/>'
        for s in range(20)
    ]
    out.append(
        f'<text x="{lx + 16}" y="{ly + 8}" font-size="10" fill="#333">{fmt(vmax, 2)}</text>'
        f'<text x="{lx + 16}" y="{ly + lh}" font-size="10" fill="#333">{fmt(vmin, 2)}</text>'
    )
    return out


def heatmap(
    rows: Sequence[str],
    cols: Sequence[str],
    cells: Mapping[tuple[str, str], tuple[float | None, str]],
    title: str,
    vmin: float = 0.0,
    vmax: float = 1.0,
    row_title: str = "",
    col_title: str = "",
    cell_w: int = 46,
    cell_h: int = 24,
    marks: Mapping[tuple[str, str], str] | None = None,
    outline: Mapping[tuple[str, str], str] | None = None,
) -> str:
    """``cells[(row, col)] = (value, tooltip)``; ``marks`` adds a suffix to the cell text,
    ``outline`` draws a coloured border (e.g. best / baseline)."""
    marks = marks or {}
    outline = outline or {}
    rlabels = [wrap_label(r) for r in rows]
    clabels = [_truncate(c, 28) for c in cols]
    ml, mt = _heatmap_margins(rlabels, clabels, row_title)
    heights = [max(cell_h, ROW_LINE_H * len(lines) + 6) for lines in rlabels]  # a wrapped label widens its row
    width = max(ml + cell_w * max(1, len(cols)) + 90, _text_width(title, 14) + 16)
    height = mt + (sum(heights) if rows else cell_h) + 36
    scale = (vmin, (vmax - vmin) or 1.0)
    body = [f'<text x="4" y="18" font-size="14" font-weight="600">{esc(title)}</text>']
    body += _heatmap_col_labels(cols, clabels, ml, mt, cell_w)
    y = mt
    for r, lines, row_h in zip(rows, rlabels, heights, strict=True):
        body.append(_row_label(lines, r, 4, y + row_h / 2))
        for j, c in enumerate(cols):
            body += _heatmap_cell((r, c), (ml + cell_w * j, y), cells, scale, (cell_w, row_h), marks, outline)
        y += row_h
    body += _heatmap_axis_titles(row_title, col_title, ml, mt, cell_w, len(cols), height)
    lh = max(60, min(160, cell_h * len(rows)))
    body += _heatmap_legend(ml + cell_w * max(1, len(cols)) + 18, mt, lh, vmin, vmax)
    return _svg(width, height, body, title)


def ci_glyph(value: float | None, low: float | None, high: float | None, width: int = 120) -> str:
    """A tiny [0, 1] scale with the interval as a bar and the value as a dot (for tables)."""
    if value is None or not (0.0 <= value <= 1.0):
        return ""

    def X(v: float) -> float:
        return 4 + min(1.0, max(0.0, v)) * (width - 8)

    parts = [f'<line x1="4" x2="{width - 4}" y1="7" y2="7" stroke="#ddd"/>']
    if low is not None and high is not None:
        parts.append(
            f'<rect x="{X(low):.1f}" y="3" width="{max(1.0, X(high) - X(low)):.1f}" height="8" '
            f'fill="{PALETTE[0]}" opacity="0.35"/>'
        )
    parts.append(f'<circle cx="{X(value):.1f}" cy="7" r="3" fill="{PALETTE[0]}"/>')
    return (
        f'<svg class="ci" xmlns="http://www.w3.org/2000/svg" width="{width}" height="14" '
        f'viewBox="0 0 {width} 14">' + "".join(parts) + "</svg>"
    )


def scatter_chart(
    points: Sequence[tuple[str, float, float, bool]],
    title: str,
    x_title: str,
    y_title: str,
    width: int = 560,
    height: int = 340,
) -> str:
    """``points``: (label, x, y, highlighted); highlighted points (a Pareto set) are joined by a line."""
    ml, mr, mt, mb = 54, 24, 30, 42
    pw, ph = width - ml - mr, height - mt - mb
    x0, x1 = _nice_range([p[1] for p in points], unit=False)
    y0, y1 = _nice_range([p[2] for p in points], unit=all(0.0 <= p[2] <= 1.0 for p in points))

    def X(v: float) -> float:
        return ml + (v - x0) / (x1 - x0) * pw

    def Y(v: float) -> float:
        return mt + ph - (v - y0) / (y1 - y0) * ph

    body = [f'<text x="{ml}" y="18" font-size="14" font-weight="600">{esc(title)}</text>']
    body += _y_grid(y0, y1, Y, ml, pw)
    for j in range(6):
        v = x0 + (x1 - x0) * j / 5
        body.append(
            f'<text x="{X(v):.1f}" y="{mt + ph + 16}" font-size="11" text-anchor="middle" fill="#555">{fmt(v, 4)}</text>'
        )
    body += _line_frame([], X, (ml, mt, pw, ph), height, x_title, y_title)
    front = sorted((p for p in points if p[3]), key=lambda p: p[1])
    if len(front) > 1:
        path = " ".join(f"{X(x):.1f},{Y(y):.1f}" for _, x, y, _ in front)
        body.append(f'<polyline points="{path}" fill="none" stroke="{PALETTE[2]}" stroke-width="1.5"/>')
    for label, x, y, on_front in points:
        fill = PALETTE[2] if on_front else PALETTE[0]
        body.append(
            f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="{5 if on_front else 4}" fill="{fill}" fill-opacity="0.85">'
            f"<title>{esc(label)}: {esc(y_title)} {fmt(y)}, {esc(x_title)} {fmt(x, 4)}</title></circle>"
        )
    return _svg(width, height, body, title)


class Bar(NamedTuple):
    """One bar of :func:`count_bars` or one segment of :func:`stacked_bars`: a count, its colour, and
    where a click on it leads (None: nowhere)."""

    label: str
    n: int
    colour: str
    href: str | None = None


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:.0f}%" if total else "–"


def _linked(mark: str, bar: Bar, attrs: str = "") -> str:
    """``mark`` inside a link to ``bar.href`` (a bar of nothing links nowhere)."""
    if bar.href is None or bar.n == 0:
        return mark
    return f'<a href="{esc(bar.href)}"{attrs}>{mark}</a>'


def count_bars(bars: Sequence[Bar], total: int, title: str, width: int = 440, attrs: Callable[[Bar], str] = str) -> str:
    """Horizontal bars of counts out of ``total`` (each labelled with its count and share); ``attrs``:
    extra attributes of each bar's link."""
    ml = int(min(160, max(60, max((_text_width(b.label) for b in bars), default=60) + 14)))
    mr, mt, row = 86, 30, 24
    height = mt + row * max(1, len(bars)) + 8
    width = max(width, int(_text_width(title, 14)) + 16)
    pw = width - ml - mr
    body = [f'<text x="4" y="18" font-size="14" font-weight="600">{esc(title)}</text>']
    for i, bar in enumerate(bars):
        y = mt + i * row
        w = pw * bar.n / total if total else 0.0
        tip = f"<title>{esc(bar.label)}: {bar.n} of {total} ({_pct(bar.n, total)})</title>"
        mark = (
            f'<text x="{ml - 6}" y="{y + 16}" font-size="12" text-anchor="end">{esc(bar.label)}</text>'
            f'<rect class="bar" x="{ml}" y="{y + 4}" width="{max(0.5, w):.1f}" height="{row - 8}" '
            f'fill="{bar.colour}" opacity="0.9">{tip}</rect>'
            f'<text x="{ml + w + 6:.1f}" y="{y + 16}" font-size="11" fill="#333">{bar.n} ({_pct(bar.n, total)})</text>'
        )
        body.append(_linked(mark, bar, attrs(bar)))
    return _svg(width, height, body, title)


STACKED_LABEL_CHARS = 60  # a stacked bar's label beyond this is cut (whole in its tooltip)


def stacked_bars(rows: Sequence[tuple[str, Sequence[Bar]]], title: str, legend: Sequence[Bar], width: int = 720) -> str:
    """One horizontal bar per row, its segments side by side, each as wide as its share of the row's
    total; a legend of the segments' colours above."""
    shown = [_truncate(label, STACKED_LABEL_CHARS) for label, _ in rows]
    ml = int(max(60, max((_text_width(label) for label in shown), default=60) + 14))
    mr, mt, row = 70, 52, 24
    height = mt + row * max(1, len(rows)) + 8
    width = max(width, ml + mr + 400)  # bars at least 400 px wide beside a long label
    pw = width - ml - mr
    body = [f'<text x="4" y="18" font-size="14" font-weight="600">{esc(title)}</text>']
    x = 4.0
    for item in legend:
        body.append(
            f'<rect x="{x:.1f}" y="28" width="12" height="12" fill="{item.colour}"/>'
            f'<text x="{x + 16:.1f}" y="38" font-size="11.5">{esc(item.label)}</text>'
        )
        x += 28 + _text_width(item.label, 11.5)
    for i, (label, segments) in enumerate(rows):
        y, total = mt + i * row, sum(s.n for s in segments)
        body.append(
            f'<text x="{ml - 6}" y="{y + 16}" font-size="12" text-anchor="end"><title>{esc(label)}</title>'
            f"{esc(shown[i])}</text>"
        )
        left = float(ml)
        for s in segments:
            w = pw * s.n / total if total else 0.0
            tip = f"<title>{esc(label)}: {esc(s.label)} {s.n} of {total} ({_pct(s.n, total)})</title>"
            if s.n:
                body.append(
                    f'<rect class="bar" x="{left:.1f}" y="{y + 4}" width="{w:.1f}" height="{row - 8}" '
                    f'fill="{s.colour}" data-segment="{esc(s.label)}" data-n="{s.n}">{tip}</rect>'
                )
            left += w
        body.append(f'<text x="{ml + pw + 6}" y="{y + 16}" font-size="11" fill="#333">{total}</text>')
    return _svg(width, height, body, title)
