"""A parser argument as a sweep axis: each document parsed once per distinct parser configuration, each
configuration scored on the chunks its own parser made (issue 30)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from counting_parser import app_yaml
from ragsweep.report.runs import read_config_cases

TESTS = Path(__file__).resolve().parent
RAGSWEEP = Path(sys.executable).parent / "ragsweep"

APP = app_yaml("upper: $upper", extra="$upper: false\n$top_k: 1\n")

GRID = """
grid:
  upper: [false, true]
  top_k: [1, 2]
baseline: {upper: false, top_k: 1}
objectives: [recall@k]
ks: [1, 2]
"""

DOCS = {
    "a.txt": "Rent is due on the first day of each month.\n\nRepairs are the landlord's duty at all times.\n",
    "b.txt": "The supplier delivers the goods within fourteen days.\n\nLate delivery costs a penalty.\n",
    "c.txt": "This agreement is governed by the laws of Delaware.\n",
}
CASES = [
    ("rent", "When is the rent due?", "a.txt", "Rent is due on the first day"),
    ("repairs", "Who does the repairs?", "a.txt", "Repairs are the landlord's duty"),
    ("delivery", "When are the goods delivered?", "b.txt", "The supplier delivers the goods"),
    ("law", "Which laws govern the agreement?", "c.txt", "governed by the laws of Delaware"),
]


def _dataset(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text)
    lines = [
        json.dumps({"id": cid, "question": q, "evidence": [{"doc_id": doc, "text": ev}], "reference_answer": ev})
        for cid, q, doc, ev in CASES
    ]
    (root / "cases.jsonl").write_text("\n".join(lines) + "\n")
    (root / "README.md").write_text(
        "Written by this test (four questions over three short texts); no licence needed.\n"
    )
    return root


def _sweep(tmp_path: Path, out: str, log: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAGSWEEP_TEST_PARSE_LOG": str(log), "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    command = [str(RAGSWEEP), "sweep", "--pipeline", str(tmp_path / "app.yaml"), "--dataset", str(tmp_path / "data")]
    command += ["--grid", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / out), "--workers", "1"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def test_a_parser_argument_axis_parses_each_document_once_per_parser_configuration(tmp_path):
    _dataset(tmp_path / "data")
    (tmp_path / "app.yaml").write_text(APP)
    (tmp_path / "grid.yaml").write_text(GRID)
    log = tmp_path / "parse.log"
    log.write_text("")

    run = _sweep(tmp_path, "first", log)
    assert run.returncode == 0, run.stderr[-3000:]
    # 4 configurations, 2 parser configurations: 3 documents x 2, not x 4
    assert len(log.read_text().splitlines()) == 2 * len(DOCS)

    (sweep_dir,) = (tmp_path / "first").iterdir()
    report = json.loads((sweep_dir / "sweep.json").read_text())
    params = {row["id"]: row["params"] for row in report["configs"]}
    assert sorted((p["upper"], p["top_k"]) for p in params.values()) == [(False, 1), (False, 2), (True, 1), (True, 2)]
    served_upper: dict[bool, set[bool]] = {False: set(), True: set()}
    for cid, p in params.items():
        for case in read_config_cases(sweep_dir / "configs" / cid):  # hit texts from the sweep's chunk table
            served_upper[p["upper"]].update(hit.text == hit.text.upper() for hit in case.hits)
    # each configuration scored on what its own parser made: upper-cased chunks only where upper is true
    assert served_upper == {False: {False}, True: {True}}

    again = _sweep(tmp_path, "second", log)  # a new sweep folder over the same documents: nothing parsed
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(log.read_text().splitlines()) == 2 * len(DOCS)
