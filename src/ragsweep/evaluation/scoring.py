"""The one aggregator of case records (eval, sweep, the API, report.html), and the gate.

A record is one :class:`~ragsweep.evaluation.records.CaseResult` (as a dict: a line of
``cases.jsonl``) with a flat ``metrics`` dict whose names equal the aggregate names
(``recall@5``...), so two runs can be paired on case ids. Aggregation takes the
mean over the cases where a metric exists; the cases where it does not are
counted as missing, never averaged as NaN. Beside each retrieval metric it puts
the mean chance and oracle values over the same cases, and the lift over chance.
"""

from __future__ import annotations

import statistics
import textwrap
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ragsweep.evaluation.records import Aggregate, CaseResult, Count, RunResult, UnlocatedCase, UnlocatedReport
from ragsweep.funnel.attribute import diagnose
from ragsweep.metrics.answer import ABSTAINED, ABSTENTION_F1, UNPARSED_SCOPE, abstention_values, aggregate_abstention
from ragsweep.metrics.intervals import abstention_f1_interval, bootstrap_interval
from ragsweep.metrics.registry import (
    FIRST_RELEVANT_RANK,
    FIRST_RELEVANT_RANK_MEAN,
    FIRST_RELEVANT_RANK_MEDIAN,
    SCORED_RETRIEVAL,
    judged_by_relevance,
    set_metrics,
    unknown_name,
)
from ragsweep.pipeline.corpus import shown_name


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def case_document(case: CaseResult) -> str | None:
    """The document a case is about: the first of its scope (None for corpus-wide questions)."""
    return case.doc_scope[0] if case.doc_scope else None


def _summary(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values), "count": len(values)}


def aggregate(
    cases: Sequence[CaseResult],
    with_intervals: bool = True,
    seed: int = 0,
    interval_metrics: Sequence[str] | None = None,
) -> Aggregate:
    """Means, counts (n, missing), bootstrap intervals, set metrics, chance/oracle, groups, and where
    the cases were lost (the funnel's diagnosis).

    ``interval_metrics`` limits the bootstrap to those names (a sweep needs
    intervals for its objectives, not for every metric of every configuration).
    """
    names = list(dict.fromkeys(name for case in cases for name in case.metrics))
    metrics: dict[str, float | None] = {}
    counts: dict[str, Count] = {}
    intervals: dict[str, list[float | None]] = {}
    for name in names:
        values = [v for case in cases if (v := case.metric(name)) is not None]
        counts[name] = Count(n=len(values), missing=len(cases) - len(values))
        metrics[name] = statistics.fmean(values) if values else None
        if with_intervals and len(values) >= 2 and (interval_metrics is None or name in interval_metrics):
            intervals[name] = list(bootstrap_interval(values, seed=seed))
    frr = [v for case in cases if (v := case.metric(FIRST_RELEVANT_RANK)) is not None]
    if frr:
        metrics[FIRST_RELEVANT_RANK_MEAN] = statistics.fmean(frr)
        metrics[FIRST_RELEVANT_RANK_MEDIAN] = float(statistics.median(frr))
    scored = [case for case in cases if case.metric(SCORED_RETRIEVAL) is not None]  # any k
    counts[FIRST_RELEVANT_RANK] = Count(n=len(frr), missing=len(scored) - len(frr))
    _unlocated_counts(cases, counts)
    pairs = _abstention(cases, metrics, counts)
    if with_intervals and pairs:
        for name, values in abstention_values(pairs).items():
            if len(values) >= 2 and (interval_metrics is None or name in interval_metrics):
                intervals[name] = list(bootstrap_interval(values, seed=seed))
        if interval_metrics is None or ABSTENTION_F1 in interval_metrics:
            intervals[ABSTENTION_F1] = list(abstention_f1_interval(pairs, seed=seed))
    return Aggregate(
        metrics=metrics,
        counts=counts,
        intervals=intervals,
        baselines=baselines(cases),
        groups={
            "type": group_by(cases, lambda case: case.type or "(none)"),
            "document": group_by(cases, case_document),
        },
        diagnosis=diagnose(cases),
    )


