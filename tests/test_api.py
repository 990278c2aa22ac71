"""The Python API: typed reports without a run folder, the pytest helper, stratified sampling."""

from __future__ import annotations

from pathlib import Path

import pytest

import ragsweep
from ragsweep.datasets.loader import load_dataset
from ragsweep.evaluation.records import CaseResult
from ragsweep.evaluation.selection import stratified_sample
from ragsweep.testing import QualityError, assert_quality
from support import MINI, PIPELINE


@pytest.fixture(scope="module")
def report():
    return ragsweep.evaluate(PIPELINE, MINI, sample=30, seed=1)


def test_evaluate_returns_a_typed_report_and_writes_nothing(report, tmp_path, monkeypatch):
    assert isinstance(report, ragsweep.Report) and report.run_dir is None
    assert len(report.cases) == 30 and all(isinstance(c, CaseResult) for c in report.cases)
    assert report.top_k == 5 and 5 in report.ks
    value = report.metrics["recall@5"]
    low, high = report.interval("recall@5")
    assert value is not None and low <= value <= high
    assert report.counts["recall@5"].n + report.counts["recall@5"].missing == 30
    assert 0 <= report.chance("recall@5") <= report.baselines["recall@5"]["oracle"] <= 1
    assert report.manifest.pipeline["hash"]


def test_evaluate_takes_cases_built_in_python(tmp_path):
    dataset = load_dataset(MINI)
    cases = [c for c in dataset.cases if not c.unanswerable][:4]
    out = ragsweep.evaluate(PIPELINE, cases, docs=MINI / "docs", out=tmp_path)
    assert [c.id for c in out.cases] == [c.id for c in cases]
    assert out.run_dir and (Path(out.run_dir) / "cases.jsonl").is_file()


def test_python_cases_are_evaluated_as_they_are_with_the_folders_numbers(monkeypatch):
    """The caller's cases go to the run as objects: no temporary dataset folder, no dataset loaded from
    a path, and the same numbers as the dataset folder gives for the same cases."""
    import json
    import tempfile

    import ragsweep.datasets.loader as loader

    from_folder = ragsweep.evaluate(PIPELINE, MINI, limit=8)
    cases = load_dataset(MINI).cases[:8]

    def no_temp(*args, **kwargs):
        raise AssertionError("a temporary folder was made")

    def no_folder(*args, **kwargs):
        raise AssertionError("a dataset folder was loaded")

    monkeypatch.setattr(tempfile, "TemporaryDirectory", no_temp)
    monkeypatch.setattr(tempfile, "mkdtemp", no_temp)
    monkeypatch.setattr(loader, "load_dataset", no_folder)
    given = ragsweep.evaluate(PIPELINE, cases, docs=MINI / "docs")
    assert [c.id for c in given.cases] == [c.id for c in from_folder.cases]
    for section in ("metrics", "intervals", "baselines", "counts"):
        assert json.dumps(given.model_dump(mode="json")[section], sort_keys=True) == json.dumps(
            from_folder.model_dump(mode="json")[section], sort_keys=True
        ), section
    assert [c.line() for c in given.cases] == [c.line() for c in from_folder.cases]


def test_a_pipeline_config_is_used_as_it_is(monkeypatch):
    """A PipelineConfig given to evaluate() is not turned back into a path and loaded again."""
    from ragsweep.pipeline.config import PipelineConfig

    config = PipelineConfig.load(PIPELINE, {"top_k": 3})

    def no_load(*args, **kwargs):
        raise AssertionError("the pipeline was loaded from its path again")

    monkeypatch.setattr(PipelineConfig, "load", no_load)
    report = ragsweep.evaluate(config, MINI, limit=3)
    assert report.top_k == 3 and report.manifest.pipeline["hash"] == config.hash


def test_assert_quality_failure_names_metric_ci_chance_and_worst_cases():
    with pytest.raises(QualityError) as info:
        assert_quality(PIPELINE, MINI, min={"recall@5": 1.01, "abstention_recall": 0.0}, sample=30, seed=1)
    message = str(info.value)
    assert "recall@5 = " in message and "< floor 1.01" in message and "95% CI [" in message and "chance " in message
    assert "abstention_recall" not in message  # above its floor
    worst = [c for c in info.value.report.cases if c.metrics.get("recall@5") is not None]
    worst.sort(key=lambda c: (c.metrics["recall@5"], c.id))
    assert worst[0].id in message and ("rank" in message)
    assert assert_quality(PIPELINE, MINI, min={"recall@5": 0.0}, sample=30, seed=1).metrics["recall@5"] is not None


def test_stratified_sample_is_reproducible_and_proportional():
    cases = list(load_dataset(MINI).cases)
    a = stratified_sample(cases, 41, seed=7)
    b = stratified_sample(cases, 41, seed=7)
    c = stratified_sample(cases, 41, seed=8)
    assert [x.id for x in a] == [x.id for x in b] and [x.id for x in a] != [x.id for x in c]
    types = {x.type for x in cases}
    for t in types:  # every type keeps its share (within one case)
        share = sum(x.type == t for x in cases) / len(cases)
        assert abs(sum(x.type == t for x in a) - 41 * share) <= 1
    first_contract = cases[:41]  # --limit takes the first N: on CUAD, one contract
    assert {x.doc_scope[0] for x in a} != {x.doc_scope[0] for x in first_contract}
