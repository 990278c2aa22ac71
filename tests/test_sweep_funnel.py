"""The funnel of a real sweep over cuad-mini (30 cases; retriever_mode bm25 | hybrid x top_k 1 | 5), run once
for the module: each configuration's funnel in its result, its terminal line and its report.html row, a deeper
top_k moving cases out of retrieval, and `ragsweep compare` of the bm25 and the hybrid configuration naming
the cases that moved between stages (the pair of real runs; a hand-made pair is in test_compare_funnel.py)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from ragsweep.cli import main
from ragsweep.commands.sweep import SweepOptions, run_sweep
from ragsweep.evaluation.records import ConfigResult, SweepResult
from ragsweep.report.funnel_html import trials_funnel_html
from ragsweep.report.html import write_html_report
from ragsweep.report.runs import read_config_cases
from ragsweep.report.terminal import sweep_table
from ragsweep.report.tune_html import write_tune_html
from ragsweep.tuning.records import TrialRecord, TuneReport
from support import MINI, PIPELINE
from test_report_html import chromium, dump_dom  # noqa: F401 - chromium: pytest fixture

GRID = "grid:\n  retriever_mode: [bm25, hybrid]\n  top_k: [1, 5]\nbaseline: {retriever_mode: bm25, top_k: 5}\n"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, SweepResult]:
    tmp = tmp_path_factory.mktemp("sweep-funnel")
    (tmp / "grid.yaml").write_text(GRID + "objectives: [recall@k]\nks: [1, 5]\n")
    options = SweepOptions(
        pipeline=str(PIPELINE), dataset=str(MINI), grid=str(tmp / "grid.yaml"), out=str(tmp / "runs"),
        progress=False, limit=30, name="funnel",
    )  # fmt: skip
    return run_sweep(options)


def _config(report: SweepResult, mode: str, k: int) -> ConfigResult:
    return next(c for c in report.configs if c.params == {"retriever_mode": mode, "top_k": k})


def _stages(sweep_dir: Path, config: ConfigResult) -> dict[str, str]:
    """Each case in the funnel: its stage at the configuration's top_k, from its case line."""
    cases = read_config_cases(sweep_dir / "configs" / config.id)
    return {c.id: c.lost_at or "found" for c in cases if c.lost_at_k}


def test_each_configuration_carries_its_funnel(sweep):
    sweep_dir, report = sweep
    assert len(report.configs) == 4
    for config in report.configs:
        d = config.diagnosis
        assert d is not None and d.k == config.top_k
        stages = _stages(sweep_dir, config)
        assert d.cases == len(stages) == d.found + sum(d.lost.values()) > 0
        assert d.found == sum(s == "found" for s in stages.values())
        assert {s: n for s, n in d.lost.items() if n} == {
            s: sum(v == s for v in stages.values()) for s in set(stages.values()) - {"found"}
        }
    for mode in ("bm25", "hybrid"):  # a deeper list: fewer lost at retrieval, the same lost before it
        shallow, deep = _config(report, mode, 1).diagnosis, _config(report, mode, 5).diagnosis
        assert shallow is not None and deep is not None
        assert deep.lost.get("retrieval", 0) < shallow.lost.get("retrieval", 0)
        assert deep.found > shallow.found
        for stage in ("parse", "chunking"):
            assert deep.lost.get(stage, 0) == shallow.lost.get(stage, 0), stage


def test_the_sweep_table_and_page_show_a_funnel_per_configuration(sweep, chromium, tmp_path):  # noqa: F811
    sweep_dir, report = sweep
    text = sweep_table(report)
    assert "lost@k: where each configuration's cases were lost at its top_k" in text
    for config in report.configs:
        d = config.diagnosis
        assert d is not None
        line = next(li for li in text.splitlines() if li.startswith(f"  {config.params['retriever_mode']},{d.k} "))
        assert line.endswith(f" of {d.cases} (found {d.found})")
        assert all(f"{s} {n}" in line for s, n in d.lost.items() if n)

    page = write_html_report(sweep_dir).read_text()
    section = page[page.index('<section id="funnel">') :]
    section = section[: section.index("</section>")]
    assert section.count('<svg class="plot"') == 1
    for config in report.configs:
        d = config.diagnosis
        assert d is not None
        row = section[section.index(f'<tr data-config="{config.id}">') :]
        cells = [int(v) for v in re.findall(r'<td class="num" data-v="(\d+)"', row[: row.index("</tr>")])]
        assert cells[0] == d.found and cells[-1] == d.cases == sum(cells[:-1])
    segments = [int(n) for n in re.findall(r'data-segment="[a-z]+" data-n="(\d+)"', section)]
    assert sum(segments) == sum(c.diagnosis.cases for c in report.configs if c.diagnosis)
    dom = dump_dom(chromium, tmp_path, sweep_dir / "report.html")  # laid out by a browser, the page's script ran
    drawn = dom[dom.index('<section id="funnel">') :]
    assert re.search(r'<svg class="plot"[^>]*data-drawn="1"', drawn[: drawn.index("</section>")])


