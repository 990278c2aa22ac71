"""report.html's funnel, in headless Chromium: it renders, its counts add up, a click on a bar filters the cases.

The run is the fixture eval run (14 cases, top_k 10, depths 1/3/5/10) with each case's stage set by a rule
from its own numbers: no relevant chunk at 10 -> chunking at every depth; else none at k -> retrieval;
else judged wrong -> answer; else found; the 2 unanswerable cases are outside the funnel. At k = 10:
found 5 (0001 0002 0003 0007 0011), chunking 4 (0004 0005 0009 0012), answer 3 (0006 0008 0010); at
k = 1, retrieval 3 (0001 0008 0010).
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ragsweep.report import drilldown
from ragsweep.report.html import write_html_report
from support import RUNS
from test_report_html import _Dom, chromium, dump_dom  # noqa: F401 - chromium: pytest fixture

KS = (1, 3, 5, 10)
BADGES = {"1:retrieval": ["lost at answer"] * 2, "10:chunking": ["lost at chunking"] * 4, "10:found": []}


def _stage(line: dict, k: int) -> str:
    hit = line["metrics"]
    if not hit[f"hit_rate@{KS[-1]}"]:
        return "chunking"
    if not hit[f"hit_rate@{k}"]:
        return "retrieval"
    return "found" if line["judge"]["is_correct"] else "answer"


def _diagnosis(lines: list[dict]) -> dict:
    def counts(k: int, type_: str | None = None) -> dict:
        inside = [line for line in lines if not line.get("unanswerable") and type_ in (None, line["type"])]
        stages = Counter(_stage(line, k) for line in inside)
        return {"found": stages.pop("found", 0), "lost": dict(stages)}

    head = counts(10)
    types = {line["type"] for line in lines if not line.get("unanswerable")}
    by_type = {t: counts(10, t) for t in sorted(types)}
    return {
        "k": 10, "cases": 12, "found": head["found"], "lost": head["lost"], "excluded": {"unanswerable": 2},
        "by_k": {str(k): counts(k) for k in KS}, "answer_rule": "judge", "answer_kinds": {"wrong": 3},
        "groups": {"type": by_type},
    }  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("funnel") / "eval"
    shutil.copytree(RUNS / "eval", run)
    lines = [json.loads(line) for line in (run / "cases.jsonl").read_text().splitlines()]
    for line in lines:
        if not line.get("unanswerable"):
            line["lost_at_k"] = {str(k): _stage(line, k) for k in KS}
            line["lost_at"] = None if line["lost_at_k"]["10"] == "found" else line["lost_at_k"]["10"]
    (run / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = json.loads((run / "report.json").read_text())
    report["diagnosis"] = _diagnosis(lines)
    (run / "report.json").write_text(json.dumps(report))
    return run


def _lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "cases.jsonl").read_text().splitlines()]


def _expected(run: Path, token: str) -> set[str]:
    k, stage = token.split(":")
    return {line["id"] for line in _lines(run) if line.get("lost_at_k", {}).get(k) == stage}


def test_the_funnel_adds_up_and_each_bar_links_to_its_cases(run):
    text = write_html_report(run).read_text()
    section = text[text.index('<section id="funnel">') :]
    section = section[: section.index("</section>")]
    links = re.findall(
        r'<a href="#lost=(\d+):(\w+)" class="funnel-link" data-k="\1" data-stage="\2" data-n="(\d+)"', section
    )
    by_k: dict[int, dict[str, int]] = {}
    for k, stage, n in links:
        by_k.setdefault(int(k), {})[stage] = int(n)
        assert int(n) == len(_expected(run, f"{k}:{stage}")) > 0
    assert list(by_k) == [10, 1, 3, 5]  # the served depth first
    assert all(sum(counts.values()) == 12 for counts in by_k.values()), by_k
    assert by_k[10] == {"found": 5, "chunking": 4, "answer": 3} and by_k[1]["retrieval"] == 3
    assert "Outside the funnel: unanswerable: 2" in section and "judge (wrong: 3)" in section
    assert '<option value="10:chunking">lost at chunking @10 (4)</option>' in text
    assert text.count('<span class="badge warn">lost at chunking</span>') == 4
    table = section[section.index('<table class="sortable funnel-type">') :]
    rows = re.findall(r"<tr><td>([^<]+)</td>((?:<td class=\"num\" data-v=\"\d+\">\d+</td>)+)</tr>", table)
    per_type = Counter(line["type"] for line in _lines(run) if not line.get("unanswerable"))
    assert {t for t, _ in rows} == set(per_type)
    for t, cells in rows:  # found, retrieval... then the type's cases, which they add up to
        numbers = [int(n) for n in re.findall(r'data-v="(\d+)"', cells)]
        assert sum(numbers[:-1]) == numbers[-1] == per_type[t], t


def test_a_click_on_a_bar_shows_its_cases_in_a_browser(run, chromium, tmp_path, monkeypatch):  # noqa: F811
    from test_watch_live import DevTools  # deferred: that module imports test_report_html

    # most cases packed as data, not HTML: the click must load them and filter them as the page renders them
    monkeypatch.setattr(drilldown, "MAX_EMBEDDED_FAILURES", 1)
    monkeypatch.setattr(drilldown, "EMBEDDED_SAMPLE", 1)
    page = write_html_report(run, tmp_path / "packed.html")
    assert 'id="case-data"' in page.read_text()
    browser = DevTools(chromium, tmp_path / "profile")
    try:
        browser.open(page.as_uri())
        assert browser.evaluate('document.querySelectorAll("#funnel svg.plot[data-drawn]").length') == 4
        for token in ("1:retrieval", "10:chunking", "10:found"):
            k, stage = token.split(":")
            point = browser.evaluate(
                f'(() => {{ const t = document.querySelector(\'a.funnel-link[data-k="{k}"][data-stage="{stage}"] text\');'
                't.scrollIntoView({block: "center"}); const r = t.getBoundingClientRect();'
                "return [r.left + r.width / 2, r.top + r.height / 2]; })()"
            )
            for kind in ("mousePressed", "mouseReleased"):
                browser.send("Input.dispatchMouseEvent", type=kind, x=point[0], y=point[1], button="left", clickCount=1)
            expected = _expected(run, token)
            browser.until(f'document.getElementById("case-lost").value === "{token}"', 15)  # set as it filters
            assert browser.evaluate("location.hash") == f"#lost={token}"
            assert browser.evaluate('document.getElementById("cases").dataset.visible') == str(len(expected))
            shown = browser.evaluate(
                '[...document.querySelectorAll("#cases details.case:not([hidden])")].map(c => c.dataset.id)'
            )
            assert set(shown) == expected, token
            badges = browser.evaluate(
                '[...document.querySelectorAll("#cases details.case:not([hidden]) .badge.warn")].map(b => b.textContent)'
            )
            assert sorted(badges) == BADGES[token]  # each case's badge: its stage at the served depth
        assert not browser.errors()
    finally:
        browser.close()


def test_a_link_to_a_stage_opens_the_page_filtered(run, chromium, tmp_path):  # noqa: F811
    page = write_html_report(run, tmp_path / "report.html")
    dom = _Dom(dump_dom(chromium, tmp_path, page, "#lost=10:answer"))
    assert {c["data-id"] for c in dom.cases if "hidden" not in c} == _expected(run, "10:answer") == {
        "cuad-0006", "cuad-0008", "cuad-0010"
    }  # fmt: skip
    assert dom.count_text == "3 of 14 cases shown"
