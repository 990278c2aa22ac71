"""No-LLM answer metrics against hand-computed values."""

from __future__ import annotations

import pytest

from ragsweep.answer.base import IDK, Answer
from ragsweep.metrics.answer import (
    aggregate_abstention,
    answer_metrics_for_case,
    exact_match,
    fact_coverage,
    fact_found,
    is_refusal,
    normalize_answer,
    pathway_string_match,
    token_f1,
)


def test_normalize_answer():
    assert normalize_answer("The  Cat, sat on a MAT!") == "cat sat on mat"
    assert normalize_answer("") == ""


def test_exact_match():
    assert exact_match("The Cat sat!", "cat sat") == 1.0
    assert exact_match("cat sat down", "cat sat") == 0.0
    assert exact_match("Dog", ["cat", "a dog"]) == 1.0  # max over references
    assert exact_match("anything", None) is None
    assert exact_match("anything", "   ") is None
    assert exact_match("anything", []) is None


def test_token_f1():
    # pred tokens [cat, sat, on, mat], ref [cat, on, hat]: overlap 2, P=1/2, R=2/3, F1=4/7
    assert token_f1("the cat sat on the mat", "a cat on a hat") == pytest.approx(4 / 7)
    assert token_f1("cat cat", "cat") == pytest.approx(2 * 0.5 * 1 / 1.5)  # multiset overlap 1
    assert token_f1("dog", "cat") == 0.0
    assert token_f1("", "cat") == 0.0
    assert token_f1("x", ["y", "x z"]) == pytest.approx(2 / 3)  # P=1, R=1/2
    assert token_f1("x", None) is None


def test_fact_coverage():
    answer = "Effective June 21, 1999 under the laws of California."
    facts = ["June 21 1999", "California", "Orange County court"]
    assert fact_coverage(answer, facts) == pytest.approx(2 / 3)
    assert fact_coverage(answer, []) is None
    assert fact_coverage(answer, None) is None
    assert fact_coverage("", ["California"]) == 0.0
    # one substituted letter in 20 chars: indel ratio 1 - 2/40 = 95 -> found at 90, not at 99
    assert fact_found("non-exclusive licence", "grants a nonexclusive license", threshold=90)
    assert not fact_found("non-exclusive licence", "grants a nonexclusive license", threshold=99)


@pytest.mark.parametrize(
    ("pred", "label", "expected"),
    [
        ("May 8, 2014", "5/8/14", 1.0),  # "%B %d, %Y"
        ("8 May 2014", "5/8/14", 1.0),  # "%d %B %Y"
        ("05 08, 2014", "5/8/14", 1.0),  # "%m %d, %Y"
        ("May 9, 2014", "5/8/14", 0.0),
        ("It was signed on May 8, 2014.", "5/8/14", 0.0),  # the whole prediction must be a date
        ("I don't know.", "no information found", 1.0),
        ("No information is given.", "[]", 1.0),
        ("I don't know.", "California", 0.0),  # ratio("idontknow", "california") is low
        ("State of California", "California", 1.0),  # 2*10/27 = 0.74 > 0.4
        ("abcd", "abxy", 1.0),  # 2*2/8 = 0.5 > 0.4
        ("abcde", "abxyz", 0.0),  # 2*2/10 = 0.4, not > 0.4
        ("ABC-D", "a.b.c.d", 1.0),  # case and non-alphanumerics are ignored
    ],
)
def test_pathway_string_match(pred, label, expected):
    assert pathway_string_match(pred, label) == expected


def test_pathway_string_match_missing_label_and_threshold():
    assert pathway_string_match("x", None) is None
    assert pathway_string_match("abcde", "abxyz", min_sequence_match=0.39) == 1.0


@pytest.mark.parametrize(
    "text",
    [
        IDK,
        "I don’t know",
        "i do not know the answer",
        "I'm not sure.",
        "No information found.",
        "There is no relevant information about the renewal term.",
        "The provided context contains no mention of a non-compete clause.",
        "There is not enough information in the context to answer.",
        "Insufficient context.",
        "The provided context does not mention an expiration date.",
        "The documents do not specify the governing law.",
        "The answer cannot be determined from the given passages.",
        "This is not mentioned in the document.",
        "I cannot find this in the contract.",
        "Unable to determine.",
        "N/A",
        "Unknown",
        "",
        "   ",
    ],
)
def test_refusals(text):
    assert is_refusal(text)


