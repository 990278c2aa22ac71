"""Read evaluation cases (canonical JSONL and the formats people already have).

Format detection is per record, by field names:

* **canonical** (only :class:`~ragsweep.datasets.schema.Case` fields): ``id`` is required and
  unknown fields are errors (so a typo such as ``relevent_ids`` is reported, not ignored).
* **foreign** records are recognised by any of these keys and mapped:

  ==========================  ===========================================================
  foreign key                 canonical field
  ==========================  ===========================================================
  ``user_input``, ``query``   ``question``
  ``reference``, ``answer``,  ``reference_answer``
  ``ground_truth``
  ``reference_contexts``,     ``evidence`` (each string is one span; dicts may carry
  ``source_sections``         ``text``/``content`` and ``doc_id``/``source``/``file``)
  ``expected_knowledge``      ``expected_facts``
  ``synthesizer_name``,       ``type``
  ``question_type``
  ``qid``, ``question_id``,   ``id``
  ``case_id``
  ==========================  ===========================================================

  Canonical fields in a foreign record are taken as they are; any other key goes to ``meta``.
  A foreign record without an id gets ``<file stem>-<line number>`` (stable while the file's
  line order is). ``sub_questions`` given as dicts keep their ``question``/``user_input`` text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .schema import (
    RELEVANCE_RULES,
    Case,
    Dataset,
    RelevanceConfig,
)

CANONICAL_FIELDS = frozenset(Case.model_fields)

_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "qid", "question_id", "case_id"),
    "question": ("question", "user_input", "query"),
    "reference_answer": ("reference_answer", "reference", "answer", "ground_truth"),
    "evidence": ("evidence", "reference_contexts", "source_sections"),
    "expected_facts": ("expected_facts", "expected_knowledge"),
    "type": ("type", "synthesizer_name", "question_type"),
}
FOREIGN_KEYS = frozenset(
    k for names in _ALIASES.values() for k in names if k not in CANONICAL_FIELDS
)


class Problem:
    """One problem found in a dataset: where (file, line, field) and what."""

    __slots__ = ("file", "line", "field", "message")

    def __init__(self, file: str, line: int | None, field: str | None, message: str):
        self.file = file
        self.line = line
        self.field = field
        self.message = message

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"

    def __repr__(self) -> str:
        return f"Problem({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Problem) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "field": self.field, "message": self.message}


class DatasetError(ValueError):
    """Raised by the loaders when a file cannot be read as cases; carries every problem."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        lines = "\n".join(str(p) for p in problems[:50])
        more = f"\n... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{len(problems)} problem(s):\n{lines}{more}")


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _evidence_item(item: Any) -> Any:
    if isinstance(item, dict):
        text = next((item[k] for k in ("text", "content", "page_content", "span") if k in item), None)
        doc = next(
            (item[k] for k in ("doc_id", "source", "file", "document", "path") if k in item), None
        )
        if text is None:
            return item  # let pydantic report it
        return {"text": text, "doc_id": doc} if doc is not None else {"text": text}
    return item


def _sub_question(item: Any) -> Any:
    if isinstance(item, dict):
        for key in ("question", "user_input", "query", "text"):
            if key in item:
                return item[key]
    return item


def is_foreign(record: dict[str, Any]) -> bool:
    return any(k in record for k in FOREIGN_KEYS)


def map_record(record: dict[str, Any], derived_id: str) -> dict[str, Any]:
    """Map a foreign record to canonical field names (see module docstring)."""
    out: dict[str, Any] = {}
    used: set[str] = set()
    for field, names in _ALIASES.items():
        for name in names:
            if name in record and not _is_missing(record[name]):
                out[field] = record[name]
                used.update(n for n in names if n in record)
                break
        else:
            used.update(n for n in names if n in record)
    for key, value in record.items():
        if key in used:
            continue
        if key in CANONICAL_FIELDS:
            if value is not None:  # a null canonical field means "default" in foreign files
                out[key] = value
        else:
            out.setdefault("meta", {})
            if isinstance(out["meta"], dict):
                out["meta"][key] = value
    if "id" not in out:
        out["id"] = derived_id
    else:
        out["id"] = str(out["id"])
    if "evidence" in out:
        ev = out["evidence"]
        out["evidence"] = [_evidence_item(e) for e in ev] if isinstance(ev, list) else ev
    if isinstance(out.get("sub_questions"), list):
        out["sub_questions"] = [_sub_question(s) for s in out["sub_questions"]]
    if isinstance(out.get("reference_answer"), list):  # some tools store a list of answers
        out["reference_answer"] = "\n".join(str(x) for x in out["reference_answer"])
    return out


