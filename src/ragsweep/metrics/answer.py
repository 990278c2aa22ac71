"""Answer-quality metrics that need no LLM.

Every per-case metric returns a float, or ``None`` when it cannot be computed (for
example no reference answer). Callers count ``None`` as *missing*; never turn it into
NaN and average it.

Expected facts (:func:`fact_found`, :func:`fact_coverage`)
----------------------------------------------------------

A fact is *found* in an answer by this rule:

1. *Normalisation* (both sides): the text normalisation of
   :func:`ragsweep.metrics.relevance.normalize` — curly quotes and Unicode dashes
   straightened, Unicode NFKC (NFC composition plus compatibility forms) and ``casefold``
   (so decomposed and precomposed accents are equal, and "Hauptstraße" equals
   "HAUPTSTRASSE"), whitespace runs collapsed.
2. *Tokens*: the normalised text is cut into whole words and numbers; punctuation separates
   tokens and is otherwise dropped, the articles "a", "an", "the" are dropped, a hyphen
   between letters is removed ("non-exclusive" -> "nonexclusive"), an apostrophe separates
   ("Licensor's" -> "licensor", "s"). A *number* is a run of digits with single ``,``/``.``
   between digits that is not part of a longer word or number; ``,`` is a thousands
   separator and removed (``$5,000`` = ``$5000``), ``.`` is kept (``12.3`` != ``12.4``,
   ``5,000`` != ``5.000``), ordinal suffixes are dropped (``30th`` = ``30``). A currency
   right before a number (``$ US$ € £ ¥``, or ``USD EUR GBP JPY``) or right after it
   ("dollars", "USD", "euros", "EUR", "GBP", "yen", "JPY") and a ``%``/"percent"/"per cent"
   right after it belong to it: two numbers are equal when their digits, their currency
   (``$`` = "US$" = "USD" = "dollars") and their percent mark are all equal (``$5,000`` =
   ``$5000`` = "5,000 dollars" = "USD 5,000"; ``$5,000`` != ``€5,000`` != "5,000 shares";
   ``5%`` = "5 percent" != "5 days").
   A *date* ("January 1, 2011", "Jan. 1st, 2011", "1 January 2011", "1st of January, 2011",
   "2011-01-01", "1/1/2011", "1-1-2011", "1/1/11"; also "January 2011" and "January 1") is
   read as month, day, year tokens; numeric dates are read month/day/year (US order, as in
   CUAD and Pathway's labels); a two-digit year equals the four-digit years ending in it.
   A month token equals its month's name as a word, and a year equals the same plain number
   (so "2011" and "January" are found in "January 1, 2011", "January 1, 2011" in "1/1/2011").
3. *Exact*: the fact is found when its tokens occur as a contiguous run of the answer's
   tokens, token by token equal. Matches are therefore on word/number boundaries: "30 days"
   is not found in "130 days", "$5,000" not in "$15,000" or "$5,000,000", "Sponsor" not in
   "Sponsorship", "Section 12" not in "Section 12.3".
4. *Fuzzy*, for the non-numeric words only: otherwise the fact is found when some run of
   ``max(1, n - s) .. n + s`` consecutive answer tokens (``n`` = number of fact tokens,
   ``s = max(2, n // 4)``) holds exactly the fact's numbers, amounts, percentages, dates and
   full month names ("may" excepted) — same count, same order, each equal by rule 2 — and
   ``rapidfuzz.fuzz.ratio(fact words, run words) >= threshold`` (0..100, default 90), where
   "words" are the remaining word tokens joined by single spaces. A fact made only of
   numbers and dates is never matched fuzzily. So "January 1, 2010" is not found in
   "January 1, 2011", "Section 12.3" not in "Section 12.4", "effective June 1" not in
   "effective July 1", "the annual fee of $5,000" not in "an anual fee of $15,000", while
   "non-exclusive licence" is found in "a nonexclusive license" (ratio 95) and "the annual
   fee of $5,000" in "an anual fee of $5,000".

``fact_coverage`` is the share of the expected facts found; blank facts and facts with no
word or number left after normalisation (such as "the") are ignored.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Literal

from ragsweep.answer.base import Answer
from ragsweep.answer.refusal import is_refusal
from ragsweep.datasets.textnorm import normalize
from ragsweep.metrics import registry

# ----------------------------------------------------------------------------- SQuAD


_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower-case, drop punctuation, drop articles (a/an/the), collapse spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _references(reference: str | Sequence[str] | None) -> list[str] | None:
    if reference is None:
        return None
    refs = [reference] if isinstance(reference, str) else [r for r in reference if r is not None]
    refs = [r for r in refs if r.strip()]
    return refs or None


def answer_tokens(text: str, language: str = "en") -> list[str]:
    """SQuAD-normalised tokens: white-space words, or words cut by rjieba for ``zh``
    (Chinese runs have no spaces: one run would be one token)."""
    normalised = normalize_answer(text or "")
    if language == "en":
        return normalised.split()
    # deferred: the CJK tokenizer imports pathway (~1 s); English answers are scored without it
    from ragsweep.pipeline.cjk import tokenize

    return tokenize(normalised, language)


def exact_match(prediction: str, reference: str | Sequence[str] | None, language: str = "en") -> float | None:
    """SQuAD exact match.

    ``EM = max_r 1[normalize(prediction) == normalize(r)]`` over the reference(s), compared
    token by token (:func:`answer_tokens`). ``None`` when there is no (non-blank) reference.
    """
    refs = _references(reference)
    if refs is None:
        return None
    pred = answer_tokens(prediction, language)
    return float(any(pred == answer_tokens(r, language) for r in refs))


def _f1(pred_tokens: list[str], ref_tokens: list[str]) -> float:
    if not pred_tokens or not ref_tokens:
        return float(pred_tokens == ref_tokens)
    common = Counter(pred_tokens) & Counter(ref_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, reference: str | Sequence[str] | None, language: str = "en") -> float | None:
    """SQuAD token F1.

    With P = normalized prediction tokens and R = normalized reference tokens (bags),
    ``overlap = |P ∩ R|`` (multiset), ``precision = overlap/|P|``, ``recall = overlap/|R|``,
    ``F1 = 2·precision·recall/(precision+recall)`` (0 if overlap is 0; if either side is
    empty, 1 when both are empty else 0). Max over references. ``None`` without a reference.
    """
    refs = _references(reference)
    if refs is None:
        return None
    pred_tokens = answer_tokens(prediction, language)
    return max(_f1(pred_tokens, answer_tokens(r, language)) for r in refs)


# ----------------------------------------------------------------------------- facts

DEFAULT_FACT_THRESHOLD = 90.0

_MONTH_NUMBERS = {
    "jan": 1,
    "january": 1,
    "feb": 2,
    "february": 2,
    "mar": 3,
    "march": 3,
    "apr": 4,
    "april": 4,
    "may": 5,
    "jun": 6,
    "june": 6,
    "jul": 7,
    "july": 7,
    "aug": 8,
    "august": 8,
    "sep": 9,
    "sept": 9,
    "september": 9,
    "oct": 10,
    "october": 10,
    "nov": 11,
    "november": 11,
    "dec": 12,
    "december": 12,
}
# month names that are compared exactly even outside a date ("may" is too often a verb)
_EXACT_MONTH_WORDS = frozenset(
    ("january", "february", "march", "april", "june", "july", "august", "september", "october", "november", "december")
)
_ARTICLE_WORDS = frozenset(("a", "an", "the"))
_CURRENCIES = {
    "$": "$",
    "us$": "$",
    "usd": "$",
    "dollar": "$",
    "dollars": "$",
    "€": "€",
    "eur": "€",
    "euro": "€",
    "euros": "€",
    "£": "£",
    "gbp": "£",
    "¥": "¥",
    "jpy": "¥",
    "yen": "¥",
}
_MON = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY = r"(?:0?[1-9]|[12]\d|3[01])"
_ORD = r"(?:st|nd|rd|th)?"
_START = r"(?<![^\W_])"  # not preceded by a letter or digit
_END = r"(?![^\W_])(?![.,]\d)"  # not followed by a letter, digit, or ",5"/".5"
_FACT_TOKEN_RE = re.compile(
    _START + "(?:"
    # dates -> (month, day, year); the year may be missing
    rf"(?P<a_m>{_MON})\.? ?(?P<a_d>{_DAY}){_ORD},? ?(?P<a_y>\d{{4}})"  # january 1, 2011
    rf"|(?P<b_d>{_DAY}){_ORD}(?: of)? (?P<b_m>{_MON})\.?,? ?(?P<b_y>\d{{4}})"  # 1 january 2011
    r"|(?P<c_y>\d{4})-(?P<c_m>\d{1,2})-(?P<c_d>\d{1,2})"  # 2011-01-01
    r"|(?P<d_m>\d{1,2})(?P<d_sep>[/-])(?P<d_d>\d{1,2})(?P=d_sep)(?P<d_y>\d{4}|\d{2})"  # 1/1/2011, 5/8/14
    rf"|(?P<e_m>{_MON})\.?,? (?P<e_y>\d{{4}})"  # january 2011
    rf"|(?P<f_m>{_MON})\.? (?P<f_d>{_DAY}){_ORD}"  # january 1
    rf"){_END}"
    # numbers, with a currency before or after them, or a percent sign after them
    rf"|{_START}(?:(?P<cur>us\$|[$€£¥]|(?:usd|eur|gbp|jpy)(?= ?\d)) ?)?(?P<num>\d+(?:[.,]\d+)*){_ORD}{_END}"
    r"(?: ?(?P<pct>%|percent(?![^\W_])|per cent(?![^\W_]))"
    r"| (?P<cur2>dollars?|usd|euros?|eur|gbp|yen|jpy)(?![^\W_]))?"
    # words: letters/digits, joined over "-" when a letter follows (non-exclusive -> nonexclusive)
    r"|(?P<word>[^\W_]+(?:-[^\W\d_][^\W_]*)*)"
)


# the tokens a fact and an answer are compared by, tagged by their first item
WordToken = tuple[Literal["w"], str]  # (tag, word)
NumberToken = tuple[Literal["n"], str, str, bool]  # (tag, digits, currency, percent)
MonthToken = tuple[Literal["mon"], int]  # (tag, month 1-12)
YearToken = tuple[Literal["y"], int, bool]  # (tag, year, two_digit)
FactToken = WordToken | NumberToken | MonthToken | YearToken


def _date_tokens(month: str, day: str | None, year: str | None) -> list[FactToken] | None:
    m = _MONTH_NUMBERS.get(month) if not month.isdigit() else int(month)
    if m is None or not 1 <= m <= 12:
        return None
    out: list[FactToken] = [("mon", m)]
    if day is not None:
        d = int(day)
        if not 1 <= d <= 31:
            return None
        out.append(("n", str(d), "", False))
    if year is not None:
        out.append(("y", int(year), len(year) == 2))
    return out


def fact_tokens(text: str) -> list[FactToken]:
    """The tokens :func:`fact_found` compares (see the module docstring, "Expected facts").

    ``("w", word)`` (a hyphen between letters removed; articles dropped),
    ``("n", digits, currency, percent)`` (thousands ``,`` removed), and for a recognised date
    ``("mon", month)``, ``("n", day, "", False)``, ``("y", year, two_digit)``.
    """
    return list(_fact_tokens(text or ""))


@lru_cache(maxsize=1024)
def _fact_tokens(text: str) -> tuple[FactToken, ...]:
    out: list[FactToken] = []
    for m in _FACT_TOKEN_RE.finditer(normalize(text)):
        word = m["word"]
        if word is not None:
            w = word.replace("-", "")
            if w not in _ARTICLE_WORDS:
                out.append(("w", w))
            continue
        num = m["num"]
        if num is not None:
            currency = _CURRENCIES.get(m["cur"] or m["cur2"] or "", "")
            out.append(("n", num.replace(",", ""), currency, bool(m["pct"])))
            continue
        toks: Sequence[FactToken] | None = None
        for p in "abcdef":
            month = m[f"{p}_m"]
            if month is not None:
                toks = _date_tokens(month, m[f"{p}_d"] if p != "e" else None, m[f"{p}_y"] if p != "f" else None)
                break
        if toks is None:  # not a valid date (month 13, day 32): read it again as numbers and words
            toks = _fact_tokens(m.group().replace("/", " ").replace("-", " "))
        out.extend(toks)
    return tuple(out)


def _year_of(tok: FactToken) -> tuple[int, bool] | None:
    if tok[0] == "y":
        return tok[1], tok[2]
    if tok[0] == "n" and not tok[2] and not tok[3] and tok[1].isdigit() and len(tok[1]) in (2, 4):
        return int(tok[1]), len(tok[1]) == 2
    return None


def _month_of(tok: FactToken) -> int | None:
    if tok[0] == "mon":
        return tok[1]
    return _MONTH_NUMBERS.get(tok[1]) if tok[0] == "w" else None


def _tokens_equal(a: FactToken, b: FactToken) -> bool:
    if a == b:
        return True
    if a[0] == "mon" or b[0] == "mon":  # a month of a date equals its name as a word
        ma, mb = _month_of(a), _month_of(b)
        return ma is not None and ma == mb
    if a[0] == "w" or b[0] == "w":
        return False
    if a[0] == "n" and b[0] == "n":
        return False  # equal tuples were caught above: same digits, currency and percent mark
    ya, yb = _year_of(a), _year_of(b)
    if ya is None or yb is None:
        return False
    if ya[1] == yb[1]:
        return ya[0] == yb[0]
    return (yb[0] % 100 == ya[0]) if ya[1] else (ya[0] % 100 == yb[0])


def _is_exact(tok: FactToken) -> bool:
    """Numbers, amounts, percentages, dates and month names: never matched fuzzily."""
    return tok[0] != "w" or tok[1] in _EXACT_MONTH_WORDS


def fact_found(fact: str, answer: str, threshold: float = DEFAULT_FACT_THRESHOLD) -> bool:
    """Whether ``fact`` occurs in ``answer`` (the rule is in the module docstring, "Expected facts").

    In short: the fact's tokens occur as a contiguous run of the answer's tokens (whole words
    and numbers, NFKC + casefold, dates and thousands separators normalised); otherwise some
    run of the answer's tokens has exactly the fact's numbers/dates, in order, and its other
    words give ``rapidfuzz.fuzz.ratio >= threshold`` (0..100) against the fact's other words.
    """
    ftoks = _fact_tokens(fact or "")
    atoks = _fact_tokens(answer or "")
    if not ftoks or not atoks:
        return False
    n = len(ftoks)
    for i in range(len(atoks) - n + 1):
        if all(_tokens_equal(f, a) for f, a in zip(ftoks, atoks[i : i + n])):
            return True
    fwords = " ".join(t[1] for t in ftoks if t[0] == "w" and not _is_exact(t))  # only words are not exact
    if not fwords:  # only numbers and dates: no fuzzy matching
        return False
    from rapidfuzz import fuzz, process

    fexact = [t for t in ftoks if _is_exact(t)]
    exact_flags = [_is_exact(t) for t in atoks]
    prefix = [0]
    for flag in exact_flags:
        prefix.append(prefix[-1] + flag)
    texts = [str(t[1]) for t in atoks]
    slack = max(2, n // 4)
    for k in range(max(1, n - slack), n + slack + 1):
        windows: list[str] = []
        for i in range(len(atoks) - k + 1):
            if prefix[i + k] - prefix[i] != len(fexact):
                continue
            if fexact:
                wexact = [t for t, flag in zip(atoks[i : i + k], exact_flags[i : i + k]) if flag]
                if not all(map(_tokens_equal, fexact, wexact)):
                    continue
                windows.append(" ".join(w for w, flag in zip(texts[i : i + k], exact_flags[i : i + k]) if not flag))
            else:
                windows.append(" ".join(texts[i : i + k]))
        if windows and process.extractOne(fwords, windows, scorer=fuzz.ratio, score_cutoff=threshold) is not None:
            return True
    return False


def fact_coverage(
    answer: str, expected_facts: Iterable[str] | None, threshold: float = DEFAULT_FACT_THRESHOLD
) -> float | None:
    """Share of expected facts found in the answer.

    ``coverage = |{f in facts : fact_found(f, answer)}| / |facts|`` (blank facts, and facts
    with no word or number left after normalisation, such as "the", are ignored).
    ``None`` when there are no facts.
    """
    facts = [f for f in (expected_facts or []) if f and _fact_tokens(f)]
    if not facts:
        return None
    return sum(fact_found(f, answer or "", threshold) for f in facts) / len(facts)


# ----------------------------------------------------------------------------- Pathway rule

PATHWAY_MIN_SEQUENCE_MATCH = 0.4
# pathway integration_tests/rag_evals/constants.py CuadMissingData
PATHWAY_MISSING_LABELS = ("no information found", "[]")
_PATHWAY_DATE_LABEL = re.compile(r"\b(0?[1-9]|1[0-2])/(0?[1-9]|[12]\d|3[01])/\d{2}\b")
_PATHWAY_DATE_FORMATS = ("%d %B %Y", "%B %d, %Y", "%m %d, %Y")


def _pathway_parse_date(text: str) -> datetime | None:
    for fmt in _PATHWAY_DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def pathway_string_match(
    prediction: str, label: str | None, min_sequence_match: float = PATHWAY_MIN_SEQUENCE_MATCH
) -> float | None:
    """Pathway's rag_evals answer check (``StringSimEvaluator.evaluate``), as 1.0/0.0.

    Replicates pathwaycom/pathway integration_tests/rag_evals/evaluator.py:

    1. lower-case prediction and label;
    2. if the prediction contains "no information", "don't know" or "do not know", the
       result is whether the label is a missing-data label ("no information found" or
       "[]"); otherwise continue;
    3. if the label matches ``re.match(r"\\b(0?[1-9]|1[0-2])/(0?[1-9]|[12]\\d|3[01])/\\d{2}\\b")``
       (an m/d/yy date), the *whole* prediction must parse with one of ``"%d %B %Y"``,
       ``"%B %d, %Y"``, ``"%m %d, %Y"`` and, formatted as ``m/d/yy`` without leading zeros,
       equal the label (so "May 8, 2014" matches "5/8/14"; "It is May 8, 2014." does not);
    4. otherwise keep only alphanumeric characters of both and match when
       ``difflib.SequenceMatcher(None, pred, label).ratio() > min_sequence_match`` (0.4).

    ``None`` when the label is ``None``. Pass ``"no information found"`` as the label of an
    unanswerable question (what :func:`answer_metrics_for_case` does).
    """
    if label is None:
        return None
    pred, lab = (prediction or "").lower(), label.lower()
    if "no information" in pred or "don't know" in pred or "do not know" in pred:
        if lab in PATHWAY_MISSING_LABELS:
            return 1.0
    if _PATHWAY_DATE_LABEL.match(lab):
        parsed = _pathway_parse_date(pred)
        if parsed is None:
            return 0.0
        formatted = f"{parsed.month}/{parsed.day}/{parsed.strftime('%y')}"
        return float(formatted == lab)
    a = "".join(ch for ch in pred if ch.isalnum())
    b = "".join(ch for ch in lab if ch.isalnum())
    return float(SequenceMatcher(None, a, b).ratio() > min_sequence_match)


# ----------------------------------------------------------------------------- per case


ABSTAINED = "abstained"  # a case's answer abstains (the answerer's flag or a refusal-style text)
ABSTENTION_F1 = "abstention_f1"  # over the cases only: its interval is no bootstrap of a mean (stats.abstention_f1_ci)
UNPARSED_SCOPE = "abstention"  # a case's note: its abstention is left unscored, and why


def unparsed_scope_note(unanswerable: bool, doc_scope: Sequence[str] | None, parsed: Mapping[str, str]) -> str | None:
    """Why an unanswerable case's abstention says nothing: none of its scoped documents was parsed, so the
    answerer had nothing to find in the first place (a refusal there is no evidence of knowing when to
    refuse). None when the abstention is scored."""
    if not unanswerable or not doc_scope or any(d in parsed for d in doc_scope):
        return None
    return (
        f"its documents were not parsed ({', '.join(doc_scope[:3])}{' ...' if len(doc_scope) > 3 else ''}): "
        "left out of the abstention metrics, not counted as a correct abstention"
    )


def without_abstention(scores: dict[str, float | None]) -> dict[str, float | None]:
    """``scores`` with the metrics that judge an abstention unset (:func:`unparsed_scope_note`)."""
    return {k: (None if k in ("abstained", "abstention_correct", "pathway_strsim") else v) for k, v in scores.items()}


def answer_metrics_for_case(
    answer: Answer,
    reference_answer: str | Sequence[str] | None,
    expected_facts: Sequence[str] | None,
    unanswerable: bool,
    *,
    fact_threshold: float = DEFAULT_FACT_THRESHOLD,
    pathway_min_sequence_match: float = PATHWAY_MIN_SEQUENCE_MATCH,
    language: str = "en",
) -> dict[str, float | None]:
    """All no-LLM answer metrics for one case (``language``: ``en``, or ``zh`` for rjieba tokens).

    Keys:

    - ``abstained``: 1.0 if ``answer.abstained`` or :func:`is_refusal` on its text, else 0.0
      (``None`` if ``answer.error``);
    - ``abstention_correct``: 1.0 if abstained == unanswerable else 0.0 (``None`` on error);
    - ``exact_match``, ``token_f1``, ``fact_coverage``: on answerable cases only (``None``
      for unanswerable ones or when the reference / facts are missing); an abstained answer
      is scored as the empty string (so 0);
    - ``pathway_strsim``: :func:`pathway_string_match` against ``reference_answer``, or
      against ``"no information found"`` for an unanswerable case (so a refusal is right);
      ``None`` when answerable without a reference;
    - ``answer_error``: 1.0 if ``answer.error`` is set else 0.0. When it is set every other
      metric is ``None`` (the failure is counted as missing, not as a wrong answer).
    """
    computed = [m for m in registry.registered("answer", "case") if m.compute is not None]
    if answer.error:
        out: dict[str, float | None] = {m.name: None for m in computed}
        out["answer_error"] = 1.0
        return out
    abstained = bool(answer.abstained) or is_refusal(answer.text)
    case = AnsweredCase(
        answer=answer,
        text="" if abstained else answer.text,
        abstained=abstained,
        reference=reference_answer,
        facts=expected_facts,
        unanswerable=bool(unanswerable),
        language=language,
        fact_threshold=fact_threshold,
        pathway_min_sequence_match=pathway_min_sequence_match,
    )
    scores = {m.name: m.compute(case) for m in computed if m.compute is not None}
    return {**scores, "answer_error": 0.0}


@dataclass(frozen=True)
class AnsweredCase:
    """What an answer metric reads of one answered case (the answer is not an error)."""

    answer: Answer  # as the answerer gave it
    text: str  # the answer scored: "" when it abstained
    abstained: bool
    reference: str | Sequence[str] | None
    facts: Sequence[str] | None
    unanswerable: bool
    language: str = "en"
    fact_threshold: float = DEFAULT_FACT_THRESHOLD
    pathway_min_sequence_match: float = PATHWAY_MIN_SEQUENCE_MATCH


def _answerable(metric: Callable[[AnsweredCase], float | None]) -> Callable[[AnsweredCase], float | None]:
    """``metric`` on answerable cases only (None for an unanswerable one)."""

    def scored(case: AnsweredCase) -> float | None:
        return None if case.unanswerable else metric(case)

    return scored


def _pathway_strsim(case: AnsweredCase) -> float | None:
    threshold = case.pathway_min_sequence_match
    if case.unanswerable:
        return pathway_string_match(case.answer.text, PATHWAY_MISSING_LABELS[0], threshold)
    if isinstance(case.reference, str):
        return pathway_string_match(case.answer.text, case.reference, threshold)
    if case.reference:
        scores = [pathway_string_match(case.answer.text, r, threshold) for r in case.reference if r]
        return max((s for s in scores if s is not None), default=None)
    return None


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def aggregate_abstention(pairs: Iterable[tuple[bool, bool]]) -> dict[str, float | int | None]:
    """Abstention quality over cases, from ``(abstained, unanswerable)`` pairs.

    With A = abstained, U = unanswerable:

    - ``abstention_precision = |A ∩ U| / |A|`` (of the abstentions, share on unanswerable cases)
    - ``abstention_recall = |A ∩ U| / |U|`` (of the unanswerable cases, share abstained)
    - ``abstention_f1 = 2PR / (P + R)``
    - ``answered_unanswerable_rate = |U \\ A| / |U|`` (= 1 - recall: hallucination risk)
    - ``abstained_on_answerable_rate = |A \\ U| / |not U|`` (over-refusal)
    - ``abstention_accuracy = |(A ∩ U) ∪ (not A ∩ not U)| / n``

    Each ratio is ``None`` when its denominator is 0. Counts ``n``, ``n_abstained``,
    ``n_unanswerable``, ``n_abstained_unanswerable`` are included.
    """
    n = n_a = n_u = n_au = n_a_not_u = 0
    for abstained, unanswerable in pairs:
        a, u = bool(abstained), bool(unanswerable)
        n += 1
        n_a += a
        n_u += u
        n_au += a and u
        n_a_not_u += a and not u
    precision = _ratio(n_au, n_a)
    recall = _ratio(n_au, n_u)
    if precision is None or recall is None:
        f1 = None
    else:
        f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return {
        "n": n,
        "n_abstained": n_a,
        "n_unanswerable": n_u,
        "n_abstained_unanswerable": n_au,
        "abstention_precision": precision,
        "abstention_recall": recall,
        ABSTENTION_F1: f1,
        "answered_unanswerable_rate": _ratio(n_u - n_au, n_u),
        "abstained_on_answerable_rate": _ratio(n_a_not_u, n - n_u),
        "abstention_accuracy": _ratio(n_au + (n - n_u - n_a_not_u), n),
    }


def abstention_values(pairs: Sequence[tuple[bool, bool]]) -> dict[str, list[float]]:
    """Each abstention rate as the mean of a per-case value over the cases it is a share of, so its
    interval is the bootstrap of that mean over those cases, like every per-case metric's:
    precision = unanswerable over the abstained cases, recall = abstained over the unanswerable
    ones, and their complements. (F1 is no mean of cases: its interval is
    :func:`ragsweep.metrics.stats.abstention_f1_ci`.)"""
    return {
        "abstention_precision": [float(u) for a, u in pairs if a],
        "abstention_recall": [float(a) for a, u in pairs if u],
        "answered_unanswerable_rate": [float(not a) for a, u in pairs if u],
        "abstained_on_answerable_rate": [float(a) for a, u in pairs if not u],
    }


# registered in the order a case's record holds them; ``order`` places them in the reports
_EXTRACTIVE = "the sentence's length, not its correctness, sets the"
registry.register(registry.MetricSpec(ABSTAINED, "answer", 150, lambda c: float(c.abstained), summary=False))
registry.register(
    registry.MetricSpec("abstention_correct", "case", 0, lambda c: float(c.abstained == c.unanswerable), summary=False)
)
registry.register(
    registry.MetricSpec(
        "exact_match",
        "answer",
        110,
        _answerable(lambda c: exact_match(c.text, c.reference, c.language)),
        says_nothing_for={"extractive": "its answer never equals a short reference"},
    )
)
registry.register(
    registry.MetricSpec(
        "token_f1",
        "answer",
        120,
        _answerable(lambda c: token_f1(c.text, c.reference, c.language)),
        says_nothing_for={"extractive": f"{_EXTRACTIVE} F1"},
        headline=6,
    )
)
registry.register(
    registry.MetricSpec(
        "fact_coverage", "answer", 130, _answerable(lambda c: fact_coverage(c.text, c.facts, c.fact_threshold))
    )
)
registry.register(registry.MetricSpec("pathway_strsim", "answer", 140, _pathway_strsim, headline=7))
registry.register(registry.MetricSpec("answer_error", "case", 0, summary=False))  # set above: 1.0 on an error
for _order, _name, _summary, _better in (
    (160, "abstention_precision", True, True),
    (170, "abstention_recall", True, True),
    (180, ABSTENTION_F1, False, True),
    (190, "answered_unanswerable_rate", False, False),
    (200, "abstained_on_answerable_rate", False, False),
):  # over the cases: aggregate_abstention
    registry.register(registry.MetricSpec(_name, "set", _order, summary=_summary, higher_is_better=_better))
