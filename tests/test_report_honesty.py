"""report.html and the terminal table say what their numbers mean: a metric that says nothing
about the answerer in use is marked, first_relevant_rank is shown once, abstention rates have
their CI, the document x type heatmap shows whole document names, and the header says what
"failing" means."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest

from ragsweep.evaluation.records import CaseResult
from ragsweep.evaluation.scoring import aggregate
from ragsweep.metrics.stats import bootstrap_ci
from ragsweep.report.html import write_html_report
from ragsweep.report.runs import case_failures, read_run
from ragsweep.report.terminal import summary_table
from support import RUNS
from test_report_html import _expected_failures, _section, chromium, dump_dom  # noqa: F401 - the fixture


def _eval_run(tmp_path: Path, answerer: str | None = None) -> Path:
    """The fixture eval run, its report.json saying ``answerer`` answered."""
    run = tmp_path / "eval"
    shutil.copytree(RUNS / "eval", run)
    if answerer is not None:
        report = json.loads((run / "report.json").read_text())
        report["answerer"] = answerer
        (run / "report.json").write_text(json.dumps(report))
    return run


def _summary_rows(page: str) -> dict[str, str]:
    """The summary table's rows (metric name -> row html)."""
    table = _section(page, "summary")
    rows = re.findall(r"<tr[^>]*><td>([a-z_@0-9]+)[^<]*(.*?)</tr>", table, re.S)
    return {name: rest for name, rest in rows}


# ------------------------------------------------------------------ answer metrics that say nothing


def test_the_table_of_uninformative_metrics_is_keyed_by_answerer_kind():
    from ragsweep.metrics.uninformative import uninformative

    assert uninformative("exact_match", "extractive") and uninformative("token_f1", "extractive")
    assert uninformative("exact_match", "llm:gpt-4o-mini") is None  # a short LLM answer can equal the reference
    assert uninformative("fact_coverage", "extractive") is None  # facts in a quoted sentence do count
    assert uninformative("recall@5", "extractive") is None and uninformative("token_f1", None) is None


def test_report_html_marks_them_for_the_extractive_answerer_only(tmp_path):
    page = write_html_report(_eval_run(tmp_path, "extractive")).read_text()
    rows = _summary_rows(page)
    assert "no information here" in rows["exact_match"] and "no information here" in rows["token_f1"]
    assert "no information here" not in rows["fact_coverage"] and "no information here" not in rows["abstained"]
    assert '<tr class="uninformative"><td>token_f1' in _section(page, "summary")
    assert "quotes whole sentences of the retrieved chunks" in _section(page, "summary")
    headline = re.search(r'<p class="headline".*?</p>', page, re.S)
    assert headline and "token_f1" not in headline.group(0)  # not among the key numbers

    llm = write_html_report(_eval_run(tmp_path / "llm")).read_text()  # answered by llm:gpt-4o-mini
    assert "no information here" not in _section(llm, "summary")
    assert "token_f1" in re.search(r'<p class="headline".*?</p>', llm, re.S).group(0)


def test_the_terminal_table_marks_them_and_says_why(tmp_path):
    run = read_run(_eval_run(tmp_path, "extractive"))
    table = summary_table(run)
    rows = {line.split()[0]: line for line in table.splitlines()[2:] if line.split()}
    assert rows["exact_match"].startswith("exact_match †") and rows["token_f1"].startswith("token_f1 †")
    assert "†" not in rows["fact_coverage"] and "†" not in rows["hit_rate@10"]
    assert "† no information here about the extractive answerer's answers" in table
    assert "  token_f1: the sentence's length, not its correctness, sets the F1" in table
    run.answerer = "llm:gpt-4o-mini"
    assert "†" not in summary_table(run)


# ------------------------------------------------------------------ first_relevant_rank once


def test_first_relevant_rank_is_one_row_of_the_report(tmp_path):
    run = _eval_run(tmp_path)
    assert {"first_relevant_rank", "first_relevant_rank_mean"} <= set(
        json.loads((run / "report.json").read_text())["metrics"]
    )
    rows = _summary_rows(write_html_report(run).read_text())
    ranks = [name for name in rows if name.startswith("first_relevant_rank")]
    assert ranks == ["first_relevant_rank", "first_relevant_rank_median"]
    result = read_run(run)
    low, high = result.interval("first_relevant_rank")
    assert f"[{low:.3f}, {high:.3f}]" in rows["first_relevant_rank"]
    # the terminal's row of the mean has the interval of the metric it repeats
    (line,) = [row for row in summary_table(result).splitlines() if row.startswith("first_relevant_rank_mean")]
    assert f"[{low:.3f}, {high:.3f}]" in line


# ------------------------------------------------------------------ abstention intervals


def _abstaining(case_id: str, abstained: bool, unanswerable: bool) -> CaseResult:
    return CaseResult(
        id=case_id,
        question="q",
        top_k=5,
        unanswerable=unanswerable,
        answer={"text": "I don't know." if abstained else "an answer", "abstained": abstained},
        metrics={"abstained": float(abstained)},
    )


