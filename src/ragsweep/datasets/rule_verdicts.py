"""Verdicts decided by a rule: a reference set for the LLM judge that no judge produced.

For a few CUAD categories the correctness of an answer can be decided by a rule, when the
answer is explicit enough: dates (Agreement Date, Effective Date), the governing law's place
(Governing Law), and periods as numbers (Renewal Term, Notice Period to Terminate Renewal).
:func:`rule_verdict` returns ``True`` / ``False`` only when the rule decides unambiguously,
``None`` otherwise; such answers are left out of the reference set.

The rule (also written in ``datasets/cuad-judge-reference/README.md``):

- the reference (CUAD's label) must itself be decidable: a full date (``3/24/06``; labels with
  ``[]`` placeholders are skipped), a recognised place, or one period with a number;
- the values of that kind are extracted from the answer: dates in numeric (month/day/year, as
  CUAD labels, or ISO) or written form (``March 24, 2006``, ``24th day of March, 2006``);
  places from a fixed list (US states, countries, a few regions; aliases such as "UK" /
  "England and Wales" and "People's Republic of China" / "PRC" collapse; "United States"
  named beside a US state is that state's country and dropped); periods as number + unit
  (``sixty (60) days``, ``1-year``, ``twelve months``, ``half a year``) converted to days
  (week 7, month 365.25/12, year 365.25; equal within 3 %);
- correct: the answer names at least one value and every value it names equals the reference;
  wrong: it names at least one value and none equals the reference; anything else (no value,
  or the reference among other values) is undecided and left out. Refusals are left out (the
  judge decides those in code).

Build: :func:`select_cases` picks the decidable CUAD cases (no answers yet); a run of
``ragsweep eval --llm`` on them gives answers; :func:`label_records` turns each decided
answer into a ``reference_verdict`` with ``source = "rule:<kind>-match (...)"``.
``python -m ragsweep.commands.rule_verdicts select|label`` does both steps.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from pydantic import JsonValue

from ragsweep.answer.base import Answer
from ragsweep.answer.llm import is_refusal
from ragsweep.datasets.schema import Case

RULE_SOURCE = "rule:{kind}-match (datasets/cuad-judge-reference/README.md)"

CATEGORIES: dict[str, str] = {
    "Agreement Date": "date",
    "Effective Date": "date",
    "Governing Law": "place",
    "Renewal Term": "period",
    "Notice Period to Terminate Renewal": "period",
}

# ----------------------------------------------------------------- dates
_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH_RE = (
    r"(january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_DAY_RE = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR_RE = r"(\d{4}|'\d{2})"
_DATE_PATTERNS = [
    # March 24, 2006 / Mar. 24 2006 / March 24th, 2006
    (re.compile(rf"\b{_MONTH_RE}\s+{_DAY_RE},?\s+{_YEAR_RE}\b", re.I), ("m", "d", "y")),
    # 24 March 2006 / 24th day of March, 2006 / the 24th of March, 2006
    (re.compile(rf"\b{_DAY_RE}\s+(?:day\s+)?(?:of\s+)?{_MONTH_RE},?\s+(?:of\s+)?{_YEAR_RE}\b", re.I), ("d", "m", "y")),
    # 2006-03-24
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), ("y", "m", "d")),
    # 3/24/06, 03/24/2006, 3-24-2006, 3.24.2006 (month first, as CUAD's labels)
    (re.compile(r"\b(\d{1,2})[/.-](\d{1,2})[/.-](\d{4}|\d{2})\b"), ("m", "d", "y")),
]


def _year(text: str) -> int:
    y = int(text.lstrip("'"))
    if y < 100:
        y += 2000 if y <= 30 else 1900
    return y


def dates_in(text: str) -> set[dt.date]:
    """Every full date written in ``text`` (month/day order for numeric dates)."""
    found: set[dt.date] = set()
    taken: list[tuple[int, int]] = []
    for pattern, order in _DATE_PATTERNS:
        for m in pattern.finditer(text or ""):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            parts = dict(zip(order, m.groups()))
            month = parts["m"]
            month_no = _MONTHS.get(month.lower().rstrip(".")) if not month.isdigit() else int(month)
            if month_no is None:  # not a month name
                continue
            try:
                found.add(dt.date(_year(parts["y"]), month_no, int(parts["d"])))
            except (TypeError, ValueError):
                continue
            taken.append((m.start(), m.end()))
    return found


def reference_date(label: str) -> dt.date | None:
    """CUAD's ``m/d/yy`` label as a date; None with ``[]`` placeholders or anything else."""
    if not label or "[" in label:
        return None
    found = dates_in(label)
    return next(iter(found)) if len(found) == 1 else None


