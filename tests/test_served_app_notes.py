"""What ragsweep scores departs from the served app only where it says so (issue 30): a question the app's
own server cannot take, a parse that is ragsweep's in place of the app's parser, PDFs the app's parser
cannot read on this machine."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import PIPELINE, ROOT
from support.in_process import run_timed

RAGSWEEP = Path(sys.executable).parent / "ragsweep"
PDF = ROOT / "tests" / "fixtures" / "corpus" / "lucid-distributor-agreement.pdf"

# an app whose parser is Pathway's DoclingParser (its PDF pipeline needs Docling's layout model), BM25 only
APP = """
$sources:
  - !pw.io.fs.read
    path: data
    format: binary
    with_metadata: true
$parser: !pw.xpacks.llm.parsers.DoclingParser {}
$splitter: !pw.xpacks.llm.splitters.TokenCountSplitter
  max_tokens: 300
$retriever_factory: !pw.stdlib.indexing.TantivyBM25Factory {}
$document_store: !pw.xpacks.llm.document_store.DocumentStore
  docs: $sources
  parser: $parser
  splitter: $splitter
  retriever_factory: $retriever_factory
"""


def test_the_question_a_stock_server_cannot_take_is_named_with_its_character():
    from ragsweep.datasets.pathway_limits import served_app_failure

    assert served_app_failure("Which state's law governs the agreement?") is None
    why = served_app_failure("Which state\u00a0law governs?")
    assert why is not None and "U+00A0 NO-BREAK SPACE" in why and "ends its whole pw.run" in why
    assert "'('" in (served_app_failure("Is (any assignment restricted?") or "")
    assert served_app_failure("Is (any) assignment restricted?") is None  # balanced: Pathway's parser takes it


def test_such_a_case_is_scored_on_the_cleaned_question_with_the_apps_failure_beside_it(tmp_path, monkeypatch):
    import ragsweep
    from ragsweep.datasets.schema import Case

    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    docs = ROOT / "datasets" / "cuad-mini" / "docs"
    cases = [
        Case(id="nbsp", question="Which state\u00a0law governs the agreement?"),
        Case(id="plain", question="Which state law governs the agreement?"),
    ]
    bm25 = ragsweep.evaluate(PIPELINE, cases, docs=docs, overrides={"retriever_mode": "bm25"}, validate=False)
    notes = {c.id: c.notes for c in bm25.cases}
    assert "U+00A0" in notes["nbsp"]["served_app"] and "served_app" not in notes["plain"]
    assert [h.text for h in bm25.cases[0].hits] == [h.text for h in bm25.cases[1].hits]  # the cleaned question
    knn = ragsweep.evaluate(PIPELINE, cases, docs=docs, overrides={"retriever_mode": "knn"}, validate=False)
    assert all("served_app" not in c.notes for c in knn.cases)  # no Tantivy: the app takes it


@pytest.fixture
def pdf_dataset(tmp_path: Path) -> tuple[Path, Path]:
    dataset = tmp_path / "dataset"
    (dataset / "docs").mkdir(parents=True)
    shutil.copy(PDF, dataset / "docs" / PDF.name)
    case = {"id": "law", "question": "Which state's law governs the agreement?", "evidence": [{"text": "Nevada"}]}
    (dataset / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (dataset / "README.md").write_text("Written by tests/test_served_app_notes.py from a fixture PDF.\n")
    app = tmp_path / "app.yaml"
    app.write_text(APP)
    return app, dataset


def _eval(app: Path, dataset: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(RAGSWEEP), "eval", "--pipeline", str(app), "--dataset", str(dataset), "--out", str(out), *extra],
        capture_output=True, text=True, timeout=600, env={**__import__("os").environ, "RAGSWEEP_CACHE_DIR": str(out.parent / "cache")},
    )  # fmt: skip


def test_pdfs_the_apps_parser_cannot_read_here_stop_the_run_before_any_work(pdf_dataset, tmp_path):
    from ragsweep.pipeline.parsing import missing_models

    app, dataset = pdf_dataset
    from ragsweep.pipeline.config import PipelineConfig

    if not missing_models(PipelineConfig.load(app).build_parser()):
        pytest.skip("Docling's layout model is on this machine: the app's DoclingParser can parse the PDF")
    done = _eval(app, dataset, tmp_path / "runs")
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ragsweep: error")]
    assert len(errors) == 1 and "DoclingParser" in errors[0] and "layout model" in errors[0]
    assert "--set parser=native" in errors[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # no run folder


def test_parser_native_runs_and_every_report_says_the_parse_is_ragsweeps(pdf_dataset, tmp_path, monkeypatch, capsys):
    # the command in this process (support.in_process): what it prints and writes is the point here
    app, dataset = pdf_dataset
    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["eval", "--pipeline", str(app), "--dataset", str(dataset), "--out", str(tmp_path / "runs")]
    rc = run_timed([*argv, "--set", "parser=native"], 600)
    stderr = capsys.readouterr().err
    assert rc == 0, stderr[-2000:]
    note = "parsed by ragsweep, not by the app's parser (DoclingParser)"
    assert note in stderr
    (run,) = (tmp_path / "runs").iterdir()
    parse = json.loads((run / "report.json").read_text())["manifest"]["pipeline"]["parser"]
    assert parse["replaced"] == "DoclingParser" and parse["by"] == "ragsweep"
    assert note in html.unescape((run / "report.html").read_text())
