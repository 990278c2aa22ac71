"""The funnel of report.html (ragsweep.funnel): where each answerable case was lost, at every depth,
with each stage's cases one click away in the Cases section; and a sweep's funnel per configuration."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ragsweep.evaluation.records import ConfigResult
from ragsweep.funnel.records import Diagnosis, DiagnosisCounts
from ragsweep.funnel.stages import ANSWER, CHUNKING, FOUND, PARSE, RERANK, RETRIEVAL, ROUTING, STAGES
from ragsweep.report import svg
from ragsweep.report.drilldown import lost_token
from ragsweep.report.funnel_view import counts_at, depths, shown_stages
from ragsweep.report.svg import Bar, esc
from ragsweep.tuning.records import TrialRecord

MAX_GROUP_ROWS = 40  # a table of the funnel by document beyond this is left to report.json
STAGE_COLOURS = {
    FOUND: "#59a14f",
    PARSE: "#9c755f",
    CHUNKING: "#f28e2b",
    ROUTING: "#b07aa1",
    RETRIEVAL: "#e15759",
    RERANK: "#edc948",
    ANSWER: "#4e79a7",
}


def _bars(counts: DiagnosisCounts, k: int, stages: Sequence[str]) -> list[Bar]:
    """Found, then each stage, each a link to its cases (the drilldown's stage filter)."""
    return [
        Bar(stage, counts.found if stage == FOUND else counts.lost.get(stage, 0), STAGE_COLOURS[stage],
            f"#lost={lost_token(k, stage)}")
        for stage in (FOUND, *stages)
    ]  # fmt: skip


def _link_attrs(k: int) -> Callable[[Bar], str]:
    return lambda bar: f' class="funnel-link" data-k="{k}" data-stage="{esc(bar.label)}" data-n="{bar.n}"'


def funnel_html(diagnosis: Diagnosis | None) -> str | None:
    """A funnel per reported depth (the served depth's first), a click on a bar shows its cases;
    what lies outside the funnel and how answers were judged, under it. None: no funnel."""
    if diagnosis is None:
        return None
    stages = shown_stages(diagnosis)
    figs = []
    for k in depths(diagnosis):
        title = f"at k = {k}" + (" (the depth served)" if k == diagnosis.k else "")
        chart = svg.count_bars(_bars(counts_at(diagnosis, k), k, stages), diagnosis.cases, title, attrs=_link_attrs(k))
        figs.append(f'<div class="funnel" data-k="{k}">{chart}</div>')
    groups = "".join(_group_table(diagnosis, g, stages) for g in ("type", "document") if g in diagnosis.groups)
    return f'<div class="figs">{"".join(figs)}</div>' + _funnel_note(diagnosis) + groups


def _group_table(diagnosis: Diagnosis, group: str, stages: Sequence[str]) -> str:
    """The served depth's funnel of each question type (or document): found and each stage, a row each
    (up to :data:`MAX_GROUP_ROWS` of them; report.json has every one)."""
    values = diagnosis.groups[group]
    if not values or len(values) > MAX_GROUP_ROWS:
        many = f"{len(values)} values: report.json's diagnosis.groups holds each" if values else "none"
        return f'<p class="note">By {esc(group)}: {esc(many)}.</p>'
    head = (
        f"<tr><th>{esc(group)}</th>"
        + "".join(f'<th class="num">{esc(s)}</th>' for s in (FOUND, *stages))
        + '<th class="num">cases</th></tr>'
    )
    rows = []
    for value, counts in sorted(values.items()):
        cells = [counts.found, *(counts.lost.get(s, 0) for s in stages), counts.total]
        rows.append(
            f"<tr><td>{esc(value)}</td>" + "".join(f'<td class="num" data-v="{n}">{n}</td>' for n in cells) + "</tr>"
        )
    return (
        f"<h3>By {esc(group)}, at k = {diagnosis.k}</h3>"
        f'<div class="scroll"><table class="sortable funnel-{esc(group)}"><thead>{head}</thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _answer_note(diagnosis: Diagnosis) -> str:
    """What judged the answers at the answer stage, and the answers right without relevant context."""
    if not diagnosis.answer_rule:
        return " Answers are not scored here: the funnel ends at the served context."
    kinds = ", ".join(f"{esc(kind)}: {n}" for kind, n in diagnosis.answer_kinds.items())
    return (
        f" The answer stage judges an answer by {esc(diagnosis.answer_rule)}{f' ({kinds})' if kinds else ''}; "
        f"{diagnosis.correct_without_context} case(s) were answered correctly without relevant context (not a loss)."
    )


def _funnel_note(diagnosis: Diagnosis) -> str:
    excluded = ", ".join(f"{esc(why)}: {n}" for why, n in diagnosis.excluded.items() if n)
    answer = _answer_note(diagnosis)
    return (
        f'<p class="note">Each of the {diagnosis.cases} answerable cases with relevance information is counted once '
        "at each depth: found, or at the first stage in pipeline order (parse, chunking, routing, retrieval, "
        "rerank, answer) that lost its evidence; found + every stage = "
        f"{diagnosis.cases}. Outside the funnel: {excluded or 'none'}.{answer} Click a bar to show its cases "
        "below (the Cases section's stage filter).</p>"
    )


# ----------------------------------------------------------------------------- a sweep's funnel per configuration


def sweep_funnel_html(configs: Sequence[ConfigResult], label: Callable[[ConfigResult], str]) -> str | None:
    """A stacked bar and a table row per configuration, at its own top_k (``label``: a row's name)."""
    rows = [(c, c.diagnosis) for c in configs if c.diagnosis is not None]
    if not rows:
        return None
    stages = [s for s in STAGES if any(s in shown_stages(d) for _, d in rows)]
    legend = [Bar(s, 0, STAGE_COLOURS[s]) for s in (FOUND, *stages)]
    bars = [
        (f"{label(c)} @{d.k}", [Bar(b.label, b.n, b.colour) for b in _bars(d.headline(), d.k, stages)]) for c, d in rows
    ]
    chart = svg.stacked_bars(bars, "where each configuration's cases were lost, at its top_k", legend)
    return f'<div class="scroll">{chart}</div>' + _sweep_funnel_table(rows, stages, label)


def _sweep_funnel_table(
    rows: list[tuple[ConfigResult, Diagnosis]], stages: Sequence[str], label: Callable[[ConfigResult], str]
) -> str:
    head = (
        '<tr><th>configuration</th><th class="num">k</th><th class="num">found</th>'
        + "".join(f'<th class="num">{esc(s)}</th>' for s in stages)
        + '<th class="num">cases</th><th>outside the funnel</th></tr>'
    )
    body = []
    for c, d in rows:
        cells = [d.found, *(d.lost.get(s, 0) for s in stages), d.cases]
        outside = ", ".join(f"{esc(why)} {n}" for why, n in d.excluded.items() if n)
        body.append(
            f'<tr data-config="{esc(c.id)}"><td data-v="{esc(label(c))}">{esc(label(c))}</td><td class="num">{d.k}</td>'
            + "".join(f'<td class="num" data-v="{n}">{n}</td>' for n in cells)
            + f"<td>{outside}</td></tr>"
        )
    return (
        f'<div class="scroll"><table class="sortable funnel-table"><thead>{head}</thead><tbody>{"".join(body)}'
        "</tbody></table></div>"
        '<p class="note">Each configuration at the depth it serves: found + every stage = its cases in the funnel '
        "(the answerable cases with relevance information). A chunking change moves cases between chunking and "
        "found; a deeper top_k moves them out of retrieval. Click a header to sort.</p>"
    )


def trials_funnel_html(folder: Path, trials: Sequence[TrialRecord]) -> str | None:
    """A tune's funnel per complete trial, from the result each wrote in ``folder`` (configs/<id>/result.json).
    Trials that proposed the same configuration share its result: one row, named by each of them. A complete
    trial whose result is not in the folder is named under the table, so a partial table does not pass for all."""
    results: dict[str, ConfigResult] = {}
    numbers: dict[str, list[str]] = {}
    params: dict[str, str] = {}
    missing: list[str] = []
    for trial in sorted(trials, key=lambda t: t.number):
        if trial.state != "complete":
            continue
        path = folder / "configs" / trial.config_id / "result.json"
        if not path.is_file():
            missing.append(str(trial.number))
            continue
        if trial.config_id not in results:
            results[trial.config_id] = ConfigResult.model_validate_json(path.read_text(encoding="utf-8"))
            params[trial.config_id] = ", ".join(f"{k}={v}" for k, v in trial.params.items())
        numbers.setdefault(trial.config_id, []).append(str(trial.number))
    html = sweep_funnel_html(list(results.values()), lambda c: f"trial {', '.join(numbers[c.id])}: {params[c.id]}")
    if html is None or not missing:  # no result at all: a page of a report without its folder, no funnel
        return html
    return (
        f'{html}<p class="note">Not shown: complete trial(s) {esc(", ".join(missing))}, whose result '
        f"(configs/&lt;id&gt;/result.json) is not in {esc(folder)}.</p>"
    )


__all__ = ["STAGE_COLOURS", "funnel_html", "sweep_funnel_html", "trials_funnel_html"]