# ----------------------------------------------------------------- places
_US_STATES = [
    "alabama",
    "alaska",
    "arizona",
    "arkansas",
    "california",
    "colorado",
    "connecticut",
    "delaware",
    "florida",
    "georgia",
    "hawaii",
    "idaho",
    "illinois",
    "indiana",
    "iowa",
    "kansas",
    "kentucky",
    "louisiana",
    "maine",
    "maryland",
    "massachusetts",
    "michigan",
    "minnesota",
    "mississippi",
    "missouri",
    "montana",
    "nebraska",
    "nevada",
    "new hampshire",
    "new jersey",
    "new mexico",
    "new york",
    "north carolina",
    "north dakota",
    "ohio",
    "oklahoma",
    "oregon",
    "pennsylvania",
    "rhode island",
    "south carolina",
    "south dakota",
    "tennessee",
    "texas",
    "utah",
    "vermont",
    "virginia",
    "washington",
    "west virginia",
    "wisconsin",
    "wyoming",
    "district of columbia",
]
_OTHER_PLACES = [
    "israel",
    "india",
    "italy",
    "kazakhstan",
    "china",
    "england",
    "united states",
    "canada",
    "ontario",
    "british columbia",
    "quebec",
    "germany",
    "france",
    "switzerland",
    "netherlands",
    "hong kong",
    "singapore",
    "japan",
    "korea",
    "australia",
    "ireland",
    "scotland",
    "sweden",
    "spain",
    "mexico",
    "brazil",
    "cayman islands",
    "bermuda",
    "luxembourg",
    "taiwan",
]
_ALIASES = {
    "england and wales": "england",
    "united kingdom": "england",
    "uk": "england",
    "u.k.": "england",
    "great britain": "england",
    "people's republic of china": "china",
    "prc": "china",
    "p.r.c.": "china",
    "usa": "united states",
    "u.s.a.": "united states",
    "u.s.": "united states",
    "united states of america": "united states",
    "republic of kazakhstan": "kazakhstan",
    "state of israel": "israel",
    "republic of india": "india",
    "commonwealth of pennsylvania": "pennsylvania",
    "commonwealth of massachusetts": "massachusetts",
    "commonwealth of virginia": "virginia",
    "commonwealth of kentucky": "kentucky",
}
_PLACE_NAMES = sorted(set(_US_STATES) | set(_OTHER_PLACES) | set(_ALIASES), key=len, reverse=True)
_PLACE_RE = re.compile(r"(?<![a-z])(" + "|".join(re.escape(p) for p in _PLACE_NAMES) + r")(?![a-z])", re.I)


def places_in(text: str) -> set[str]:
    """Canonical names of the places named in ``text`` (longest match first: "west virginia" is
    not also "virginia"; "new york" is one place; "England and Wales, UK" is england)."""
    out = set()
    for m in _PLACE_RE.finditer(text or ""):
        name = m.group(1).lower()
        out.add(_ALIASES.get(name, name))  # alternatives longest first: "west virginia" is matched whole
    # "United States" beside a US state is that state's country, not a second law ("New York, USA")
    if "united states" in out and out & set(_US_STATES):
        out.discard("united states")
    # "England" inside "New England" is not England
    if (
        "england" in out
        and re.search(r"new\s+england", text or "", re.I)
        and not re.search(r"(?<!new )\bengland\b", text or "", re.I)
    ):
        out.discard("england")
    return out


# ----------------------------------------------------------------- periods
_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "eighteen": 18,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "forty-five": 45,
    "forty five": 45,
    "fifty": 50,
    "sixty": 60,
    "sixty-five": 65,
    "sixty five": 65,
    "seventy": 70,
    "seventy-five": 75,
    "eighty": 80,
    "ninety": 90,
    "one hundred twenty": 120,
    "one hundred and twenty": 120,
    "one hundred eighty": 180,
    "one hundred and eighty": 180,
}
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "month": 365.25 / 12, "year": 365.25}
_NUM_RE = r"(\d+(?:\.\d+)?|" + "|".join(re.escape(w) for w in sorted(_NUMBER_WORDS, key=len, reverse=True)) + ")"
_PERIOD_RE = re.compile(
    rf"(?<![\w-]){_NUM_RE}\s*(?:\(\s*\d+(?:\.\d+)?\s*\)\s*)?[-\s]?\s*(?:\(\s*\d+\s*\)\s*)?"
    r"(?:calendar\s+|business\s+|working\s+|consecutive\s+|full\s+)?(day|week|month|year)s?\b",
    re.I,
)
_HALF_RE = re.compile(r"(?<![\w-])(?:one[-\s])?half(?:\s+an?\s+|[-\s]+)(day|week|month|year)s?\b", re.I)
_TOLERANCE = 0.03


