"""Answer metrics that carry no information for an answerer kind, and why: one table, beside the
registry, that the terminal table and report.html read (they mark such a metric, never drop it
from report.json).

An answerer's kind is its name up to the first ``:`` (``extractive``, ``llm:<model>``,
``app:<kind>``, ``dataset``). The extractive answerer returns whole sentences of the retrieved
chunks, never a short answer: a measure that compares its answer's wording with a short reference
is decided by the sentence's length, not by whether the sentence holds the answer. Expected facts,
Pathway's string rule and the abstention metrics still say something about it.
"""

from __future__ import annotations

# what each kind does that makes the metrics below say nothing
ANSWERER_WAYS: dict[str, str] = {
    "extractive": "it quotes whole sentences of the retrieved chunks, never a short answer",
}
_LENGTH = "the sentence's length, not its correctness, sets the"
UNINFORMATIVE: dict[str, dict[str, str]] = {
    "extractive": {
        "exact_match": "its answer never equals a short reference",
        "token_f1": f"{_LENGTH} F1",
        "ragas_rouge": f"{_LENGTH} ROUGE F-measure",
        "ragas_bleu": f"{_LENGTH} n-gram precision",
        "ragas_string_similarity": f"{_LENGTH} similarity",
    },
}


def answerer_kind(answerer: str | None) -> str:
    """``llm:gpt-4o-mini`` -> ``llm``; ``extractive`` -> ``extractive``; None -> ``""``."""
    return (answerer or "").split(":", 1)[0]


def uninformative(metric: str, answerer: str | None) -> str | None:
    """Why ``metric`` says nothing about the answers of ``answerer`` (None: it does, or it is unknown)."""
    reasons = UNINFORMATIVE[kind] if (kind := answerer_kind(answerer)) in UNINFORMATIVE else {}
    return reasons[metric] if metric in reasons else None


def answerer_way(answerer: str | None) -> str:
    """What ``answerer`` does that leaves its :data:`UNINFORMATIVE` metrics saying nothing ("" if none)."""
    kind = answerer_kind(answerer)
    return ANSWERER_WAYS[kind] if kind in ANSWERER_WAYS else ""
