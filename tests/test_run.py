"""The evaluator end to end on a tiny real dataset: report, resume, gate, bad input."""

import json
import shutil
from pathlib import Path

import pytest

from ragsweep.answer import served as answering_module
from ragsweep.cli import main
from ragsweep.commands.eval import EvalOptions, run_eval
from ragsweep.core.errors import RunError
from ragsweep.core.hits import chunk_id
from ragsweep.evaluation import loop as loop_module
from support import MINI, ROOT


def options(tmp_path, **kw) -> EvalOptions:
    base = dict(
        pipeline=str(ROOT / "pipelines" / "default.yaml"),
        dataset=str(MINI),
        limit=14,
        out=str(tmp_path / "runs"),
        progress=False,
        ragas_nonllm=False,
    )
    base.update(kw)
    return EvalOptions(**base)


def read_cases(run_dir: Path) -> list[dict]:
    from ragsweep.report.runs import read_cases as read_with_text

    return read_with_text(run_dir / "cases.jsonl")


def recall_from_evidence(rows: list[dict]) -> tuple[dict[str, float], dict[str, int]]:
    """Each answerable case's recall@5 counted from its text: the share of its evidence spans found
    (whitespace aside) in a top-5 chunk; and the rank of its first chunk holding one."""
    cases = {c["id"]: c for c in map(json.loads, (MINI / "cases.jsonl").read_text().splitlines()) if c}

    def norm(text: str) -> str:
        return " ".join(text.split())

    recalls, ranks = {}, {}
    for row in rows:
        evidence = [norm(e["text"]) for e in cases[row["id"]].get("evidence") or []]
        if not evidence:
            continue
        texts = [norm(h["text"]) for h in row["hits"][:5]]
        recalls[row["id"]] = sum(any(e in t for t in texts) for e in evidence) / len(evidence)
        ranks[row["id"]] = next(r for r, t in enumerate(texts, start=1) if any(e in t for e in evidence))
    return recalls, ranks


def test_eval_writes_a_complete_run_folder(tmp_path):
    run_dir, report = run_eval(options(tmp_path, ragas_nonllm=True))
    saved = json.loads((run_dir / "report.json").read_text())
    assert saved["metrics"] == report.metrics
    cases = read_cases(run_dir)
    assert len(cases) == 14 and len({c["id"] for c in cases}) == 14
    assert report.no_llm is True and report.answerer == "extractive"
    assert report.relevance_rule == "evidence_offsets"
    # retrieval found evidence for the answerable cases of this contract
    answerable = [c for c in cases if not c["unanswerable"]]
    assert answerable and report.metrics["hit_rate@10"] > 0.5
    assert report.counts["recall@5"].model_dump() == {"n": len(answerable), "missing": 14 - len(answerable)}
    for name in ("recall@5", "mrr@10", "ndcg@10", "map@10", "abstention_recall", "ragas_rouge"):
        assert name in report.metrics
    assert "recall@5" in report.intervals
    assert set(report.groups) == {"type", "document"}
    manifest = report.manifest.model_dump()
    for key in ("pipeline", "dataset", "corpus", "packages", "git_commit", "timestamps", "stage_seconds"):
        assert key in manifest
    assert manifest["pipeline"]["hash"] and manifest["corpus"]["hash"]
    hit = cases[0]["hits"][0]
    assert {"rank", "score", "text", "doc_id", "start", "end", "relevant", "grade"} <= set(hit)
    assert all(c["metrics"]["recall@5"] is None for c in cases if c["unanswerable"])
    # every retrieval metric has its chance and oracle level beside it, in report.json and report.html
    base = report.baselines["recall@5"]
    assert 0 <= base["chance"] <= base["oracle"] <= 1 and base["n"] == len(answerable)
    assert base["lift"] == pytest.approx(base["pipeline"] - base["chance"])
    page = (run_dir / "report.html").read_text()
    assert "Against chance and oracle" in page and "lift over chance" in page
    # the run folder stores each chunk's text once: hits refer to chunks.jsonl by document and offsets
    stored = [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines()]
    assert all("text" not in h for c in stored for h in c["hits"])
    chunk_ids = {json.loads(line)["id"] for line in (run_dir / "chunks.jsonl").read_text().splitlines()}
    assert {chunk_id(h["doc_id"], h["start"], h["end"]) for c in stored for h in c["hits"]} <= chunk_ids
    # once report.json holds the means, the lines keep no chance/oracle and no metric without a value
    assert not any("chance" in c or "oracle" in c for c in stored)
    assert all(v is not None for c in stored for v in c.get("metrics", {}).values())
    assert saved["case_metrics"] == list(cases[0]["metrics"])