def _unlocated_counts(cases: Sequence[CaseResult], counts: dict[str, Count]) -> None:
    """Beside n and missing of each metric judged by relevance: how many cases whose evidence is
    found in no parsed document it leaves out (``unlocated``) or counts in n (``unlocated_in_n``,
    scored 0 under ``--unlocated zero``)."""
    unlocated = [case for case in cases if case.evidence_unlocated]
    if not unlocated:
        return
    for name, count in counts.items():
        if not judged_by_relevance(name):
            continue
        present = sum(1 for case in unlocated if case.metric(name) is not None)
        count.unlocated = len(unlocated) - present
        if present:
            count.unlocated_in_n = present


def unlocated_report(cases: Sequence[CaseResult], mode: str) -> UnlocatedReport:
    """The cases with evidence found in no parsed document, as report.json names them."""
    return UnlocatedReport(
        mode=mode,
        cases=[
            UnlocatedCase(id=c.id, none_located=c.evidence_unlocated, spans=c.unlocated) for c in cases if c.unlocated
        ],
    )


def unlocated_lines(report: UnlocatedReport, n_cases: int, table: str = "eval", shown: int = 5) -> list[str]:
    """What the terminal says of the unlocated cases: how many, what their numbers are, and the
    first ``shown`` by id, span and document. ``table``: ``eval`` (its table has an unlocated
    column) or ``sweep`` (each configuration's counts hold them; report.json / sweep.json name all)."""
    none, partly = report.none_located, report.partly
    lines = []
    where = "report.json" if table == "eval" else "sweep.json"
    if none:
        counted = (
            (
                "the unlocated column counts them among the cases without a value",
                "the unlocated column counts them in n",
            )
            if table == "eval"
            else ("in every configuration", "in every configuration")
        )
        what = (
            f"left out of the retrieval metrics ({counted[0]}; --unlocated zero scores them 0)"
            if report.mode == "exclude"
            else f"scored 0 on the retrieval metrics (--unlocated zero; {counted[1]})"
        )
        lines.append(
            f"unlocated evidence: {len(none)} of {n_cases} cases have no evidence span (or relevant document) found "
            f"in the parsed documents, {what}; `ragsweep validate --parse` shows the closest passages"
        )
        lines.extend(f"  {_unlocated_line(case)}" for case in none[:shown])
        if len(none) > shown:
            lines.append(f"  ... and {len(none) - shown} more ({where}: unlocated)")
    if partly:
        spans = sum(len(c.spans) for c in partly)
        lines.append(
            f"unlocated evidence: {spans} span(s) of {len(partly)} scored case(s) are found in no parsed document "
            f"(e.g. {_unlocated_line(partly[0])})"
        )
    return lines


def _unlocated_line(case: UnlocatedCase) -> str:
    span = case.spans[0]
    where = shown_name(span.doc_id) if span.doc_id else "its documents"
    more = f" (+{len(case.spans) - 1} more)" if len(case.spans) > 1 else ""
    return f"{case.id}: {span.shown()} in {where}: {span.reason}{more}"


def _abstention(
    cases: Sequence[CaseResult], metrics: dict[str, float | None], counts: dict[str, Count]
) -> list[tuple[bool, bool]]:
    """Abstention precision/recall over the answered cases; "abstained" as the answer metrics
    decided it (the answerer's flag or a refusal-style text). Returns the (abstained,
    unanswerable) pairs; each rate's n is the cases it is a share of."""
    answered = [case for case in cases if case.answer is not None and not case.answer.error]
    unparsed = sum(UNPARSED_SCOPE in case.notes for case in answered)  # nothing to find: no abstention to judge
    pairs = [
        (bool(case.metrics.get(ABSTAINED, case.answer.abstained)), case.unanswerable)
        for case in answered
        if UNPARSED_SCOPE not in case.notes and case.answer is not None
    ]
    if unparsed:
        counts["unanswerable_unparsed"] = Count(n=unparsed)
    if not pairs:
        return pairs
    abst = aggregate_abstention(pairs)
    for name in set_metrics():
        if name in abst:
            metrics[name] = _float(abst[name])
    counts["abstention"] = Count(n=len(pairs), missing=len(cases) - len(pairs))
    for name, values in abstention_values(pairs).items():
        counts[name] = Count(n=len(values), missing=len(cases) - len(values))
    return pairs