def test_compare_of_a_bm25_and_a_hybrid_run_names_the_cases_that_moved(sweep, tmp_path, capsys):
    sweep_dir, report = sweep
    bm25, hybrid = _config(report, "bm25", 1), _config(report, "hybrid", 1)  # at k = 1 the two rank apart
    a, b = _stages(sweep_dir, bm25), _stages(sweep_dir, hybrid)
    expected: dict[tuple[str, str], list[str]] = defaultdict(list)
    for case_id, stage in a.items():
        if case_id in b and b[case_id] != stage:
            expected[(stage, b[case_id])].append(case_id)
    assert expected, "bm25 and hybrid lose the same cases at the same stages: nothing to compare"

    out = tmp_path / "compare.json"
    folders = [str(sweep_dir / "configs" / c.id) for c in (bm25, hybrid)]
    assert main(["compare", *folders, "--json", str(out)]) == 0
    moves = json.loads(out.read_text())["stages"]["moves"]
    assert {(m["from_stage"], m["to_stage"]): m["ids"] for m in moves} == expected
    terminal = " ".join(capsys.readouterr().out.split())  # the ids wrap under their move
    for (src, dst), ids in expected.items():
        assert f" {src} → {dst}: {len(ids)} {', '.join(ids[:10])}" in terminal


def test_a_tune_page_shows_the_funnel_of_each_complete_trial(sweep):
    """A tune's trials are configurations of the same folder layout: each complete one's funnel is on its page."""
    sweep_dir, report = sweep
    trials = [
        TrialRecord(number=i, config_id=c.id, params=dict(c.params), state="pruned" if i == 3 else "complete")
        for i, c in enumerate(report.configs)
    ]
    tune = TuneReport(
        dataset="cuad-mini", space={"top_k": [1, 5]}, objectives=["recall@k"], directions={"recall@k": "higher"},
        sampler="tpe", n_trials=4, dev_cases=30, cases_evaluated=120, cases_possible=120, trials=trials,
    )  # fmt: skip
    page = write_tune_html(tune, sweep_dir / "tune.html").read_text()
    section = page[page.index('<section id="funnel">') :]
    section = section[: section.index("</section>")]
    rows = re.findall(r'<tr data-config="([^"]+)">', section)
    assert rows == [c.id for c in report.configs[:3]]  # the pruned trial has no funnel of its own
    assert "trial 0: retriever_mode=bm25, top_k=1 @1" in section


def test_trials_that_proposed_the_same_configuration_share_one_named_row(sweep):
    """Optuna may propose a configuration again: the later trial is answered from the same result, so its
    funnel is one row named by both trials (not two rows carrying the later trial's name)."""
    sweep_dir, report = sweep
    first, other = report.configs[:2]
    trials = [
        TrialRecord(number=n, config_id=c.id, params=dict(c.params), state="complete")
        for n, c in enumerate((first, other, first))
    ]
    section = trials_funnel_html(sweep_dir, trials) or ""
    assert re.findall(r'<tr data-config="([^"]+)">', section) == [first.id, other.id]
    label = ", ".join(f"{k}={v}" for k, v in first.params.items())
    assert f"trial 0, 2: {label} @{first.top_k}" in section
    assert "trial 1: " in section and "trial 2: " not in section


def test_a_complete_trial_without_its_result_is_named_not_left_out(sweep):
    sweep_dir, report = sweep
    shown = TrialRecord(number=0, config_id=report.configs[0].id, params={}, state="complete")
    gone = TrialRecord(number=1, config_id="no-such-config", params={}, state="complete")
    section = trials_funnel_html(sweep_dir, [shown, gone]) or ""
    assert re.findall(r'<tr data-config="([^"]+)">', section) == [shown.config_id]
    assert "Not shown: complete trial(s) 1, whose result" in section
    assert trials_funnel_html(sweep_dir, [gone]) is None  # no result at all: no funnel section
