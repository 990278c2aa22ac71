"""A pytest helper: fail a test when retrieval or answer quality drops below a floor.

```python
from ragsweep.testing import assert_quality

def test_retrieval_quality():
    assert_quality("pipelines/default.yaml", "datasets/cuad-mini",
                   min={"recall@5": 0.8, "abstention_recall": 0.5})
```

The failure message names each metric below its floor with its 95% CI and its chance
level, then the worst cases (id, question, rank of the first relevant chunk). With LLM
metrics and ``max_failure_rate=R`` (passed on to :func:`ragsweep.evaluate`), an LLM metric
that failed on more than that share of its cases fails the test too, as ``ragsweep eval
--max-failure-rate R`` fails its gate.
"""

from __future__ import annotations

from typing import Any

from ragsweep.api import Report, evaluate

WORST_CASES = 5


class QualityError(AssertionError):
    """Raised by :func:`assert_quality`; ``.report`` holds the evaluation."""

    def __init__(self, message: str, report: Report):
        super().__init__(message)
        self.report = report


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def worst_cases(report: Report, metric: str, n: int = WORST_CASES) -> list[str]:
    scored = [c for c in report.cases if c.metrics.get(metric) is not None]
    scored.sort(key=lambda c: (c.metrics[metric], c.id))
    lines = []
    for case in scored[:n]:
        rank = report.first_relevant_rank(case)
        where = f"first relevant chunk at rank {rank}" if rank else f"no relevant chunk in the top {case.top_k}"
        lines.append(f"    {case.id}: {metric}={_fmt(case.metrics[metric])}, {where}: {case.question[:100]!r}")
    return lines


def quality_failures(report: Report, floors: dict[str, float]) -> list[str]:
    """One paragraph per metric below its floor (or never computed)."""
    failures = []
    for metric, floor in floors.items():
        value = report.metrics.get(metric)
        if value is not None and value >= floor:
            continue
        low, high = report.interval(metric)
        chance = report.chance(metric)
        n = (report.counts.get(metric) or {}).get("n", 0)
        head = (
            f"{metric} = {_fmt(value)} < floor {floor}"
            f" (95% CI [{_fmt(low)}, {_fmt(high)}], chance {_fmt(chance)}, n={n})"
            if value is not None
            else f"{metric} was not computed (floor {floor}); known metrics: "
            + ", ".join(sorted(m for m, v in report.metrics.items() if v is not None)[:20])
        )
        failures.append("\n".join([head, *worst_cases(report, metric)]))
    return failures


def assert_quality(pipeline: Any, dataset: Any, *, min: dict[str, float], **evaluate_kwargs: Any) -> Report:  # noqa: A002
    """Evaluate and raise :class:`QualityError` (an AssertionError) when a metric is below its
    floor, or an LLM metric failed on more than ``max_failure_rate`` of its cases; returns the
    report otherwise. ``evaluate_kwargs`` go to :func:`ragsweep.evaluate`."""
    from ragsweep.evaluation.judge_report import failure_gate

    report = evaluate(pipeline, dataset, **evaluate_kwargs)
    failures = quality_failures(report, min) + failure_gate(report.judge, evaluate_kwargs.get("max_failure_rate"))
    if failures:
        raise QualityError(
            f"{len(failures)} quality check(s) failed on {len(report.cases)} cases:\n" + "\n".join(failures), report
        )
    return report
