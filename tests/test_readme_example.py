"""The README's copy-me pytest file passes when run by pytest, as a user would run it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_quality_test_passes_in_its_own_pytest(tmp_path):
    readme = (ROOT / "README.md").read_text()
    blocks = [
        b
        for b in re.findall(r"```python\n(.*?)```", readme, re.S)
        if "assert_quality(" in b and "def test_" in b and "ragsweep_eval" not in b  # the plugin's: its own test
    ]
    assert len(blocks) == 1, "the README must show exactly one copy-me pytest file"
    code = blocks[0]
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    test_file = tmp_path / "test_rag_quality.py"
    test_file.write_text(code)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "1 passed" in out.stdout

    # and it fails, with a useful message, when a floor is out of reach
    test_file.write_text(code.replace('"recall@5": 0.8', '"recall@5": 1.01'))
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 1 and "recall@5 = " in out.stdout and "chance" in out.stdout
