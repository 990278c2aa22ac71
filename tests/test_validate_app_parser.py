"""`ragsweep validate --parse --pipeline APP` locates evidence in the text the app's own parser makes (issue 30)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from counting_parser import app_yaml

TESTS = Path(__file__).resolve().parent
RAGSWEEP = Path(sys.executable).parent / "ragsweep"

APP = app_yaml("first_only: true")


def _validate(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAGSWEEP_TEST_PARSE_LOG": str(tmp_path / "parse.log")}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), *sys.path])
    command = [str(RAGSWEEP), "validate", "--dataset", str(tmp_path / "data"), "--parse", "--workers", "1", *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_validate_parses_with_the_apps_parser(tmp_path):
    docs = tmp_path / "data" / "docs"
    docs.mkdir(parents=True)
    (docs / "a.txt").write_text("Rent is due on the first day of each month.\n\nRepairs are the landlord's duty.\n")
    case = {"id": "repairs", "question": "Who repairs?", "evidence": [{"doc_id": "a.txt", "text": "Repairs are"}]}
    (tmp_path / "data" / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "data" / "README.md").write_text("Written by this test.\n")
    (tmp_path / "app.yaml").write_text(APP)

    native = _validate(tmp_path)  # ragsweep's own parse keeps both paragraphs
    assert native.returncode == 0, native.stdout + native.stderr
    assert not (tmp_path / "parse.log").exists()

    app = _validate(tmp_path, "--pipeline", str(tmp_path / "app.yaml"))  # the app's parser keeps the first alone
    assert app.returncode == 1, app.stdout + app.stderr
    assert "cases.jsonl:1" in app.stdout and "'repairs'" in app.stdout and "found in no parsed text" in app.stdout
    assert len((tmp_path / "parse.log").read_text().splitlines()) == 1  # the app's parser really ran
