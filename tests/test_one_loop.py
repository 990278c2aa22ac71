"""eval, sweep and the Python API walk one evaluation loop: the same configuration gives the same
CaseResults, given answers, verdicts and metrics included, whichever command runs it."""

import json
import shutil
from pathlib import Path

import ragsweep
from ragsweep.commands.eval import EvalOptions, run_eval
from ragsweep.commands.sweep import SweepOptions, run_sweep
from ragsweep.evaluation.records import CaseResult, RunResult
from ragsweep.evaluation.runfolder import RunFolder
from ragsweep.evaluation.sweep import config_id
from support import ROOT

PIPELINE = str(ROOT / "pipelines" / "default.yaml")
N_CASES = 12


def given_answers_dataset(tmp_path: Path) -> Path:
    """12 cuad-mini cases, each carrying the system's own response (some right, some wrong, one
    refusal), with no split (a sweep would otherwise choose on dev and report on test)."""
    src = ROOT / "datasets" / "cuad-mini"
    root = tmp_path / "given"
    root.mkdir()
    shutil.copytree(src / "docs", root / "docs")
    shutil.copy(src / "dataset.yaml", root / "dataset.yaml")
    (root / "README.md").write_text("12 cuad-mini cases with given responses (a test fixture)\n")
    lines = []
    for i, line in enumerate((src / "cases.jsonl").read_text().splitlines()[:N_CASES]):
        case = json.loads(line)
        case.pop("split", None)
        reference = case.get("reference_answer") or ""
        case["response"] = (
            reference
            if i % 3 == 0
            else "I'm sorry, I can't help with that."
            if i % 3 == 1
            else f"Maybe {reference[:20]}"
        )
        lines.append(json.dumps(case))
    (root / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return root


def comparable(case: CaseResult, names: list[str]) -> str:
    """The case as text (NaN == NaN) with every metric of ``names``: a metric a case lacks is one
    without a value (a stored line read back holds every metric of its run, None where absent)."""
    dumped = case.model_dump(mode="json")
    dumped["metrics"] = {name: dumped["metrics"].get(name) for name in names}
    return json.dumps(dumped)


def test_eval_and_a_one_configuration_sweep_give_identical_case_results(tmp_path):
    dataset = given_answers_dataset(tmp_path)
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  top_k: [5]\nbaseline: {top_k: 5}\nobjectives: [recall@k]\nks: [1, 3, 5, 10]\n")
    common = dict(pipeline=PIPELINE, dataset=str(dataset), out=str(tmp_path / "runs"), progress=False)

    _, result = run_eval(EvalOptions(**common, name="eval", ks=[1, 3, 5, 10]))
    sweep_dir, sweep = run_sweep(SweepOptions(**common, name="sweep", grid=str(grid), answers=True))

    assert isinstance(result, RunResult) and result.answerer == "dataset"
    (only,) = sweep.configs
    assert only.id == config_id({"top_k": 5})
    swept = RunFolder(sweep_dir).read_results("configs", only.id, "cases.jsonl")
    evaluated = {c.id: c for c in result.cases}
    assert len(evaluated) == len(swept) == N_CASES
    names = sorted({m for c in [*evaluated.values(), *swept.values()] for m in c.metrics})
    for case_id, case in evaluated.items():
        assert case.answer is not None and case.answer.answerer == "dataset"
        assert comparable(swept[case_id], names) == comparable(case, names), case_id
    # the answers were scored as given: a right one, a refusal (abstaining) and a wrong one
    assert {c.metrics["token_f1"] for c in evaluated.values()} >= {1.0, 0.0}
    assert any(c.answer.abstained for c in evaluated.values())
    # the sweep's aggregate at the configuration's own k is eval's at k = 5
    for family in ("recall", "mrr", "ndcg"):
        assert only.metrics[f"{family}@k"] == result.metrics[f"{family}@5"]


def test_the_api_without_a_folder_gives_the_commands_case_results(tmp_path):
    dataset = given_answers_dataset(tmp_path)
    _, result = run_eval(
        EvalOptions(
            pipeline=PIPELINE, dataset=str(dataset), out=str(tmp_path / "runs"), progress=False, ragas_nonllm=False
        )
    )
    report = ragsweep.evaluate(PIPELINE, dataset)
    assert isinstance(result, RunResult) and isinstance(report, RunResult)
    names = sorted({m for c in [*report.cases, *result.cases] for m in c.metrics})
    assert [comparable(c, names) for c in report.cases] == [comparable(c, names) for c in result.cases]
    assert report.metrics == result.metrics and report.run_dir is None
