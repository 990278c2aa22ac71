"""Read evaluation cases (canonical JSONL and the formats people already have).

Files: JSON Lines (one record a line), a JSON array of records, or a JSON object holding its
records in a list under ``samples`` (or ``cases``, ``data``, ``examples``, ``records``,
``items``), e.g. ``{"name": .., "description": .., "samples": [...]}``; the object's other
fields are kept (:attr:`Dataset.cases_header`, its ``description`` as
:attr:`Dataset.description`). Problems carry the line each record starts on.

Format detection is per record, by field names:

* **canonical** (only :class:`~ragsweep.datasets.schema.Case` fields): ``id`` is required and
  unknown fields are errors (so a typo such as ``relevent_ids`` is reported, not ignored).
* **foreign** records are recognised by any of these keys and mapped:

  =============================  ===========================================================
  foreign key                    canonical field
  =============================  ===========================================================
  ``user_input``, ``query``      ``question``
  ``reference``,                 ``reference_answer`` (a list: its first answer; all of them
  ``ground_truth``,              in ``meta["reference_answers"]`` when there are several,
  ``ground_truths``              as ragas did with legacy ``ground_truths``)
  ``response``                   ``response`` (the system's own, pre-computed answer)
  ``retrieved_contexts``,        ``retrieved_contexts`` (a string is one context; dicts give
  ``contexts``, ``context``      their ``text``/``content``/``page_content``)
  ``answer``                     ``response`` when the record is shaped like ragas' (it also
                                 holds a reference or retrieved contexts: ragas' legacy
                                 ``question``/``contexts``/``answer``/``ground_truth``, where
                                 ``answer`` is the system's answer); otherwise, in a plain
                                 question/answer pair, ``reference_answer``
  ``reference_contexts``,        ``evidence`` (each string is one span; dicts may carry
  ``source_sections``            ``text``/``content`` and ``doc_id``/``source``/``file``)
  ``expected_knowledge``         ``knowledge_ids`` (knowledge-point ids: labels, not facts
                                 searched in answers)
  ``synthesizer_name``,          ``type``
  ``question_type``
  ``qid``, ``question_id``,      ``id``
  ``case_id``
  =============================  ===========================================================

  Canonical fields in a foreign record are taken as they are (its ``meta`` object is merged
  into the case's ``meta``); any other key goes to ``meta``, as does an alias whose field an
  earlier alias already filled. A foreign record without an id gets ``<file stem>-<line
  number>`` (stable while the file's line order is). ``sub_questions`` given as dicts keep
  their ``question``/``user_input`` text (the dicts themselves go to ``meta["sub_questions"]``).

Document ids (``relevant_ids``, ``doc_scope``, ``evidence[].doc_id``) are file names relative to
``docs/``; when a dataset folder is loaded, an id that is not a document but the stem of exactly
one (``product-manual`` for ``product-manual.pdf``) is resolved to it, and a stem of several
(``a.pdf``, ``a.txt``) is an error naming them (:func:`resolve_doc_ids`).
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import TypeAlias

import yaml
from pydantic import JsonValue, ValidationError
from pydantic_core import ErrorDetails

from .schema import (
    RELEVANCE_RULES,
    Case,
    CaseLimits,
    Dataset,
    DatasetSettings,
    RelevanceConfig,
    list_doc_ids,
)

# one record of a cases file as ``json.loads`` gives it: canonical or foreign field names
Record: TypeAlias = dict[str, JsonValue]

CANONICAL_FIELDS = frozenset(Case.model_fields)

_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "qid", "question_id", "case_id"),
    "question": ("question", "user_input", "query"),
    "reference_answer": ("reference_answer", "reference", "ground_truth", "ground_truths"),
    "response": ("response",),
    "retrieved_contexts": ("retrieved_contexts", "contexts", "context"),
    "evidence": ("evidence", "reference_contexts", "source_sections"),
    "knowledge_ids": ("knowledge_ids", "expected_knowledge"),
    "type": ("type", "synthesizer_name", "question_type"),
}
# ``answer`` means the system's answer in ragas' records and the reference in a plain
# question/answer pair: see :func:`map_record`
_AMBIGUOUS_ANSWER = "answer"
FOREIGN_KEYS = frozenset(
    [k for names in _ALIASES.values() for k in names if k not in CANONICAL_FIELDS] + [_AMBIGUOUS_ANSWER]
)
# a record holding one of these is shaped like ragas' (its ``answer`` is the system's)
_RAGAS_SHAPE = (
    "reference_answer",
    "reference",
    "ground_truth",
    "ground_truths",
    "retrieved_contexts",
    "contexts",
    "context",
)
# keys of a JSON object under which its records are listed
RECORD_LIST_KEYS = ("samples", "cases", "data", "examples", "records", "items")


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

    def as_dict(self) -> dict[str, str | int | None]:
        return {"file": self.file, "line": self.line, "field": self.field, "message": self.message}


class DatasetError(ValueError):
    """Raised by the loaders when a file cannot be read as cases; carries every problem."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        lines = "\n".join(str(p) for p in problems[:50])
        more = f"\n... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{len(problems)} problem(s):\n{lines}{more}")


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _text_of(item: Record) -> JsonValue:
    return next((item[k] for k in ("text", "content", "page_content", "span") if k in item), None)


