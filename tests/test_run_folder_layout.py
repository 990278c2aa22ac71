"""The light run folder (layout 3): compact case lines and the chunk table round-trip exactly;
older folders are read as they are (layout 1: text in every hit; layout 2: a chunk id per hit)
or, for --resume, refused with a message naming the layouts; a finished run resumed keeps its
report."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import ClassVar

import pytest

from ragsweep.answer.base import Answer
from ragsweep.core.errors import RunError
from ragsweep.core.hits import chunk_id
from ragsweep.evaluation.records import CaseResult, JudgedHit
from ragsweep.evaluation.runfolder import LAYOUT_VERSION, FolderState, SavedState, check_resumable
from ragsweep.evaluation.storage import compact, expand_lines
from ragsweep.report.compare import compare_runs
from ragsweep.report.runs import RunFolderError, read_cases, read_run
from support import ROOT, RUNS

FIXTURE = RUNS / "eval_layout1"  # layout 1: every hit carries its text, no version, no top_k


def _hit(rank: int, start: int, relevant: bool = False, **kw) -> JudgedHit:
    return JudgedHit(
        rank=rank,
        score=1 / (60 + rank),
        text=f"text of the chunk at {start}",
        doc_id="a.pdf",
        start=start,
        end=start + 100,
        relevant=relevant,
        grade=int(relevant),
        **kw,
    )


def _records() -> list[dict]:
    answered = CaseResult(
        id="q1",
        question="Who are the parties?",
        type="Parties",
        doc_scope=["a.pdf"],
        reference_answer="A and B",
        split="dev",
        top_k=3,
        hits=[_hit(1, 0), _hit(2, 100, relevant=True, rerank_score=0.5, retrieval_rank=4), _hit(3, 200)],
        answer=Answer(text="A and B. [2]", cited=[2], answerer="llm:m", prompt_tokens=12),
        judge={"is_correct": True, "reason": "same parties", "replicates": [{"is_correct": True, "error": None}]},
        metrics={"recall@3": 1.0, "mrr@3": 0.5, "fact_coverage": None, "judge_correct": 1.0},
        chance={"recall@3": 0.6, "mrr@3": 0.4},
        oracle={"recall@3": 1.0, "mrr@3": 1.0},
        relevance_rule="evidence_offsets",
        notes={"fact_coverage": "no expected facts"},
    ).line()
    unanswerable = CaseResult(
        id="q2",
        question="Who audits?",
        unanswerable=True,
        top_k=3,
        hits=[_hit(1, 200)],
        answer=Answer(text="I don't know.", abstained=True, answerer="llm:m"),
        metrics={"recall@3": None, "mrr@3": None, "fact_coverage": None, "judge_correct": None},
    ).line()
    unanswerable["llm_replicates"] = {"ragas_llm_faithfulness": [1.0, None]}  # a key the run adds to the line
    return [answered, unanswerable]


def _table(lines: list[dict]) -> dict[str, str]:
    return {chunk_id(h["doc_id"], h["start"], h["end"]): h["text"] for line in lines for h in line["hits"]}


def test_compact_lines_and_the_chunk_table_round_trip():
    lines = _records()
    table = _table(lines)
    stored = [json.loads(json.dumps(compact(line))) for line in lines]  # as written to and read from disk
    assert not any("text" in h or "chunk" in h for s in stored for h in s["hits"])
    assert "relevant" not in stored[0]["hits"][0] and stored[0]["hits"][1]["relevant"] is True  # defaults left out
    assert "error" not in stored[0]["answer"] and "unanswerable" not in stored[0] and stored[1]["unanswerable"]
    assert stored[1]["metrics"]["recall@3"] is None and stored[0]["chance"]  # running: all a resume needs
    assert expand_lines(stored, table) == lines

    # settled (report.json written): no chance/oracle, no metric without a value; report.json names the metrics
    settled = [json.loads(json.dumps(compact(line, settled=True))) for line in lines]
    assert "chance" not in settled[0] and "fact_coverage" not in settled[0]["metrics"] and "metrics" not in settled[1]
    names = list(lines[0]["metrics"])
    back = expand_lines(settled, table, names)
    assert back == [{**line, "chance": {}, "oracle": {}} for line in lines]
    assert list(back[1]["metrics"]) == names  # each line has every metric, in the run's order
    # without the list a metric no case has a value for cannot be told from one never computed
    assert "fact_coverage" not in expand_lines(settled, table)[0]["metrics"]
    # filled-in defaults are fresh objects: changing one record's notes leaves the other's alone
    back[1]["notes"]["x"] = "y"
    assert expand_lines(settled, table, names)[1]["notes"] == {}
    assert CaseResult.model_validate(back[0]).line() == {**lines[0], "chance": {}, "oracle": {}}


def _layout2(folder: Path) -> None:
    """The fixture as layout 2 wrote it: each hit's text replaced by a chunk id, texts in chunks.jsonl."""
    lines = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
    table = _table(lines)
    for line in lines:
        line["hits"] = [
            {**{k: v for k, v in h.items() if k != "text"}, "chunk": chunk_id(h["doc_id"], h["start"], h["end"])}
            for h in line["hits"]
        ]
    (folder / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (folder / "chunks.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in table.items()))


def test_older_layouts_are_read_as_they_are(tmp_path):
    v1 = read_cases(FIXTURE / "cases.jsonl")
    assert v1[0]["hits"][0]["text"] and v1[0]["hits"][0]["rerank_score"] is None  # defaults filled in
    v2 = tmp_path / "v2"
    shutil.copytree(FIXTURE, v2)
    _layout2(v2)
    assert read_cases(v2 / "cases.jsonl") == v1
    # layout 3 (compact, settled) holds the same cases
    v3 = tmp_path / "v3"
    v3.mkdir()
    (v3 / "cases.jsonl").write_text("".join(json.dumps(compact(c, settled=True)) + "\n" for c in v1))
    (v3 / "chunks.jsonl").write_text((v2 / "chunks.jsonl").read_text())
    names = list(dict.fromkeys(m for c in v1 for m in c["metrics"]))
    (v3 / "report.json").write_text(json.dumps({"case_metrics": names}))
    assert read_cases(v3 / "cases.jsonl") == [{**c, "chance": {}, "oracle": {}, "version": 2} for c in v1]
    comparison = compare_runs(FIXTURE, v3)
    assert comparison.n_common == len(v1) and all(m.delta in (0, None) for m in comparison.metrics)
    (v2 / "chunks.jsonl").unlink()
    with pytest.raises(RunFolderError, match="refers to chunks by id but chunks.jsonl is missing"):
        read_cases(v2 / "cases.jsonl")


def test_a_layout1_eval_folder_reads_as_a_run_result(tmp_path):
    """The first layout still reads as a RunResult with CaseResults: the depth from the manifest's pipeline
    variables (report.json and the lines had no top_k), each judge dict as a JudgeVerdict; it holds the
    same run as tests/fixtures/runs/eval (layout 3, drawn the same), case for case."""
    from ragsweep.judge.metric import JudgeVerdict
    from ragsweep.report.html import write_html_report

    old = read_run(FIXTURE)
    assert old.top_k == 10 and old.ks == [1, 3, 5, 10] and old.run_dir == str(FIXTURE)
    assert len(old.cases) == 14 and {c.top_k for c in old.cases} == {10} and old.cases[0].hits[0].text
    assert old.metrics == json.loads((FIXTURE / "report.json").read_text())["metrics"]
    judged = [c.judge for c in old.cases if c.judge is not None]
    assert len(judged) == 14 and all(isinstance(j, JudgeVerdict) and j.is_correct is not None for j in judged)
    new = read_run(RUNS / "eval")
    assert json.loads((RUNS / "eval" / "state.json").read_text())["layout"] == LAYOUT_VERSION
    assert [c.id for c in new.cases] == [c.id for c in old.cases]
    comparison = compare_runs(old, new)  # both in memory
    assert comparison.n_common == 14 and comparison.label_a == "eval_layout1" and comparison.label_b == "eval"
    shared = {m.metric: m.delta for m in comparison.metrics}
    assert {"hit_rate@10", "recall@5", "token_f1", "judge_correct"} <= set(shared)
    assert all(delta in (0, None) for delta in shared.values())

    folder = tmp_path / "eval_layout1"
    shutil.copytree(FIXTURE, folder)
    page = write_html_report(folder).read_text()
    assert '<p class="headline" data-k="10">' in page
    assert len(re.findall(r'<details class="case" data-i="\d+"', page)) == 14


class _State(FolderState):
    RESUME_KEYS: ClassVar[tuple[str, ...]] = ("config_hash",)

    config_hash: str


def test_resume_names_the_layouts_it_refuses(tmp_path):
    now = _State(layout=LAYOUT_VERSION, config_hash="h")
    with pytest.raises(
        RunError,
        match=r"older ragsweep \(run-folder layout 2; this one writes layout 3\).*"
        r"start a new run \(compare and report.html still read it\)",
    ):
        check_resumable(tmp_path, SavedState(layout=2, config_hash="h"), now)
    with pytest.raises(RunError, match=r"older ragsweep \(run-folder layout 1;"):
        check_resumable(tmp_path, SavedState(config_hash="h"), now)  # layout 1 wrote no number
    with pytest.raises(RunError, match=r"newer ragsweep \(run-folder layout 4;.*resume it with that version"):
        check_resumable(tmp_path, SavedState(layout=4, config_hash="h"), now)
    check_resumable(tmp_path, SavedState.model_validate(now.model_dump(mode="json")), now)
    with pytest.raises(RunError, match=r"config_hash differs \('g' then, 'h' now\)"):
        check_resumable(tmp_path, SavedState(layout=LAYOUT_VERSION, config_hash="g"), now)


def test_a_finished_run_resumed_keeps_its_report(tmp_path):
    from ragsweep.commands.eval import EvalOptions, run_eval

    options = dict(
        pipeline=str(ROOT / "pipelines" / "default.yaml"),
        dataset=str(ROOT / "datasets" / "cuad-mini"),
        limit=8,
        out=str(tmp_path),
        name="r",
        progress=False,
        ragas_nonllm=False,
    )
    run_dir, first = run_eval(EvalOptions(**options))
    lines = (run_dir / "cases.jsonl").read_text()
    saved = json.loads((run_dir / "report.json").read_text())
    assert saved["baselines"] and None in saved["metrics"].values()  # e.g. fact_coverage: no case has facts
    assert not (run_dir / ".lock").exists()  # a finished folder keeps no lock file
    _, again = run_eval(EvalOptions(**{**options, "name": None, "resume": str(run_dir)}))
    resaved = json.loads((run_dir / "report.json").read_text())
    for key in ("metrics", "counts", "intervals", "baselines", "case_metrics", "groups"):
        assert resaved[key] == saved[key], key
    assert (run_dir / "cases.jsonl").read_text() == lines
    assert not (run_dir / ".lock").exists()
    state = json.loads((run_dir / "state.json").read_text())
    assert state["layout"] == LAYOUT_VERSION == 3