def test_resume_after_interruption_computes_no_case_twice(tmp_path, monkeypatch):
    calls: list[str] = []
    real = answering_module.answer

    def interrupting(answerer, items):
        if len(calls) >= 5:
            raise KeyboardInterrupt
        calls.extend(q for q, _ in items)
        return real(answerer, items)

    monkeypatch.setattr(answering_module, "answer", interrupting)
    monkeypatch.setattr(loop_module, "SCORE_BATCH", 5)
    with pytest.raises(KeyboardInterrupt):
        run_eval(options(tmp_path, name="r"))
    run_dir = tmp_path / "runs" / "r"
    assert len(read_cases(run_dir)) == 5 and not (run_dir / "report.json").exists()
    assert not (run_dir / ".lock").exists()  # an interrupted run that ended itself leaves no lock file
    # a kill in the middle of writing a line leaves a torn line behind
    with (run_dir / "cases.jsonl").open("a") as fh:
        fh.write('{"id": "torn')
    first_five = list(calls)

    calls.clear()
    monkeypatch.setattr(
        answering_module, "answer", lambda a, items: (calls.extend(q for q, _ in items), real(a, items))[1]
    )
    run_dir2, report = run_eval(options(tmp_path, resume=str(run_dir)))
    assert run_dir2 == run_dir
    assert len(calls) == 9 and not set(calls) & set(first_five)
    ids = [c["id"] for c in read_cases(run_dir)]
    assert len(ids) == 14 and len(set(ids)) == 14
    assert report.n_cases == 14 and not (run_dir / ".lock").exists()


def test_resume_refuses_a_different_configuration(tmp_path):
    run_dir, _ = run_eval(options(tmp_path, name="a", limit=3))
    with pytest.raises(RunError, match="config_hash differs"):
        run_eval(options(tmp_path, limit=3, resume=str(run_dir), overrides={"max_tokens": 300}))


def test_gate_exit_code_names_the_failing_metrics(tmp_path, capsys):
    args = ["eval", "--dataset", str(MINI), "--limit", "14", "--out", str(tmp_path / "runs")]
    assert main(args + ["--min", "hit_rate@10=0.0"]) == 0
    chance = json.loads(next((tmp_path / "runs").glob("*/report.json")).read_text())["baselines"]["hit_rate@10"]
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning: --min" in line]
    assert warned == [  # a floor a random order passes is named, with its chance level, on one line
        f"ragsweep: warning: --min hit_rate@10=0.0 is at or below its chance level {chance['chance']:.3f}:"
        " a random order of the candidates passes it"
    ]
    before = set((tmp_path / "runs").iterdir())
    assert main(args + ["--min", "recall@5=1.01", "--min", "abstention_recall=0.0"]) == 1
    err = capsys.readouterr().err
    assert "warning: --min recall@5" not in err  # a floor above chance is not
    gate = err.split("gate FAILED")[1]
    assert "abstention_recall" not in gate
    [run_dir] = set((tmp_path / "runs").iterdir()) - before
    recalls, ranks = recall_from_evidence(read_cases(run_dir))
    # 8 answerable cases: 7 find every evidence span in their top 5, the expiration date finds 1 of its 2
    assert len(recalls) == 8 and sum(recalls.values()) == 7.5
    assert recalls["cuadmini-a5cfc7ee-expiration-date"] == 0.5
    assert json.loads((run_dir / "report.json").read_text())["metrics"]["recall@5"] == 7.5 / 8
    # as assert_quality says it: the value, its CI, its chance level and n, then the worst cases under the floor
    head = next(line for line in gate.splitlines() if line.startswith("recall@5 = "))
    assert head.startswith(f"recall@5 = {7.5 / 8:.3f} < floor 1.01 (95% CI [") and ", chance 0." in head, head
    assert head.endswith("n=8)"), head
    lines = gate.splitlines()
    worst = [
        line + "\n" + lines[i + 1] for i, line in enumerate(lines) if line.startswith("    ") and ": recall@5=" in line
    ]
    expected = sorted((value, case_id) for case_id, value in recalls.items())[:5]  # every case is under 1.01
    questions = {row["id"]: row["question"] for row in read_cases(run_dir)}
    assert worst == [
        f"    {case_id}: recall@5={value:.3f}, first relevant chunk at rank {ranks[case_id]}:\n"
        f"      {questions[case_id][:100]!r}"
        for value, case_id in expected
    ]
    assert max(map(len, lines)) <= 120  # the gate fits a 120-column terminal
    assert main(args + ["--min", "recall@5"]) == 2


