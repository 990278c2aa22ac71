"""Judges you can trust (issue 16): replicates and self-agreement, repair of unparsable replies,
agreement with reference verdicts and prediction-powered inference, probes, the failure gate.

Every statistic is checked on an example computed by hand (the arithmetic is in the comments).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragsweep.datasets.schema import Case
from ragsweep.evaluation.records import CaseResult
from ragsweep.judge import stats as js
from ragsweep.judge.metric import JudgeItem, LLMJudge, estimate_judge_calls
from ragsweep.judge.probes import probe_judge
from ragsweep.judge.report import failure_gate, judge_section
from ragsweep.judge.trust import JudgeSection, Probes, ScoreAgreement, VerdictAgreement

Z95 = 1.959963984540054
T, F = True, False


# ----------------------------------------------------------------- statistics, by hand


def test_self_agreement_statistics_by_hand():
    units = [[T, T, T], [T, F, T], [F, F, F], [T, T, F]]
    # P_i = sum_c n_c (n_c - 1) / (m (m - 1)): 1, 2/6, 1, 2/6 -> mean 2/3
    assert js.pairwise_agreement(units) == pytest.approx(2 / 3)
    # Fleiss: 7 T and 5 F of 12 -> P_e = (49 + 25) / 144; kappa = (96/144 - 74/144) / (70/144) = 22/70
    assert js.fleiss_kappa(units) == pytest.approx(22 / 70)
    # Krippendorff nominal: n = 12; ordered disagreeing pairs 4 in each mixed unit -> D_o = (4/2 + 4/2) / 12 = 1/3;
    # D_e = (12^2 - 7^2 - 5^2) / (12 * 11) = 70/132; alpha = 1 - (1/3) / (70/132) = 13/35
    assert js.krippendorff_alpha(units) == pytest.approx(13 / 35)
    share, flipped = js.flip_share(units)
    assert share == 0.5 and flipped == [1, 3]
    # a missing replicate: unit 2 keeps two values (pairable), a lone value is dropped
    assert js.krippendorff_alpha([[T, T], [F]]) is None  # nothing varies: undefined, not NaN
    assert js.fleiss_kappa([[T, T, T], [T, T, T]]) is None and js.pairwise_agreement([[T, T, T]]) == 1.0


def test_krippendorff_alpha_matches_krippendorffs_published_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", nominal example:
    # 4 observers, 12 units, missing values; alpha_nominal = 0.743
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
    c = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
    units = [[v for v in unit if v is not None] for unit in zip(a, b, c, d)]
    assert js.krippendorff_alpha(units, "nominal") == pytest.approx(0.743, abs=5e-4)
    # interval level on the same data: 0.849 in the same paper
    assert js.krippendorff_alpha(units, "interval") == pytest.approx(0.849, abs=5e-4)


def test_fleiss_kappa_matches_fleiss_worked_example():
    # 10 subjects, 14 raters, 5 categories (the example of Fleiss' kappa on Wikipedia): kappa = 0.210
    counts = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    units = [[j for j, n in enumerate(row) for _ in range(n)] for row in counts]
    assert js.fleiss_kappa(units) == pytest.approx(0.2099, abs=1e-4)


def test_cohen_kappa_and_confusion_by_hand():
    ref = [T, T, T, T, F, F, F, F, T, F]
    jud = [T, T, T, F, F, F, T, F, T, F]
    # p_o = 8/10; marginals 5/5 and 5/5 -> p_e = 0.5; kappa = (0.8 - 0.5) / 0.5 = 0.6
    assert js.cohen_kappa(ref, jud) == pytest.approx(0.6)
    assert js.confusion_matrix(ref, jud) == {"tp": 4, "fn": 1, "fp": 1, "tn": 4}
    agree = js.verdict_agreement(ref, jud)
    assert agree["agreement"] == pytest.approx(0.8) and agree["n"] == 10
    assert js.cohen_kappa([T, T], [T, T]) is None  # p_e = 1: undefined


def test_ppi_mean_by_hand():
    judge_all = [1, 1, 1, 0, 1, 0, 1, 1]  # N = 8, mean 0.75
    judge_lab, human = [1, 1, 1, 0], [1, 0, 1, 0]  # rectifier Y - f = [0, -1, 0, 0], mean -0.25
    out = js.ppi_mean(judge_all, judge_lab, human)
    assert out["judge_mean"] == pytest.approx(0.75) and out["rectifier"] == pytest.approx(-0.25)
    assert out["estimate"] == pytest.approx(0.5)
    # var_N(f) = (6 * 0.25^2 + 2 * 0.75^2) / 7 = 1.5 / 7; var_n(Y - f) = (3 * 0.25^2 + 0.75^2) / 3 = 0.25
    se = math.sqrt((1.5 / 7) / 8 + 0.25 / 4)
    assert out["ci"] == pytest.approx([0.5 - Z95 * se, 0.5 + Z95 * se])
    assert out["reference_mean"] == pytest.approx(0.5)
    ref_se = math.sqrt((4 * 0.25) / 3 / 4)  # var of [1, 0, 1, 0] = 1/3
    assert out["reference_ci"] == pytest.approx([0.5 - Z95 * ref_se, 0.5 + Z95 * ref_se])
    judge_se = math.sqrt((1.5 / 7) / 8)
    assert out["judge_ci"] == pytest.approx([0.75 - Z95 * judge_se, 0.75 + Z95 * judge_se])
    clipped = js.ppi_mean(judge_all, judge_lab, human, bounds=(0.0, 1.0))
    assert clipped["ci"] == pytest.approx([0.0, 1.0]) and clipped["estimate"] == out["estimate"]


def test_noise_share_by_hand():
    units = [[1, 1, 1], [1, 0, 1], [0, 0, 0], [1, 1, 0]]
    # case means 1, 2/3, 0, 2/3 (mean 7/12): var = (25 + 1 + 49 + 1) / 144 / 3 = 76/432
    # replicate variances 0, 1/3, 0, 1/3; noise term = mean(s2_i / 3) = (2/9) / 4 = 24/432
    out = js.noise_share(units)
    assert out["variance_share"] == pytest.approx(24 / 76)
    assert out["width_share"] == pytest.approx(1 - math.sqrt(52 / 76))
    # one replicate each: noise mean(s2_i) = 72/432 on top of the case variance 52/432
    assert out["single_replicate_variance_share"] == pytest.approx(72 / 124)
    assert out["ci_half_width"] == pytest.approx(Z95 * math.sqrt(76 / 432 / 4))
    assert out["ci_half_width_noise_free"] == pytest.approx(Z95 * math.sqrt(52 / 432 / 4))
    # a case decided by a rule has no noise; a lone valid replicate borrows the pooled variance (1/6)
    out = js.noise_share([[1, 0, 1], [1]], deterministic=[False, True])
    assert out["noise_variance"] == pytest.approx(1 / 3)
    assert js.intra_case_sd(units)["pooled_sd"] == pytest.approx(math.sqrt(1 / 6))


# ----------------------------------------------------------------- the judge on the fake endpoint


def _item(question: str, answer: str = "New York law governs.", reference: str = "New York", **kw) -> JudgeItem:
    return JudgeItem(question=question, answer=answer, reference=reference, **kw)


def test_replicates_disagree_and_self_agreement_is_computed(fake_server, llm_settings):  # noqa: F811
    items = [
        _item("#replicates:TFT Which law?"),
        _item("#replicates:TTT Which law?"),
        _item("#replicates:FFF Which law?"),
        _item("#replicates:TFF Which law?"),
        _item("Who audits?", answer="I don't know.", reference="", unanswerable=True),
    ]
    verdicts = LLMJudge(llm_settings, replicates=3).judge_items(items)
    assert [[r.is_correct for r in v.replicates] for v in verdicts[:4]] == [[T, F, T], [T, T, T], [F, F, F], [T, F, F]]
    assert [v.is_correct for v in verdicts] == [T, T, F, F, T]  # majority; the rule case needs no call
    assert [v.score for v in verdicts] == pytest.approx([2 / 3, 1, 0, 1 / 3, 1])
    assert verdicts[0].sd == pytest.approx(math.sqrt(1 / 3)) and verdicts[4].method == "rule"
    assert fake_server.chat_requests() == 12  # 4 cases x 3 replicates
    seeds = sorted((body.get("seed") for _, body in fake_server.log), key=lambda s: -1 if s is None else s)
    assert seeds == [None] * 4 + [1] * 4 + [2] * 4  # replicate 0 is the plain request

    # each replicate is its own cache entry: a re-run makes no call, one replicate re-uses replicate 0
    again = LLMJudge(llm_settings, replicates=3).judge_items(items)
    assert [v.score for v in again] == [v.score for v in verdicts] and all(v.cached for v in again[:4])
    single = LLMJudge(llm_settings).judge_items(items)
    assert fake_server.chat_requests() == 12 and [v.is_correct for v in single[:4]] == [T, T, F, T]

    # the report: Fleiss' P-bar 2/3; 6 T / 6 F -> kappa (2/3 - 1/2) / (1/2) = 1/3;
    # alpha = 1 - (1/3) / ((144 - 72) / 132) = 7/18; flips in 2 of 4 cases
    cases = [
        CaseResult(id=f"c{i}", question="", top_k=1, judge=v, metrics={"judge_correct": v.score})
        for i, v in enumerate(verdicts)
    ]
    section = judge_section(cases, replicates=3, temperature=0.0)
    assert section is not None
    block = section.metrics["judge_correct"]
    sa = block.self_agreement
    assert isinstance(sa, VerdictAgreement)
    assert sa.agreement_rate == pytest.approx(2 / 3) and sa.fleiss_kappa == pytest.approx(1 / 3)
    assert sa.krippendorff_alpha == pytest.approx(7 / 18)
    assert sa.flip_share == 0.5 and sa.flipped == ["c0", "c3"] and sa.cases == 4
    assert block.llm_judged == 4 and block.rule_decided == 1
    # noise over all 5 cases, the rule case without noise: means 2/3, 1, 0, 1/3, 1 (mean 0.6);
    # var = (1/225 + 36/225 + 81/225 + 16/225 + 36/225) / 4 = 170/900; noise = (1/9 + 1/9) / 5 = 2/45
    assert block.noise is not None and block.noise.variance_share == pytest.approx((2 / 45) / (170 / 900))


def test_garbage_then_valid_json_after_repair(fake_server, llm_settings):  # noqa: F811
    judge = LLMJudge(llm_settings)
    v = judge.judge_items([_item("#garbage-once Which law?")])[0]
    assert v.is_correct is True and v.repaired is True and v.error is None and v.failure is None
    assert fake_server.chat_requests() == 2
    repair = fake_server.log[1][1]["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert "Let me think" in repair[2]["content"] and "could not be read (no is_correct verdict" in repair[3]["content"]
    assert v.prompt_tokens > 0 and v.completion_tokens > 0  # both calls counted

    # still garbage after the one re-ask: a named failure, never a crash or a silent NaN
    bad = judge.judge_items([_item("#replicates:X Which law?")])[0]
    assert bad.is_correct is None and bad.score is None and bad.failure == "unparsable"
    assert bad.error.startswith("unparsable judge reply") and "asked again" in bad.error
    assert fake_server.chat_requests() == 4
    # without repair: one call, the failure as is
    norepair = LLMJudge(llm_settings, repair=False).judge_items([_item("#replicates:R Who?")])[0]
    assert norepair.failure == "unparsable" and fake_server.chat_requests() == 5
    # a replicate repaired among others
    mixed = LLMJudge(llm_settings, replicates=3).judge_items([_item("#replicates:TRX Which law?")])[0]
    assert [r.is_correct for r in mixed.replicates] == [T, T, None]
    assert [r.repaired for r in mixed.replicates] == [F, T, F] and mixed.replicates[2].failure == "unparsable"
    assert mixed.score == 1.0 and mixed.repaired is True


def test_reference_verdicts_judge_the_labelled_answer(fake_server, llm_settings):  # noqa: F811
    ref_same = {"answer": "New York law governs.", "is_correct": True, "source": "human:test"}
    ref_other = {"answer": "Delaware.", "is_correct": True, "source": "human:test"}
    items = [
        _item("Which law?", reference_verdict=ref_same),
        _item("Which law?", answer="The laws of New York.", reference_verdict=ref_other),
    ]
    v = LLMJudge(llm_settings).judge_items(items)
    assert v[0].reference_check["answer_is_run_answer"] is True and v[0].reference_check["judge_is_correct"] is True
    assert v[1].reference_check["answer_is_run_answer"] is False
    assert v[1].reference_check["judge_is_correct"] is False and v[1].reference_check["reference"] == 1.0
    # two run answers + the labelled answer of case 1; case 0's labelled answer is its run answer: not asked again
    assert fake_server.chat_requests() == 3


def test_probes_catch_a_judge_that_says_yes_to_everything(fake_server, llm_settings):  # noqa: F811
    cases = [
        Case(id="law", question="Which state's law governs?", type="Governing Law", reference_answer="New York"),
        Case(id="date", question="When was it signed?", type="Agreement Date", reference_answer="March 24, 2006"),
        Case(id="audit", question="Who audits?", type="Audit Rights", unanswerable=True),
    ]
    good = probe_judge(LLMJudge(llm_settings), cases, n_cases=2)
    assert good["passed"] == good["total"] == 10 and good["llm_total"] == 6
    assert {p["probe"] for p in good["probes"]} == {
        "correct",
        "correct_in_sentence",
        "wrong",
        "i_dont_know",
        "i_dont_know_unanswerable",
        "confident_unanswerable",
    }
    yes_man = [c.model_copy(update={"question": "#replicates:T " + c.question}) for c in cases]
    bad = probe_judge(LLMJudge(llm_settings), yes_man, n_cases=2)
    assert bad["llm_passed"] == 4 and [p["probe"] for p in bad["failed"]] == ["wrong", "wrong"]
    section = judge_section([], probes=Probes.model_validate(bad))
    assert section is not None and section.warnings and "judge probes: 2 of 10 wrong" in section.warnings[0]


def test_estimate_counts_replicates(llm_settings):  # noqa: F811
    one = estimate_judge_calls([("Which law?", "New York", False)], llm_settings)
    three = estimate_judge_calls([("Which law?", "New York", False)], llm_settings, replicates=3)
    assert three.calls == 3 * one.calls and three.prompt_tokens == 3 * one.prompt_tokens


# ----------------------------------------------------------------- a whole run


def _dataset(tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "contract.txt").write_text(
        "This Agreement is governed by the laws of the State of New York. The term is five years. "
        "The Licensor is Acme Corp. The agreement was signed on March 24, 2006.\n",
        encoding="utf-8",
    )
    rows = [
        {
            "id": "c1",
            "question": "#replicates:TFT Which state's law governs?",
            "reference_answer": "New York",
            "reference_verdict": {"answer": "New York law governs.", "is_correct": True, "source": "human:test"},
        },
        {
            "id": "c2",
            "question": "#replicates:TTT What is the term?",
            "reference_answer": "five years",
            "reference_verdict": {"answer": "ten years", "is_correct": False, "source": "human:test"},
        },
        {"id": "c3", "question": "#replicates:FFF Who is the licensor?", "reference_answer": "Acme Corp"},
        {"id": "c4", "question": "#replicates:X When was it signed?", "reference_answer": "March 24, 2006"},
        {"id": "c5", "question": "Who audits the accounts?", "unanswerable": True},
    ]
    (root / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for r in rows:
        if not r.get("unanswerable"):
            r["relevant_ids"] = ["contract.txt"]
    (root / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (root / "dataset.yaml").write_text("relevance: doc_id\n", encoding="utf-8")
    (root / "README.md").write_text("A test dataset written by tests/test_judge_trust.py; no licence needed.\n")
    return root


def test_eval_with_replicates_reference_verdicts_and_the_failure_gate(
    fake_server,
    tmp_path,
    monkeypatch,  # noqa: F811
    capsys,
):
    from ragsweep.cli import main

    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "fake-model")
    args = [
        "eval",
        "--dataset",
        str(_dataset(tmp_path)),
        "--llm",
        "--judge",
        "--judge-replicates",
        "3",
        "--judge-probe",
        "0",
        "--out",
        str(tmp_path / "runs"),
    ]
    code = main([*args, "--name", "strict", "--max-failure-rate", "0.2"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "judge_correct: failed on 1 of 4 cases (25.0%) > --max-failure-rate 0.2" in err
    assert out.startswith("WARNING: judge_correct failed on 1 of 4 cases (25.0% > 20.0%): 1x unparsable")
    assert "self-agreement over 3 case(s) x 3 replicates" in out and "Krippendorff alpha 0.600" in out

    report = json.loads((tmp_path / "runs" / "strict" / "report.json").read_text())
    block = report["judge"]["metrics"]["judge_correct"]
    assert block["llm_judged"] == 4 and block["rule_decided"] == 1
    assert block["failures"]["failed"] == 1 and block["failures"]["reasons"] == {"unparsable": 1}
    assert block["failures"]["examples"][0]["id"] == "c4"
    # units (c1, c2, c3) = TFT, TTT, FFF: P-bar = (1/3 + 1 + 1) / 3 = 7/9; 5 T / 4 F of 9:
    # alpha = 1 - (2/9) / ((81 - 25 - 16) / 72) = 0.6; Fleiss (7/9 - 41/81) / (40/81) = 0.55
    sa = block["self_agreement"]
    assert sa["agreement_rate"] == pytest.approx(7 / 9) and sa["krippendorff_alpha"] == pytest.approx(0.6)
    assert sa["fleiss_kappa"] == pytest.approx(0.55) and sa["flipped"] == ["c1"]
    cases = {
        c["id"]: c for c in map(json.loads, (tmp_path / "runs" / "strict" / "cases.jsonl").read_text().splitlines())
    }
    assert cases["c1"]["metrics"]["judge_correct"] == pytest.approx(2 / 3)  # the replicate mean
    assert cases["c1"]["judge"]["sd"] == pytest.approx(math.sqrt(1 / 3))
    assert report["metrics"]["judge_correct"] == pytest.approx((2 / 3 + 1 + 0 + 0) / 4)
    # reference verdicts: c1 labelled answer (TFT -> true, reference true), c2 (TTT -> true, reference false)
    ref = block["reference"]
    assert ref["confusion"] == {"tp": 1, "fn": 0, "fp": 1, "tn": 0} and ref["cohen_kappa"] == pytest.approx(0.0)
    assert ref["sources"] == {"human:test": 2} and ref["labelled_answer_is_run_answer"] == 0
    # PPI: judge mean over c1, c2, c3, c5 = (2/3 + 1 + 0 + 0) / 4 = 5/12; rectifier mean((1 - 2/3), (0 - 1)) = -1/3
    assert ref["ppi"]["estimate"] == pytest.approx(5 / 12 - 1 / 3)
    assert "prediction-powered 0.083" in out

    calls = fake_server.chat_requests()
    code = main([*args, "--name", "lenient", "--max-failure-rate", "0.3"])
    out, err = capsys.readouterr()
    assert code == 0 and "WARNING" not in out and "LLM metric failures <= 0.3" in out
    assert fake_server.chat_requests() == calls  # every replicate and repair came from the cache
    assert failure_gate(JudgeSection.model_validate(report["judge"]), 0.25) == []


def test_ragas_llm_replicates_are_separate_requests_and_reported(fake_server, llm_settings):  # noqa: F811
    from ragsweep.judge.report import ragas_metric_sections
    from ragsweep.metrics.ragas_llm import (
        CONTEXT_RECALL,
        FAITHFULNESS,
        MetricScore,
        RagasCase,
        RagasLLMScorer,
        combine_replicates,
    )

    case = RagasCase(
        question="What is the initial term?",
        answer="The initial term is three years. [1]",
        contexts=["The initial term is three years from the Effective Date."],
        reference="Three years.",
    )
    one = RagasLLMScorer(llm_settings, metrics=(FAITHFULNESS, CONTEXT_RECALL)).score_batch([case])[0]
    calls = fake_server.chat_requests()
    three = RagasLLMScorer(llm_settings, metrics=(FAITHFULNESS, CONTEXT_RECALL), replicates=3).score_batch([case])[0]
    # replicate 0 is the single run's request (cached); replicates 1 and 2 are new requests with their seed
    assert fake_server.chat_requests() == 3 * calls
    assert {body.get("seed") for _, body in fake_server.log[calls:]} == {1, 2}
    assert three[FAITHFULNESS].value == one[FAITHFULNESS].value and three[FAITHFULNESS].replicates == [1.0] * 3
    assert three[FAITHFULNESS].sd == 0.0

    # combining: the mean of the valid values, the SD, each value; nothing valid -> the first error
    mixed = combine_replicates([MetricScore(value=1.0), MetricScore(error="timeout"), MetricScore(value=0.5)])
    assert mixed.value == 0.75 and mixed.sd == pytest.approx(math.sqrt(0.125)) and mixed.replicates == [1.0, None, 0.5]
    assert combine_replicates([MetricScore(error="timeout: x"), MetricScore(error="y")]).error == "timeout: x"

    # the report: intra-case SD, alpha (interval), failures
    cases = [
        CaseResult(
            id="a", question="", top_k=1, metrics={FAITHFULNESS: 0.75}, llm_replicates={FAITHFULNESS: [1.0, 0.5]}
        ),
        CaseResult(
            id="b", question="", top_k=1, metrics={FAITHFULNESS: 0.0}, llm_replicates={FAITHFULNESS: [0.0, 0.0]}
        ),
        CaseResult(
            id="c",
            question="",
            top_k=1,
            metrics={FAITHFULNESS: None},
            notes={FAITHFULNESS: "timeout: no reply"},
            llm_replicates={FAITHFULNESS: [None, None]},
        ),
        CaseResult(
            id="d",
            question="",
            top_k=1,
            metrics={FAITHFULNESS: None},
            notes={FAITHFULNESS: "not applicable: refusal"},
        ),
    ]
    block = ragas_metric_sections(cases)[FAITHFULNESS]
    f = block.failures
    assert (f.attempted, f.failed, f.reasons) == (3, 1, {"timeout": 1})
    sa = block.self_agreement
    assert isinstance(sa, ScoreAgreement)
    # SDs: sqrt(0.125) and 0 -> mean sqrt(0.125)/2; pooled sqrt(0.0625); interval alpha: n = 4 values
    # D_o = (2 * 0.25 / 1 + 0) / 4 = 0.125; D_e = (2*4*1.25 - 2*1.5^2) / 12 = 5.5/12 -> alpha = 1 - 0.125 * 12/5.5
    assert sa.mean_sd == pytest.approx(math.sqrt(0.125) / 2) and sa.pooled_sd == pytest.approx(0.25)
    assert sa.krippendorff_alpha == pytest.approx(1 - 0.125 * 12 / 5.5) and sa.varying == ["a"]


def test_dry_run_counts_every_judge_replicate():
    from ragsweep.dry_run.llm_calls import estimate_llm_run
    from ragsweep.llm.settings import LLMSettings

    settings = LLMSettings(model="fake-model", base_url="http://127.0.0.1:9/v1")
    items = [("Who are the parties?", []), ("What is the term?", [])]
    one = estimate_llm_run(
        items, settings, references=["A and B", "two years"], unanswerable=[False, False], ragas_metrics=()
    )
    three = estimate_llm_run(
        items,
        settings,
        references=["A and B", "two years"],
        unanswerable=[False, False],
        ragas_metrics=(),
        replicates=3,
    )
    assert one["judge"].calls == 2 and three["judge"].calls == 6
    assert three["answer"].calls == one["answer"].calls
