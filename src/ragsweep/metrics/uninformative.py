"""Answer metrics that carry no information for an answerer kind, and why (each metric's record in
:mod:`.registry` names those kinds): what the terminal table and report.html read (they mark such a
metric, never drop it from report.json).

An answerer's kind is its name up to the first ``:`` (``extractive``, ``llm:<model>``,
``app:<kind>``, ``dataset``). The extractive answerer returns whole sentences of the retrieved
chunks, never a short answer: a measure that compares its answer's wording with a short reference
is decided by the sentence's length, not by whether the sentence holds the answer. Expected facts,
Pathway's string rule and the abstention metrics still say something about it.
"""

from __future__ import annotations

from ragsweep.metrics import registry

# what each kind does that makes the metrics its records name say nothing
ANSWERER_WAYS: dict[str, str] = {
    "extractive": "it quotes whole sentences of the retrieved chunks, never a short answer",
}


def answerer_kind(answerer: str | None) -> str:
    """``llm:gpt-4o-mini`` -> ``llm``; ``extractive`` -> ``extractive``; None -> ``""``."""
    return (answerer or "").split(":", 1)[0]


def uninformative(metric: str, answerer: str | None) -> str | None:
    """Why ``metric`` says nothing about the answers of ``answerer`` (None: it does, or it is unknown);
    each metric's record names the answerer kinds it says nothing about."""
    return registry.says_nothing(metric, answerer_kind(answerer))


def answerer_way(answerer: str | None) -> str:
    """What ``answerer`` does that leaves the metrics of its kind saying nothing ("" if none)."""
    kind = answerer_kind(answerer)
    return ANSWERER_WAYS[kind] if kind in ANSWERER_WAYS else ""