@pytest.mark.parametrize(
    "text",
    [
        "The agreement is governed by the laws of California.",
        "No, the contract has no non-compete clause.",
        "The Licensee cannot assign this Agreement without consent.",
        "June 21, 1999",
        "Yes. Section 8.1 says the term renews unless either party gives notice.",
        "The Company may not disclose information to third parties.",
        "The term is three years; no information on renewal beyond that is needed here.",
        "The Licensee shall give no information to competitors.",
    ],
)
def test_non_refusals(text):
    assert not is_refusal(text)


def test_refusal_only_in_first_window():
    assert not is_refusal("x" * 300 + " I don't know")


def test_case_answerable():
    m = answer_metrics_for_case(Answer(text="California"), "State of California", ["California"], False)
    # F1: pred [california], ref [state, of, california]: P=1, R=1/3 -> 0.5
    assert m == {
        "abstained": 0.0,
        "abstention_correct": 1.0,
        "exact_match": 0.0,
        "token_f1": pytest.approx(0.5),
        "fact_coverage": 1.0,
        "pathway_strsim": 1.0,
        "answer_error": 0.0,
    }


def test_case_abstained_on_answerable():
    m = answer_metrics_for_case(Answer(text=IDK, abstained=True), "State of California", ["California"], False)
    assert m["abstained"] == 1.0 and m["abstention_correct"] == 0.0
    assert m["exact_match"] == 0.0 and m["token_f1"] == 0.0 and m["fact_coverage"] == 0.0
    # an un-flagged textual refusal counts as abstention too
    m = answer_metrics_for_case(Answer(text="No information found."), "California", [], False)
    assert m["abstained"] == 1.0 and m["fact_coverage"] is None


def test_case_unanswerable():
    right = answer_metrics_for_case(Answer(text=IDK, abstained=True), None, [], True)
    assert right["abstained"] == 1.0 and right["abstention_correct"] == 1.0
    assert right["pathway_strsim"] == 1.0
    assert right["exact_match"] is None and right["token_f1"] is None and right["fact_coverage"] is None
    wrong = answer_metrics_for_case(Answer(text="California"), None, [], True)
    # ratio("california", "noinformationfound") = 2*5/28 = 0.357 <= 0.4
    assert wrong["abstained"] == 0.0 and wrong["abstention_correct"] == 0.0 and wrong["pathway_strsim"] == 0.0


def test_case_multiple_references_and_missing_reference():
    m = answer_metrics_for_case(Answer(text="May 8, 2014"), ["5/8/14", "May 8 2014"], [], False)
    assert m["exact_match"] == 1.0 and m["pathway_strsim"] == 1.0
    m = answer_metrics_for_case(Answer(text="x"), None, ["x"], False)
    assert m["exact_match"] is None and m["pathway_strsim"] is None and m["fact_coverage"] == 1.0


def test_case_error_is_missing():
    m = answer_metrics_for_case(Answer(text="", error="timeout"), "California", ["California"], False)
    assert m["answer_error"] == 1.0
    assert all(v is None for k, v in m.items() if k != "answer_error")


def test_aggregate_abstention():
    pairs = [(True, True), (True, False), (False, True), (False, True), (False, False), (False, False)]
    agg = aggregate_abstention(pairs)
    assert agg["n"] == 6 and agg["n_abstained"] == 2 and agg["n_unanswerable"] == 3
    assert agg["n_abstained_unanswerable"] == 1
    assert agg["abstention_precision"] == pytest.approx(1 / 2)
    assert agg["abstention_recall"] == pytest.approx(1 / 3)
    assert agg["abstention_f1"] == pytest.approx(0.4)  # 2*(1/2)(1/3)/(5/6)
    assert agg["answered_unanswerable_rate"] == pytest.approx(2 / 3)
    assert agg["abstained_on_answerable_rate"] == pytest.approx(1 / 3)
    assert agg["abstention_accuracy"] == pytest.approx(3 / 6)


def test_aggregate_abstention_empty_denominators():
    agg = aggregate_abstention([])
    assert agg["n"] == 0
    assert all(agg[k] is None for k in agg if not k.startswith("n"))
    agg = aggregate_abstention([(False, False), (False, False)])
    assert agg["abstention_precision"] is None and agg["abstention_recall"] is None
    assert agg["abstention_f1"] is None
    assert agg["abstained_on_answerable_rate"] == 0.0 and agg["abstention_accuracy"] == 1.0


# ----------------------------------------------------------------------------- expected facts: the matching rule

