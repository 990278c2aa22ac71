"""Import TREC-style topics + qrels, and the Cranfield collection in particular.

Cranfield quirks handled here:

* ``cran.all.1400``: records ``.I id`` / ``.T`` title / ``.A`` / ``.B`` / ``.W`` text; two
  abstracts have an empty body. Each becomes ``docs/<id>.txt`` = title, blank line, text
  (whitespace as in the source), so the document store can index it; doc id = ``<id>.txt``.
* ``cran.qry``: the ``.I`` numbers skip (001, 002, 004, ... 365) but ``cranqrel`` numbers
  the queries 1..225 by position: **the n-th query in the file is qid n** (the ``.I`` number
  is kept in ``meta["qry_number"]``).
* ``cranqrel``: ``qid docid code``; codes 1 (complete answer) .. 4 (minimum interest) and
  -1 (no interest). Graded gain = 5 - code (4..1); -1 -> grade 0, kept in ``relevant_ids``
  as *judged not relevant* (grade 0 never counts as relevant).

CLI: ``python -m ragsweep.datasets.trec cranfield SOURCE_DIR OUT_DIR``.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from ._util import split_for
from .loader import write_cases
from .schema import Case

_FIELD_RE = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")


SMART_FIELDS = ("T", "A", "B", "W")  # title, authors, bibliography, words (the body); "" when a record has none


def parse_dotted(path: str | Path) -> list[dict[str, str]]:
    """Parse SMART-style ``.I/.T/.A/.B/.W`` records; returns ``[{"I": .., "T": .., "A": .., "B": .., "W": ..}, ...]``
    (every one of :data:`SMART_FIELDS`, and any other field a record has)."""
    records: list[dict[str, str]] = []
    current: dict[str, list[str]] | None = None
    field: str | None = None
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        m = _FIELD_RE.match(line.rstrip())
        if m:
            tag, rest = m.group(1), (m.group(2) or "")
            if tag == "I":
                if current is not None:
                    records.append({k: "\n".join(v).strip() for k, v in current.items()})
                current = {"I": [rest.strip()], **{tag: [] for tag in SMART_FIELDS}}
                field = None
            else:
                field = tag
                assert current is not None, f"{path}: field .{tag} before .I"
                current.setdefault(field, [])
                if rest:
                    current[field].append(rest)
            continue
        if current is not None and field is not None:
            current[field].append(line)
    if current is not None:
        records.append({k: "\n".join(v).strip() for k, v in current.items()})
    return records


def read_qrels(path: str | Path) -> list[tuple[str, str, int]]:
    """``[(qid, docid, code), ...]`` from 3-column (``qid docid rel``) or 4-column TREC
    (``qid iter docid rel``) lines."""
    out: list[tuple[str, str, int]] = []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) == 3:
            q, d, r = parts
        elif len(parts) == 4:
            q, _, d, r = parts
        else:
            raise ValueError(f"{path}:{lineno}: expected 3 or 4 columns, got {len(parts)}")
        out.append((q, d, int(r)))
    return out


def cranfield_grade(code: int) -> int:
    """Cranfield code -> graded gain: 1..4 -> 4..1 (5 - code); -1 (no interest) -> 0."""
    if code == -1:
        return 0
    if not 1 <= code <= 4:
        raise ValueError(f"unknown Cranfield relevance code {code}")
    return 5 - code


def topics_qrels_cases(
    topics: Iterable[tuple[str, str]],
    qrels: Iterable[tuple[str, str, int]],
    doc_id_of=lambda d: d,
    grade_of=lambda code: max(0, code),
    id_prefix: str = "q",
    type_: str | None = None,
    meta_of=lambda qid: {},
) -> list[Case]:
    """Generic TREC import: one case per topic, ``relevant_ids`` graded by ``grade_of(code)``."""
    judged: defaultdict[str, dict[str, int]] = defaultdict(dict)  # a topic with no judgement: none relevant
    for q, d, code in qrels:
        judged[q][doc_id_of(d)] = grade_of(code)
    cases = []
    for qid, text in topics:
        rel = judged[qid]
        cases.append(
            Case(
                id=f"{id_prefix}{qid}",
                question=re.sub(r"\s+", " ", text).strip(),
                type=type_,
                relevant_ids=[{"id": d, "grade": g} for d, g in sorted(rel.items(), key=lambda kv: (-kv[1], kv[0]))],
                unanswerable=False,
                split=split_for(f"{id_prefix}{qid}"),
                meta={"qid": qid, **meta_of(qid)},
            )
        )
    return cases


def cranfield_doc_text(record: dict[str, str]) -> str:
    title = record["T"].strip()
    body = record["W"].strip()
    return f"{title}\n\n{body}\n" if body else f"{title}\n"


def import_cranfield(source: str | Path, out_dir: str | Path, write_docs: bool = True) -> list[Case]:
    """Write ``out_dir/docs/<id>.txt`` (1400) and ``out_dir/cases.jsonl`` (225 queries)."""
    src, out = Path(source), Path(out_dir)
    docs = parse_dotted(src / "cran.all.1400")
    if write_docs:
        (out / "docs").mkdir(parents=True, exist_ok=True)
        for rec in docs:
            (out / "docs" / f"{int(rec['I'])}.txt").write_text(cranfield_doc_text(rec), encoding="utf-8")
    queries = parse_dotted(src / "cran.qry")
    topics = [(str(n), q["W"]) for n, q in enumerate(queries, start=1)]
    qry_number = {str(n): q["I"] for n, q in enumerate(queries, start=1)}
    cases = topics_qrels_cases(
        topics,
        read_qrels(src / "cranqrel"),
        doc_id_of=lambda d: f"{int(d)}.txt",
        grade_of=cranfield_grade,
        id_prefix="cran-",
        type_="adhoc",
        meta_of=lambda qid: {"qry_number": qry_number[qid]},
    )
    out.mkdir(parents=True, exist_ok=True)
    write_cases(out / "cases.jsonl", cases)
    return cases


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragsweep.datasets.trec", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cranfield", help="cran.all.1400 + cran.qry + cranqrel -> dataset folder")
    c.add_argument("source")
    c.add_argument("out_dir")
    a = p.parse_args(argv)
    cases = import_cranfield(a.source, a.out_dir)
    n = sum(1 for cs in cases for r in cs.relevant_ids if r.grade >= 1)
    print(f"{len(cases)} queries, {n} relevant judgements -> {a.out_dir}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
