"""What `ragsweep eval` prints fits a 120-column terminal: the summary table, its notes and judge
section, the report line and the gate, every word and number kept whole."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ragsweep.report.runs import read_run
from ragsweep.report.terminal import TERMINAL_COLUMNS, fit, gate_passed_line, summary_table
from support import RUNS


def _run(tmp_path: Path, answerer: str) -> Path:
    run = tmp_path / "eval"
    shutil.copytree(RUNS / "eval", run)
    report = json.loads((run / "report.json").read_text())
    report["answerer"] = answerer  # the extractive answerer's rows carry the longest notes
    (run / "report.json").write_text(json.dumps(report))
    return run


def test_the_summary_table_and_its_notes_fit_120_columns(tmp_path):
    result = read_run(_run(tmp_path, "extractive"))
    assert result.judge is not None  # the judge section is printed too
    table = summary_table(result)
    assert TERMINAL_COLUMNS == 120 and max(map(len, table.splitlines())) <= 120, table
    rows = [line for line in table.splitlines() if line.startswith("recall@10 ")]
    assert (
        len(rows) == 1 and len(rows[0].split()) == 8
    )  # never wrapped: name, value, CI (2), chance, oracle, n, missing
    assert "† no information here about the extractive answerer's answers" in table


def test_fit_wraps_at_spaces_under_its_own_indent_and_keeps_every_word():
    long = "  note: " + " ".join(f"metric_{i}=0.{i:03d}" for i in range(40))
    wrapped = fit([long, "short"])
    assert max(map(len, wrapped)) <= 120 and wrapped[-1] == "short"
    assert all(line.startswith("    ") for line in wrapped[1:-1])  # continuation under the line's own text
    assert " ".join(wrapped).split() == long.split() + ["short"]  # nothing cut, nothing lost
    path = "/" + "x" * 150  # one word longer than the width: as it is
    assert fit([path]) == [path]
    passed = gate_passed_line({f"ragas_llm_metric_{i}@5": 0.5 for i in range(12)}, 0.1)
    assert passed is not None and max(map(len, passed.splitlines())) <= 120
    assert "LLM metric failures <= 0.1" in " ".join(passed.split())