NFD_CAFE = "cafe\u0301"  # "e" + COMBINING ACUTE ACCENT
NFC_CAFE = "caf\u00e9"  # precomposed "é"


@pytest.mark.parametrize(
    ("fact", "answer"),
    [
        ("30 days", "Either party may terminate on 130 days' notice."),
        ("January 1, 2010", "The term starts on January 1, 2011."),
        ("Section 12.3", "See Section 12.4 of the agreement."),
        ("Section 12", "See Section 12.3 of the agreement."),
        ("$5,000", "The fee is $15,000."),
        ("$5,000", "The fee is $5,000,000."),
        ("$5,000", "The fee is \u20ac5,000."),  # another currency
        ("$5,000", "The Company issues 5,000 shares."),  # not an amount
        ("5%", "within 5 days"),  # not a percentage
        ("5%", "a royalty of 15% of net sales"),
        ("Sponsor", "This Sponsorship Agreement"),
        ("January 1, 2011", "dated 1/1/2012"),
        ("5/8/14", "signed on May 8, 2015"),
        # fuzzy matching is for words only: the numbers of the closest wording must be the fact's
        ("the annual fee of $5,000 is payable in advance", "an anual fee of $15,000 is payable in advance"),
        ("effective June 1, 2010", "effective July 1, 2010"),
    ],
)
def test_fact_wrong_numbers_dates_words_are_not_found(fact, answer):
    assert not fact_found(fact, answer)


@pytest.mark.parametrize(
    ("fact", "answer"),
    [
        ("January 1, 2011", "The term starts on 1/1/2011."),  # one date, two spellings
        ("January 1, 2011", "effective 2011-01-01"),
        ("1 January 2011", "on Jan. 1st, 2011"),
        ("5/8/14", "signed on May 8, 2014"),
        ("$5,000", "a fee of $5000 per year"),
        ("$5,000", "a fee of 5,000 dollars"),
        ("$5,000", "a fee of USD 5,000"),
        ("5%", "five percent (5 percent)"),
        ("30 days", "within thirty (30) days"),
        (NFC_CAFE, f"the {NFD_CAFE} on the corner"),  # NFD vs NFC
        (NFD_CAFE, f"the {NFC_CAFE} on the corner"),
        ("Straße", "STRASSE"),  # casefold: ß = ss
        # fuzzy matching of the words, same number
        ("the annual fee of $5,000 is payable in advance", "an anual fee of $5,000 is payable in advance"),
    ],
)
def test_fact_same_numbers_dates_are_found(fact, answer):
    assert fact_found(fact, answer)


def test_fact_casefold_and_accents_exactly():
    # threshold 100: no fuzzy slack, the normalisation alone must make them equal
    assert fact_found("Hauptstraße", "HAUPTSTRASSE 5, Berlin", threshold=100)
    assert fact_found(f"Le {NFD_CAFE}", f"LE {NFC_CAFE.upper()}", threshold=100)


def test_fact_positive_controls():
    assert fact_found("California", "governed by the laws of CALIFORNIA")  # case
    assert fact_found("Licensor\u2019s \u201cMarks\u201d", 'the Licensor\'s "Marks" are')  # curly quotes
    assert fact_found("two  years", "a term of two\n years.", threshold=100)  # whitespace
    assert fact_found("January 1, 2011", "It commences on January 1, 2011.", threshold=100)  # a correct date
    assert fact_found("Section 12.3", "see section 12.3(a)", threshold=100)
    assert fact_found("2011", "It commences on January 1, 2011.")  # the year of a date
    assert fact_found("Sponsor", "the Sponsor's logo", threshold=100)  # an apostrophe ends the word


def test_fact_coverage_counts_only_right_numbers():
    answer = "The term is 130 days from January 1, 2011; the fee is $15,000 under Section 12.4."
    facts = ["30 days", "January 1, 2010", "$5,000", "Section 12.3", "January 1, 2011"]
    assert fact_coverage(answer, facts) == pytest.approx(1 / 5)
    assert fact_coverage(answer, ["the", "  "]) is None  # nothing left after normalisation


def test_chinese_answers_are_compared_word_by_word():
    from ragsweep.metrics.answer import exact_match, token_f1

    reference = "退货后十四天内退款"
    # without segmentation a Chinese sentence is one token: any difference scores 0
    assert token_f1("退货后十四天内退款给客户", reference) == 0.0
    assert 0.5 < token_f1("退货后十四天内退款给客户", reference, language="zh") < 1.0
    assert exact_match("退货后十四天内退款。", reference, language="zh") == 1.0
