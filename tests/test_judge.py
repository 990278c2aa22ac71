"""LLM judge: robust parsing, the deterministic "I don't know" rule, failures recorded."""

from __future__ import annotations

import pytest

from ragsweep.judge.metric import (
    JUDGE_SYSTEM_PROMPT,
    JudgeItem,
    LLMJudge,
    estimate_judge_calls,
    judge_messages,
    parse_verdict,
    rule_verdict,
)


@pytest.mark.parametrize(
    "reply,expected",
    [
        ('{"is_correct": true, "reason": "same date"}', (True, "same date")),
        ('```json\n{"reason": "different party", "is_correct": false}\n```', (False, "different party")),
        ('Sure! Here it is: {"is_correct": "yes", "reason": "ok"} Hope it helps.', (True, "ok")),
        ('{"Is_Correct": "False", "Reason": "no"}', (False, "no")),
        ('{"is_correct": 1}', (True, "")),
        ("is_correct: false", (False, "")),
    ],
)
def test_parse_verdict(reply, expected):
    assert parse_verdict(reply) == expected


@pytest.mark.parametrize("reply", ["The prediction looks right.", '{"reason": "x"}', '{"is_correct": "maybe"}', ""])
def test_parse_verdict_rejects(reply):
    with pytest.raises(ValueError):
        parse_verdict(reply)


def test_prompt_is_pathways_judge():
    assert "differences in wording, date format or the verbosity" in JUDGE_SYSTEM_PROMPT.lower()
    m = judge_messages(JudgeItem(question="When?", answer="1st of January 2021", reference="01/01/2021"))
    assert m[0]["role"] == "system" and m[1]["content"].endswith("Prediction: 1st of January 2021\nLabel: 01/01/2021")


def test_idk_rule_is_deterministic():
    unans = dict(question="Who audits?", reference="", unanswerable=True)
    assert rule_verdict(JudgeItem(answer="I don't know.", **unans)).is_correct is True
    assert rule_verdict(JudgeItem(answer="No information found.", **unans)).is_correct is True
    assert rule_verdict(JudgeItem(answer="Deloitte audits.", **unans)).is_correct is False
    # the answerer's own flag wins over the text
    assert rule_verdict(JudgeItem(answer="Deloitte audits.", abstained=True, **unans)).is_correct is True
    ans = dict(question="Which law?", reference="New York", unanswerable=False)
    v = rule_verdict(JudgeItem(answer="I don't know", **ans))
    assert v.is_correct is False and v.method == "rule"
    assert rule_verdict(JudgeItem(answer="New York law", **ans)) is None  # the LLM decides
    assert rule_verdict(JudgeItem(answer="", answer_error="timeout", **ans)).is_correct is None


def test_judge_on_fake_server(fake_server, llm_settings):
    judge = LLMJudge(llm_settings)
    items = [
        JudgeItem(question="Which law?", answer="The laws of New York govern [1].", reference="New York"),
        JudgeItem(question="Which law?", answer="Delaware law governs.", reference="New York"),
        JudgeItem(question="Who audits?", answer="No information found.", reference="", unanswerable=True),
        JudgeItem(question="Who audits?", answer="Deloitte.", reference="", unanswerable=True),
        JudgeItem(question="Which law?", answer="I don't know.", reference="New York"),
        JudgeItem(question="#noprose Which law?", answer="New York.", reference="New York"),
        JudgeItem(question="#malformed Which law?", answer="New York.", reference="New York"),
        JudgeItem(question="Which law?", answer="", reference="New York", answer_error="timeout"),
    ]
    v = judge.judge_items(items)
    assert [x.is_correct for x in v] == [True, False, True, False, False, None, None, None]
    assert [x.method for x in v] == ["llm", "llm", "rule", "rule", "rule", "llm", "llm", "skipped"]
    assert v[0].reason and v[0].prompt_tokens > 0
    assert v[5].error.startswith("unparsable judge reply") and "Well, I think" in v[5].raw
    assert v[5].failure == "unparsable" and "asked again" in v[5].error  # repaired once, still prose
    assert v[6].error.startswith("malformed reply") and v[6].failure == "malformed_reply"
    assert fake_server.chat_requests() == 5  # rule cases need no call; the prose reply is asked once more
    body = fake_server.log[0][1]
    assert body["response_format"] == {"type": "json_object"} and body["temperature"] == 0.0
    # second run: cached, no new calls
    again = LLMJudge(llm_settings).judge_items(items[:2])
    assert all(x.cached for x in again) and fake_server.chat_requests() == 5
    # single-call form
    one = judge.judge("Which law?", "New York governs.", reference="New York")
    assert one.is_correct is True


def test_judge_estimate(fake_server, llm_settings):
    est = estimate_judge_calls([("Which law?", "New York", False), ("Who audits?", "", True)], llm_settings)
    assert est.calls == 1 and est.prompt_tokens > 100 and fake_server.requests == 0