def _evidence_item(item: JsonValue) -> JsonValue:
    if isinstance(item, dict):
        text = _text_of(item)
        doc = next((item[k] for k in ("doc_id", "source", "file", "document", "path") if k in item), None)
        if text is None:
            return item  # let pydantic report it
        return {"text": text, "doc_id": doc} if doc is not None else {"text": text}
    return item


def _context_item(item: JsonValue) -> JsonValue:
    if isinstance(item, dict):
        text = _text_of(item)
        return item if text is None else text  # a dict without text: pydantic reports it
    return item


def _sub_question(item: JsonValue) -> JsonValue:
    if isinstance(item, dict):
        for key in ("question", "user_input", "query", "text"):
            if key in item:
                return item[key]
    return item


def is_foreign(record: Record) -> bool:
    return any(k in record for k in FOREIGN_KEYS)


def _present(record: Record, key: str) -> bool:
    if key not in record or _is_missing(record[key]):
        return False
    value = record[key]
    return not (isinstance(value, (list, str)) and not value)


def _set_reference(out: Record, meta: Record, answers: list[JsonValue]) -> None:
    """A list of reference answers: the first is the reference (ragas took ``ground_truths[0]``);
    all of them are kept in ``meta["reference_answers"]`` when there are several."""
    if answers:
        out["reference_answer"] = answers[0]
    if len(answers) > 1:
        meta["reference_answers"] = answers


def map_record(record: Record, derived_id: str) -> Record:
    """Map a foreign record to canonical field names (see module docstring)."""
    out: Record = {}
    meta: Record = {}
    used = _map_aliases(record, out, meta)
    if _AMBIGUOUS_ANSWER in record:
        used.add(_AMBIGUOUS_ANSWER)
        _map_ambiguous_answer(record, out, meta)
    meta = _map_rest(record, used, out, meta)
    if meta:
        out["meta"] = meta
    out["id"] = derived_id if "id" not in out else str(out["id"])
    _map_items(out)
    return out


def _map_aliases(record: Record, out: Record, meta: Record) -> set[str]:
    """Fill ``out`` from the aliases of each field (other filled aliases go to ``meta``); the keys read."""
    used: set[str] = set()
    for field, names in _ALIASES.items():
        given = [n for n in names if n in record and not _is_missing(record[n])]
        used.update(n for n in names if n in record)
        if not given:
            continue
        # the first alias with a value; an empty one ("" or []) only when no alias has more
        chosen = next((n for n in given if _present(record, n)), given[0])
        for name in given:
            if name != chosen:  # another alias of a filled field: kept, not dropped
                meta[name] = record[name]
        value = record[chosen]
        if field == "reference_answer" and isinstance(value, list):
            _set_reference(out, meta, value)
        else:
            out[field] = value
    return used


def _map_ambiguous_answer(record: Record, out: Record, meta: Record) -> None:
    """The ambiguous answer key: the response of a ragas-shaped record, else the reference answer."""
    value = record[_AMBIGUOUS_ANSWER]
    ragas_shaped = any(_present(record, k) for k in _RAGAS_SHAPE)
    if _is_missing(value):
        pass
    elif ragas_shaped and "response" not in out:
        out["response"] = value
    elif not ragas_shaped and "reference_answer" not in out:
        if isinstance(value, list):
            _set_reference(out, meta, value)
        else:
            out["reference_answer"] = value
    else:
        meta[_AMBIGUOUS_ANSWER] = value


