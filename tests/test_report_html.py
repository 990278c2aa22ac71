"""report.html from fixture runs, opened in headless Chromium (Debian's `chromium` package).

Chromium's --dump-dom gives the DOM after the inline JS ran: the page records that it laid
out its SVG plots (body[data-plots-drawn]) and applies the case filter named in the URL hash,
so report.html#failures must show exactly the failing cases. Screenshots are saved under the
pytest tmp dir (path printed with -s).
"""

import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ragsweep.evaluation.records import CaseResult
from ragsweep.report.html import write_html_report
from ragsweep.report.runs import read_config_cases, read_run
from support import RUNS

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--virtual-time-budget=3000",
]


@pytest.fixture(scope="module")
def chromium() -> Path:
    if not CHROMIUM.exists():
        pytest.fail(
            "headless Chromium is needed for the report tests: install it with "
            "`apt-get update && apt-get install -y chromium` (Debian's package, /usr/bin/chromium)"
        )
    return CHROMIUM


def _run_chromium(chromium: Path, tmp_path: Path, *args: str) -> str:
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.glob('chromium-profile-*')))}"
    proc = subprocess.run(
        [str(chromium), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def dump_dom(chromium, tmp_path, page: Path, fragment: str = "") -> str:
    return _run_chromium(chromium, tmp_path, "--dump-dom", page.as_uri() + fragment)


def screenshot(chromium, tmp_path, page: Path, png: Path, fragment: str = "", size: str = "1400,4200") -> Path:
    _run_chromium(chromium, tmp_path, f"--window-size={size}", f"--screenshot={png}", page.as_uri() + fragment)
    assert png.is_file() and png.stat().st_size > 20_000, "screenshot missing or empty"
    print(f"\nscreenshot: {png}")
    return png


class _Dom(HTMLParser):
    def __init__(self, text: str):
        super().__init__()
        self.body: dict = {}
        self.cases: list[dict] = []
        self.boxes: dict = {}
        self.count_text = ""
        self._in_count = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if tag == "details" and "case" in (a.get("class") or "").split():
            self.cases.append(a)
        if a.get("id") == "cases":
            self.boxes = a
        self._in_count = a.get("id") == "case-count"

    def handle_data(self, data):
        if self._in_count:
            self.count_text += data
            self._in_count = False


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(RUNS / name, dst)
    return dst


def _expected_failures(cases: list[CaseResult]) -> set[str]:
    """The failure rule, restated: no relevant chunk at the case's top_k, judged wrong, abstained on an answerable
    question or answered an unanswerable one, answerer error."""
    fails = set()
    for c in cases:
        assert c.answer is not None
        miss = not c.unanswerable and c.metrics[f"hit_rate@{c.top_k}"] == 0
        wrong = c.judge is not None and not c.judge.is_correct
        if miss or wrong or c.answer.abstained != c.unanswerable or c.answer.error:
            fails.add(c.id)
    return fails


def _assert_self_contained(text: str) -> None:
    assert "<link" not in text
    assert not re.search(r"<script[^>]+src=", text)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    assert not re.search(r"url\((https?:)?//", text)
    assert text.count("<script>") == 1  # the one inline script, no case text turned into a tag


def test_eval_report(chromium, tmp_path):
    run = _copy("eval", tmp_path)
    page = write_html_report(run)
    assert page == run / "report.html"
    text = page.read_text()
    _assert_self_contained(text)
    # arbitrary case text is escaped
    assert "<script>alert('x')</script>" not in text
    assert html.escape("<script>alert('x')</script>", quote=True) in text
    assert "&lt;without breach&gt;" in text
    assert len(text) < 1_000_000

    dom = _Dom(dump_dom(chromium, tmp_path, page))
    assert dom.body.get("data-js") == "ready", "inline JS did not run"
    # summary curve + type bars + document x type heatmap are visible and laid out
    assert int(dom.body["data-plots-drawn"]) >= 3
    assert len(dom.cases) == 14
    assert not any("hidden" in c for c in dom.cases)
    assert dom.count_text == "14 of 14 cases shown"

    result = read_run(run)
    assert result.top_k == 10 and {c.top_k for c in result.cases} == {10}
    expected = _expected_failures(result.cases)
    assert 0 < len(expected) < 14
    dom = _Dom(dump_dom(chromium, tmp_path, page, "#failures"))
    visible = {c["data-id"] for c in dom.cases if "hidden" not in c}
    assert visible == expected
    assert all(c["data-fail"] == "1" for c in dom.cases if "hidden" not in c)
    assert dom.boxes["data-filter"] == "failures" and dom.boxes["data-visible"] == str(len(expected))
    assert dom.count_text == f"{len(expected)} of 14 cases shown"

    dom = _Dom(dump_dom(chromium, tmp_path, page, "#retrieval-miss"))
    visible = [c for c in dom.cases if "hidden" not in c]
    assert visible and all("retrieval-miss" in c["data-kinds"].split() for c in visible)

    screenshot(chromium, tmp_path, page, tmp_path / "report_eval.png")
    first_fail = sorted(expected)[0]
    screenshot(chromium, tmp_path, page, tmp_path / "report_eval_case.png", f"#case={first_fail}", size="1400,5200")
    _assert_not_blank(tmp_path / "report_eval.png")


def test_sweep_report(chromium, tmp_path):
    run = _copy("sweep", tmp_path)
    page = write_html_report(run)
    text = page.read_text()
    _assert_self_contained(text)
    sweep = json.loads((run / "sweep.json").read_text())
    # heatmap panels per retriever mode, table rows per configuration, significance marks
    assert "recall@k · retriever_mode = bm25" in text and "recall@k · retriever_mode = hybrid" in text
    assert text.count('<tr data-id="') == len(sweep["configs"])
    # the first configuration is significantly worse than the baseline on recall@k
    row = text[text.index(f'<tr data-id="{sweep["configs"][0]["id"]}"') :]
    assert "▼*" in row[: row.index("</tr>")]
    # a grid axis that sets two variables (chunking) shows as two parameter columns
    assert "<th>min_tokens</th>" in text and "<th>max_tokens</th>" in text

    dom = _Dom(dump_dom(chromium, tmp_path, page, "#failures"))
    assert dom.body.get("data-js") == "ready"
    # 2 heatmap panels + best and baseline curves + type bars + document x type heatmap
    assert int(dom.body["data-plots-drawn"]) >= 6
    focus = sweep["best"][sweep["objectives"][0]]
    cfg = next(c for c in sweep["configs"] if c["id"] == focus)
    cases = read_config_cases(run / "configs" / focus)
    assert {c.top_k for c in cases} == {cfg["params"]["top_k"]} == {cfg["top_k"]}
    expected = _expected_failures(cases)
    assert expected
    assert {c["data-id"] for c in dom.cases if "hidden" not in c} == expected
    screenshot(chromium, tmp_path, page, tmp_path / "report_sweep.png")
    _assert_not_blank(tmp_path / "report_sweep.png")


def _assert_not_blank(png: Path) -> None:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - PIL comes with the project's dependencies
        return
    with Image.open(png) as im:
        colors = im.convert("RGB").resize((350, 1050)).getcolors(maxcolors=1 << 20)
    assert colors is not None and len(colors) > 100, "screenshot looks blank"


def test_missing_run_folder(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_html_report(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="sweep.json"):
        write_html_report(tmp_path / "empty")


# An app config in the style of Pathway's rag_evals app.yaml (llm-app): sources, an OpenAI chat model,
# a splitter, a document store and a BaseRAGQuestionAnswerer serving search_topk: 8. Its retriever is
# BM25, so nothing is fetched (ragsweep's offline embedder stays the default; the chat model is not
# built: ragsweep answers extractively without --llm).
RAG_EVALS_APP_YAML = """
$sources:
  - !pw.io.fs.read
    path: data
    format: binary
    with_metadata: true

$llm: !pw.xpacks.llm.llms.OpenAIChat
  model: "gpt-4o-mini"
  retry_strategy: !pw.udfs.ExponentialBackoffRetryStrategy
    max_retries: 6
  cache_strategy: !pw.udfs.DefaultCache {}
  temperature: 0

$splitter: !pw.xpacks.llm.splitters.TokenCountSplitter
  max_tokens: 300

$retriever_factory: !pw.stdlib.indexing.TantivyBM25Factory {}

$document_store: !pw.xpacks.llm.document_store.DocumentStore
  docs: $sources
  splitter: $splitter
  retriever_factory: $retriever_factory

question_answerer: !pw.xpacks.llm.question_answering.BaseRAGQuestionAnswerer
  llm: $llm
  indexer: $document_store
  search_topk: 8
"""


def _section(page: str, sid: str) -> str:
    found = re.search(rf'<section id="{sid}">(.*?)</section>', page, re.S)
    assert found, f"no section {sid}"
    return found.group(1)


def test_report_headline_is_at_the_k_the_app_config_serves(tmp_path, monkeypatch, capsys):
    """An app serving search_topk: 8, scored at --ks 1,3,5,10: report.html's headline and the
    terminal table are at @8 (the depth the pipeline served, read from the result), never a default @5."""
    from ragsweep.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-sent")
    app = tmp_path / "app.yaml"
    app.write_text(RAG_EVALS_APP_YAML)
    args = ["eval", "--pipeline", str(app), "--dataset", str(Path(__file__).parent.parent / "datasets" / "cuad-mini")]
    code = main([*args, "--ks", "1,3,5,10", "--limit", "6", "--out", str(tmp_path / "runs"), "--name", "app8"])
    assert code == 0
    table = capsys.readouterr().out
    assert "top_k: 8" in table
    rows = [line.split()[0] for line in table.splitlines() if "@" in line.split(" ")[0]]
    assert rows[:6] == [f"{f}@8" for f in ("hit_rate", "recall", "precision", "mrr", "ndcg", "map")]
    assert not any(r.endswith("@5") for r in rows)
    run_dir = tmp_path / "runs" / "app8"
    run = read_run(run_dir)
    assert run.top_k == 8 and run.ks == [1, 3, 5, 8, 10] and {c.top_k for c in run.cases} == {8}

    page = (run_dir / "report.html").read_text()
    summary = _section(page, "summary")
    headline = re.search(r'<p class="headline" data-k="(\d+)">(.*?)</p>', summary, re.S)
    assert headline and headline.group(1) == "8"
    names = re.findall(r"<b>([^<]+)</b>", headline.group(2))
    assert names[:2] == ["hit_rate@8", "recall@8"]
    assert headline.group(2).count("@8") > headline.group(2).count("@5") == 0
    assert '<th class="num main-k" title="the depth the pipeline serves">@8</th>' in summary
    assert "top_k 8" in page[: page.index("</header>")]
    assert "no relevant chunk in the top 8" in _section(page, "drilldown")


def _wide_run(tmp_path: Path) -> Path:
    """The fixture eval run with one question type per case (a heatmap wider than a narrow window) and
    one unanswerable question answered."""
    run = _copy("eval", tmp_path)
    lines = [json.loads(line) for line in (run / "cases.jsonl").read_text().splitlines() if line.strip()]
    for i, line in enumerate(lines):
        line["type"] = f"Clause type number {i:02d}"
        if line["id"] == "cuad-0013":  # unanswerable: it answers now
            line["answer"] = {"text": "The seller.", "answerer": "llm:gpt-4o-mini"}
    (run / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run


LAYOUT = """JSON.stringify((function () {
  var box = document.getElementById("doc-type"), svg = box.querySelector("[data-panel]:not([hidden]) svg.plot");
  var section = box.closest("section"), hint = document.querySelector('.scroll-hint[data-for="doc-type"]');
  var before = svg.getBoundingClientRect().right;
  box.scrollLeft = box.scrollWidth;
  var r = box.getBoundingClientRect(), s = svg.getBoundingClientRect(), q = section.getBoundingClientRect();
  var out = {overflowX: getComputedStyle(box).overflowX, overflow: box.dataset.overflow, hint: !hint.hidden,
             scrolled: box.scrollLeft, box: [r.left, r.right], svgRightBefore: before, svgRightAfter: s.right,
             section: [q.left, q.right], page: [document.documentElement.scrollWidth, window.innerWidth]};
  box.scrollLeft = 0;
  return out;
})())"""


def test_eval_report_in_a_browser_chance_pills_heatmap_box_and_outcome_labels(chromium, tmp_path):
    from test_watch_live import DevTools  # deferred: that module imports this one

    run = _wide_run(tmp_path)
    page = write_html_report(run)
    report = json.loads((run / "report.json").read_text())
    browser = DevTools(chromium, tmp_path / "profile")
    try:
        browser.send("Emulation.setDeviceMetricsOverride", width=900, height=900, deviceScaleFactor=1, mobile=False)
        browser.open(page.as_uri())
        # each headline pill: its number, and its chance level beside it when the metric has one
        chips = json.loads(
            browser.evaluate(
                'JSON.stringify([...document.querySelectorAll("p.headline .chip")].map(c => c.textContent))'
            )
        )
        assert chips
        for chip in chips:
            name = chip.split()[0]
            chance = report["baselines"].get(name, {}).get("chance")
            assert ("chance" in chip) == (chance is not None), chip
            assert chance is None or chip.endswith(f"chance {chance:.3f}"), chip
        assert any("chance" in chip for chip in chips)

        # the document x question type heatmap is wider than the window: it scrolls inside its own box
        layout = json.loads(browser.evaluate(LAYOUT))
        assert layout["overflowX"] in ("auto", "scroll") and layout["overflow"] == "1" and layout["hint"], layout
        assert layout["svgRightBefore"] > layout["box"][1]  # wider than its box...
        assert layout["box"][1] <= layout["section"][1]  # ...the box stays inside its section
        assert layout["page"][0] <= layout["page"][1]  # the page itself does not scroll sideways
        assert layout["scrolled"] > 0 and layout["svgRightAfter"] <= layout["box"][1] + 1  # its last column reachable

        browser.send("Emulation.setDeviceMetricsOverride", width=2400, height=900, deviceScaleFactor=1, mobile=False)
        browser.until('document.getElementById("doc-type").dataset.overflow === "0"', 10)
        assert browser.evaluate("document.querySelector('.scroll-hint[data-for=\"doc-type\"]').hidden") is True

        # the outcome badges say what happened
        badges = set(
            json.loads(
                browser.evaluate(
                    'JSON.stringify([...document.querySelectorAll("details.case .badge.fail")].map(b => b.textContent))'
                )
            )
        )
        assert {"answered an unanswerable question", "abstained on an answerable question"} <= badges, badges
        assert {"answer judged wrong", "no relevant chunk retrieved"} <= badges, badges
        options = browser.evaluate('[...document.querySelectorAll("#case-show option")].map(o => o.text).join("|")')
        assert "answered an unanswerable question" in options
        assert "bad abstention" not in page.read_text()
        assert not browser.errors()
    finally:
        browser.close()
    browser_hash = _Dom(dump_dom(chromium, tmp_path, page, "#answered-unanswerable"))
    visible = [c for c in browser_hash.cases if "hidden" not in c]
    assert [c["data-id"] for c in visible] == ["cuad-0013"]
