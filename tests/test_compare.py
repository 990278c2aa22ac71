"""compare_runs on two hand-written 5-case runs (tests/fixtures/runs/tiny_a, tiny_b).

Paired on ids q1..q4 (qa5 only in A, qb6 only in B):

    case  hit_rate@5 A/B  recall@5 A/B  token_f1 A/B  fact_coverage A/B  abstained A/B
    q1    1 / 1           1   / 1       0.5 / 0.7     None / 1           no / no
    q2    1 / 0           0.5 / 0       0.2 / 0.2     1    / 1           no / no
    q3    0 / 1           0   / 1       0.0 / 0.4     0    / 1           no / no
    q4    1 / 1           1   / 1       0.8 / 1.0     1    / 1           no / yes

deltas (B - A): hit_rate@5 0; recall@5 (0 - 0.5 + 1 + 0) / 4 = 0.125; token_f1 (0.2 + 0 + 0.4 + 0.2) / 4
= 0.2; fact_coverage over q2..q4 only: (0 + 1 + 0) / 3 = 1/3.
token_f1 p-value (exact sign-flip test, 2^4 = 16 assignments): only flipping no nonzero sign reaches
the observed sum 0.8 (the zero's sign is free: 2 of 16) -> one-sided 1/8, two-sided 0.25.
"""

import json
from argparse import Namespace

import pytest

from ragsweep.report.compare import compare_runs, render_markdown, render_terminal, run_compare_cli
from support import RUNS


@pytest.fixture(scope="module")
def comparison():
    return compare_runs(RUNS / "tiny_a", RUNS / "tiny_b")


def _row(c, metric):
    return next(r for r in c.metrics if r.metric == metric)


def test_case_join(comparison):
    assert comparison.n_a == 5 and comparison.n_b == 5 and comparison.n_common == 4
    assert comparison.only_in_a == ["qa5"]
    assert comparison.only_in_b == ["qb6"]


def test_deltas_by_hand(comparison):
    hit = _row(comparison, "hit_rate@5")
    assert (hit.n, hit.mean_a, hit.mean_b, hit.delta) == (4, 0.75, 0.75, 0.0)
    assert _row(comparison, "recall@5").delta == pytest.approx(0.125)
    f1 = _row(comparison, "token_f1")
    assert f1.mean_a == pytest.approx(0.375) and f1.mean_b == pytest.approx(0.575)
    assert f1.delta == pytest.approx(0.2)
    assert f1.p_value == pytest.approx(0.25)
    assert f1.ci_low <= 0.2 <= f1.ci_high
    fact = _row(comparison, "fact_coverage")
    assert fact.n == 3 and fact.delta == pytest.approx(1 / 3)
    # Holm over 4 metrics: 4 * 0.25 = 1.0; nothing is significant
    assert f1.p_adjusted == pytest.approx(1.0)
    assert not any(r.significant for r in comparison.metrics)
    assert [r.metric for r in comparison.metrics] == ["hit_rate@5", "recall@5", "token_f1", "fact_coverage"]


def test_flips(comparison):
    flips = {(f.metric, f.id, f.direction) for f in comparison.flips}
    assert flips == {
        ("hit_rate@5", "q2", "1->0"),
        ("hit_rate@5", "q3", "0->1"),
        ("fact_coverage", "q3", "0->1"),
        ("abstained", "q4", "0->1"),
    }
    q2 = comparison.flips_of("hit_rate@5", "1->0")[0]
    assert q2.question == "Which law governs? | pipes"


def test_significant_difference(tmp_path):
    def write(name, hit):
        d = tmp_path / name
        d.mkdir()
        with (d / "cases.jsonl").open("w") as fh:
            for i in range(12):
                fh.write(json.dumps({"id": f"c{i}", "question": f"q{i}", "metrics": {"hit_rate@5": hit}}) + "\n")
        return d

    c = compare_runs(write("a", 0.0), write("b", 1.0))
    row = c.metrics[0]
    assert row.delta == 1.0
    assert row.p_value == pytest.approx(2 / 2**12)  # exact test: only the all-positive/all-negative flips
    assert row.significant and row.verdict == "better"
    assert len(c.flips_of("hit_rate@5", "0->1")) == 12
    assert "✅ better" in render_markdown(c)


