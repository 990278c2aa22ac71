"""A sweep's recommendation compares like with like, and ``--write-best`` hands it back as the user's own
pipeline file: the chosen values set, every other line as it was, and ``ragsweep eval`` of that file
scores exactly what the sweep scored for the winner."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from ragsweep.core.errors import ConfigError
from ragsweep.evaluation.choice import best_configs, same_depth_baseline, tie_knobs
from ragsweep.evaluation.records import ConfigResult
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.yaml_edit import check_values, set_values
from ragsweep.report.best_pipeline import HEADER
from ragsweep.report.runs import read_cases, read_sweep
from ragsweep.report.terminal import TERMINAL_COLUMNS
from support import ROOT

APP = ROOT / "tests" / "fixtures" / "apps" / "rag_evals_style.yaml"


def _row(cid: str, top_k: int, value: float, chance: float, mode: str = "hybrid") -> ConfigResult:
    return ConfigResult(
        id=cid, params={"top_k": top_k, "retriever_mode": mode}, top_k=top_k, latency_ms_per_query=1.0,
        metrics={"recall@k": value, "recall@1500tok": 0.5}, chance_level={"recall@k": chance},
        lift_over_chance={"recall@k": value - chance},
    )  # fmt: skip


def test_the_deepest_configuration_is_not_best_by_construction():
    """recall@k rises with depth by luck alone (its chance level does too): "best" is chosen on the lift
    over chance, and the deepest list, highest in value, loses to a shallower one that ranks better."""
    rows = [_row("k1", 1, 0.45, 0.20), _row("k3", 3, 0.80, 0.50), _row("k10", 10, 0.99, 0.93)]
    choice = best_configs(rows, ["recall@k"])
    assert max(rows, key=lambda r: r.metrics["recall@k"] or 0).id == "k10"  # what choosing on the value gives
    assert choice.best["recall@k"] == "k3" and choice.chosen_by["recall@k"] == "lift"
    assert "recall@k" not in choice.ties


def test_a_tie_goes_to_the_cheaper_configuration_and_is_named():
    """recall@1500tok does not depend on top_k: every depth of one pipeline scores the same. The tie goes
    to the shallowest (whatever the order the rows come in) and is named with the knob that does not matter."""
    rows = [_row("k10", 10, 0.9, 0.9), _row("k1", 1, 0.4, 0.2), _row("k3", 3, 0.8, 0.5)]
    for order in (rows, rows[::-1]):
        choice = best_configs(order, ["recall@1500tok"])
        assert choice.best["recall@1500tok"] == "k1" and choice.chosen_by["recall@1500tok"] == "value"
        assert choice.ties["recall@1500tok"] == ["k1", "k3", "k10"]
        assert tie_knobs(order, choice.ties["recall@1500tok"]) == ["top_k"]


def test_a_configuration_is_compared_with_the_baseline_at_its_own_depth():
    points = {
        "bm25-3": ({"top_k": 3, "retriever_mode": "bm25"}, 3),
        "bm25-10": ({"top_k": 10, "retriever_mode": "bm25"}, 10),
        "hybrid-3": ({"top_k": 3, "retriever_mode": "hybrid"}, 3),
        "hybrid-10": ({"top_k": 10, "retriever_mode": "hybrid"}, 10),
    }
    assert same_depth_baseline(points, "bm25-3", "hybrid-10") == "bm25-10"
    assert same_depth_baseline(points, "bm25-3", "bm25-10") == "bm25-10"  # only deeper: itself, not tested
    assert same_depth_baseline(points, "bm25-3", "hybrid-3") == "bm25-3"
    del points["bm25-10"]
    assert same_depth_baseline(points, "bm25-3", "hybrid-10") is None  # none in the grid: tested on lift


@pytest.mark.parametrize("grid_file", ["pipelines/sweep.yaml", "benchmarks/grids/answers_local.yaml"])
def test_make_sweeps_table_fits_120_columns_with_every_name_whole(grid_file):
    """pipelines/sweep.yaml's 24 configurations and 4 objectives, and a grid of multi-line prompts (shown by
    their hash, as in the configuration's id): each row's values in full, within 120 columns."""
    from ragsweep.evaluation.records import SweepResult
    from ragsweep.evaluation.sweep import SweepGrid, config_id
    from ragsweep.report.terminal import sweep_label, sweep_table

    grid = SweepGrid.load(ROOT / grid_file)
    rows = []
    for n, params in enumerate(grid.configurations()):
        value = {m: 0.5 + n / 100 for m in grid.objectives}
        rows.append(
            ConfigResult(
                id=config_id(params),
                params=params,
                top_k=int(params["top_k"] or 0),
                latency_ms_per_query=1234.5,
                metrics=value,
                chance_level={m: 0.25 for m in value},
                lift_over_chance={m: v - 0.25 for m, v in value.items()},
            )  # fmt: skip
        )
    choice = best_configs(rows, grid.objectives)
    report = SweepResult(
        baseline=rows[0].id, grid=grid.grid, objectives=grid.objectives, configs=rows, best=choice.best,
        chosen_by=choice.chosen_by, ties=choice.ties,
    )  # fmt: skip
    text = sweep_table(report)
    assert all(len(line) <= TERMINAL_COLUMNS for line in text.splitlines()), max(text.splitlines(), key=len)
    for row in rows:
        assert any(line.startswith(sweep_label(row.params) + " ") for line in text.splitlines())
    assert "retriever_mode=hybri-" not in text and "\n{context}" not in text
    assert "retriever_mode=hybrid-" in text if "retriever_mode" in grid.grid else "text" in text


def _changed(before: str, after: str) -> list[str]:
    """The lines of ``after`` that are not in ``before`` and vice versa, as a unified diff gives them."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [d for d in diff if d[:1] in "+-" and not d.startswith(("+++", "---"))]


