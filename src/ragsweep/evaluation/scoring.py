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
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from ragsweep.metrics.registry import SET_METRICS


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def case_document(record: dict[str, Any]) -> str | None:
    """The document a case is about: the first of its scope (None for corpus-wide questions)."""
    scope = record.get("doc_scope") or []
    return scope[0] if scope else None


def _summary(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values), "count": len(values)}


def aggregate(
    records: Sequence[dict[str, Any]],
    with_intervals: bool = True,
    seed: int = 0,
    interval_metrics: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Means, counts (n, missing), bootstrap intervals, set metrics and groups.

    ``interval_metrics`` limits the bootstrap to those names (a sweep needs
    intervals for its objectives, not for every metric of every configuration).
    """
    from ragsweep.metrics.answer import aggregate_abstention
    from ragsweep.metrics.stats import bootstrap_ci

    names: list[str] = []
    for record in records:
        for name in record.get("metrics", {}):
            if name not in names:
                names.append(name)
    metrics: dict[str, float | None] = {}
    counts: dict[str, dict[str, int]] = {}
    intervals: dict[str, list[float | None]] = {}
    for name in names:
        values = [r["metrics"][name] for r in records if r.get("metrics", {}).get(name) is not None]
        counts[name] = {"n": len(values), "missing": len(records) - len(values)}
        metrics[name] = statistics.fmean(values) if values else None
        if with_intervals and len(values) >= 2 and (interval_metrics is None or name in interval_metrics):
            low, high = bootstrap_ci(values, seed=seed)
            intervals[name] = [low, high]
    frr = [
        r["metrics"]["first_relevant_rank"]
        for r in records
        if r.get("metrics", {}).get("first_relevant_rank") is not None
    ]
    if frr:
        metrics["first_relevant_rank_mean"] = statistics.fmean(frr)
        metrics["first_relevant_rank_median"] = float(statistics.median(frr))
    scored = [r for r in records if r.get("metrics", {}).get("r_precision") is not None]  # any k
    counts["first_relevant_rank"] = {"n": len(frr), "missing": len(scored) - len(frr)}
    # "abstained" as the answer metrics decided it: the answerer's flag or a refusal-style text
    pairs = [
        (bool(r["metrics"].get("abstained", r["answer"]["abstained"])), bool(r["unanswerable"]))
        for r in records
        if r.get("answer") and not r["answer"].get("error")
    ]
    if pairs:
        abst = aggregate_abstention(pairs)
        for name in SET_METRICS:
            if name in abst:
                metrics[name] = _float(abst[name])
        counts["abstention"] = {"n": len(pairs), "missing": len(records) - len(pairs)}
    return {
        "metrics": metrics,
        "counts": counts,
        "intervals": intervals,
        "baselines": baselines(records),
        "groups": {
            "type": group_by(records, lambda r: r.get("type") or "(none)"),
            "document": group_by(records, case_document),
        },
    }


def baselines(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, float | int | None]]:
    """For every metric with chance/oracle values: the pipeline, chance and oracle means
    over the same cases (those where all three exist), and the lift over chance."""
    names: list[str] = []
    for record in records:
        for name in record.get("chance") or {}:
            if name not in names:
                names.append(name)
    out: dict[str, dict[str, float | int | None]] = {}
    for name in names:
        rows = [
            (r["metrics"].get(name), r["chance"].get(name), (r.get("oracle") or {}).get(name))
            for r in records
            if r.get("chance")
        ]
        rows = [row for row in rows if None not in row]
        if not rows:
            continue
        pipeline, chance, oracle = (statistics.fmean(col) for col in zip(*rows))
        out[name] = {
            "pipeline": pipeline,
            "chance": chance,
            "oracle": oracle,
            "lift": pipeline - chance,
            "n": len(rows),
        }
    return out


def group_by(records: Iterable[dict[str, Any]], key) -> dict[str, dict[str, dict[str, float]]]:
    buckets: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        label = key(record)
        if label is None:
            continue
        for name, value in record.get("metrics", {}).items():
            if value is not None:
                buckets[label][name].append(value)
    return {
        label: {name: _summary(values) for name, values in sorted(by_metric.items())}
        for label, by_metric in sorted(buckets.items())
    }


def check_floors(metrics: dict[str, float | None], floors: dict[str, float]) -> list[str]:
    """The CI gate: one message per metric below its floor (or not computed)."""
    failures = []
    for name, floor in floors.items():
        value = metrics.get(name)
        if value is None:
            failures.append(f"{name} was not computed (floor {floor})")
        elif value < floor:
            failures.append(f"{name} = {value:.4f} is below its floor {floor}")
    return failures


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