def test_terminal_table_is_aligned(comparison):
    text = render_terminal(comparison)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("metric"))
    end = header.index("p (Holm)") + len("p (Holm)")
    rows = [line for line in lines if line.split(" ")[0] in {"hit_rate@5", "recall@5", "token_f1", "fact_coverage"}]
    assert len(rows) == 4
    for row in rows:
        assert row[end - 5 : end] in {"1.000"}, row  # right-aligned under "p (Holm)"
    assert "only in A (1): qa5" in text and "only in B (1): qb6" in text
    assert "q2  Which law governs? | pipes" in text


def test_markdown_has_the_table(comparison):
    md = render_markdown(comparison)
    assert "| metric | n | A | B | Δ (B−A) | 95% CI | p | p (Holm) | sig |" in md
    assert "| `token_f1` | 4 | 0.375 | 0.575 | +0.200 |" in md
    assert "| `recall@5` | 4 | 0.625 | 0.750 | +0.125 |" in md
    assert "\\| pipes" in md  # a pipe in a question cannot break the Markdown
    assert "<details><summary><code>hit_rate@5</code> 1->0 (regressed): 1</summary>" in md


def test_cli(tmp_path, capsys):
    md = tmp_path / "out" / "compare.md"
    assert run_compare_cli(Namespace(run_a=str(RUNS / "tiny_a"), run_b=str(RUNS / "tiny_b"), markdown=str(md))) == 0
    out = capsys.readouterr().out
    assert "token_f1" in out and "+0.200" in out
    assert md.read_text().startswith("### ragsweep compare")


def test_cli_missing_folder(tmp_path, capsys):
    code = run_compare_cli(Namespace(run_a=str(RUNS / "tiny_a"), run_b=str(tmp_path / "nope"), markdown=None))
    assert code == 2
    assert "no such run folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert run_compare_cli(Namespace(run_a=str(tmp_path / "empty"), run_b=str(RUNS / "tiny_b"), markdown=None)) == 2
    assert "no cases.jsonl" in capsys.readouterr().err


def test_sweep_folder_points_at_configs(capsys):
    assert run_compare_cli(Namespace(run_a=str(RUNS / "sweep"), run_b=str(RUNS / "eval"), markdown=None)) == 2
    assert "configs" in capsys.readouterr().err
    ids = [c["id"] for c in json.loads((RUNS / "sweep" / "sweep.json").read_text())["configs"]]
    c = compare_runs(RUNS / "sweep" / "configs" / ids[-1], RUNS / "sweep" / "configs" / ids[0])
    assert c.label_a == f"sweep/{ids[-1]}" and c.n_common == 14
    assert any(r.metric == "recall@k" for r in c.metrics)


def test_results_in_memory_compare_as_their_folders():
    """ragsweep.compare(report_a, report_b) needs no folder: a RunResult with its cases is a side."""
    from ragsweep.evaluation.records import RunResult
    from ragsweep.report.runs import read_run

    a, b = read_run(RUNS / "tiny_a"), read_run(RUNS / "tiny_b")
    from_folders = compare_runs(RUNS / "tiny_a", RUNS / "tiny_b")
    in_memory = compare_runs(a, b)
    assert [m.model_dump() for m in in_memory.metrics] == [m.model_dump() for m in from_folders.metrics]
    assert in_memory.flips == from_folders.flips and (in_memory.label_a, in_memory.label_b) == ("tiny_a", "tiny_b")
    mixed = compare_runs(a, RUNS / "tiny_b")  # one side in memory, the other a folder
    assert [m.delta for m in mixed.metrics] == [m.delta for m in from_folders.metrics]
    # a result that never had a folder (ragsweep.evaluate without out=) is labelled by its side
    bare = RunResult(top_k=5, cases=a.cases)
    c = compare_runs(bare, RunResult(top_k=5, cases=b.cases))
    assert (c.label_a, c.label_b) == ("A", "B") and c.run_a == "(in memory: A)" and c.n_common == 4