def test_an_apps_values_are_set_in_place_and_its_depth_in_search_topk(tmp_path):
    """A Pathway app.yaml: the prompt (a ``|`` block) replaced, the top-k written where the app reads it
    (its question answerer's search_topk), every other line (tags, comments, order) untouched."""
    config = PipelineConfig.load(APP)
    before = APP.read_text()
    after = set_values(config, {"top_k": 3, "prompt_template": "Answer from {context}:\n{query}\n"})
    removed = [d[1:] for d in _changed(before, after) if d.startswith("-")]
    added = [d[1:] for d in _changed(before, after) if d.startswith("+")]
    assert added == ["  Answer from {context}:", "  {query}", "  search_topk: 3"]
    old_prompt = before.split("$prompt_template: |\n")[1].split("\n\nquestion_answerer")[0].splitlines()
    assert removed == [*old_prompt, "  search_topk: 8"]
    path = tmp_path / "app.yaml"
    path.write_text(after)
    loaded = PipelineConfig.load(path)
    assert loaded.top_k == 3 and loaded.get("prompt_template") == "Answer from {context}:\n{query}\n"


def test_a_comment_after_a_value_stays_where_it_was(tmp_path):
    config = PipelineConfig.load(ROOT / "pipelines" / "default.yaml")
    before = Path(config.path).read_text()
    after = set_values(config, {"retriever_mode": "bm25", "top_k": 10, "route_docs": 2})
    assert sorted(_changed(before, after)) == sorted(
        [
            "-$top_k: 5",
            "-$retriever_mode: hybrid      # bm25 | knn | hybrid: which of the factories below is used",
            "-$route_docs: null            # null | N: rank documents first (title or file stem + first chunk), retrieve "
            "chunks in the top N",
            "+$top_k: 10",
            "+$retriever_mode: bm25        # bm25 | knn | hybrid: which of the factories below is used",
            "+$route_docs: 2               # null | N: rank documents first (title or file stem + first chunk), retrieve "
            "chunks in the top N",
        ]
    )
    path = tmp_path / "p.yaml"
    path.write_text(after)
    loaded = PipelineConfig.load(path)
    assert (loaded.top_k, loaded.get("retriever_mode"), loaded.get("route_docs")) == (10, "bm25", 2)


# ---------------------------------------------------------------------- a real sweep, written back

