"""Whether an answer's text is a refusal: the patterns behind ``abstained``.

:func:`is_refusal` is the abstention metrics' notion (:mod:`ragsweep.metrics.answer`) and the
base of the answerer's (:func:`ragsweep.answer.llm.is_refusal`, which adds the reply shapes LLMs
give); it lives with the answers so that the answerers and the metrics share it.
"""

from __future__ import annotations

import re

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
] + [  # safety refusals ("I'm sorry, I can't help with that."): the model declined to answer
    r"\b(?:i|we)\s+(?:cannot|can't|can\s+not|am\s+unable\s+to|are\s+unable\s+to|must\s+decline\s+to)\s+"
    r"(?:help|assist|comply|fulfil|fulfill|engage)\b",
    r"\bi\s+(?:won't|will\s+not)\s+(?:be\s+able\s+to\s+)?(?:help|assist|comply|fulfil|fulfill|answer|provide)\b",
    r"\bi\s+(?:must|have\s+to)\s+(?:respectfully\s+)?(?:decline|refuse)\b",
    r"^\s*(?:sorry|i'm\s+sorry|i\s+am\s+sorry|i\s+apologi[sz]e)\b[^.!?]{0,40}?\b(?:i|we)\s+"
    r"(?:cannot|can't|can\s+not|won't|will\s+not)\b",
    r"^\s*as\s+an\s+ai(?:\s+(?:language\s+)?model|\s+assistant)?\s*,?\s+i\s+(?:cannot|can't|can\s+not|"
    r"am\s+not|'m\s+not|do\s+not|don't|won't)\b",
]
_REFUSAL_RE = re.compile("|".join(f"(?:{p})" for p in _REFUSAL_PATTERNS), re.IGNORECASE)
REFUSAL_WINDOW = 200


def is_refusal(text: str | None) -> bool:
    """Whether the answer is an "I don't know"-style refusal.

    True for empty/blank text, or when any refusal pattern (``I don't know``, ``no
    information``, ``not enough context``, ``cannot be determined``, ``the context does not
    mention``, ``not specified in the document``, a bare ``N/A``/``unknown``, ...) matches in
    the first ``REFUSAL_WINDOW`` (200) characters. Curly apostrophes are normalised. A
    safety refusal ("I'm sorry, I can't help with that.", "I must decline") abstains too.
    A substantive negative answer ("No, the contract has no non-compete clause") is not a
    refusal.
    """
    if text is None:
        return True
    t = text.replace("’", "'").replace("‘", "'").strip()
    if not t:
        return True
    return bool(_REFUSAL_RE.search(t[:REFUSAL_WINDOW]))