def test_abstention_precision_and_recall_have_bootstrap_intervals_over_their_cases():
    # 6 unanswerable (4 abstained), 6 answerable (2 abstained): precision 4/6, recall 4/6
    flags = [(True, True)] * 4 + [(False, True)] * 2 + [(True, False)] * 2 + [(False, False)] * 4
    cases = [_abstaining(f"c{i}", a, u) for i, (a, u) in enumerate(flags)]
    agg = aggregate(cases, seed=3)
    assert agg.metrics["abstention_precision"] == pytest.approx(4 / 6)
    assert agg.metrics["abstention_recall"] == pytest.approx(4 / 6)
    precision = [1.0] * 4 + [0.0] * 2  # of the abstained cases: was it unanswerable?
    recall = [1.0] * 4 + [0.0] * 2  # of the unanswerable cases: did it abstain?
    assert agg.interval("abstention_precision") == bootstrap_ci(precision, seed=3)
    assert agg.interval("abstention_recall") == bootstrap_ci(recall, seed=3)
    low, high = agg.interval("abstention_precision")
    assert low is not None and high is not None and low < 4 / 6 < high
    assert (agg.counts["abstention_precision"].n, agg.counts["abstention_recall"].n) == (6, 6)
    f1_low, f1_high = agg.interval("abstention_f1")  # no mean of cases: the cases resampled in pairs
    assert f1_low is not None and f1_high is not None and f1_low < agg.metrics["abstention_f1"] < f1_high
    assert aggregate(cases, with_intervals=False).intervals == {}
    sweep = aggregate(cases, interval_metrics=["abstention_recall"])
    assert set(sweep.intervals) == {"abstention_recall"}


def test_abstention_f1_interval_matches_resampling_the_cases_by_hand():
    import numpy as np

    from ragsweep.metrics.answer import aggregate_abstention
    from ragsweep.metrics.stats import abstention_f1_ci

    rng = np.random.default_rng(7)
    pairs = [(bool(a), bool(u)) for a, u in zip(rng.random(120) < 0.4, rng.random(120) < 0.5, strict=True)]
    draws = rng.integers(0, len(pairs), size=(20000, len(pairs)))
    f1s = [aggregate_abstention([pairs[i] for i in row])["abstention_f1"] for row in draws[:4000]]
    by_hand = np.quantile([f for f in f1s if f is not None], [0.025, 0.975])
    low, high = abstention_f1_ci(pairs)
    assert low == pytest.approx(by_hand[0], abs=0.02) and high == pytest.approx(by_hand[1], abs=0.02)
    assert abstention_f1_ci(pairs[:1]) == (None, None)


# ------------------------------------------------------------------ what failing means


def test_the_header_says_what_failing_means(tmp_path):
    run = _eval_run(tmp_path)
    page = write_html_report(run).read_text()
    subtitle = re.search(r'<div class="sub">(.*?)</div>', page, re.S).group(1)
    cases = read_run(run).cases
    expected = _expected_failures(cases)
    misses = sum(1 for c in cases if "retrieval-miss" in case_failures(c))
    assert f"{len(expected)} failing (" in subtitle
    assert f"{misses}: no relevant chunk in the top 10 of an answerable question" in subtitle
    abstained = sum(1 for c in cases if "abstained-answerable" in case_failures(c))
    assert abstained and f"{abstained}: abstained on an answerable question" in subtitle  # what happened, by name
    assert "answered an unanswerable question" not in subtitle  # no case did


def test_an_unlocated_case_left_out_of_retrieval_is_no_retrieval_miss():
    case = CaseResult(id="lost", question="q", top_k=5, evidence_unlocated=True, metrics={"hit_rate@5": None})
    assert case_failures(case) == []
    zero = case.model_copy(update={"metrics": {"hit_rate@5": 0.0}})  # --unlocated zero scores it 0
    assert case_failures(zero) == ["retrieval-miss"]


# ------------------------------------------------------------------ whole document names in the heatmap

LONG = "GAINSCOINC_01_21_2010-EX-10.41-SPONSORSHIP AGREEMENT <Schedule & Annex> Part 2 of the Main Contract.pdf"

# measures, in Chromium, every row label of the first (visible) document x type heatmap: its text
# (without its tooltip), its left edge and its right edge against the first cell's
MEASURE = """<script>
(function () {
  var svg = document.querySelector('#doc-type [data-panel] svg');
  var cellX = parseFloat(svg.querySelector('rect.cell').getAttribute('x'));
  var out = [];
  svg.querySelectorAll('text').forEach(function (t) {
    var title = t.querySelector('title');
    if (!title || t.getAttribute('transform')) return;
    var box = t.getBBox();
    out.push({text: t.textContent.slice(title.textContent.length), left: box.x, right: box.x + box.width,
              cell: cellX});
  });
  document.body.setAttribute('data-labels', JSON.stringify(out));
})();
</script>"""


def test_the_heatmap_shows_whole_document_names_unclipped(chromium, tmp_path):  # noqa: F811
    run = _eval_run(tmp_path)
    lines = [json.loads(line) for line in (run / "cases.jsonl").read_text().splitlines()]
    for line in lines[::2]:
        line["doc_scope"] = [LONG]
    (run / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    page = write_html_report(run)
    text = page.read_text()
    assert LONG not in text and html.escape(LONG) in text  # escaped
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", MEASURE + "</body>"))
    labels = json.loads(
        html.unescape(re.search(r'data-labels="([^"]*)"', dump_dom(chromium, tmp_path, probe)).group(1))
    )
    names = [label["text"] for label in labels]
    assert LONG in names and "all documents" in names  # whole, in one label (wrapped over lines)
    for label in labels:
        assert label["left"] >= 0, f"{label['text']!r} is clipped on the left"
        assert label["right"] <= label["cell"], f"{label['text']!r} runs into the cells"
