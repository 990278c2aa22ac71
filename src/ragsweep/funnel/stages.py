"""The stages a case's evidence passes through, in pipeline order, and the rule that says a stage
lost it. A span is attributed to the first stage whose rule holds; a case to the first stage
among its lost spans (``found`` when none is lost)."""

from __future__ import annotations

from collections.abc import Mapping

from ragsweep.metrics.answer import ABSTAINED
from ragsweep.metrics.registry import ANSWER_VERDICTS, FACT_COVERAGE, FAITHFULNESS, JUDGE_CORRECT
from ragsweep.metrics.uninformative import answerer_kind, uninformative

PARSE = "parse"
CHUNKING = "chunking"
ROUTING = "routing"
RETRIEVAL = "retrieval"
RERANK = "rerank"
ANSWER = "answer"
FOUND = "found"

STAGES = (PARSE, CHUNKING, ROUTING, RETRIEVAL, RERANK, ANSWER)


def stage_order(stage: str) -> int:
    """A stage's place in pipeline order; ``found`` comes after every stage."""
    return STAGES.index(stage) if stage in STAGES else len(STAGES)


def earliest(stages: list[str]) -> str:
    """The first stage in pipeline order among ``stages`` (``found`` when empty or all found)."""
    return min(stages, key=stage_order, default=FOUND)


def lost_at_parse(located: bool) -> bool:
    """The span is found in no parsed text of the documents it may come from."""
    return not located


def lost_at_chunking(reachable: bool) -> bool:
    """No chunk among the case's candidates is relevant to the span: no order of them can serve it."""
    return not reachable


def lost_at_routing(doc_routed: bool | None) -> bool:
    """With routing, the span's document is not among the documents routed to the question."""
    return doc_routed is False


def lost_at_retrieval(served_rank: int | None, k: int, pre_rerank_rank: int | None) -> bool:
    """A relevant chunk exists, but none is served within ``k``, and none was before the reranker."""
    within = served_rank is not None and served_rank <= k
    return not within and not (pre_rerank_rank is not None and pre_rerank_rank <= k)


def lost_at_rerank(served_rank: int | None, k: int, pre_rerank_rank: int | None) -> bool:
    """A relevant chunk was within ``k`` before the reranker and none is within ``k`` after it."""
    within = served_rank is not None and served_rank <= k
    return not within and pre_rerank_rank is not None and pre_rerank_rank <= k


def lost_at_answer(correct: bool | None) -> bool:
    """The served context holds the evidence, but the answer is wrong or abstains."""
    return correct is False


# ragsweep's extractive stand-in quotes whole sentences: only a verdict on what a sentence states (the
# judge's, the expected facts') says whether it answered; a similarity to a short reference does not
QUOTES = "extractive"
QUOTED_VERDICTS = (JUDGE_CORRECT, FACT_COVERAGE)


def judges(metric: str, answerer: str | None) -> bool:
    """Whether ``metric`` says if an answer of ``answerer`` is correct."""
    if uninformative(metric, answerer) is not None:
        return False
    return answerer_kind(answerer) != QUOTES or metric in QUOTED_VERDICTS


def answer_verdict(metrics: Mapping[str, float | None], answerer: str | None) -> tuple[str, bool] | None:
    """The rule that judges a case's answer (the judge's verdict, else the first deterministic answer
    metric it has that says something of ``answerer``'s answers) and whether the answer is correct by
    it; None: the answer is not scored."""
    for name, at_least in ANSWER_VERDICTS:
        value = metrics.get(name)
        if value is not None and judges(name, answerer):
            by = "the LLM judge" if name == JUDGE_CORRECT else "deterministic"
            return f"{name}>={at_least:g} ({by})", value >= at_least
    return None


def answer_loss_kind(metrics: Mapping[str, float | None]) -> str:
    """Why an answer with the evidence in its context is lost: it abstained, its claims go beyond the
    context (ragas faithfulness under 0.5), it keeps to the context yet misses the evidence, or wrong
    (no faithfulness score to tell which)."""
    if metrics.get(ABSTAINED):
        return "abstained"
    faithful = metrics.get(FAITHFULNESS)
    if faithful is None:
        return "wrong"
    return "beyond the context" if faithful < 0.5 else "ignored the evidence"