def _map_rest(record: Record, used: set[str], out: Record, meta: Record) -> Record:
    """Canonical keys not read yet go to ``out``, other keys to the meta returned (the record's own
    ``meta`` merged over it)."""
    record_meta = record.get("meta")
    for key, value in record.items():
        if key in used or key == "meta":
            continue
        if key in CANONICAL_FIELDS:
            if value is not None:  # a null canonical field means "default" in foreign files
                out[key] = value
        else:
            meta[key] = value
    if isinstance(record_meta, dict):
        meta = {**meta, **record_meta}
    elif record_meta is not None:
        meta["meta"] = record_meta
    return meta


# the list fields of a foreign record and how each item is mapped to its canonical shape
_ITEM_SHAPES: tuple[tuple[str, Callable[[JsonValue], JsonValue]], ...] = (
    ("evidence", _evidence_item),
    ("retrieved_contexts", _context_item),
    ("sub_questions", _sub_question),
)


def _map_items(out: Record) -> None:
    """Foreign shapes of the evidence, retrieved contexts and sub-questions, in place."""
    for key, item in _ITEM_SHAPES:
        items = out.get(key)
        if isinstance(items, list):
            out[key] = [item(i) for i in items]
            if key == "sub_questions":
                _keep_sub_questions(out, items)


def _keep_sub_questions(out: Record, subs: list[JsonValue]) -> None:
    """Foreign sub-questions given as objects are kept as they were in the record's meta."""
    meta = out.setdefault("meta", {})
    if any(isinstance(q, dict) for q in subs) and isinstance(meta, dict):  # map_record's meta: a dict
        meta.setdefault("sub_questions", subs)


def _message(err: ErrorDetails) -> str:
    """A pydantic error's message; a check of ours reads as written (no "Value error, " before it)."""
    return err["msg"].removeprefix("Value error, ") if err["type"] == "value_error" else err["msg"]


