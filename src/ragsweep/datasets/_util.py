"""Small helpers shared by the importers."""

from __future__ import annotations

import re
import shutil
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from ragsweep.core.keys import digest


def contract_key(name: str) -> str:
    """Normalised key for CUAD file names: no extension, lower case, letters and digits only.

    CUAD's master_clauses.csv spells 12 of the 510 names differently from the text files
    (``&`` and ``'`` become ``_``, trailing spaces, a trailing ``-``, a ``'`` after the
    extension, ``É`` composed in one and decomposed, ``E`` + U+0301, in the other); on this
    key all of them resolve (an accent is dropped, its letter kept).
    """
    stem = unicodedata.normalize("NFKD", name.strip()).lower()
    stem = re.sub(r"\.(pdf|txt|docx)[\s'\"]*$", "", stem)
    return re.sub(r"[^0-9a-z]", "", stem)


def csv_rows(header: list[str], rows: Iterable[list[str]]) -> list[dict[str, str]]:
    """Each non-empty row by column name; a row cut short has "" in its missing cells."""
    return [dict(zip(header, [*r, *[""] * (len(header) - len(r))])) for r in rows if r]


def split_for(key: str, dev_fraction: float = 0.5) -> str:
    """Deterministic dev/test assignment from a SHA-256 of ``key``."""
    bucket = int(digest(key, 8), 16) / 0xFFFFFFFF
    return "dev" if bucket < dev_fraction else "test"


def short_hash(text: str, n: int = 8) -> str:
    return digest(text, n, algorithm="sha1")


def slug(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "-", text.lower()).strip("-")


def index_files(folder: Path) -> dict[str, Path]:
    """``{contract_key(file name): path}`` for the files directly in ``folder``."""
    out: dict[str, Path] = {}
    for p in sorted(Path(folder).iterdir()):
        if p.is_file():
            out.setdefault(contract_key(p.name), p)
    return out


def copy_doc(src: Path, docs_dir: Path, name: str | None = None) -> str:
    docs_dir.mkdir(parents=True, exist_ok=True)
    dest = docs_dir / (name or src.name)
    if not dest.exists() or dest.stat().st_size != src.stat().st_size:
        shutil.copyfile(src, dest)
    return dest.name
