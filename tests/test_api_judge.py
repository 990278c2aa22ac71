"""`ragsweep.evaluate()` asks for what `ragsweep eval` can with an LLM judge (issue 16): replicates,
probes, the failure-rate threshold, the ragas LLM metrics; their statistics are on `Report.judge`.

The dataset and the fake endpoint's scripted verdicts are those of tests/test_judge_trust.py
(c1 TFT, c2 TTT, c3 FFF, c4 unparsable, c5 unanswerable).
"""

from __future__ import annotations

import json

import pytest

import ragsweep
from ragsweep.judge.trust import ScoreAgreement, VerdictAgreement
from ragsweep.testing import QualityError, assert_quality
from support import PIPELINE
from test_judge_trust import _dataset


@pytest.fixture
def endpoint(fake_server, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "fake-model")
    return fake_server


def test_replicates_give_the_cli_numbers(endpoint, tmp_path, capsys):
    from ragsweep.cli import main

    dataset = _dataset(tmp_path)
    code = main(
        [
            "eval",
            "--pipeline",
            str(PIPELINE),
            "--dataset",
            str(dataset),
            "--llm",
            "--judge",
            "--judge-replicates",
            "3",
            "--judge-probe",
            "0",
            "--out",
            str(tmp_path / "runs"),
            "--name",
            "cli",
        ]
    )
    capsys.readouterr()
    assert code == 0
    cli = json.loads((tmp_path / "runs" / "cli" / "report.json").read_text())["judge"]

    report = ragsweep.evaluate(PIPELINE, dataset, llm=True, judge=True, judge_replicates=3, judge_probe=0)
    assert report.judge is not None and report.judge.replicates == 3
    assert report.judge.metrics["judge_correct"].model_dump() == cli["metrics"]["judge_correct"]
    sa = report.self_agreement("judge_correct")
    assert isinstance(sa, VerdictAgreement)
    # hand-computed in test_judge_trust: units TFT, TTT, FFF -> agreement 7/9, alpha 0.6, kappa 0.55
    assert sa.model_dump() == cli["metrics"]["judge_correct"]["self_agreement"]
    assert sa.agreement_rate == pytest.approx(7 / 9) and sa.krippendorff_alpha == pytest.approx(0.6)
    assert sa.fleiss_kappa == pytest.approx(0.55) and sa.flipped == ["c1"]
    assert report.judge.probes is None
    assert next(c for c in report.cases if c.id == "c1").metrics["judge_correct"] == pytest.approx(2 / 3)


def test_probes_and_max_failure_rate_reach_the_run(endpoint, tmp_path):
    dataset = _dataset(tmp_path)
    strict = ragsweep.evaluate(PIPELINE, dataset, llm=True, judge=True, judge_probe=2, max_failure_rate=0.2)
    assert strict.judge is not None and strict.judge.probes is not None
    probes = strict.judge.probes
    assert probes.total > 0 and probes.llm_total > 0
    assert {p.case for p in probes.probes} <= {"c1", "c2", "c3", "c4", "c5"}
    assert strict.judge.failure_threshold == 0.2
    assert any(w.startswith("judge_correct failed on 1 of 4 cases (25.0% > 20.0%)") for w in strict.judge.warnings)

    lenient = ragsweep.evaluate(PIPELINE, dataset, llm=True, judge=True, judge_probe=0, max_failure_rate=0.3)
    assert lenient.judge is not None
    assert lenient.judge.failure_threshold == 0.3 and lenient.judge.probes is None
    assert not any("judge_correct failed" in w for w in lenient.judge.warnings)

    # the pytest helper fails on it as `ragsweep eval --max-failure-rate` fails its gate
    with pytest.raises(QualityError) as info:
        assert_quality(PIPELINE, dataset, min={}, llm=True, judge=True, judge_probe=0, max_failure_rate=0.2)
    assert "judge_correct: failed on 1 of 4 cases (25.0%) > --max-failure-rate 0.2" in str(info.value)
    assert (
        assert_quality(PIPELINE, dataset, min={}, llm=True, judge=True, judge_probe=0, max_failure_rate=0.3).judge
        is not None
    )


def test_ragas_llm_metrics_with_replicates(endpoint, tmp_path):
    report = ragsweep.evaluate(PIPELINE, _dataset(tmp_path), llm=True, ragas_llm=True, judge_replicates=2, limit=2)
    assert report.judge is not None
    ragas_blocks = {n: b for n, b in report.judge.metrics.items() if n.startswith("ragas_llm_")}
    assert ragas_blocks and all(b.replicates == 2 for b in ragas_blocks.values())
    assert report.judge.replicates == 2 and "judge_correct" not in report.judge.metrics
    assert report.metrics.get("ragas_llm_faithfulness") is not None
    ragas_agreement = report.self_agreement("ragas_llm_faithfulness")
    assert isinstance(ragas_agreement, ScoreAgreement) and ragas_agreement.cases >= 1


def test_without_llm_metrics_there_is_no_judge_section(tmp_path):
    report = ragsweep.evaluate(PIPELINE, _dataset(tmp_path), limit=2)
    assert report.judge is None and report.self_agreement() is None
