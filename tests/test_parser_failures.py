"""A parser UDF of the app's that raises on one of four documents: the other three are evaluated, the
fourth is named, and the run fails its gate unless ``--max-failure-rate`` allows that share of the
documents (the rule the LLM metrics' failures follow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsweep.cli import main
from ragsweep.evaluation.manifest import CorpusManifest
from ragsweep.evaluation.parse_failures import parser_failures
from ragsweep.pipeline.parsing import SERVED_APP_ENDS
from raising_parser import APP

DOCS = {
    "apples.txt": "Apples grow in orchards and ripen in the autumn months.",
    "boats.txt": "Boats are moored in the harbour until the spring tide.",
    "clocks.txt": "Clocks in the tower are wound by hand every Sunday morning.",
    "drums.txt": "#broken Drums are tuned before each concert by the percussionist.",
}
QUESTIONS = {
    "apples.txt": ("When do apples ripen?", "ripen in the autumn months"),
    "boats.txt": ("Where are the boats moored?", "moored in the harbour"),
    "clocks.txt": ("How are the tower clocks wound?", "wound by hand every Sunday"),
    "drums.txt": ("When are the drums tuned?", "tuned before each concert"),
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("parser-failures")
    (root / "docs").mkdir()
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text + "\n")
    lines = [
        {"id": Path(doc).stem, "question": q, "evidence": [{"text": e, "doc_id": doc}]}
        for doc, (q, e) in QUESTIONS.items()
    ]
    (root / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (root / "dataset.yaml").write_text("docs: docs\n")
    (root / "README.md").write_text("Written by tests/test_parser_failures.py.\n")
    (root / "app.yaml").write_text(APP)
    return root


def _eval(dataset: Path, out: Path, *extra: str) -> int:
    argv = ["eval", "--pipeline", str(dataset / "app.yaml"), "--dataset", str(dataset), "--workers", "1"]
    return main([*argv, "--out", str(out), "--name", "run", *extra])


def test_the_rule_reads_what_the_parse_writes():
    raised = {"doc_id": "a.txt", "reason": f"RaisingParser raised ValueError: boom{SERVED_APP_ENDS}"}
    other = {"doc_id": "b.pdf", "reason": "not a PDF"}
    assert parser_failures(CorpusManifest(documents=2, skipped=[raised, other])) == ["a.txt"]


def test_a_raising_parser_fails_the_gate_unless_allowed(dataset, tmp_path, capsys):
    assert _eval(dataset, tmp_path / "strict") == 1
    err = capsys.readouterr().err
    gate = [line for line in err.splitlines() if line.startswith("the app's parser:")]
    assert gate == [
        "the app's parser: raised on 1 of 4 documents (drums.txt; 25.0%) > --max-failure-rate 0 "
        "(the app's own server stops on such a document)"
    ], err
    report = json.loads((tmp_path / "strict" / "run" / "report.json").read_text())
    skipped = {s["doc_id"]: s["reason"] for s in report["manifest"]["corpus"]["skipped"]}
    assert set(skipped) == {"drums.txt"} and "this document breaks the parser" in skipped["drums.txt"]
    lines = (tmp_path / "strict" / "run" / "cases.jsonl").read_text().splitlines()
    scored = {c["id"] for c in map(json.loads, lines) if "recall@1" in c["metrics"]}
    assert scored == {"apples", "boats", "clocks"}, lines
    unlocated = report["unlocated"]["cases"]
    assert [(c["id"], c["spans"][0]["reason"]) for c in unlocated] == [("drums", "document not parsed")]

    assert _eval(dataset, tmp_path / "allowed", "--max-failure-rate", "0.25") == 0
    assert "the app's parser:" not in capsys.readouterr().err


def test_the_pytest_helper_and_the_quality_check_follow_the_same_rule(dataset, tmp_path):
    """``assert_quality`` (and ``check_quality``, where the plugin's fixture ends) fail on the document the
    app's parser raised on, as eval's gate does, unless ``max_failure_rate`` allows that share."""
    from ragsweep.testing import QualityError, assert_quality, check_quality

    with pytest.raises(QualityError) as failed:
        assert_quality(dataset / "app.yaml", dataset, min={}, workers=1)
    assert "the app's parser: raised on 1 of 4 documents (drums.txt; 25.0%) > --max-failure-rate 0" in str(failed.value)
    report = failed.value.report
    assert check_quality(report, min={}, max_failure_rate=0.25) is report
    with pytest.raises(QualityError, match="raised on 1 of 4 documents"):
        check_quality(report, min={}, max_failure_rate=0.2)
