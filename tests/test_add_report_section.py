"""A report.html section for data already in the run, added from this file alone: one function of the
run, registered with the eval page's sections."""

from __future__ import annotations

from pathlib import Path

import pytest

import ragsweep
from ragsweep.evaluation.records import RunResult
from ragsweep.report import html
from ragsweep.report.svg import esc

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "datasets" / "cuad-mini"
PIPELINE = ROOT / "pipelines" / "default.yaml"


def slowest_answers(run: RunResult) -> str | None:
    """The three longest answers (None: no answers, no section)."""
    answered = [c for c in run.cases if c.answer is not None]
    if not answered:
        return None
    longest = sorted(answered, key=lambda c: -len(c.answer.text if c.answer else ""))[:3]
    return "<ul>" + "".join(f"<li>{esc(c.id)}</li>" for c in longest) + "</ul>"


@pytest.fixture
def added_section():
    html.register_section(html.Section("longest", "Longest answers", slowest_answers), before="run")
    yield
    html.unregister_section("longest")


def test_a_registered_section_is_in_the_written_page(added_section, tmp_path):
    report = ragsweep.evaluate(PIPELINE, MINI, limit=4, out=tmp_path)
    page = (Path(report.run_dir) / "report.html").read_text()
    assert '<a href="#longest">Longest answers</a>' in page
    body = page.split('<section id="longest"><h2>Longest answers</h2>', 1)[1]
    assert body.startswith("<ul><li>") and body.index("</section>") < body.index('<section id="run">')


def test_a_section_id_is_registered_once(added_section):
    with pytest.raises(ValueError):
        html.register_section(html.Section("longest", "again", slowest_answers))
    assert [s.id for s in html.EVAL_SECTIONS][-2:] == ["longest", "run"]
