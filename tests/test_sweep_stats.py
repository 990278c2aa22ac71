"""Sweep bookkeeping: Pareto front, grid expansion, resume guard."""

import pytest

from ragsweep.commands.sweep import SweepOptions, run_sweep
from ragsweep.core.errors import RunError
from ragsweep.evaluation.sweep import SweepGrid, pareto_front
from ragsweep.report.runs import read_cases
from support import ROOT


def test_pareto_front_keeps_only_undominated_points():
    points = [("a", 0.9, 10.0), ("b", 0.8, 5.0), ("c", 0.7, 6.0), ("d", 0.9, 12.0), ("e", 0.6, 1.0)]
    assert pareto_front(points) == ["a", "b", "e"]


def test_grid_mapping_axes_set_several_variables(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "grid:\n  chunking: [{min_tokens: 50, max_tokens: 100}, {min_tokens: 100, max_tokens: 200}]\n  top_k: [1, 5]\n"
    )
    combos = SweepGrid.load(grid).configurations()
    assert len(combos) == 4
    assert {"min_tokens": 50, "max_tokens": 100, "top_k": 5} in combos


def test_resume_refuses_a_different_sweep(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text("grid:\n  top_k: [1, 3]\n  retriever_mode: [bm25]\nbaseline: {top_k: 3}\nobjectives: [recall@k]\n")
    base = dict(
        pipeline=str(ROOT / "pipelines" / "default.yaml"),
        dataset=str(ROOT / "datasets" / "cuad-mini"),
        grid=str(grid),
        out=str(tmp_path / "runs"),
        progress=False,
    )
    sweep_dir, report = run_sweep(SweepOptions(**base, limit=4, name="s"))
    assert len(report.configs) == 2 and set(report.best) == {"recall@k"}
    with pytest.raises(RunError, match="case_ids differs"):
        run_sweep(SweepOptions(**base, limit=5, resume=str(sweep_dir)))


def test_each_configuration_is_scored_on_what_it_serves(tmp_path):
    """No metric deeper than a configuration's top_k; MRR/MAP/first rank over its own list;
    best and Pareto respect each objective's direction."""
    import json

    grid = tmp_path / "g.yaml"
    grid.write_text(
        "grid:\n  top_k: [1, 3]\n  retriever_mode: [hybrid]\nbaseline: {top_k: 3}\n"
        "objectives: [first_relevant_rank_mean, recall@k]\nks: [1, 3, 10]\n"
    )
    base = dict(
        pipeline=str(ROOT / "pipelines" / "default.yaml"),
        dataset=str(ROOT / "datasets" / "cuad-mini"),
        grid=str(grid),
        out=str(tmp_path / "runs"),
        progress=False,
    )
    sweep_dir, report = run_sweep(SweepOptions(**base, limit=41, name="s"))
    by_k = {c.params["top_k"]: c for c in report.configs}
    one, three = by_k[1], by_k[3]
    for name in ("recall@3", "recall@10", "mrr@3", "map@10", "ndcg@10"):
        assert one.metrics[name] is None and one.counts[name].n == 0, name
    assert three.metrics["recall@10"] is None and three.metrics["recall@3"] is not None
    assert one.served_ks == [1] and one.unserved_ks == [3, 10]
    rows = read_cases(sweep_dir / "configs" / one.id / "cases.jsonl")  # compact lines, hit texts put back
    for row in rows:
        assert len(row["hits"]) <= 1
        frr = row["metrics"]["first_relevant_rank"]
        assert frr in (None, 1.0)  # a rank it never returned is never counted
    # lower is better for the first relevant rank: "best" takes the smaller mean
    frr_best = min(report.configs, key=lambda c: c.metrics["first_relevant_rank_mean"])
    assert report.best["first_relevant_rank_mean"] == frr_best.id
    assert report.directions["first_relevant_rank_mean"] == "lower"


def test_sweep_chooses_on_dev_and_scores_the_choice_on_test(tmp_path):
    import json

    from ragsweep.datasets.loader import load_dataset
    from ragsweep.report.terminal import sweep_table

    grid = tmp_path / "g.yaml"
    grid.write_text(
        "grid:\n  top_k: [1, 3]\n  retriever_mode: [bm25]\nbaseline: {top_k: 1}\nobjectives: [recall@k]\nks: [1, 3]\n"
    )
    base = dict(
        pipeline=str(ROOT / "pipelines" / "default.yaml"),
        dataset=str(ROOT / "datasets" / "cuad-mini"),
        grid=str(grid),
        out=str(tmp_path / "runs"),
        progress=False,
    )
    sweep_dir, report = run_sweep(SweepOptions(**base, sample=40, seed=3, name="s"))
    split_of = {c.id: c.split for c in load_dataset(ROOT / "datasets" / "cuad-mini").cases}
    for cfg in report.configs:
        ids = [json.loads(x)["id"] for x in (sweep_dir / "configs" / cfg.id / "cases.jsonl").read_text().splitlines()]
        assert ids and {split_of[i] for i in ids} == {"dev"}
    verdict = report.verdict
    assert report.same_cases_for_choice_and_report is False and verdict.split == "test"
    assert verdict.chosen == report.best["recall@k"]
    assert set(verdict.configs) == {verdict.chosen, report.baseline}
    assert verdict.cases == sum(
        1
        for i in split_of
        if split_of[i] == "test"
        and i
        in {
            c.id
            for c in __import__("ragsweep.evaluation.selection", fromlist=["x"]).stratified_sample(
                list(load_dataset(ROOT / "datasets" / "cuad-mini").cases), 40, 3
            )
        }
    )
    table = sweep_table(report)
    assert "on the dev split" in table and "test split (" in table


def test_sweep_without_split_says_best_was_chosen_on_the_reported_cases(tmp_path):
    from ragsweep.report.terminal import sweep_table

    grid = tmp_path / "g.yaml"
    grid.write_text("grid:\n  top_k: [1, 3]\n  retriever_mode: [bm25]\nbaseline: {top_k: 1}\nobjectives: [recall@k]\n")
    base = dict(
        pipeline=str(ROOT / "pipelines" / "default.yaml"),
        dataset=str(ROOT / "datasets" / "cuad-mini"),
        grid=str(grid),
        out=str(tmp_path / "runs"),
        progress=False,
    )
    _, report = run_sweep(SweepOptions(**base, limit=6, name="s"))
    assert report.same_cases_for_choice_and_report is True and report.verdict is None
    assert "chosen on the same cases it is reported on" in sweep_table(report)