GRID = """\
grid:
  top_k: [1, 3, 10]
  retriever_mode: [bm25, hybrid]
baseline: {top_k: 10, retriever_mode: bm25}
objectives: [recall@k, recall@1500tok]
ks: [1, 3, 10]
"""
SAMPLE = ["--sample", "40", "--seed", "3"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from ragsweep.cli import main

    root = tmp_path_factory.mktemp("best")
    (root / "grid.yaml").write_text(GRID)
    best = root / "best.yaml"
    args = ["sweep", "--pipeline", str(ROOT / "pipelines" / "default.yaml"), "--dataset"]
    args += [str(ROOT / "datasets" / "cuad-mini"), "--grid", str(root / "grid.yaml"), "--out", str(root / "runs")]
    args += [*SAMPLE, "--name", "s", "--write-best", str(best)]
    return root, best, args, main


@pytest.fixture(scope="module")
def sweep_output(swept):
    import contextlib
    import io

    root, best, args, main = swept
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(args)
    assert code == 0
    return out.getvalue(), read_sweep(root / "runs" / "s")


def test_the_sweep_says_what_it_chose_on_and_names_the_tie(sweep_output):
    text, sweep = sweep_output
    assert sweep.chosen_by == {"recall@k": "lift", "recall@1500tok": "value"}
    lifts = {c.id: c.lift_over_chance["recall@k"] for c in sweep.configs}
    assert lifts[sweep.best["recall@k"]] == max(v for v in lifts.values() if v is not None)
    deepest = [c.id for c in sweep.configs if c.top_k == 10]
    assert sweep.best["recall@k"] not in deepest
    tied = sweep.ties["recall@1500tok"]  # top_k plays no part in it: every depth of the winner ties
    assert len(tied) == 3 and sweep.config(tied[0]).top_k == 1
    assert {sweep.config(t).params["retriever_mode"] for t in tied} == {sweep.config(tied[0]).params["retriever_mode"]}
    assert (
        "on lift over chance" in text and "a tie: 3 configurations score" in text and "differing only in top_k" in text
    )
    assert sweep.pareto_axes == ["recall@k lift over chance", "latency_ms_per_query"]  # not depth against time
    saved = json.loads((Path(sweep.sweep_dir or "") / "sweep.json").read_text())
    assert saved["chosen_by"] == sweep.chosen_by and saved["ties"] == sweep.ties


def test_nothing_is_significant_for_being_deeper(sweep_output):
    """Each @k comparison is at equal depth: a configuration that differs from the baseline only in top_k
    is not tested, and the held-out verdict compares the chosen one with the baseline's pipeline at its depth."""
    _, sweep = sweep_output
    base = sweep.config(sweep.baseline)
    for row in sweep.configs:
        against = row.compared_with["recall@k"]
        if row.params["retriever_mode"] == base.params["retriever_mode"]:
            assert against is None and row.p_values["recall@k"] is None and not row.significant["recall@k"]
        else:
            assert against is not None and sweep.config(against).top_k == row.top_k
    verdict = sweep.verdict
    assert verdict is not None and verdict.chosen == sweep.best["recall@k"]
    if verdict.compared_with is not None:
        assert sweep.config(verdict.compared_with).top_k == sweep.config(verdict.chosen).top_k
        assert set(verdict.configs) >= {verdict.chosen, verdict.compared_with}
        chosen, other = (verdict.configs[c].metrics["recall@k"] for c in (verdict.chosen, verdict.compared_with))
        assert verdict.difference == pytest.approx(chosen - other)  # every test case has a recall@k here
        assert verdict.direction() == ("better" if chosen > other else "worse" if chosen < other else "equal")


def test_the_table_fits_and_the_last_line_is_the_report(sweep_output):
    text, sweep = sweep_output
    lines = text.rstrip("\n").splitlines()
    table = lines[: 3 + len(sweep.configs)]
    assert all(len(line) <= TERMINAL_COLUMNS for line in table), max(map(len, table))
    assert "configuration = top_k,retriever_mode" in table[0]
    assert any(line.startswith("1,hybrid ") for line in table)  # values never cut
    assert lines[-1] == f"report written: {Path(sweep.sweep_dir or '') / 'report.html'}"
    page = (Path(sweep.sweep_dir or "") / "report.html").read_text()
    assert "chosen on lift over chance" in page and "a tie of 3 configurations" in page
    winner = sweep.config(sweep.best["recall@k"])
    chance, lift = winner.chance_level["recall@k"], winner.lift_over_chance["recall@k"]
    assert f"chance {chance:.3f} · lift +{lift:.3f}" in page


def test_the_written_file_is_the_users_with_the_chosen_values(swept, sweep_output):
    _, best, _, _ = swept
    _, sweep = sweep_output
    winner = sweep.config(sweep.best["recall@k"])
    before = (ROOT / "pipelines" / "default.yaml").read_text()
    after = best.read_text()
    header = [line for line in after.splitlines() if line.startswith(HEADER)]
    assert after.startswith(header[0]) and len(header) in (5, 6)  # 6: a warning that the test split contradicts it
    assert "sweep s: 6 configurations" in header[0] and winner.id in header[1] and "lift over chance" in header[1]
    assert "test split (" in header[3] and "95% CI [" in header[3] and "at equal depth): recall@k " in header[3]
    changed = [d for d in _changed(before, after) if not d[1:].startswith(HEADER)]
    expected = {f"$top_k: {winner.top_k}", f"$retriever_mode: {winner.params['retriever_mode']}"}
    assert {d[1:].split("#")[0].strip() for d in changed if d.startswith("+")} <= expected
    assert len([d for d in changed if d.startswith("+")]) == len([d for d in changed if d.startswith("-")])


def test_eval_of_the_written_file_scores_what_the_sweep_scored(swept, sweep_output):
    root, best, _, main = swept
    _, sweep = sweep_output
    winner = sweep.best["recall@k"]
    code = main(["eval", "--pipeline", str(best), "--dataset", str(ROOT / "datasets" / "cuad-mini"), *SAMPLE,
                 "--ks", "1,3,10", "--budgets", "1500", "--out", str(root / "runs"), "--name", "e"])  # fmt: skip
    assert code == 0
    scored = {c["id"]: c for c in read_cases(Path(sweep.sweep_dir or "") / "configs" / winner / "cases.jsonl")}
    evaluated = {c["id"]: c for c in read_cases(root / "runs" / "e" / "cases.jsonl")}
    assert set(scored) <= set(evaluated) and len(scored) > 10
    for cid, case in scored.items():
        again = evaluated[cid]
        assert again["top_k"] == case["top_k"]
        assert [(h["doc_id"], h["start"], h["end"], h["text"]) for h in again["hits"]] == [
            (h["doc_id"], h["start"], h["end"], h["text"]) for h in case["hits"]
        ], cid
        retrieval = {m: v for m, v in case["metrics"].items() if "@" in m or m.startswith("first_relevant_rank")}
        assert len(retrieval) > 10  # the sweep did not answer: its metrics are the retrieval ones
        assert {m: again["metrics"].get(m) for m in retrieval} == retrieval, cid


# ---------------------------------------------------------------------- a user's app.yaml, written back

APP_GRID = """\
grid:
  top_k: [1, 3]
  max_tokens: [20, 40]
baseline: {top_k: 3, max_tokens: 20}
objectives: [recall@k]
ks: [1, 3]
"""
APP_DOCS = {
    "a.txt": "Rent is due on the first day of each month.\n\nRepairs are the landlord's duty at all times.\n",
    "b.txt": "The supplier delivers the goods within fourteen days.\n\nLate delivery costs a penalty.\n",
    "c.txt": "This agreement is governed by the laws of Delaware.\n",
}
APP_CASES = [
    ("rent", "When is the rent due?", "a.txt", "Rent is due on the first day"),
    ("repairs", "Who does the repairs?", "a.txt", "Repairs are the landlord's duty"),
    ("delivery", "When are the goods delivered?", "b.txt", "The supplier delivers the goods"),
    ("law", "Which laws govern the agreement?", "c.txt", "governed by the laws of Delaware"),
]


def test_an_apps_best_is_written_into_the_app_and_eval_reproduces_it(tmp_path):
    """A Pathway app.yaml with no $top_k (its question answerer's search_topk is the depth): the sweep's
    top_k lands in search_topk, a $variable in place, and ``ragsweep eval`` of the written app scores
    every case as the sweep scored the winner."""
    from ragsweep.cli import main

    data = tmp_path / "data"
    (data / "docs").mkdir(parents=True)
    for name, text in APP_DOCS.items():
        (data / "docs" / name).write_text(text)
    lines = [
        json.dumps({"id": cid, "question": q, "evidence": [{"doc_id": doc, "text": ev}], "reference_answer": ev})
        for cid, q, doc, ev in APP_CASES
    ]
    (data / "cases.jsonl").write_text("\n".join(lines) + "\n")
    (data / "README.md").write_text("Written by this test; no licence needed.\n")
    (tmp_path / "grid.yaml").write_text(APP_GRID)
    app, best = ROOT / "tests" / "fixtures" / "apps" / "best_app.yaml", tmp_path / "best.yaml"
    common = ["--dataset", str(data), "--out", str(tmp_path / "runs"), "--ks", "1,3"]
    assert main(["sweep", "--pipeline", str(app), "--grid", str(tmp_path / "grid.yaml"), "--name", "s",
                 "--write-best", str(best), *common]) == 0  # fmt: skip
    sweep = read_sweep(tmp_path / "runs" / "s")
    winner = sweep.config(sweep.best["recall@k"])
    assert winner.id != sweep.baseline
    changed = [d for d in _changed(app.read_text(), best.read_text()) if not d[1:].startswith(HEADER)]
    expected = {"-  search_topk: 2", f"+  search_topk: {winner.params['top_k']}"}
    if winner.params["max_tokens"] != 40:
        expected |= {"-$max_tokens: 40   # chunk size the splitter aims at", f"+$max_tokens: {winner.params['max_tokens']}   # chunk size the splitter aims at"}  # fmt: skip
    assert set(changed) == expected
    assert main(["eval", "--pipeline", str(best), "--name", "e", *common]) == 0
    scored = {c["id"]: c for c in read_cases(tmp_path / "runs" / "s" / "configs" / winner.id / "cases.jsonl")}
    again = {c["id"]: c for c in read_cases(tmp_path / "runs" / "e" / "cases.jsonl")}
    assert set(scored) == set(again) == {c[0] for c in APP_CASES}
    for cid, case in scored.items():
        assert [h["text"] for h in again[cid]["hits"]] == [h["text"] for h in case["hits"]], cid
        assert {m: again[cid]["metrics"].get(m) for m in case["metrics"] if "@" in m} == {
            m: v for m, v in case["metrics"].items() if "@" in m
        }


def test_an_app_on_pathways_default_search_topk_gets_the_line_added(tmp_path):
    """No search_topk in the app (Pathway's default): one line added under its question answerer's tag."""
    path = tmp_path / "app.yaml"
    path.write_text(APP.read_text().replace("  search_topk: 8\n", ""))
    config = PipelineConfig.load(path)
    assert config.top_k_origin is not None and "default" in config.top_k_origin
    after = set_values(config, {"top_k": 4})
    assert _changed(path.read_text(), after) == ["+  search_topk: 4"]
    path.write_text(after)
    assert PipelineConfig.load(path).top_k == 4


def test_a_choice_the_test_split_contradicts_is_said_to_be_one():
    from ragsweep.evaluation.records import HoldoutVerdict
    from ragsweep.report.terminal import verdict_lines

    verdict = HoldoutVerdict(cases=9, objective="recall@k", chosen="a", baseline="b", compared_with="b")
    verdict.p_value, verdict.significant, verdict.difference = 0.001, True, -0.14
    assert verdict.direction() == "worse"
    assert "recall@k -0.1400 (worse)" in "\n".join(verdict_lines(verdict))
    assert verdict_lines(verdict)[-1].startswith(
        "warning: on the test split the chosen configuration is significantly worse"
    )
    verdict.difference = 0.14
    assert verdict.direction() == "better" and not verdict_lines(verdict)[-1].startswith("warning")


def test_a_nested_value_is_set_without_touching_its_siblings(tmp_path):
    """search_topk between other arguments of the question answerer: only its own line changes."""
    path = tmp_path / "app.yaml"
    text = APP.read_text().replace("  search_topk: 8\n", "")
    text = text.replace("  indexer: $document_store\n", "  indexer: $document_store\n  search_topk: 8   # chunks\n")
    path.write_text(text)
    after = set_values(PipelineConfig.load(path), {"top_k": 2, "prompt_template": "[{query}] {context}"})
    changed = _changed(text, after)
    old_prompt = text.split("$prompt_template: |\n")[1].split("\n\nquestion_answerer")[0].splitlines()
    removed = ["-$prompt_template: |", *(f"-{line}" for line in old_prompt), "-  search_topk: 8   # chunks"]
    assert [d for d in changed if d.startswith("-")] == removed
    assert [d for d in changed if d.startswith("+")] == [
        '+$prompt_template: "[{query}] {context}"',
        "+  search_topk: 2   # chunks",
    ]
    path.write_text(after)
    loaded = PipelineConfig.load(path)
    assert loaded.top_k == 2 and loaded.get("prompt_template") == "[{query}] {context}"


def test_a_component_argument_axis_is_written_inside_its_component(tmp_path):
    """The answer-side axes (``question_answerer.search_topk``, ``llm.model``, a prompt template given to the
    answerer itself) are set in the component's own block, never as a new ``$variable``."""
    source = Path(__file__).parent / "fixtures" / "apps" / "answer_sweep.yaml"
    path = tmp_path / "app.yaml"
    path.write_text(source.read_text())
    values = {"question_answerer.search_topk": 2, "llm.model": "gpt-4.1-mini", "question_answerer.max_tokens": 64}
    after = set_values(PipelineConfig.load(path), values)
    assert _changed(path.read_text(), after) == [
        '-  model: "gpt-4o-mini"',
        "+  model: gpt-4.1-mini",
        "+  max_tokens: 64",
        "-  search_topk: 4",
        "+  search_topk: 2",
    ]
    (tmp_path / "best.yaml").write_text(after)
    check_values(tmp_path / "best.yaml", values)
    with pytest.raises(ConfigError, match="reads back"):
        check_values(path, values)  # the unedited file does not hold them
