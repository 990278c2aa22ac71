"""A dataset's plain-text documents as DOCX, for apps whose parser is Pathway's DoclingParser.

This Docling reads every stream DoclingParser hands it as a PDF named ``document.pdf``: a ``.txt``, HTML or
Markdown file fails, a DOCX parses (no model needed). :func:`docx_copy` writes each ``docs/*.txt`` of a
dataset as a ``.docx`` (one paragraph per non-empty line) and renames the documents in its cases.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any


def write_docx(text: str, path: Path) -> None:
    import docx

    document = docx.Document()
    for line in text.splitlines():
        if line.strip():
            document.add_paragraph(line.strip())
    document.save(str(path))


def _renamed(value: Any) -> Any:
    if isinstance(value, str):
        return value[: -len(".txt")] + ".docx" if value.endswith(".txt") else value
    if isinstance(value, list):
        return [_renamed(v) for v in value]
    if isinstance(value, dict):
        return {k: _renamed(v) if k in ("doc_id", "doc_scope", "evidence") else v for k, v in value.items()}
    return value


def docx_copy(dataset: Path, out: Path) -> Path:
    """``dataset`` (docs/ of .txt files, cases.jsonl, dataset.yaml, README.md) copied to ``out`` as DOCX."""
    (out / "docs").mkdir(parents=True)
    for path in sorted((dataset / "docs").iterdir()):
        target = out / "docs" / path.name
        if path.suffix == ".txt":
            write_docx(path.read_text(encoding="utf-8"), target.with_suffix(".docx"))
        else:
            shutil.copy(path, target)
    for name in ("dataset.yaml", "README.md"):
        if (dataset / name).is_file():
            shutil.copy(dataset / name, out / name)
    lines = [
        json.dumps(_renamed(json.loads(line)))
        for line in (dataset / "cases.jsonl").read_text().splitlines()
        if line.strip()
    ]
    (out / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return out
