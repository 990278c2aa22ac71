"""Control characters and bidirectional marks in what a report shows (questions, ids, evidence, answers,
chunk texts) are named by their code point (``<U+202E>``) in report.html, never written raw: a dataset
that skipped validation cannot hide text, reorder what is read around it or break the page."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import ragsweep
from ragsweep.report.assets import JS
from ragsweep.report.svg import esc
from support import PIPELINE as DEFAULT

UNSEEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
SAMPLE = "a\x00b\x1b[31mc\u202edcba\u2066d\x7fe\x85f\tg\nh"


def test_the_one_escaping_helper_names_them():
    assert esc("<b>\u202e</b>") == "&lt;b&gt;&lt;U+202E&gt;&lt;/b&gt;"
    assert esc(SAMPLE) == (
        "a&lt;U+0000&gt;b&lt;U+001B&gt;[31mc&lt;U+202E&gt;dcba&lt;U+2066&gt;d&lt;U+007F&gt;e&lt;U+0085&gt;f\tg\nh"
    )
    assert esc("Ünïcode 中文 — fine") == "Ünïcode 中文 — fine" and esc(None) == ""


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the page's script")
def test_the_pages_script_names_them_as_python_does():
    """The drilldown's cases not embedded as HTML are rendered by the page's script: its esc mirrors svg.esc."""
    found = re.search(r"  var ESC = .*?\n(?=  function fmt)", JS, re.S)
    assert found is not None
    script = found.group() + f"process.stdout.write(JSON.stringify(esc({json.dumps(SAMPLE)} + '<&\"\\'>')));"
    run = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=30, check=True)
    shown = json.loads(run.stdout)
    assert shown == esc(SAMPLE + "<&\"'>") and "c&lt;U+202E&gt;dcba" in shown and UNSEEN.search(shown) is None


def _dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "dataset"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "lease\u202eexe.txt").write_text(
        "The Tenant pays\x1b[2J a monthly rent of eight thousand dollars.\n"
    )
    (folder / "docs" / "term.txt").write_text("This Agreement runs for three years from the Effective Date.\n")
    cases = [
        {
            "id": "rent\x1b]0;owned\x07",
            "question": "How much is the monthly\x00 rent?\u202e",
            "evidence": [{"text": "eight thousand dollars"}],
            "reference_answer": "Eight thousand\u2066 dollars",
            "response": "It is \u202eeight thousand\x08 dollars.",
        },
        {"id": "term", "question": "How long does the agreement run?", "evidence": [{"text": "three years"}]},
    ]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "README.md").write_text("Written by tests/test_report_unseen_characters.py.\n")
    return folder


def test_report_html_names_them_where_validation_was_skipped(tmp_path):
    result = ragsweep.evaluate(
        DEFAULT, _dataset(tmp_path), out=tmp_path / "runs", validate=False, overrides={"retriever_mode": "bm25"}
    )
    page = (Path(result.run_dir or "") / "report.html").read_text(encoding="utf-8")
    assert UNSEEN.search(page) is None  # before: NUL, ESC, BEL, BS and U+202E in the page as they were
    assert "How much is the monthly&lt;U+0000&gt; rent?&lt;U+202E&gt;" in page  # the question
    assert "rent&lt;U+001B&gt;]0;owned&lt;U+0007&gt;" in page  # the case id
    assert "lease&lt;U+202E&gt;exe.txt" in page  # the document id
    assert "It is &lt;U+202E&gt;eight thousand&lt;U+0008&gt; dollars." in page  # the answer
    assert "Eight thousand&lt;U+2066&gt; dollars" in page  # the reference
    assert "pays&lt;U+001B&gt;[2J a monthly rent" in page  # the served chunk's text
