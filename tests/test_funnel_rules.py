"""The funnel's rules without a run: which rule judges an answer, why a lost answer is lost, what the
served lists tell of routing, and the diagnosis of hand-made case records."""

from __future__ import annotations

from ragsweep.answer.base import Answer
from ragsweep.core.hits import Hit
from ragsweep.evaluation.records import CaseResult
from ragsweep.funnel.attribute import _routed_docs, diagnose
from ragsweep.funnel.stages import (
    STAGES,
    answer_loss_kind,
    answer_verdict,
    earliest,
    lost_at_rerank,
    lost_at_retrieval,
)
from ragsweep.funnel.terminal import funnel_lines
from ragsweep.metrics.registry import FACT_COVERAGE, FAITHFULNESS, JUDGE_CORRECT

F1 = "token_f1"
LLM = "llm:fake-model"


def test_the_judge_comes_first_then_the_deterministic_metrics():
    assert answer_verdict({JUDGE_CORRECT: 0.0, F1: 1.0}, LLM) == ("judge_correct>=0.5 (the LLM judge)", False)
    assert answer_verdict({F1: 0.6}, LLM) == ("token_f1>=0.5 (deterministic)", True)
    assert answer_verdict({F1: None, "exact_match": 0.0}, LLM) == ("exact_match>=1 (deterministic)", False)
    assert answer_verdict({}, LLM) is None


def test_the_extractive_answerer_is_judged_only_on_what_its_sentence_states():
    assert answer_verdict({F1: 0.1, "exact_match": 0.0, "pathway_strsim": 0.0}, "extractive") is None
    assert answer_verdict({F1: 0.1, FACT_COVERAGE: 1.0}, "extractive") == ("fact_coverage>=1 (deterministic)", True)


def test_a_lost_answer_says_why():
    assert answer_loss_kind({"abstained": 1.0, FAITHFULNESS: 0.1}) == "abstained"
    assert answer_loss_kind({FAITHFULNESS: 0.2}) == "beyond the context"
    assert answer_loss_kind({FAITHFULNESS: 0.9}) == "ignored the evidence"
    assert answer_loss_kind({}) == "wrong"


def test_stages_are_taken_in_pipeline_order():
    assert earliest(["answer", "retrieval", "chunking"]) == "chunking"
    assert earliest([]) == "found"
    assert STAGES == ("parse", "chunking", "routing", "retrieval", "rerank", "answer")
    # k = 2: before the reranker at rank 1 and after it at 3 (rerank); at 3 both times (retrieval)
    assert lost_at_rerank(3, 2, 1) and not lost_at_retrieval(3, 2, 1)
    assert lost_at_retrieval(3, 2, 3) and not lost_at_rerank(3, 2, 3)
    assert lost_at_retrieval(None, 2, None) and not lost_at_rerank(None, 2, None)  # no reranker


def _hits(*docs: str) -> list[Hit]:
    return [Hit(rank=i, score=1.0, text="t", doc_id=d, start=0, end=1) for i, d in enumerate(docs, start=1)]


def test_the_routed_documents_are_told_only_where_the_lists_tell_them():
    assert _routed_docs({4: _hits("a", "a", "b", "b")}, route_docs=2) == {"a", "b"}  # as many as routed
    assert _routed_docs({4: _hits("a", "a")}, route_docs=2) is None  # BM25 may leave a routed one out
    assert _routed_docs({4: []}, route_docs=1) is None
    assert _routed_docs({4: _hits("a", "a", "a", "a")}, route_docs=2) is None  # a second one may be unseen
    assert _routed_docs({4: _hits("a", "b", "c", "d")}, route_docs=2) is None  # served unrouted
    assert _routed_docs({4: _hits("a")}, route_docs=None) is None


def _case(i: int, stages: dict[int, str], **fields) -> CaseResult:
    lost = stages.get(5)
    return CaseResult(
        id=f"c{i}", question="q", top_k=5, lost_at_k=stages, lost_at=None if lost in (None, "found") else lost, **fields
    )


