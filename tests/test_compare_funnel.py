"""`ragsweep compare`'s funnel on a hand-made pair of run folders, where the moves are known.

Each case's stage at top_k 5 in A and in B (``-``: outside the funnel; c9 only in A):

    case  A          B
    c1    retrieval  found
    c2    retrieval  found
    c3    chunking   chunking
    c4    found      answer
    c5    found      found
    c6    -          -           (out of both funnels: not paired in it)
    c7    parse      parse
    c8    chunking   retrieval

moves: retrieval -> found {c1, c2}; chunking -> retrieval {c8}; found -> answer {c4}.
The real pair (a bm25 run and a hybrid run over cuad-mini) is in tests/test_sweep_funnel.py.
"""

import json

import pytest

from ragsweep.cli import main
from ragsweep.report.compare import compare_runs, render_markdown, render_terminal
from support import RUNS

A = {"c1": "retrieval", "c2": "retrieval", "c3": "chunking", "c4": "found", "c5": "found", "c6": None,
     "c7": "parse", "c8": "chunking", "c9": "found"}  # fmt: skip
B = {"c1": "found", "c2": "found", "c3": "chunking", "c4": "answer", "c5": "found", "c6": None,
     "c7": "parse", "c8": "retrieval"}  # fmt: skip


def _line(case_id: str, stage: str | None) -> str:
    lost_at_k = {} if stage is None else {"1": "retrieval" if stage == "found" else stage, "5": stage}
    return json.dumps(
        {
            "id": case_id,
            "question": f"question {case_id}?",
            "top_k": 5,
            "metrics": {"hit_rate@5": float(stage in ("found", "answer"))},
            "lost_at": None if stage in (None, "found") else stage,
            "lost_at_k": lost_at_k,
        }
    )


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("funnel-pair")
    for name, stages in (("a", A), ("b", B)):
        (root / name).mkdir()
        (root / name / "cases.jsonl").write_text("".join(_line(i, s) + "\n" for i, s in stages.items()))
    return root / "a", root / "b"


def test_the_cases_that_moved_between_stages(pair):
    stages = compare_runs(*pair).stages
    assert stages is not None
    assert stages.n == 7 and stages.top_k_a == [5] and stages.top_k_b == [5]
    assert [(m.from_stage, m.to_stage, m.ids) for m in stages.moves] == [
        ("retrieval", "found", ["c1", "c2"]),
        ("chunking", "retrieval", ["c8"]),
        ("found", "answer", ["c4"]),
    ]
    shifts = {s.stage: (s.a, s.b, s.gained, s.lost) for s in stages.stages}
    assert shifts == {
        "parse": (1, 1, 0, 0),
        "chunking": (2, 1, 0, 1),
        "retrieval": (2, 1, 1, 2),
        "answer": (0, 1, 1, 0),
        "found": (2, 3, 2, 1),
    }
    assert [s.stage for s in stages.stages] == ["parse", "chunking", "retrieval", "answer", "found"]  # pipeline order


def test_terminal_markdown_and_json_name_the_moved_cases(pair, tmp_path, capsys):
    out_json, out_md = tmp_path / "cmp.json", tmp_path / "cmp.md"
    assert main(["compare", str(pair[0]), str(pair[1]), "--json", str(out_json), "--markdown", str(out_md)]) == 0
    text = capsys.readouterr().out
    assert "7 paired cases in a funnel" in text
    assert "  retrieval → found: 2\n    c1, c2\n" in text
    assert "  chunking → retrieval: 1\n    c8\n" in text and "  found → answer: 1\n    c4\n" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("retrieval "))
    assert row.split() == ["retrieval", "2", "1", "-1", "1", "2"]
    moves = json.loads(out_json.read_text())["stages"]["moves"]
    assert {(m["from_stage"], m["to_stage"]): m["ids"] for m in moves} == {
        ("retrieval", "found"): ["c1", "c2"],
        ("chunking", "retrieval"): ["c8"],
        ("found", "answer"): ["c4"],
    }
    md = out_md.read_text()
    assert "| retrieval | 2 | 1 | -1 | 1 | 2 |" in md
    assert "- retrieval → found: 2 (`c1`, `c2`)" in md


def test_a_run_without_a_funnel_is_named_not_compared(pair, tmp_path):
    old = tmp_path / "cases.jsonl"  # B as a run written before losses were attributed
    lines = [json.loads(line) for line in (pair[1] / "cases.jsonl").read_text().splitlines()]
    old.write_text(
        "".join(json.dumps({k: v for k, v in line.items() if not k.startswith("lost")}) + "\n" for line in lines)
    )
    comparison = compare_runs(pair[0], old)
    assert comparison.stages is not None and comparison.stages.without_funnel == ["B"]
    assert comparison.stages.moves == [] and comparison.stages.stages == []
    assert "where cases were lost: not compared, run B has no funnel" in render_terminal(comparison)


def test_runs_without_a_funnel_say_nothing_of_stages():
    comparison = compare_runs(RUNS / "tiny_a", RUNS / "tiny_b")
    assert comparison.stages is None
    assert "where cases were lost" not in render_terminal(comparison)
    assert "Where cases were lost" not in render_markdown(comparison)
