"""``write_tune_html(report, path)``: the self-contained ``report.html`` of a ``ragsweep tune`` run.

Read from :class:`TuneReport` (``tune.json``) alone: the study, the best trial chosen on dev with its test
value, interval and paired test, the search trace against trials and against evaluation cost, each knob's
effect, the Pareto front of two objectives, and every trial. Charts are report/svg.py's, the page frame and
its script report/html.py's, so the page behaves as the eval and sweep pages do.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TypeGuard

from ragsweep.report import svg
from ragsweep.report.funnel_html import trials_funnel_html
from ragsweep.report.html import _meta, _page
from ragsweep.report.svg import esc, fmt
from ragsweep.tuning.records import TrialRecord, TuneBest, TuneReport

_STATE_BADGE = {"complete": "ok", "pruned": "warn", "failed": "fail"}


def write_tune_html(report: TuneReport, path: Path) -> Path:
    """Write the tune run's page to ``path`` (a folder: its ``report.html``); return the file written."""
    path = Path(path)
    if path.is_dir():
        path = path / "report.html"
    sections = [
        ("study", "Study", _study_html(report)),
        ("best", "Best trial: dev and test", _best_html(report)),
        ("trace", "Search trace", _trace_html(report)),
        ("knobs", "Each knob's effect", _knobs_html(report)),
    ]
    if len(report.objectives) >= 2:
        sections.append(("pareto", "Pareto front", _pareto_html(report)))
    if (funnel := trials_funnel_html(path.parent, report.trials)) is not None:
        sections.append(("funnel", "Where cases are lost", funnel))
    sections.append(("trials", "Trials", _trials_table(report)))
    subtitle = (
        f"{esc(report.dataset)} · {esc(report.sampler)} sampler · {len(report.trials)} trials · "
        f"objective {esc(', '.join(report.objectives))}"
    )
    path.write_text(_page(f"ragsweep tune · {report.dataset}", subtitle, sections), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- reading the study


def _main(report: TuneReport) -> str:
    return report.objectives[0]


def _higher(report: TuneReport, objective: str) -> bool:
    return report.directions[objective] == "higher"


def _value(trial: TrialRecord, objective: str) -> float | None:
    v = trial.values.get(objective)
    return v if v is not None and math.isfinite(v) else None


def _complete(report: TuneReport) -> list[TrialRecord]:
    """Trials that reached every dev case with a value of the main objective, in trial order."""
    objective = _main(report)
    done = (t for t in report.trials if t.state == "complete" and _value(t, objective) is not None)
    return sorted(done, key=lambda t: t.number)


def best_so_far(report: TuneReport) -> list[tuple[int, int, float | None]]:
    """Per trial in trial order: (trial number, cases evaluated so far, the best complete value so far)."""
    objective, higher = _main(report), _higher(report, _main(report))
    out: list[tuple[int, int, float | None]] = []
    spent, best = 0, None
    for trial in sorted(report.trials, key=lambda t: t.number):
        spent += trial.cases_evaluated
        v = _value(trial, objective) if trial.state == "complete" else None
        if v is not None and (best is None or (v > best if higher else v < best)):
            best = v
        out.append((trial.number, spent, best))
    return out


# ----------------------------------------------------------------------------- sections


def _study_html(report: TuneReport) -> str:
    states: dict[str, int] = defaultdict(int)
    for t in report.trials:
        states[t.state] += 1
    saved = 1 - report.cases_evaluated / report.cases_possible if report.cases_possible else None
    items = [
        ("dataset", esc(report.dataset)),
        (
            "objectives",
            esc(", ".join(f"{o} ({report.directions[o]} is better)" for o in report.objectives)),
        ),
        ("sampler", esc(f"{report.sampler}, seed {report.seed}" if report.seed is not None else report.sampler)),
        ("pruning", "on: paired on the same dev cases, in steps" if report.prune else "off"),
        (
            "trials",
            esc(f"{len({t.config_id for t in report.trials})} distinct configurations of {report.n_trials} asked, in ")
            + esc(f"{len(report.trials)} trials: ")
            + ", ".join(f"{n} {esc(s)}" for s, n in sorted(states.items())),
        ),  # fmt: skip
        ("space", esc(f"{report.space_size} configurations" if report.space_size else "continuous ranges")),
        ("dev cases", str(report.dev_cases)),
        (
            "evaluation cost",
            esc(f"{report.cases_evaluated} cases evaluated of {report.cases_possible} possible")
            + (esc(f" (pruning saved {saved:.0%})") if saved is not None and report.prune else ""),
        ),  # fmt: skip
    ]
    space = "".join(
        f"<tr><td>{esc(k)}</td><td>{esc(json.dumps(v, default=str))}</td></tr>" for k, v in report.space.items()
    )
    return (
        _meta(items)
        + f'<h3>Space</h3><div class="scroll"><table><thead><tr><th>knob</th><th>choices or range</th></tr></thead>'
        f"<tbody>{space}</tbody></table></div>"
    )


def _best_rows(best: TuneBest, metrics: Sequence[str]) -> str:
    rows = []
    for m in metrics:
        test, base = best.test.get(m), best.baseline.get(m)
        lo, hi = best.test_intervals.get(m, (None, None))
        ci = f'<span class="ci-text">[{fmt(lo)}, {fmt(hi)}]</span>' if lo is not None else ""
        dev_lo, dev_hi = best.dev_intervals.get(m, (None, None))
        dev_ci = f' <span class="ci-text">[{fmt(dev_lo)}, {fmt(dev_hi)}]</span>' if dev_lo is not None else ""
        rows.append(
            f'<tr data-metric="{esc(m)}"><td>{esc(m)}</td><td class="num">{fmt(best.dev[m])}{dev_ci}</td>'
            f'<td class="num">{fmt(test)} {ci}</td><td>{svg.ci_glyph(test, lo, hi)}</td>'
            f'<td class="num">{fmt(base)}</td></tr>'
        )
    return "".join(rows)


def _paired_html(best: TuneBest) -> str:
    paired = best.paired
    if paired is None:
        return '<p class="note">No paired test: the dataset has no test split or no baseline was scored.</p>'
    verdict = {True: "significant", False: "not significant", None: "not testable"}[paired.significant]
    diff = "–" if paired.difference is None else f"{paired.difference:+.3f}"
    return (
        f'<p class="paired">Paired test against the baseline on the test cases, {esc(paired.metric)} at equal '
        f"depth: difference {esc(diff)}, p = {fmt(paired.p_value, 4)} (<b>{verdict}</b>, α = 0.05).</p>"
    )


def _best_html(report: TuneReport) -> str:
    best = report.best
    if best is None:
        return '<p class="note">No trial completed: there is no best configuration.</p>'
    metrics = list(dict.fromkeys([*report.objectives, *best.dev, *best.test]))
    params = "".join(f'<span class="chip">{esc(k)}={esc(v)}</span>' for k, v in best.params.items())
    return (
        f"<p>Trial <b>{best.trial}</b> (configuration <code>{esc(best.config_id)}</code>): {params}</p>"
        '<div class="scroll"><table class="best"><thead><tr><th>metric</th><th class="num">dev (chosen on)</th>'
        '<th class="num">test [95% CI]</th><th>test CI</th><th class="num">baseline, test</th></tr></thead>'
        f"<tbody>{_best_rows(best, metrics)}</tbody></table></div>{_paired_html(best)}"
        f'<p class="note">Chosen as the best of <b>{best.trials_tried}</b> trials on the dev cases: the more '
        "configurations a search tries, the luckier its winner's dev value, so read the dev value as optimistic "
        "and the test value (cases no trial was chosen on) as the estimate.</p>"
    )


def _trace_points(report: TuneReport, at: int, objective: str) -> list[tuple[str, float, float, bool]]:
    """Scatter points of the trace: each complete trial's value and the best so far (joined), ``at`` 0 for
    x = trial number, 1 for x = cases evaluated so far."""
    complete = {t.number: t for t in _complete(report)}
    points: list[tuple[str, float, float, bool]] = []
    for number, spent, best in best_so_far(report):
        x = float(number if at == 0 else spent)
        trial = complete.get(number)
        if trial is not None:
            v = _value(trial, objective)
            if v is not None and v != best:
                points.append((f"trial {number}", x, v, False))
        if best is not None:
            points.append((f"best so far after trial {number} ({spent} cases evaluated)", x, best, True))
    return points


def _trace_html(report: TuneReport) -> str:
    objective = _main(report)
    if not _complete(report):
        return '<p class="note">No trial completed: nothing to trace.</p>'
    by_trial = svg.scatter_chart(
        _trace_points(report, 0, objective), f"best {objective} so far, by trial", "trial number", objective
    )
    by_cost = svg.scatter_chart(
        _trace_points(report, 1, objective),
        f"best {objective} so far, by evaluation cost",
        "dev cases evaluated so far",
        objective,
    )
    return (
        f'<div class="figs"><div id="trace-trials">{by_trial}</div><div id="trace-cost">{by_cost}</div></div>'
        '<p class="note">Red, joined: the best dev value of the complete trials so far; blue: a complete trial '
        "below it. A pruned trial has no point of its own; what it cost moves the second chart to the right.</p>"
    )


def _group_keys(report: TuneReport, knob: str) -> list[str]:
    """The knobs a group axis (``chunking``: mappings of several knobs) sets together; [] for one knob."""
    choices = report.space.get(knob)
    if not isinstance(choices, list):
        return []
    return list(dict.fromkeys(k for choice in choices if isinstance(choice, dict) for k in choice))


def _knob_values(report: TuneReport, knob: str) -> list[tuple[object, float]]:
    """(the knob's value, the main objective) of each complete trial; a group's value is its knobs' values."""
    objective, keys = _main(report), _group_keys(report, knob)

    def value_of(trial: TrialRecord) -> object:
        if keys:
            return ", ".join(f"{k}={trial.params.get(k)}" for k in keys)
        return trial.params.get(knob)

    return [(value_of(t), v) for t in _complete(report) if (v := _value(t, objective)) is not None]


def _varies(report: TuneReport, knob: str) -> bool:
    return len({repr(x) for x, _ in _knob_values(report, knob)}) > 1


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _knob_chart(report: TuneReport, knob: str) -> str:
    objective, pairs = _main(report), _knob_values(report, knob)
    numeric = [(x, v) for x, v in pairs if _is_number(x)]
    if numeric and len(numeric) == len(pairs) and len({x for x, _ in numeric}) > 1:
        points = [(f"{knob} = {x}", float(x), v, False) for x, v in numeric]
        return svg.scatter_chart(points, f"{objective} by {knob}", knob, objective, width=420, height=300)
    groups: dict[str, list[float]] = defaultdict(list)
    for x, v in pairs:
        groups["null" if x is None else str(x)].append(v)
    items = [(label, sum(vs) / len(vs), None, None, len(vs)) for label, vs in sorted(groups.items())]
    return svg.bar_chart(items, f"mean {objective} of complete trials, by {knob}", width=420)


def _knobs_html(report: TuneReport) -> str:
    knobs = list(dict.fromkeys([*report.importance, *report.space]))
    if report.importance:
        ranked = sorted(report.importance.items(), key=lambda kv: -kv[1])
        bars = svg.bar_chart([(k, v, None, None, len(_complete(report))) for k, v in ranked], "importance (share)")
        head = (
            f'<div id="importance">{bars}</div><p class="note">Share of the variance of {esc(_main(report))} over the '
            "complete trials that each knob explains (Optuna's fANOVA importance; the shares sum to 1).</p>"
        )
    else:
        head = '<p class="note">No importance: too few complete trials to estimate it.</p>'
    charts = "".join(
        f'<div class="knob" data-knob="{esc(k)}">{_knob_chart(report, k)}</div>' for k in knobs if _varies(report, k)
    )
    return (
        head
        + f'<h3>Value against objective</h3><div class="figs">{charts}</div>'
        + '<p class="note">A numeric knob: one point per complete trial. A knob of choices: the mean over the '
        "complete trials that took each choice (n: how many). A knob every complete trial set alike has no chart.</p>"
    )


def _pareto_html(report: TuneReport) -> str:
    first, second = report.objectives[0], report.objectives[1]
    front = set(report.pareto)
    points = [
        (f"trial {t.number}", x, y, t.number in front)
        for t in _complete(report)
        if (x := _value(t, second)) is not None and (y := _value(t, first)) is not None
    ]
    if not points:
        return '<p class="note">No complete trial has a value of both objectives.</p>'
    chart = svg.scatter_chart(points, f"{first} against {second}", second, first)
    return (
        f'<div id="pareto-front">{chart}</div><p class="note">Red, joined: the trials on the Pareto front '
        f"({len(front)}): no other trial is at least as good on both objectives and better on one.</p>"
    )


def _trial_row(report: TuneReport, trial: TrialRecord, best: int | None) -> str:
    badge = f'<span class="badge {_STATE_BADGE[trial.state]}">{esc(trial.state)}</span>'
    if trial.number == best:
        badge += '<span class="badge info">best</span>'
    if trial.number in report.pareto:
        badge += '<span class="badge warn">pareto</span>'
    values = "".join(
        f'<td class="num" data-v="{"" if (v := _value(trial, o)) is None else v}">{fmt(v)}</td>'
        for o in report.objectives
    )
    params = ", ".join(f"{k}={v}" for k, v in trial.params.items())
    cost = "–" if trial.cost is None else f"${trial.cost:.4f}"
    return (
        f'<tr data-state="{esc(trial.state)}"><td class="num" data-v="{trial.number}">{trial.number}</td>'
        f'<td data-v="{esc(trial.state)}">{badge}</td>{values}'
        f'<td class="num" data-v="{trial.cases_evaluated}">{trial.cases_evaluated} / {report.dev_cases}</td>'
        f'<td class="num" data-v="{trial.seconds}">{fmt(trial.seconds, 1)}</td><td class="num">{esc(cost)}</td>'
        f"<td>{esc(params)}</td><td>{esc(trial.reason or '')}</td></tr>"
    )


def _trials_table(report: TuneReport) -> str:
    best = report.best.trial if report.best else None
    head = "".join(f'<th class="num">{esc(o)} (dev)</th>' for o in report.objectives)
    rows = "".join(_trial_row(report, t, best) for t in sorted(report.trials, key=lambda t: t.number))
    return (
        '<div class="scroll"><table class="sortable trials"><thead><tr><th class="num">trial</th><th>state</th>'
        f'{head}<th class="num">cases evaluated</th><th class="num">seconds</th><th class="num">cost</th>'
        f"<th>parameters</th><th>reason</th></tr></thead><tbody>{rows}</tbody></table></div>"
        '<p class="note">A pruned trial has no value: its paired test against the best trial on the same dev cases '
        "stopped it before the last of them (its reason says after how many). Click a header to sort.</p>"
    )


__all__ = ["write_tune_html", "best_so_far"]
