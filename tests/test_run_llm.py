"""`eval` through the LLM path against the deterministic fake endpoint (wiring, not quality)."""

import json

from ragsweep.commands.eval import EvalOptions, run_eval
from ragsweep.report.runs import read_cases
from support import ROOT

SECRET = "sk-test-SECRET-never-in-a-report"


def test_llm_answers_judge_and_ragas_llm_end_to_end(fake_server, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "fake-model")
    options = dict(
        pipeline=str(ROOT / "pipelines" / "default.yaml"),
        dataset=str(ROOT / "datasets" / "cuad-mini"),
        limit=3,
        out=str(tmp_path / "runs"),
        progress=False,
        ragas_nonllm=False,
        use_llm=True,
        judge=True,
        ragas_llm=True,
    )
    run_dir, report = run_eval(EvalOptions(**options, name="first"))
    assert report.answerer == "llm:fake-model" and report.no_llm is False
    cases = read_cases(run_dir / "cases.jsonl")
    assert len(cases) == 3
    for case in cases:
        assert case["answer"]["answerer"] == "llm:fake-model" and case["answer"]["error"] is None
        assert case["judge"] is not None and case["judge"]["is_correct"] is not None
        assert "ragas_llm_faithfulness" in case["metrics"] and "ragas_llm_answer_correctness" in case["metrics"]
    assert "judge_correct" in report.metrics and "ragas_llm_faithfulness" in report.metrics
    assert report.manifest.llm is not None
    assert report.manifest.llm["model"] == "fake-model" and report.manifest.llm["api_key_set"]
    for path in run_dir.iterdir():
        assert SECRET not in path.read_text(errors="ignore"), f"the API key leaked into {path.name}"

    calls = fake_server.requests
    assert calls > 0
    assert fake_server.probes == 1, "the answerer, the judge and ragas share one endpoint: probed once"
    _, again = run_eval(EvalOptions(**options, name="second"))
    assert fake_server.requests == calls, "a re-run must be served by the cache"
    assert again.metrics["judge_correct"] == report.metrics["judge_correct"]


def test_a_run_where_every_answer_failed_says_so_and_exits_non_zero(tmp_path, monkeypatch, capsys):
    from fake_openai import FakeOpenAI
    from ragsweep.cli import main

    server = FakeOpenAI(echo_key_status=400).start()  # every chat call: a 400 error (not retried)
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "fake-model")
        code = main(
            [
                "eval",
                "--dataset",
                str(ROOT / "datasets" / "cuad-mini"),
                "--limit",
                "3",
                "--llm",
                "--out",
                str(tmp_path / "runs"),
                "--name",
                "failing",
            ]
        )
    finally:
        server.stop()
    captured = capsys.readouterr()
    assert code == 1
    assert "answer_error: 3 of 3 answers failed" in captured.out
    assert "no answer succeeded" in captured.err
    assert SECRET not in captured.out + captured.err
    report = json.loads((tmp_path / "runs" / "failing" / "report.json").read_text())
    assert report["answers"] == {"ok": 0, "failed": 3, "refused": 0}
