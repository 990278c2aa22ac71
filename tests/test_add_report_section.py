"""A report.html section for data already in the run, added from this file alone: one function of the
run, registered with the eval page's sections."""

from __future__ import annotations

from pathlib import Path

import pytest

import ragsweep
from ragsweep.evaluation.records import RunResult
from ragsweep.report import html
from ragsweep.report.svg import esc
from support import MINI, PIPELINE, ROOT


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


SWEEP = ROOT / "tests" / "fixtures" / "runs" / "sweep"


def configurations_line(view: html.SweepView) -> str:
    """One line naming the drilled-down configuration and how many were swept."""
    return f"<p>{esc(view.focus_id)} of {len(view.sweep.configs)}</p>"


@pytest.fixture
def added_sweep_section():
    html.register_section(
        html.Section("count", "Configurations swept", configurations_line), before="run", page="sweep"
    )
    yield
    html.unregister_section("count", page="sweep")


def test_a_registered_sweep_section_is_in_the_written_sweep_page(added_sweep_section, tmp_path):
    page = html.write_html_report(SWEEP, tmp_path / "report.html").read_text()
    assert '<a href="#count">Configurations swept</a>' in page
    body = page.split('<section id="count"><h2>Configurations swept</h2>', 1)[1]
    view = html.SweepView.of(SWEEP)
    assert body.startswith(f"<p>{esc(view.focus_id)} of {len(view.sweep.configs)}</p>")
    assert body.index("</section>") < body.index('<section id="run">')
    assert "count" not in [s.id for s in html.EVAL_SECTIONS]  # the eval page is left as it is


def test_a_sweep_section_id_is_registered_once_and_removed(added_sweep_section, tmp_path):
    with pytest.raises(ValueError):
        html.register_section(html.Section("count", "again", configurations_line), page="sweep")
    assert [s.id for s in html.SWEEP_SECTIONS][-2:] == ["count", "run"]
    html.unregister_section("count", page="sweep")
    assert '<section id="count">' not in html.write_html_report(SWEEP, tmp_path / "report.html").read_text()