def test_the_diagnosis_counts_every_case_once():
    llm = Answer(text="a", answerer=LLM)
    cases = [
        _case(0, {1: "retrieval", 5: "found"}, type="Parties"),
        _case(1, {1: "chunking", 5: "chunking"}, type="Parties"),
        _case(2, {1: "retrieval", 5: "answer"}, answer=llm, metrics={JUDGE_CORRECT: 0.0, FAITHFULNESS: 0.1}),
        _case(3, {1: "retrieval", 5: "answer"}, answer=llm, metrics={JUDGE_CORRECT: 0.0, FAITHFULNESS: 0.8}),
        _case(
            4, {1: "retrieval", 5: "retrieval"}, answer=llm, metrics={JUDGE_CORRECT: 1.0}, correct_without_context=True
        ),
        _case(5, {}, unanswerable=True),
        _case(6, {}),
    ]
    d = diagnose(cases)
    assert d is not None and d.k == 5 and d.cases == 5
    assert (d.found, d.lost) == (1, {"chunking": 1, "retrieval": 1, "answer": 2})
    assert d.by_k[1].found == 0 and d.by_k[1].lost == {"chunking": 1, "retrieval": 4}
    assert d.excluded == {"unanswerable": 1, "no relevance information": 1}
    assert d.groups["type"]["Parties"].model_dump() == {"found": 1, "lost": {"chunking": 1}}
    assert d.answer_rule == "judge_correct>=0.5 (the LLM judge)"
    assert d.answer_kinds == {"beyond the context": 1, "ignored the evidence": 1}
    assert d.correct_without_context == 1
    assert funnel_lines(d) == [
        "lost at k=5: chunking 1 · retrieval 1 · answer 2 of 5 (found 1); not in the funnel: 1 unanswerable, "
        "1 no relevance information; answers judged by judge_correct>=0.5 (the LLM judge) (1 beyond the context, "
        "1 ignored the evidence); 1 answered correctly without relevant context (not a loss)"
    ]
    assert diagnose(cases[5:]) is None and funnel_lines(None) == []


def _chunk(doc: str, start: int, text: str, rank: int = 1) -> Hit:
    return Hit(rank=rank, score=1.0, text=text, doc_id=doc, start=start, end=start + len(text))


def test_graded_documents_are_items_under_the_doc_id_rule():
    """Each relevant document is an item: one served, one with no chunk among the candidates, one
    never parsed; the case is lost at the earliest of their stages."""
    from ragsweep.datasets.schema import Case, RelevanceConfig
    from ragsweep.evaluation.case_scoring import build_case_result

    case = Case(id="q", question="q?", relevant_ids=[{"id": "a.txt", "grade": 2}, {"id": "b.txt", "grade": 1}])
    texts = {"a.txt": "alpha text", "b.txt": "beta text", "c.txt": "gamma text"}
    a, c = _chunk("a.txt", 0, "alpha text"), _chunk("c.txt", 0, "gamma text")
    served = {1: [c], 2: [c.model_copy(update={"rank": 1}), a.model_copy(update={"rank": 2})]}
    rule = RelevanceConfig(rule="doc_id")
    result = build_case_result(case, served, top_k=1, relevance=rule, texts=texts, candidates=[a, c])
    assert result.lost_at_k == {1: "chunking", 2: "chunking"}  # b.txt has no chunk to serve
    assert [(s.doc_id, s.stage) for s in result.loss] == [("a.txt", "retrieval"), ("b.txt", "chunking")]
    assert result.loss[0].rank == 2  # served at the deeper k
    unparsed = build_case_result(
        case, served, top_k=2, relevance=rule, texts={"a.txt": "alpha text"}, candidates=[a, c]
    )
    assert unparsed.lost_at == "parse" and [s.stage for s in unparsed.loss] == ["found", "parse"]


def test_a_span_over_three_chunks_is_lost_at_chunking_under_evidence_offsets():
    """No chunk overlaps the 150-character span by min(100 characters, half of it): no order of the
    candidates can serve it; the loss says how it lies across them."""
    from ragsweep.datasets.schema import Case, RelevanceConfig
    from ragsweep.evaluation.case_scoring import build_case_result

    span = " ".join(f"word{i:02d}" for i in range(25))[:150]
    text = "Intro. " + span + " Outro."
    start = text.index(span)
    chunks = [_chunk("d.txt", 0, text[: start + 50])]
    chunks += [_chunk("d.txt", start + 50 * i, text[start + 50 * i : start + 50 * (i + 1)]) for i in (1, 2)]
    chunks.append(_chunk("d.txt", start + 150, text[start + 150 :]))
    served = {3: [h.model_copy(update={"rank": i}) for i, h in enumerate(chunks[:3], start=1)]}
    case = Case(id="q", question="q?", evidence=[{"text": span, "doc_id": "d.txt"}])
    result = build_case_result(
        case, served, top_k=3, relevance=RelevanceConfig(), texts={"d.txt": text}, candidates=chunks
    )
    assert result.relevance_rule == "evidence_offsets" and result.lost_at == "chunking"
    (loss,) = result.loss
    assert loss.chunks_split == 3 and loss.span_tokens is not None and loss.chunk_tokens is not None