def baselines(cases: Sequence[CaseResult]) -> dict[str, dict[str, float | int | None]]:
    """For every metric with chance/oracle values: the pipeline, chance and oracle means
    over the same cases (those where all three exist), and the lift over chance."""
    names = list(dict.fromkeys(name for case in cases for name in case.chance))
    out: dict[str, dict[str, float | int | None]] = {}
    for name in names:
        rows = [(case.metric(name), case.chance.get(name), case.oracle.get(name)) for case in cases if case.chance]
        full = [(p, c, o) for p, c, o in rows if p is not None and c is not None and o is not None]
        if not full:
            continue
        pipeline, chance, oracle = (statistics.fmean(col) for col in zip(*full, strict=True))
        out[name] = {
            "pipeline": pipeline,
            "chance": chance,
            "oracle": oracle,
            "lift": pipeline - chance,
            "n": len(full),
        }
    return out


def group_by(
    cases: Iterable[CaseResult], key: Callable[[CaseResult], str | None]
) -> dict[str, dict[str, dict[str, float]]]:
    buckets: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for case in cases:
        label = key(case)
        if label is None:
            continue
        for name, value in case.metrics.items():
            if value is not None:
                buckets[label][name].append(value)
    return {
        label: {name: _summary(values) for name, values in sorted(by_metric.items())}
        for label, by_metric in sorted(buckets.items())
    }


WORST_CASES = 5  # cases a failed floor lists


GATE_COLUMNS = 120  # the gate's lines fit a terminal this wide


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def worst_cases(report: RunResult, metric: str, n: int = WORST_CASES, below: float | None = None) -> list[str]:
    """The ``n`` lowest-scoring cases of ``metric`` (only those under ``below`` when given), one line each."""
    scored = [(value, c.id, c) for c in report.cases if (value := c.metrics.get(metric)) is not None]
    if below is not None:  # a case at 1.0 is not why a mean is under its floor
        scored = [s for s in scored if s[0] < below]
    scored.sort(key=lambda s: s[:2])
    lines = []
    for value, _, case in scored[:n]:
        rank = report.first_relevant_rank(case)
        where = f"first relevant chunk at rank {rank}" if rank else f"no relevant chunk in the top {case.top_k}"
        lines.append(f"    {case.id}: {metric}={_fmt(value)}, {where}:\n      {case.question[:100]!r}")
    return lines


def not_computed(report: RunResult, metric: str, floor: float) -> str:
    """Why a floored metric has no value: no case had one, the run did not compute it, or no such
    metric (with the close names); then every metric this run has a value for."""
    if metric in report.metrics:
        why = f"{metric} has no value on any of these cases (floor {floor})"
    else:
        why = unknown_name(metric, report.ks, report.budgets) or f"{metric} was not computed by this run"
        why += f" (floor {floor})"
    known = "this run's metrics: " + ", ".join(sorted(m for m, v in report.metrics.items() if v is not None))
    wrap = textwrap.TextWrapper(
        GATE_COLUMNS, initial_indent="  ", subsequent_indent="    ", break_long_words=False, break_on_hyphens=False
    )
    return "\n".join([why, *wrap.wrap(known)])


def quality_failures(report: RunResult, floors: dict[str, float]) -> list[str]:
    """The gate: one paragraph per metric below its floor (or never computed), with its 95% CI,
    chance level and n, then the worst cases under the floor; the CLI's gate and assert_quality's."""
    failures = []
    for metric, floor in floors.items():
        value = report.metric(metric)
        if value is not None and value >= floor:
            continue
        low, high = report.interval(metric)
        chance = report.chance(metric)
        count = report.count(metric)
        n = count.n if count is not None else 0
        head = (
            f"{metric} = {_fmt(value)} < floor {floor}"
            f" (95% CI [{_fmt(low)}, {_fmt(high)}], chance {_fmt(chance)}, n={n})"
            if value is not None
            else not_computed(report, metric, floor)
        )
        failures.append("\n".join([head, *worst_cases(report, metric, below=floor)]))
    return failures


def floors_at_chance(report: RunResult, floors: Mapping[str, float]) -> list[str]:
    """One line per floor at or below its metric's chance level (a random order of each case's
    candidates): a gate that such an order passes checks nothing about the ranking."""
    lines = []
    for metric, floor in floors.items():
        chance = report.chance(metric)
        if chance is not None and floor <= chance:
            lines.append(
                f"--min {metric}={floor} is at or below its chance level {_fmt(chance)}:"
                " a random order of the candidates passes it"
            )
    return lines


def parse_floors(items: Sequence[str] | None) -> dict[str, float]:
    floors: dict[str, float] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            floors[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--min {item!r} is not METRIC=NUMBER") from None
    return floors
