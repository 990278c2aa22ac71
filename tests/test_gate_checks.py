"""The gate's own words on a report: a floor at or below chance is named, a misspelt metric gets the
close names and every metric the run has, a metric without a value says so."""

from __future__ import annotations

import pytest

from ragsweep.evaluation.records import RunResult
from ragsweep.evaluation.scoring import floors_at_chance, quality_failures
from ragsweep.testing import FloorAtChanceWarning, QualityError, check_quality

METRICS = {f"{family}@{k}": 0.9 for family in ("recall", "mrr", "ndcg", "hit_rate", "map", "precision") for k in (1, 5)}


def _report() -> RunResult:
    baseline = {"pipeline": 0.9, "chance": 0.849, "oracle": 1.0, "lift": 0.051}
    return RunResult(
        n_cases=4,
        ks=[1, 5],
        metrics={**METRICS, "zz_last": 0.5, "fact_coverage": None},
        baselines={"recall@5": baseline},
    )


def test_a_floor_at_or_below_chance_is_named_with_its_chance_level():
    report = _report()
    assert floors_at_chance(report, {"recall@5": 0.8, "mrr@5": 0.1}) == [
        "--min recall@5=0.8 is at or below its chance level 0.849: a random order of the candidates passes it"
    ]  # mrr@5 has no chance level here: nothing said
    assert floors_at_chance(report, {"recall@5": 0.849})  # at chance: warned too
    assert floors_at_chance(report, {"recall@5": 0.85}) == []
    with pytest.warns(FloorAtChanceWarning, match=r"recall@5=0.8 is at or below its chance level 0.849") as seen:
        check_quality(report, min={"recall@5": 0.8})
    assert seen[0].filename == __file__  # it points at the line that set the floor


def test_a_misspelt_metric_gets_the_close_names_and_every_metric_of_the_run():
    with pytest.raises(QualityError) as failed:
        check_quality(_report(), min={"recal@5": 0.5})
    message = str(failed.value)
    assert "recal@5 is not a metric ragsweep computes; did you mean recall@5" in message, message
    listed = " ".join(message.split("this run's metrics: ")[1].split()).split(", ")
    assert listed == sorted([*METRICS, "zz_last"])  # all of them, past map@ and mrr@: the last one too
    assert max(map(len, message.splitlines())) <= 120


def test_the_gate_lines_fit_120_columns_keeping_every_name():
    many = {f"ragas_llm_metric_number_{i}@{k}": 0.5 for i in range(40) for k in (1, 5)}
    report = _report().model_copy(update={"metrics": {**METRICS, **many}})
    [failure] = quality_failures(report, {"nonexistent_metric": 0.5})
    assert max(map(len, failure.splitlines())) <= 120
    listed = " ".join(failure.split("this run's metrics: ")[1].split()).split(", ")
    assert listed == sorted([*METRICS, *many])


def test_a_metric_without_a_value_says_so():
    [failure] = quality_failures(_report(), {"fact_coverage": 0.5})
    assert failure.startswith("fact_coverage has no value on any of these cases (floor 0.5)\n  this run's metrics: ")
    [failure] = quality_failures(_report(), {"recall@10": 0.5})
    assert failure.startswith("recall@10 is not scored: the depths scored are 1, 5 (add 10 to --ks)")
