"""The rule behind datasets/cuad-judge-reference: decides only unambiguous answers."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from ragsweep.answer.base import Answer
from ragsweep.datasets.rule_verdicts import (
    dates_in,
    label_records,
    periods_in,
    places_in,
    rule_verdict,
    select_cases,
)
from support import ROOT


def test_dates_in_written_and_numeric_forms():
    text = "made on the 24th day of March, 2006, effective 4/1/06 (ISO 2006-03-24; also Mar. 24 2006)"
    assert dates_in(text) == {dt.date(2006, 3, 24), dt.date(2006, 4, 1)}
    assert dates_in("1/10/00") == {dt.date(2000, 1, 10)} and dates_in("6/21/99") == {dt.date(1999, 6, 21)}
    assert dates_in("March 2006") == set()  # no day: not a full date


def test_places_longest_first_and_aliases():
    assert places_in("the laws of the State of New York") == {"new york"}
    assert places_in("West Virginia") == {"west virginia"}
    assert places_in("England and Wales, UK") == {"england"} == places_in("the United Kingdom")
    assert places_in("People's Republic of China") == {"china"} == places_in("the PRC")
    assert places_in("a New England company") == set()
    assert places_in("the laws of the State of New York, USA") == {"new york"}  # the state's country
    assert places_in("the laws of the United States of America") == {"united states"}


def test_periods_as_days():
    assert periods_in("sixty (60) days") == [60.0]
    assert periods_in("successive twelve (12) month periods") == pytest.approx([365.25])
    assert periods_in("one (1) year") == pytest.approx([365.25])  # the same period as 12 months
    assert periods_in("0.5 year") == pytest.approx([182.625]) and periods_in("a 30-day period") == [30.0]
    assert periods_in("an additional period of half a year") == pytest.approx([182.625])  # not "a year"
    assert periods_in("a half-year term") == pytest.approx([182.625])


@pytest.mark.parametrize(
    "kind,answer,reference,expected",
    [
        ("date", "The contract is dated March 24, 2006.", "3/24/06", True),
        ("date", "April 1, 2006", "3/24/06", False),
        ("date", "dated March 24, 2006, effective April 1, 2006", "3/24/06", None),  # reference among others
        ("date", "The date is not stated.", "3/24/06", None),  # no date: undecided
        ("date", "March 24, 2006", "[]/[]/2020", None),  # the label itself is not a full date
        ("place", "The laws of the State of New York govern.", "New York", True),
        ("place", "Delaware law.", "New York", False),
        ("place", "New York law; XYZ is a Delaware corporation", "New York", None),
        ("place", "the laws of England", "England and Wales, UK", True),
        ("period", "renews for successive twelve (12) month periods", "successive 1 year", True),
        ("period", "ninety (90) days' notice", "30 days", False),
        ("period", "after the initial 3 years, 1 year renewals", "successive 1 year", None),
        ("period", "it renews automatically", "successive 1 year", None),
        # a real answer of the local model: the renewal period and a notice period -> undecided
        (
            "period",
            "automatic extensions for an additional period of half a year unless either party provides "
            "written notification at least 60 days prior to end of such period",
            "0.5 year",
            None,
        ),
        ("period", "extended for periods of one (1) calendar year each", "successive 1 year", True),
    ],
)
def test_rule_verdict(kind, answer, reference, expected):
    assert rule_verdict(kind, answer, reference) is expected


def test_select_and_label_keep_only_decided_answers():
    rows = [json.loads(line) for line in (ROOT / "datasets" / "cuad" / "cases.jsonl").read_text().splitlines()]
    chosen = select_cases(rows, per_category=2)
    assert len(chosen) == 10 and {r["type"] for r in chosen} == {
        "Agreement Date",
        "Effective Date",
        "Governing Law",
        "Renewal Term",
        "Notice Period to Terminate Renewal",
    }
    law = next(r for r in chosen if r["type"] == "Governing Law")
    date = next(r for r in chosen if r["type"] == "Agreement Date")
    answers = {
        law["id"]: Answer(text=f"The laws of {law['reference_answer']} govern. [1]", abstained=False),
        date["id"]: Answer(text="I don't know.", abstained=True),
    }
    labelled, counts = label_records([law, date], answers, "test-model")
    assert counts == {"cases": 2, "no_answer": 0, "refusal": 1, "undecided": 0, "correct": 1, "wrong": 0}
    rv = labelled[0]["reference_verdict"]
    assert rv["is_correct"] is True and rv["source"].startswith("rule:place-match") and "not a human" in rv["note"]
    from ragsweep.datasets.schema import Case

    Case(**{k: v for k, v in labelled[0].items()})  # a valid case with its reference verdict


def test_shipped_reference_set_is_the_rule_applied_to_its_answers():
    from ragsweep.datasets.loader import load_dataset
    from ragsweep.datasets.rule_verdicts import CATEGORIES

    ds = load_dataset(ROOT / "datasets" / "cuad-judge-reference")
    assert len(ds.cases) == 9
    for case in ds.cases:
        rv = case.reference_verdict
        kind = CATEGORIES[case.type]
        assert rv.source.startswith(f"rule:{kind}-match") and "not a human" in rv.note
        assert rule_verdict(kind, rv.answer, case.reference_answer) is rv.is_correct
    assert sorted(c.reference_verdict.is_correct for c in ds.cases) == [False] + [True] * 8


def test_label_reads_a_run_folder(tmp_path):
    from ragsweep.commands.rule_verdicts import main as _main
    from ragsweep.evaluation.records import CaseResult, RunResult

    rows = [json.loads(line) for line in (ROOT / "datasets" / "cuad" / "cases.jsonl").read_text().splitlines()]
    law = next(r for r in select_cases(rows) if r["type"] == "Governing Law")
    (tmp_path / "cases.jsonl").write_text(json.dumps(law) + "\n")
    run = tmp_path / "run"
    run.mkdir()
    answer = Answer(text=f"The laws of {law['reference_answer']} govern. [1]", answerer="llm:m")
    line = CaseResult(id=law["id"], question=law["question"], top_k=1, answer=answer).line()
    (run / "cases.jsonl").write_text(json.dumps(line) + "\n")
    report = RunResult(top_k=1, manifest={"llm": {"model": "judge-model-x", "api_key_set": True}}).report_json()
    (run / "report.json").write_text(json.dumps(report))
    out = tmp_path / "labelled.jsonl"
    assert _main(["label", "--cases", str(tmp_path / "cases.jsonl"), "--run", str(run), "--out", str(out)]) == 0
    (labelled,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert labelled["reference_verdict"]["is_correct"] is True
    assert labelled["reference_verdict"]["note"].startswith("answer by judge-model-x;")
