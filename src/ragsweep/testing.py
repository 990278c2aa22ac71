"""A pytest helper: fail a test when retrieval or answer quality drops below a floor.

```python
from ragsweep.metrics.registry import HIT_FAMILY
from ragsweep.testing import assert_quality

def test_retrieval_quality():
    assert_quality("rag/pipeline.yaml", "rag/eval-set",   # written by `ragsweep init rag`
                   min={f"{HIT_FAMILY}@5": 0.9})  # the hit rate at depth 5
```

The failure message names each metric below its floor with its 95% CI and its chance
level, then the worst cases (id, question, rank of the first relevant chunk). With LLM
metrics and ``max_failure_rate=R`` (passed on to :func:`ragsweep.evaluate`), an LLM metric
that failed on more than that share of its cases fails the test too, as ``ragsweep eval
--max-failure-rate R`` fails its gate; so does an app parser that raised on more than that share of
the documents (none allowed without it). A floor at or below its metric's chance level (a random
order of each case's candidates passes it) is a :class:`FloorAtChanceWarning`.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsweep.core.errors import RunError
from ragsweep.evaluation.parse_failures import parser_failure_gate
from ragsweep.evaluation.records import RunResult as Report  # what ragsweep.evaluate() returns
from ragsweep.evaluation.scoring import floors_at_chance, quality_failures
from ragsweep.judge.report import failure_gate

if TYPE_CHECKING:
    from ragsweep.datasets.schema import Case
    from ragsweep.pipeline.config import PipelineConfig


class QualityError(AssertionError):
    """Raised by :func:`assert_quality`; ``.report`` holds the evaluation."""

    def __init__(self, message: str, report: Report):
        super().__init__(message)
        self.report = report


class FloorAtChanceWarning(UserWarning):
    """A ``min`` floor that a random order of each case's candidates would pass."""


def check_quality(report: Report, *, min: dict[str, float], max_failure_rate: float | None = None) -> Report:  # noqa: A002
    """Raise :class:`QualityError` when a metric of an evaluated ``report`` is below its floor (or
    an LLM metric failed on more than ``max_failure_rate`` of its cases, or the app's parser raised on
    more than that share of the documents); return the report
    otherwise. :func:`assert_quality` and the pytest plugin's ``ragsweep_eval`` fixture both end here.
    A floor at or below its metric's chance level is a :class:`FloorAtChanceWarning`."""
    return _checked(report, min, max_failure_rate)


def _checked(report: Report, floors: dict[str, float], max_failure_rate: float | None) -> Report:
    """:func:`check_quality`, called by the function the user called: its warnings point at the user's line."""
    for line in floors_at_chance(report, floors):
        warnings.warn(line, FloorAtChanceWarning, stacklevel=3)
    failures = quality_failures(report, floors) + failure_gate(report.judge, max_failure_rate)
    failures += parser_failure_gate(report.manifest.corpus, max_failure_rate)  # eval's rule for documents too
    if failures:
        raise QualityError(
            f"{len(failures)} quality check(s) failed on {len(report.cases)} cases:\n" + "\n".join(failures), report
        )
    return report


def assert_quality(
    pipeline: str | Path | PipelineConfig,
    dataset: str | Path | Sequence[Case],
    *,
    min: dict[str, float],  # noqa: A002
    max_failure_rate: float | None = None,
    **evaluate_kwargs: Any,
) -> Report:
    """Evaluate and raise :class:`QualityError` (an AssertionError) when a metric is below its
    floor, or an LLM metric failed on more than ``max_failure_rate`` of its cases; returns the
    report otherwise. ``max_failure_rate`` and ``evaluate_kwargs`` go to :func:`ragsweep.evaluate`."""
    # deferred: ragsweep.api imports the run machinery; the plugin's warm path imports this module (check_quality)
    from ragsweep.api import evaluate
    from ragsweep.execution.base import ExecutorError

    if max_failure_rate is not None:
        evaluate_kwargs["max_failure_rate"] = max_failure_rate
    try:  # ragsweep's own messages name the file or option
        report = evaluate(pipeline, dataset, **evaluate_kwargs)
    except (RunError, ExecutorError, ValueError, FileNotFoundError) as err:
        failed = err
    else:
        return _checked(report, min, max_failure_rate)
    _fail_in_pytest(f"ragsweep: {failed}")  # outside the except: no chained traceback under the message
    raise failed


def _fail_in_pytest(message: str) -> None:
    """Inside a pytest session, fail the test with ``message`` alone, as the plugin's fixture does: bad
    inputs (a missing pipeline file, a dataset that does not validate) are one line, not a traceback."""
    pytest = sys.modules.get("pytest")
    if pytest is not None and hasattr(pytest, "fail"):
        pytest.fail(message, pytrace=False)