def _loc(loc: Iterable[Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text or "(record)"


def read_cases(
    path: str | Path, *, display_name: str | None = None, derive_ids: bool = False
) -> tuple[list[Case], list[Problem]]:
    """Parse a JSONL (or JSON array) file into cases, collecting every problem.

    Returns the cases that parsed and the problems (malformed JSON, field errors,
    empty file). Duplicate ids and dataset-level checks live in :mod:`.validate`.
    ``derive_ids`` also gives canonical records without an id a derived one.
    """
    path = Path(path)
    name = display_name or path.name
    problems: list[Problem] = []
    cases: list[Case] = []
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], [Problem(name, None, None, "file not found")]
    except UnicodeDecodeError as exc:
        return [], [Problem(name, None, None, f"not UTF-8 text: {exc}")]

    records: list[tuple[int, Any]] = []
    stripped = raw.lstrip()
    if path.suffix == ".json" or stripped.startswith("["):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            return [], [Problem(name, exc.lineno, None, f"malformed JSON: {exc.msg}")]
        if not isinstance(data, list):
            return [], [Problem(name, 1, None, "a .json file must hold a list of records")]
        records = [(i + 1, rec) for i, rec in enumerate(data)]  # position, not line
    else:
        for lineno, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append((lineno, json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append(Problem(name, lineno, None, f"malformed JSON: {exc.msg} (column {exc.colno})"))
    if not records and not problems:
        return [], [Problem(name, None, None, "empty file: no cases")]

    stem = path.stem
    for lineno, rec in records:
        if not isinstance(rec, dict):
            problems.append(Problem(name, lineno, None, f"expected a JSON object, got {type(rec).__name__}"))
            continue
        if is_foreign(rec):
            rec = map_record(rec, f"{stem}-{lineno}")
        elif derive_ids and _is_missing(rec.get("id")):
            rec = {**rec, "id": f"{stem}-{lineno}"}
        try:
            cases.append(Case.model_validate(rec))
        except ValidationError as exc:
            for err in exc.errors():
                problems.append(Problem(name, lineno, _loc(err["loc"]), err["msg"]))
        else:
            cases[-1]._line = lineno
    return cases, problems


def line_of(case: Case) -> int | None:
    """The line a case was read from (None if it was not read by :func:`read_cases`)."""
    return case._line


def load_cases(path: str | Path, *, derive_ids: bool = False) -> list[Case]:
    """Load cases from a JSONL file; raise :class:`DatasetError` listing every problem."""
    cases, problems = read_cases(path, derive_ids=derive_ids)
    seen: dict[str, int | None] = {}
    for case in cases:
        if case.id in seen:
            problems.append(
                Problem(Path(path).name, line_of(case), "id", f"duplicate id {case.id!r} (first on line {seen[case.id]})")
            )
        else:
            seen[case.id] = line_of(case)
    if problems:
        raise DatasetError(problems)
    return cases


def write_cases(path: str | Path, cases: Iterable[Case]) -> int:
    """Write canonical JSONL (defaults omitted, stable key order). Returns the count."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case_to_json(case), ensure_ascii=False) + "\n")
            n += 1
    return n


def case_to_json(case: Case) -> dict[str, Any]:
    data = case.model_dump(exclude_defaults=True)
    data["id"] = case.id
    data["question"] = case.question
    if "relevant_ids" in data:  # compact form: plain id when grade is 1
        data["relevant_ids"] = [r["id"] if r.get("grade", 1) == 1 else r for r in data["relevant_ids"]]
    if "evidence" in data:
        data["evidence"] = [e if e.get("doc_id") else e["text"] for e in data["evidence"]]
    return data


def read_settings(root: Path) -> tuple[dict[str, Any], list[Problem]]:
    path = root / "dataset.yaml"
    if not path.exists():
        return {}, []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        return {}, [Problem("dataset.yaml", line, None, f"malformed YAML: {exc}")]
    if not isinstance(data, dict):
        return {}, [Problem("dataset.yaml", 1, None, "expected a mapping")]
    return data, []


_RELEVANCE_KEYS = {
    "word_overlap_threshold",
    "evidence_min_overlap_fraction",
    "evidence_min_overlap_chars",
    "evidence_fuzzy_min_score",
}


def relevance_from_settings(
    settings: dict[str, Any], cases: list[Case]
) -> tuple[RelevanceConfig, list[Problem]]:
    """Build the relevance config; default rule = evidence_offsets if any case has evidence else doc_id."""
    problems: list[Problem] = []
    rule = settings.get("relevance")
    if rule is None:
        rule = "evidence_offsets" if any(c.evidence for c in cases) else "doc_id"
    elif rule not in RELEVANCE_RULES:
        problems.append(
            Problem("dataset.yaml", None, "relevance", f"unknown rule {rule!r}; expected one of {', '.join(RELEVANCE_RULES)}")
        )
        rule = "evidence_offsets" if any(c.evidence for c in cases) else "doc_id"
    params = {k: settings[k] for k in _RELEVANCE_KEYS if k in settings}
    try:
        return RelevanceConfig(rule=rule, **params), problems
    except ValidationError as exc:
        for err in exc.errors():
            problems.append(Problem("dataset.yaml", None, _loc(err["loc"]), err["msg"]))
        return RelevanceConfig(rule=rule), problems


def load_dataset(path: str | Path, split: str | None = None) -> Dataset:
    """Load a dataset folder (``docs/``, ``cases.jsonl``, ``README.md``, optional ``dataset.yaml``).

    ``split`` ("dev"/"test") keeps only the cases of that split. Raises
    :class:`DatasetError` when the cases file or the settings have problems
    (run :func:`ragsweep.datasets.validate_dataset` for the full report,
    including document ids missing from ``docs/``).
    """
    root = Path(path)
    if not root.is_dir():
        raise DatasetError([Problem(str(root), None, None, "dataset folder not found")])
    settings, problems = read_settings(root)
    cases_name = str(settings.get("cases", "cases.jsonl"))
    docs_dir = root / str(settings.get("docs", "docs"))
    try:
        cases = load_cases(root / cases_name)
    except DatasetError as exc:
        raise DatasetError(problems + exc.problems) from None
    relevance, rel_problems = relevance_from_settings(settings, cases)
    problems += rel_problems
    if problems:
        raise DatasetError(problems)
    if split is not None:
        if split not in ("dev", "test"):
            raise ValueError(f"split must be 'dev', 'test' or None, not {split!r}")
        cases = [c for c in cases if c.split == split]
    readme = root / "README.md"
    return Dataset(
        name=str(settings.get("name", root.name)),
        root=root,
        docs_dir=docs_dir,
        cases=cases,
        relevance=relevance,
        provenance=readme.read_text(encoding="utf-8") if readme.exists() else "",
        settings=settings,
    )