def periods_in(text: str) -> list[float]:
    """Every period written as number + unit in ``text``, in days (distinct within 3 %)."""
    out: list[float] = []
    for m in _HALF_RE.finditer(text or ""):  # "half a year", "half-year", "one-half year"
        days = 0.5 * _UNIT_DAYS[m.group(1).lower()]
        if not any(_same_period(days, d) for d in out):
            out.append(days)
    for m in _PERIOD_RE.finditer(text or ""):
        raw, unit = m.group(1).lower(), m.group(2).lower()
        try:
            value = float(raw)
        except ValueError:
            value = float(_NUMBER_WORDS[raw])
        days = value * _UNIT_DAYS[unit]
        if days > 0 and not any(_same_period(days, d) for d in out):
            out.append(days)
    return out


def _same_period(a: float, b: float) -> bool:
    return abs(a - b) <= _TOLERANCE * max(a, b)


def reference_period(label: str) -> float | None:
    if not label or "[" in label:
        return None
    found = periods_in(label)
    return found[0] if len(found) == 1 else None


# ----------------------------------------------------------------- the rule

T = TypeVar("T")
R = TypeVar("R")


def _decide(found: Iterable[T], reference: R, same: Callable[[T, R], bool]) -> bool | None:
    hits = [same(v, reference) for v in found]
    if not hits:
        return None
    if all(hits):
        return True
    if not any(hits):
        return False
    return None


def rule_verdict(kind: str, answer: str, reference: str) -> bool | None:
    """True / False when the rule of ``kind`` ("date", "place", "period") decides, else None."""
    if kind == "date":
        ref_date = reference_date(reference)
        return None if ref_date is None else _decide(dates_in(answer), ref_date, lambda a, b: a == b)
    if kind == "place":
        ref_places = places_in(reference)
        if not ref_places:
            return None
        return _decide(places_in(answer), ref_places, lambda a, b: a in b)
    if kind == "period":
        ref_period = reference_period(reference)
        return None if ref_period is None else _decide(periods_in(answer), ref_period, _same_period)
    raise ValueError(f"unknown rule kind {kind!r}; known: date, place, period")


def decidable_reference(kind: str, reference: str | None) -> bool:
    if not reference:
        return False
    if kind == "date":
        return reference_date(reference) is not None
    if kind == "place":
        return bool(places_in(reference))
    return reference_period(reference) is not None


# ----------------------------------------------------------------- building the set

CaseRow = dict[str, JsonValue]  # one line of a canonical cases file, kept as written


def select_cases(rows: Sequence[CaseRow], per_category: int | None = None) -> list[CaseRow]:
    """The answerable CUAD cases of :data:`CATEGORIES` whose label the rule can read (the first
    ``per_category`` of each, in the dataset's order). ``rows``: the lines of a canonical cases
    file, each read as a :class:`~ragsweep.datasets.schema.Case` and kept as it is."""
    out, taken = [], {c: 0 for c in CATEGORIES}
    for row in rows:
        case = Case.model_validate(row)
        kind = CATEGORIES.get(case.type or "")
        if kind is None or case.unanswerable or not decidable_reference(kind, case.reference_answer):
            continue
        if per_category is not None and taken[case.type or ""] >= per_category:
            continue
        taken[case.type or ""] += 1
        out.append(dict(row))
    return out


def label_records(
    cases: Sequence[CaseRow], answers: Mapping[str, Answer], model: str
) -> tuple[list[CaseRow], dict[str, int]]:
    """Each case whose run answer (``answers``: the run's, by case id) the rule decides, with its
    ``reference_verdict``; and counts."""
    out: list[CaseRow] = []
    counts = {"cases": len(cases), "no_answer": 0, "refusal": 0, "undecided": 0, "correct": 0, "wrong": 0}
    for row in cases:
        case = Case.model_validate(row)
        answer = answers.get(case.id)
        text = answer.text.strip() if answer is not None else ""
        if answer is None or answer.error or not text:
            counts["no_answer"] += 1
            continue
        if answer.abstained or is_refusal(text):
            counts["refusal"] += 1
            continue
        kind = CATEGORIES[case.type or ""]
        verdict = rule_verdict(kind, text, case.reference_answer or "")
        if verdict is None:
            counts["undecided"] += 1
            continue
        counts["correct" if verdict else "wrong"] += 1
        out.append(
            {
                **row,
                "reference_verdict": {
                    "answer": text,
                    "is_correct": verdict,
                    "source": RULE_SOURCE.format(kind=kind),
                    "note": f"answer by {model}; rule-based, not a human label",
                },
            }
        )
    return out, counts