def test_bad_dataset_line_is_named(tmp_path, capsys):
    bad = tmp_path / "bad"
    shutil.copytree(MINI, bad)
    lines = (bad / "cases.jsonl").read_text().splitlines()
    lines[2] = lines[2][:40]  # malformed JSON on line 3
    lines.append(lines[0])  # duplicate id on the last line
    (bad / "cases.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["eval", "--dataset", str(bad), "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert "cases.jsonl:3" in err and f"cases.jsonl:{len(lines)}" in err


def test_case_scoped_to_a_missing_document_gets_no_hits_and_is_named(tmp_path, capsys):
    bad = tmp_path / "scoped"
    shutil.copytree(MINI, bad)
    broken = next((bad / "docs").glob("LUCID*"))
    broken.write_bytes(b"\x00\x01binary")
    run_dir, report = run_eval(options(tmp_path, dataset=str(bad), limit=None))
    err = capsys.readouterr().err
    assert f"skipped document {broken.name}: binary content" in err
    assert "scoped to documents that were not parsed" in err
    lucid = [c for c in read_cases(run_dir) if c["doc_scope"] == [broken.name]]
    assert lucid and all(c["hits"] == [] for c in lucid)
    assert report.n_cases == 123


def test_dry_run_counts_llm_calls_and_makes_none(tmp_path, monkeypatch):
    # an endpoint nobody listens on: any real call would fail the run's answers
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "gpt-4o-mini")
    import openai

    def no_call(*a, **k):
        raise AssertionError("a dry run must not call the endpoint")

    monkeypatch.setattr(openai.resources.chat.Completions, "create", no_call)
    run_dir, report = run_eval(options(tmp_path, use_llm=True, judge=True, dry_run=True, name="dry"))
    assert report["dry_run"] is True
    assert report["answer"]["calls"] == 14 and report["answer"]["prompt_tokens"] > 14 * 100
    assert 0 < report["judge"]["calls"] <= 14
    assert report["total"]["calls"] == report["answer"]["calls"] + report["judge"]["calls"]
    assert run_dir is None and not (tmp_path / "runs" / "dry").exists(), "a dry run leaves no run folder"


def test_precomputed_responses_are_scored_as_given(tmp_path):
    """Seed 003's shape: each sample carries the system's response; eval scores it as given."""
    dataset = ROOT / "tests" / "fixtures" / "datasets" / "seed003"
    run_dir, report = run_eval(
        options(tmp_path, dataset=str(dataset), limit=None, ragas_nonllm=True, validate_dataset=False)
    )
    cases = read_cases(run_dir)
    assert cases and all(c["answer"]["answerer"] == "dataset" for c in cases)
    first = next(c for c in cases if c["question"] == "How long do refunds take?")
    assert first["answer"]["text"] == "Refunds take up to 14 days after we receive the return."
    assert first["metrics"]["token_f1"] is not None and first["metrics"]["token_f1"] > 0
