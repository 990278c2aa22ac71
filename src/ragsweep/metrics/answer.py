"""Answer-quality metrics that need no LLM.

Every per-case metric returns a float, or ``None`` when it cannot be computed (for
example no reference answer). Callers count ``None`` as *missing*; never turn it into
NaN and average it.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from difflib import SequenceMatcher

from ragsweep.answer.base import Answer

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


def exact_match(prediction: str, reference: str | Sequence[str] | None) -> float | None:
    """SQuAD exact match.

    ``EM = max_r 1[normalize(prediction) == normalize(r)]`` over the reference(s).
    ``None`` when there is no (non-blank) reference.
    """
    refs = _references(reference)
    if refs is None:
        return None
    pred = normalize_answer(prediction or "")
    return float(any(pred == normalize_answer(r) for r in refs))


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


def token_f1(prediction: str, reference: str | Sequence[str] | None) -> float | None:
    """SQuAD token F1.

    With P = normalized prediction tokens and R = normalized reference tokens (bags),
    ``overlap = |P ∩ R|`` (multiset), ``precision = overlap/|P|``, ``recall = overlap/|R|``,
    ``F1 = 2·precision·recall/(precision+recall)`` (0 if overlap is 0; if either side is
    empty, 1 when both are empty else 0). Max over references. ``None`` without a reference.
    """
    refs = _references(reference)
    if refs is None:
        return None
    pred_tokens = normalize_answer(prediction or "").split()
    return max(_f1(pred_tokens, normalize_answer(r).split()) for r in refs)


# ----------------------------------------------------------------------------- facts

DEFAULT_FACT_THRESHOLD = 90.0


def fact_found(fact: str, answer: str, threshold: float = DEFAULT_FACT_THRESHOLD) -> bool:
    """A fact is found when its normalised form occurs in the normalised answer, or when
    ``rapidfuzz.fuzz.partial_ratio(fact, answer) >= threshold`` (0..100) on normalised text."""
    from rapidfuzz import fuzz

    f = normalize_answer(fact)
    a = normalize_answer(answer)
    if not f:
        return False
    if f in a:
        return True
    if not a:
        return False
    return fuzz.partial_ratio(f, a) >= threshold


def fact_coverage(
    answer: str, expected_facts: Iterable[str] | None, threshold: float = DEFAULT_FACT_THRESHOLD
) -> float | None:
    """Share of expected facts found in the answer.

    ``coverage = |{f in facts : fact_found(f, answer)}| / |facts|`` (blank facts ignored).
    ``None`` when there are no facts.
    """
    facts = [f for f in (expected_facts or []) if f and normalize_answer(f)]
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


# ----------------------------------------------------------------------------- refusals

_REFUSAL_PATTERNS = [
    r"\bi\s+(?:do\s*n[o']?t|don't|dont|cannot|can't|can\s+not)\s+know\b",
    r"\bi\s*(?:am|'m)\s+(?:not\s+(?:sure|certain|able)|unable|unsure)\b",
    r"\b(?:i|we)\s+(?:cannot|can't|can\s+not|could\s*n[o']?t|am\s+unable\s+to|are\s+unable\s+to)\s+"
    r"(?:find|answer|determine|tell|say|provide|locate|identify|confirm)\b",
    r"\b(?:cannot|can't|can\s+not|could\s*not|unable\s+to)\s+(?:be\s+)?"
    r"(?:answer(?:ed)?|determin(?:e|ed)|found|find|identif(?:y|ied)|locate[d]?|confirm(?:ed)?)\b",
    # "no information" opens the reply ("No information found", "There is no relevant context")
    # or is what the sources hold ("the context contains no mention"); inside a substantive
    # answer ("...; no information on renewal is needed") it is not a refusal
    r"^\s*(?:sorry[,.]?\s*)?(?:there\s+(?:is|are|was)\s+|i\s+(?:found|have|see)\s+)?"
    r"no\s+(?:relevant\s+|such\s+|specific\s+|sufficient\s+|enough\s+)?"
    r"(?:information|info|answer|context|evidence|mention)\b",
    r"\b(?:contains?|includes?)\s+no\s+(?:relevant\s+|such\s+|specific\s+)?"
    r"(?:information|info|answer|evidence|mention)\b",
    r"\bmakes?\s+no\s+mention\b",
    r"\b(?:not|in)\s*(?:enough|sufficient)\s+(?:information|context|data|evidence|details)\b",
    r"\binsufficient\s+(?:information|context|data|evidence|details)\b",
    r"\b(?:the\s+)?(?:provided\s+|given\s+|available\s+|retrieved\s+)?"
    r"(?:context|contexts|documents?|passages?|excerpts?|sources?|texts?|information|snippets?|chunks?)\s+"
    r"(?:provided\s+|given\s+|available\s+)?"
    r"(?:does|do|did)\s*(?:n[o']?t|not)\s+"
    r"(?:contain|include|provide|mention|specify|state|say|give|address|discuss|answer|indicate)\b",
    r"\b(?:is|are|was|were)\s+not\s+(?:mentioned|specified|stated|provided|available|given|found|"
    r"included|indicated|addressed|disclosed)\s+(?:in|within)\s+(?:the\s+)?"
    r"(?:provided\s+|given\s+)?(?:context|documents?|passages?|text|excerpts?|sources?|information)\b",
    r"^\s*(?:unknown|n/?a|none|not\s+available|unanswerable|no\s+answer|not\s+found)\s*[.!]?\s*$",
    r"\bunable\s+to\s+(?:answer|determine|find|provide|locate|identify)\b",
    r"\bthere\s+is\s+no\s+(?:way\s+to\s+(?:know|tell|determine))\b",
]
_REFUSAL_RE = re.compile("|".join(f"(?:{p})" for p in _REFUSAL_PATTERNS), re.IGNORECASE)
REFUSAL_WINDOW = 200


def is_refusal(text: str | None) -> bool:
    """Whether the answer is an "I don't know"-style refusal.

    True for empty/blank text, or when any refusal pattern (``I don't know``, ``no
    information``, ``not enough context``, ``cannot be determined``, ``the context does not
    mention``, ``not specified in the document``, a bare ``N/A``/``unknown``, ...) matches in
    the first ``REFUSAL_WINDOW`` (200) characters. Curly apostrophes are normalised. A
    substantive negative answer ("No, the contract has no non-compete clause") is not a
    refusal.
    """
    if text is None:
        return True
    t = text.replace("’", "'").replace("‘", "'").strip()
    if not t:
        return True
    return bool(_REFUSAL_RE.search(t[:REFUSAL_WINDOW]))


# ----------------------------------------------------------------------------- per case


def answer_metrics_for_case(
    answer: Answer,
    reference_answer: str | Sequence[str] | None,
    expected_facts: Sequence[str] | None,
    unanswerable: bool,
    *,
    fact_threshold: float = DEFAULT_FACT_THRESHOLD,
    pathway_min_sequence_match: float = PATHWAY_MIN_SEQUENCE_MATCH,
) -> dict[str, float | None]:
    """All no-LLM answer metrics for one case.

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
    keys = ("abstained", "abstention_correct", "exact_match", "token_f1", "fact_coverage", "pathway_strsim")
    if answer.error:
        out: dict[str, float | None] = dict.fromkeys(keys)
        out["answer_error"] = 1.0
        return out
    abstained = bool(answer.abstained) or is_refusal(answer.text)
    text = "" if abstained else answer.text
    out = {
        "abstained": float(abstained),
        "abstention_correct": float(abstained == bool(unanswerable)),
        "exact_match": None,
        "token_f1": None,
        "fact_coverage": None,
        "pathway_strsim": None,
        "answer_error": 0.0,
    }
    if unanswerable:
        out["pathway_strsim"] = pathway_string_match(
            answer.text, PATHWAY_MISSING_LABELS[0], pathway_min_sequence_match
        )
        return out
    out["exact_match"] = exact_match(text, reference_answer)
    out["token_f1"] = token_f1(text, reference_answer)
    out["fact_coverage"] = fact_coverage(text, expected_facts, fact_threshold)
    if isinstance(reference_answer, str):
        out["pathway_strsim"] = pathway_string_match(answer.text, reference_answer, pathway_min_sequence_match)
    elif reference_answer:
        scores = [pathway_string_match(answer.text, r, pathway_min_sequence_match) for r in reference_answer if r]
        out["pathway_strsim"] = max((s for s in scores if s is not None), default=None)
    return out


# ----------------------------------------------------------------------------- over cases


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
        "abstention_f1": f1,
        "answered_unanswerable_rate": _ratio(n_u - n_au, n_u),
        "abstained_on_answerable_rate": _ratio(n_a_not_u, n - n_u),
        "abstention_accuracy": _ratio(n_au + (n - n_u - n_a_not_u), n),
    }
