"""Sweep bookkeeping: Pareto front, grid expansion, resume guard."""

from pathlib import Path

import pytest

from ragsweep.run import RunError
from ragsweep.sweep import SweepGrid, SweepOptions, pareto_front, run_sweep

ROOT = Path(__file__).resolve().parent.parent


def test_pareto_front_keeps_only_undominated_points():
    points = [("a", 0.9, 10.0), ("b", 0.8, 5.0), ("c", 0.7, 6.0), ("d", 0.9, 12.0), ("e", 0.6, 1.0)]
    assert pareto_front(points) == ["a", "b", "e"]


def test_grid_mapping_axes_set_several_variables(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text("grid:\n  chunking: [{min_tokens: 50, max_tokens: 100}, {min_tokens: 100, max_tokens: 200}]\n"
                    "  top_k: [1, 5]\n")
    combos = SweepGrid.load(grid).configurations()
    assert len(combos) == 4
    assert {"min_tokens": 50, "max_tokens": 100, "top_k": 5} in combos


def test_resume_refuses_a_different_sweep(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text("grid:\n  top_k: [1, 3]\n  retriever_mode: [bm25]\nbaseline: {top_k: 3}\nobjectives: [recall@k]\n")
    base = dict(pipeline=str(ROOT / "pipelines" / "default.yaml"), dataset=str(ROOT / "datasets" / "cuad-mini"),
                grid=str(grid), out=str(tmp_path / "runs"), progress=False)
    sweep_dir, report = run_sweep(SweepOptions(**base, limit=4, name="s"))
    assert len(report["configs"]) == 2 and set(report["best"]) == {"recall@k"}
    with pytest.raises(RunError, match="case_ids differs"):
        run_sweep(SweepOptions(**base, limit=5, resume=str(sweep_dir)))
