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


def test_the_copied_documents_are_the_regular_files_parsing_reads(tmp_path: Path) -> None:
    """The dataset's docs/ copy leaves out what parsing skips, and never copies the folder into itself."""
    import os
    import socket

    from ragsweep.generate.writer import copy_docs

    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text("alpha")
    (docs / "sub" / "b.txt").write_text("beta")
    os.mkfifo(docs / "pipe.pdf")
    os.symlink("loop-b", docs / "loop-a")
    os.symlink("loop-a", docs / "loop-b")
    os.symlink("..", docs / "up")  # a folder above the documents: copied, it would hold the copy itself
    os.symlink("sub", docs / "same")  # a folder inside: its files are copied under their own path
    here = os.getcwd()
    os.chdir(docs)
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind("sock.txt")
    finally:
        os.chdir(here)
    copy_docs(docs, tmp_path / "out" / "docs", link=False)  # the FIFO would block here, the rest raise
    copied = sorted(p.relative_to(tmp_path / "out" / "docs").as_posix() for p in (tmp_path / "out" / "docs").rglob("*"))
    assert copied == ["a.txt", "sub", "sub/b.txt"]
