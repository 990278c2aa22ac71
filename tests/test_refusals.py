"""A safety refusal abstains: in the shared detector, in the LLM answerer, in the judge and ragas."""

from __future__ import annotations

import pytest

from ragsweep.answer.base import Answer
from ragsweep.answer.llm import LLMAnswerer, is_safety_refusal
from ragsweep.answer.llm import is_refusal as answerer_refusal
from ragsweep.answer.refusal import is_refusal
from ragsweep.core.hits import Hit
from ragsweep.llm import LLMClient

SAFETY_REFUSALS = [
    "I'm sorry, I can't help with that.",
    "I’m sorry, but I can’t assist with that request.",
    "Sorry, I cannot comply with this request.",
    "I cannot help with that.",
    "I must decline to answer this question.",
    "I won't be able to help with this.",
    "I'm sorry, but I cannot fulfill that request.",
    "I apologize, but I can't provide that.",
    "We cannot assist with this request.",
]
SUBSTANTIVE = [
    "No, the contract has no non-compete clause [1].",
    "The Licensee cannot assign the agreement without consent [2].",
    "The supplier will not assist competitors during the term [3].",
    "The distributor cannot help but renew automatically each year [1].",
    "Sorry is not a party; the parties are Acme Inc. and Beta LLC [1].",
    "The term is five years. [2]",
]


@pytest.mark.parametrize("text", SAFETY_REFUSALS)
def test_safety_refusal_is_a_refusal(text):
    assert is_refusal(text)
    assert answerer_refusal(text)
    assert is_safety_refusal(text)


@pytest.mark.parametrize("text", SUBSTANTIVE)
def test_substantive_answers_are_not_refusals(text):
    assert not is_refusal(text)
    assert not answerer_refusal(text)
    assert not is_safety_refusal(text)


def test_not_found_is_an_abstention_but_not_a_safety_refusal():
    assert is_refusal("No information found.") and not is_safety_refusal("No information found.")


def _hits(text: str) -> list[Hit]:
    return [Hit(rank=1, score=1.0, text=text, doc_id="d.txt", start=0, end=len(text))]


def test_answerer_safety_refusal_in_the_text(fake_server, llm_settings):
    answerer = LLMAnswerer(llm_settings)
    ans = answerer.answer("What is the term? #sorry", _hits("The term is five years."))
    assert ans.error is None
    assert ans.text == "I'm sorry, I can't help with that."
    assert ans.abstained is True
    assert ans.refusal == "I'm sorry, I can't help with that."


def test_answerer_refusal_field(fake_server, llm_settings):
    """OpenAI's refusal shape: ``content: null`` and ``message.refusal`` set -> abstains, no error."""
    answerer = LLMAnswerer(llm_settings)
    ans = answerer.answer("What is the term? #refusal", _hits("The term is five years."))
    assert ans.error is None
    assert ans.abstained is True
    assert ans.refusal == "I'm sorry, but I can't assist with that request."
    assert ans.text == ans.refusal and ans.cited == []
    # a refusal is a reply: cached like any other
    again = answerer.answer("What is the term? #refusal", _hits("The term is five years."))
    assert again.cached and again.abstained and again.refusal == ans.refusal


def test_client_reports_the_refusal(fake_server, llm_settings):
    result = LLMClient(llm_settings).chat([{"role": "user", "content": "Query: q #refusal\nAnswer:"}])
    assert result.ok and result.text == "" and result.refusal.startswith("I'm sorry")
    assert result.completion_tokens > 0


def test_ordinary_answers_carry_no_refusal(fake_server, llm_settings):
    ans = LLMAnswerer(llm_settings).answer("What is the term?", _hits("The term is five years."))
    assert not ans.abstained and ans.refusal is None and ans.text.startswith("The term is five years.")
    nf = LLMAnswerer(llm_settings).answer("What is the term? #unknown", _hits("The term is five years."))
    assert nf.abstained and nf.refusal is None  # "No information found." abstains, it does not refuse


def test_answer_record_keeps_the_reason():
    a = Answer(text="I can't help with that.", abstained=True, refusal="I can't help with that.")
    assert a.model_dump()["refusal"] == "I can't help with that."
    assert Answer(text="x").refusal is None


def test_judge_treats_a_refusal_as_abstaining(fake_server, llm_settings):
    from ragsweep.judge.metric import LLMJudge

    judge = LLMJudge(llm_settings)
    sorry = "I'm sorry, I can't help with that."
    unanswerable = judge.judge("Q?", sorry, reference="", unanswerable=True)
    assert unanswerable.is_correct is True and unanswerable.method == "rule"
    answerable = judge.judge("Q?", sorry, reference="five years")
    assert answerable.is_correct is False and answerable.method == "rule"
    assert fake_server.chat_requests() == 0  # both decided without a call


def test_judge_model_refusing_is_a_recorded_failure(fake_server, llm_settings):
    from ragsweep.judge.metric import LLMJudge

    verdict = LLMJudge(llm_settings).judge("What is it? #refusal", "The term is five years.", reference="five years")
    assert verdict.is_correct is None and "refused" in (verdict.error or "")


def test_ragas_applicability_of_a_safety_refusal():
    from ragsweep.metrics.ragas_llm import ANSWER_CORRECTNESS, FAITHFULNESS, RagasCase, applicability

    case = RagasCase(question="Q?", answer="I'm sorry, I can't help with that.", contexts=["c"], reference="r")
    assert applicability(case, FAITHFULNESS).reason.startswith("not applicable")
    assert applicability(case, ANSWER_CORRECTNESS).value == 0.0
