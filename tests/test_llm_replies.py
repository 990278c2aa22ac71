"""``ragsweep.llm.replies``: the one reader of JSON out of model replies, on hand-written replies."""

from __future__ import annotations

import pytest

from ragsweep.judge.metric import parse_verdict
from ragsweep.llm.replies import as_bool, as_strings, as_text, as_verdict, first_object, json_objects


@pytest.mark.parametrize(
    "reply, expected",
    [
        ('{"answered": true}', {"answered": True}),
        ('```json\n{"Supported": "yes", "Reason": "quoted"}\n```', {"supported": "yes", "reason": "quoted"}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        (
            'Sure! Here it is:\n{"question": "Who?", "answer": "Ann"}\nHope it helps.',
            {"question": "Who?", "answer": "Ann"},
        ),
        ('{not json} then {"ok": 1} and {"second": 2}', {"ok": 1}),
        ('prose {"x": 1}\n```json\n{"fenced": true}\n```', {"fenced": True}),  # a fenced object first
        ('{"outer": {"inner": 1}}', {"outer": {"inner": 1}}),
    ],
)
def test_first_object(reply, expected):
    assert first_object(reply) == expected


@pytest.mark.parametrize("reply", ["", None, "no object here", "[1, 2]", '{"unclosed": ', "```json\n[]\n```"])
def test_no_object_is_none(reply):
    assert first_object(reply) is None
    assert list(json_objects(reply)) == []


def test_json_objects_yields_every_object_fenced_first_and_nested_after_their_parent():
    reply = 'A {"b": {"c": 1}} d\n```json\n{"e": 2}\n```'
    assert list(json_objects(reply)) == [{"e": 2}, {"b": {"c": 1}}, {"c": 1}, {"e": 2}]


@pytest.mark.parametrize(
    "value, expected",
    [
        (True, True),
        (False, False),
        (1, True),
        (0, False),
        (1.0, True),
        ("true", True),
        ("False", False),
        (" Yes. ", True),
        ("no", False),
        ("y", True),
        ("N", False),
        ("1", True),
        ("0", False),
        (2, None),
        ("maybe", None),
        ("correct", None),  # not a yes/no: only a verdict
        ("incorrect", None),
        (None, None),
        ([], None),
    ],
)
def test_as_bool(value, expected):
    assert as_bool(value) is expected


@pytest.mark.parametrize(
    "value, expected",
    [
        ("correct", True),
        ("Correct.", True),
        ("incorrect", False),  # contains "correct", and is its opposite
        ("INCORRECT", False),
        ("Incorrect!", False),
        ("not correct", False),
        ("Not  Correct.", False),
        ("wrong", False),
        ("right", True),
        ("not true", False),
        (True, True),
        (False, False),
        ("true", True),
        ("false", False),
        ("yes", True),
        ("no", False),
        (1, True),
        (0, False),
        ("not incorrect", None),  # a double negation is no verdict
        ("partially correct", None),
        ("mostly incorrect", None),
        ("correctness unclear", None),
        ("", None),
        (None, None),
    ],
)
def test_as_verdict(value, expected):
    assert as_verdict(value) is expected


@pytest.mark.parametrize(
    "reply, expected",
    [
        ('{"is_correct": "incorrect", "reason": "wrong year"}', (False, "wrong year")),
        ('{"verdict": "Incorrect"}', (False, "")),
        ('{"verdict": "correct", "explanation": "same"}', (True, "same")),
        ('{"is_correct": "not correct", "reason": "r"}', (False, "r")),
        ('```json\n{"correct": false}\n```', (False, "")),
        (
            'Here is my verdict:\n```json\n{"is_correct": true, "reason": "same party"}\n```\nDone.',
            (True, "same party"),
        ),
        ('The answer is right. {"is_correct": "false", "reason": "x"} ', (False, "x")),
        ('{"meta": {"model": "m"}, "is_correct": "True"}', (True, "")),
        ('{"reason": "first object has no verdict"} {"is_correct": "yes"}', (True, "")),
        ('{"result": {"is_correct": false, "reason": "nested"}}', (False, "nested")),
        ('"is_correct": false', (False, "")),
        ("IS_CORRECT = True", (True, "")),
    ],
)
def test_the_judge_reads_its_verdict_through_the_shared_parser(reply, expected):
    assert parse_verdict(reply) == expected


@pytest.mark.parametrize(
    "reply",
    [
        '{"is_correct": "partially correct"}',
        '{"is_correct": "not incorrect"}',
        "The answer is incorrect.",  # prose, no object: no guess
        "is_correct: falsehood",
    ],
)
def test_the_judge_refuses_what_is_no_verdict(reply):
    with pytest.raises(ValueError, match="no is_correct verdict"):
        parse_verdict(reply)


def test_as_text_and_as_strings():
    assert (
        as_text("  two\n words ") == "two words" and as_text(3) == "3" and as_text(True) == "" and as_text(None) == ""
    )
    assert as_strings("one") == ["one"]
    assert as_strings([" a ", "a", {"quote": "b"}, {"text": "c"}, 4, "", None]) == ["a", "b", "c"]
    assert as_strings({"quote": "x"}) == [] and as_strings(None) == []


def test_read_object_reads_each_field_with_its_reader():
    from pydantic import BaseModel

    from ragsweep.llm.replies import Flag, Strings, Text, read_object

    class Reply(BaseModel):
        verdict: Flag = None
        reason: Text = ""
        quotes: Strings = []

    got = read_object(
        '```json\n{"Verdict": "Yes.", "reason": " two\\n words ", "quotes": ["a", {"quote": "b"}, 3]}\n```', Reply
    )
    assert got == Reply(verdict=True, reason="two words", quotes=["a", "b"])
    assert read_object('{"verdict": "maybe", "reason": ["x"], "quotes": 7}', Reply) == Reply()  # unreadable: defaults
    assert read_object('{"other": 1}', Reply) == Reply() and read_object("no object", Reply) is None
