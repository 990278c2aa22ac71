"""`generate --out` where the dataset would be written into its own documents folder (a copy of a copy, without
end), or where its docs/ would replace the documents folder: refused in one line before any work, the
documents untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsweep.cli import main


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("out", "force", "said"),
    [
        ("ds/docs/generated", False, "is inside the documents folder"),
        ("ds/docs", True, "is inside the documents folder"),
        ("ds", True, "its docs/ would replace the documents folder"),
    ],
)
def test_out_that_would_write_into_the_documents_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], out: str, force: bool, said: str
) -> None:
    docs = tmp_path / "ds" / "docs"
    docs.mkdir(parents=True)
    (docs / "a.txt").write_text("Audits are run every quarter by the finance team.\n" * 20)
    before = _tree(tmp_path)
    args = ["generate", "--docs", str(docs), "--out", str(tmp_path / out), "--n", "2"]
    assert main([*args, *(["--force"] if force else [])]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("ragsweep: error: ")]
    assert len(lines) == 1 and said in lines[0] and "Traceback" not in err, err
    assert _tree(tmp_path) == before  # nothing written, nothing removed