def _loc(loc: Iterable[str | int]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text or "(record)"


class CasesFile:
    """What :func:`read_cases_file` read: the cases, every problem, and the top-level fields of a
    JSON object holding the records (``name``, ``description``, ...; empty otherwise)."""

    __slots__ = ("cases", "problems", "header")

    def __init__(self, cases: list[Case], problems: list[Problem], header: Record):
        self.cases = cases
        self.problems = problems
        self.header = header


_WS = re.compile(r"\s*")
_DECODER = json.JSONDecoder()


def _json_records(raw: str, data: JsonValue, name: str) -> tuple[list[tuple[int, JsonValue]], Record, list[Problem]]:
    """The records of parsed JSON ``data`` with the line each starts on in ``raw``, and the header."""
    key: str | None
    header: Record
    if isinstance(data, list):
        key, header, items = None, {}, data
    elif isinstance(data, dict):
        keys = [k for k in RECORD_LIST_KEYS if isinstance(data.get(k), list)]
        if len(keys) != 1:
            found = f"; it has {', '.join(repr(k) for k in keys)}" if keys else ""
            return (
                [],
                {},
                [
                    Problem(
                        name,
                        1,
                        None,
                        "a .json file must hold a list of records, or an object with one list of records under "
                        + " or ".join(repr(k) for k in RECORD_LIST_KEYS)
                        + found,
                    )
                ],
            )
        key = keys[0]
        header = {k: v for k, v in data.items() if k != key}
        listed = data[key]
        assert isinstance(listed, list)  # the keys kept are those of a list
        items = listed
    else:
        return [], {}, [Problem(name, 1, None, f"a .json file must hold a list of records, not {type(data).__name__}")]
    starts = [0] + [m.end() for m in re.finditer("\n", raw)]
    try:
        positions = _list_positions(raw, key)
    except (ValueError, IndexError):  # cannot happen for valid JSON; fall back to positions
        positions = None
    if positions is None or len(positions) != len(items):
        return [(i + 1, rec) for i, rec in enumerate(items)], header, []
    return [(bisect.bisect_right(starts, pos), rec) for pos, rec in zip(positions, items)], header, []


def _skip(raw: str, i: int) -> int:
    m = _WS.match(raw, i)  # r"\s*" matches at any offset, if only the empty string
    return m.end() if m else i


def _list_positions(raw: str, key: str | None) -> list[int]:
    """Offsets of the items of the top-level list (``key`` None) or of the list under ``key`` of
    the top-level object (the last such key, as ``json.loads`` keeps the last)."""
    i = _skip(raw, 0)
    if key is None:
        return _items(raw, i)[0]
    found: list[int] | None = None
    i = _skip(raw, i + 1)  # past "{"
    while raw[i] != "}":
        name, i = _DECODER.raw_decode(raw, i)
        i = _skip(raw, i)
        i = _skip(raw, i + 1)  # past ":"
        if name == key and raw[i] == "[":
            found, i = _items(raw, i)
        else:
            _, i = _DECODER.raw_decode(raw, i)
        i = _skip(raw, i)
        if raw[i] == ",":
            i = _skip(raw, i + 1)
    return found or []


def _items(raw: str, i: int) -> tuple[list[int], int]:
    """Offsets of the items of the list starting at ``raw[i] == "["`` and the offset past it."""
    out: list[int] = []
    i = _skip(raw, i + 1)
    while raw[i] != "]":
        out.append(i)
        _, i = _DECODER.raw_decode(raw, i)
        i = _skip(raw, i)
        if raw[i] == ",":
            i = _skip(raw, i + 1)
    return out, i + 1


def read_cases_file(path: str | Path, *, display_name: str | None = None, derive_ids: bool = False) -> CasesFile:
    """Parse a JSONL file, a JSON array or a JSON object of records into cases, collecting every problem.

    Returns the cases that parsed, the problems (malformed JSON, field errors, empty file) and
    the header of a JSON object. Duplicate ids and dataset-level checks live in :mod:`.validate`.
    ``derive_ids`` also gives canonical records without an id a derived one.
    """
    path = Path(path)
    name = display_name or path.name
    problems: list[Problem] = []
    cases: list[Case] = []
    header: Record = {}
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return CasesFile([], [Problem(name, None, None, "file not found")], {})
    except UnicodeDecodeError as exc:
        return CasesFile([], [Problem(name, None, None, f"not UTF-8 text: {exc}")], {})

    records: list[tuple[int, JsonValue]] = []
    stripped = raw.lstrip()
    if path.suffix == ".json" or stripped.startswith("[") or _single_json_value(stripped):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            return CasesFile([], [Problem(name, exc.lineno, None, f"malformed JSON: {exc.msg}")], {})
        records, header, problems = _json_records(raw, data, name)
        if problems:
            return CasesFile([], problems, header)
    else:
        for lineno, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append((lineno, json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append(Problem(name, lineno, None, f"malformed JSON: {exc.msg} (column {exc.colno})"))
    if not records and not problems:
        return CasesFile([], [Problem(name, None, None, "empty file: no cases")], header)

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
                problems.append(Problem(name, lineno, _loc(err["loc"]), _message(err)))
        else:
            cases[-1]._line = lineno
    return CasesFile(cases, problems, header)


def _single_json_value(text: str) -> bool:
    """True for a .jsonl (or other) file holding one multi-line JSON object, not JSON Lines."""
    if not text.startswith("{") or "\n" not in text.strip():
        return False
    first = text.split("\n", 1)[0]
    try:
        json.loads(first)
    except json.JSONDecodeError:
        pass
    else:
        return False  # the first line is a whole record: JSON Lines
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False


def read_cases(
    path: str | Path, *, display_name: str | None = None, derive_ids: bool = False
) -> tuple[list[Case], list[Problem]]:
    """``(cases, problems)`` of :func:`read_cases_file`."""
    got = read_cases_file(path, display_name=display_name, derive_ids=derive_ids)
    return got.cases, got.problems


def line_of(case: Case) -> int | None:
    """The line a case was read from (None if it was not read by :func:`read_cases`)."""
    return case._line


def _duplicate_problems(cases: list[Case], name: str) -> list[Problem]:
    problems: list[Problem] = []
    seen: dict[str, int | None] = {}
    for case in cases:
        if case.id in seen:
            problems.append(
                Problem(name, line_of(case), "id", f"duplicate id {case.id!r} (first on line {seen[case.id]})")
            )
        else:
            seen[case.id] = line_of(case)
    return problems


def load_cases(path: str | Path, *, derive_ids: bool = False) -> list[Case]:
    """Load cases from a JSONL/JSON file; raise :class:`DatasetError` listing every problem."""
    cases, problems = read_cases(path, derive_ids=derive_ids)
    problems += _duplicate_problems(cases, Path(path).name)
    if problems:
        raise DatasetError(problems)
    return cases


def _strip_ext(doc_id: str) -> str:
    path = PurePosixPath(doc_id)
    return str(path.with_suffix("")) if path.suffix else doc_id


def stem_index(doc_ids: Iterable[str]) -> dict[str, list[str]]:
    """``{stem: [doc ids]}``: each id without its extension, and, for ids in sub-folders, also
    their file name without its extension."""
    index: dict[str, list[str]] = {}
    for doc_id in sorted(set(doc_ids)):
        keys = {_strip_ext(doc_id)}
        if "/" in doc_id:
            keys.add(_strip_ext(doc_id.rsplit("/", 1)[1]))
        for key in keys:
            if key != doc_id:
                index.setdefault(key, []).append(doc_id)
    return index


def resolve_doc_ids(cases: Iterable[Case], doc_ids: Iterable[str], file: str) -> list[Problem]:
    """Replace, in place, each document reference (``relevant_ids``, ``doc_scope``,
    ``evidence[].doc_id``) that is not a document id but the stem of exactly one document by that
    id (``product-manual`` -> ``product-manual.pdf``). Returns a problem for every stem naming
    several documents (left as it is); references naming nothing are left for validation."""
    ids = set(doc_ids)
    index = stem_index(ids)
    problems: list[Problem] = []

    def resolve(ref: str, case: Case, field: str) -> str:
        if ref in ids:
            return ref
        found = index.get(ref, [])
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            problems.append(
                Problem(
                    file,
                    line_of(case),
                    field,
                    f"case {case.id!r}: {ref!r} names {len(found)} documents: "
                    + ", ".join(repr(d) for d in found)
                    + " (give the file extension)",
                )
            )
        return ref

    for case in cases:
        for i, r in enumerate(case.relevant_ids):
            r.id = resolve(r.id, case, f"relevant_ids[{i}]")
        if case.doc_scope:
            case.doc_scope = [resolve(d, case, f"doc_scope[{i}]") for i, d in enumerate(case.doc_scope)]
        for i, e in enumerate(case.evidence):
            if e.doc_id is not None:
                e.doc_id = resolve(e.doc_id, case, f"evidence[{i}].doc_id")
    return problems


def write_cases(path: str | Path, cases: Iterable[Case]) -> int:
    """Write canonical JSONL (defaults omitted, stable key order). Returns the count."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case_to_json(case), ensure_ascii=False) + "\n")
            n += 1
    return n


def case_to_json(case: Case) -> Record:
    data: Record = case.model_dump(exclude_defaults=True)
    data["id"] = case.id
    data["question"] = case.question
    if "relevant_ids" in data:  # compact form: plain id when grade is 1
        data["relevant_ids"] = [
            r.id if r.grade == 1 else r.model_dump(exclude_defaults=True) for r in case.relevant_ids
        ]
    if "evidence" in data:  # compact form: the text alone when no document is named
        data["evidence"] = [e.model_dump(exclude_defaults=True) if e.doc_id else e.text for e in case.evidence]
    return data


def read_settings(root: Path) -> tuple[DatasetSettings, list[Problem]]:
    """The folder's ``dataset.yaml`` (the defaults without one); a key of the wrong type is a
    problem, and left out."""
    path = root / "dataset.yaml"
    if not path.exists():
        return DatasetSettings(), []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        return DatasetSettings(), [Problem("dataset.yaml", line, None, f"malformed YAML: {exc}")]
    if not isinstance(data, dict):
        return DatasetSettings(), [Problem("dataset.yaml", 1, None, "expected a mapping")]
    try:
        return DatasetSettings.model_validate(data), []
    except ValidationError as exc:
        problems = [Problem("dataset.yaml", None, _loc(err["loc"]), err["msg"]) for err in exc.errors()]
        bad = {err["loc"][0] for err in exc.errors() if err["loc"]}
        return DatasetSettings.model_validate({k: v for k, v in data.items() if k not in bad}), problems


_RELEVANCE_KEYS = {
    "word_overlap_threshold",
    "evidence_min_overlap_fraction",
    "evidence_min_overlap_chars",
    "evidence_fuzzy_min_score",
}


def relevance_from_settings(settings: DatasetSettings, cases: list[Case]) -> tuple[RelevanceConfig, list[Problem]]:
    """Build the relevance config; default rule = evidence_offsets if any case has evidence else doc_id."""
    problems: list[Problem] = []
    rule = settings.relevance
    if rule is None:
        rule = "evidence_offsets" if any(c.evidence for c in cases) else "doc_id"
    elif rule not in RELEVANCE_RULES:
        problems.append(
            Problem(
                "dataset.yaml",
                None,
                "relevance",
                f"unknown rule {rule!r}; expected one of {', '.join(RELEVANCE_RULES)}",
            )
        )
        rule = "evidence_offsets" if any(c.evidence for c in cases) else "doc_id"
    params = {k: v for k, v in (settings.model_extra or {}).items() if k in _RELEVANCE_KEYS}
    try:
        return RelevanceConfig(rule=rule, **params), problems
    except ValidationError as exc:
        for err in exc.errors():
            problems.append(Problem("dataset.yaml", None, _loc(err["loc"]), err["msg"]))
        return RelevanceConfig(rule=rule), problems


def limits_from_settings(settings: DatasetSettings) -> tuple[CaseLimits, list[Problem]]:
    """The case text limits ``dataset.yaml`` sets (:class:`CaseLimits`), each bad value a problem."""
    params = {k: v for k, v in (settings.model_extra or {}).items() if k in CaseLimits.model_fields}
    try:
        return CaseLimits(**params), []
    except ValidationError as exc:
        return CaseLimits(), [Problem("dataset.yaml", None, _loc(err["loc"]), err["msg"]) for err in exc.errors()]


def cases_file_name(root: Path, settings: DatasetSettings) -> str:
    """The cases file of a dataset folder: ``cases`` of dataset.yaml, else ``cases.jsonl``, else
    ``cases.json``, else the folder's only ``.jsonl``/``.json`` file (``cases.jsonl`` when there
    is none or several, so the problem names the file expected)."""
    if settings.cases:
        return settings.cases
    for name in ("cases.jsonl", "cases.json"):
        if (root / name).is_file():
            return name
    found = sorted(p.name for p in root.glob("*.json*") if p.is_file() and p.suffix in (".json", ".jsonl"))
    return found[0] if len(found) == 1 else "cases.jsonl"


def load_dataset(path: str | Path, split: str | None = None) -> Dataset:
    """Load a dataset folder (``docs/``, a cases file, ``README.md``, optional ``dataset.yaml``).

    ``split`` ("dev"/"test") keeps only the cases of that split. Document references given
    as a unique file stem are resolved to the document's id (:func:`resolve_doc_ids`). Raises
    :class:`DatasetError` when the cases file or the settings have problems, or a stem names
    several documents (run :func:`ragsweep.validate.parsed.validate_dataset` for the full report,
    including document ids missing from ``docs/``).
    """
    root = Path(path)
    if not root.is_dir():
        raise DatasetError([Problem(str(root), None, None, "dataset folder not found")])
    settings, problems = read_settings(root)
    cases_name = cases_file_name(root, settings)
    docs_dir = root / settings.docs
    got = read_cases_file(root / cases_name, display_name=cases_name)
    cases = got.cases
    problems += got.problems + _duplicate_problems(cases, cases_name)
    if problems:
        raise DatasetError(problems)
    problems += resolve_doc_ids(cases, list_doc_ids(docs_dir), cases_name)
    relevance, rel_problems = relevance_from_settings(settings, cases)
    limits, limit_problems = limits_from_settings(settings)
    problems += rel_problems + limit_problems
    if problems:
        raise DatasetError(problems)
    if split is not None:
        if split not in ("dev", "test"):
            raise ValueError(f"split must be 'dev', 'test' or None, not {split!r}")
        cases = [c for c in cases if c.split == split]
    readme = root / "README.md"
    description = settings.description if settings.description is not None else got.header.get("description")
    return Dataset(
        name=settings.name if settings.name is not None else root.name,
        root=root,
        docs_dir=docs_dir,
        cases=cases,
        relevance=relevance,
        limits=limits,
        provenance=readme.read_text(encoding="utf-8") if readme.exists() else "",
        settings=settings.model_dump(exclude_unset=True),
        cases_file=root / cases_name,
        description=None if description is None else str(description),
        cases_header=got.header,
    )
