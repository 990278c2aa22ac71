"""Extractive answers kept on disk: a later process reads back the very answers it would compute, a
changed question, text, order or setting is answered anew, a damaged row is a miss, and the switch
turns it off."""

from __future__ import annotations

import sqlite3

import pytest

from ragsweep.answer import extractive
from ragsweep.answer.extractive import ExtractiveAnswerer
from ragsweep.core.cache_files import _SHARED
from ragsweep.core.hits import Hit

TEXTS = [
    "This Agreement shall be governed by the laws of the State of New York. Notices go to the addresses below.",
    "The term of this Agreement is five (5) years from the Effective Date, renewed for one-year terms.",
    "Either party may terminate this Agreement upon thirty (30) days written notice to the other party.",
]
QUESTIONS = [
    "Which state's law governs the agreement?",
    "How long is the term of the agreement?",
    "What notice is needed to terminate?",
    "Who owns the intellectual property?",  # answered from none of the texts: an abstention is stored too
    "Which state's law governs the agreement?",  # a repeated case in one batch
]


def _hits(texts: list[str]) -> list[Hit]:
    return [Hit(rank=i, score=1.0 / i, text=t, doc_id="c.txt", start=0, end=len(t)) for i, t in enumerate(texts, 1)]


@pytest.fixture
def computed(monkeypatch, tmp_path) -> list[str]:
    """The store in its own folder, each test a fresh process's view of it; the questions really answered."""
    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("RAGSWEEP_SCORED_CACHE", "1")
    asked: list[str] = []
    work = extractive.ExtractiveAnswerer._answer

    def spy(self, question, hits):
        asked.append(question)
        return work(self, question, hits)

    monkeypatch.setattr(extractive.ExtractiveAnswerer, "_answer", spy)
    _forget()
    yield asked
    _forget()


def _forget() -> None:
    """As a new process starts: nothing memoised, no connection open."""
    extractive._answered.cache_clear()
    for table in list(_SHARED.values()):
        table.close()
    _SHARED.clear()


def _batch(answerer: ExtractiveAnswerer, texts: list[str] = TEXTS) -> list:
    return answerer.answer_batch([(q, _hits(texts)) for q in QUESTIONS])


def test_a_later_process_reads_back_the_answers_it_would_compute(computed, tmp_path):
    first = _batch(ExtractiveAnswerer())
    assert len(computed) == len(set(QUESTIONS))
    assert [a.model_dump() for a in first] == [
        ExtractiveAnswerer().answer(q, _hits(TEXTS)).model_dump() for q in QUESTIONS
    ]
    assert not first[0].abstained and first[3].abstained
    assert (tmp_path / "answers.sqlite").exists()

    _forget()
    computed.clear()
    again = _batch(ExtractiveAnswerer())
    assert computed == []
    assert [a.model_dump() for a in again] == [a.model_dump() for a in first]
    assert again[0] is not again[4]  # each case its own answer object


def test_a_changed_setting_text_or_order_is_answered_anew(computed):
    _batch(ExtractiveAnswerer())
    for answerer, texts in (
        (ExtractiveAnswerer(min_score=0.5), TEXTS),
        (ExtractiveAnswerer(), [TEXTS[0].replace("New York", "Delaware"), *TEXTS[1:]]),
        (ExtractiveAnswerer(), TEXTS[::-1]),
        (ExtractiveAnswerer(), [TEXTS[0] + TEXTS[1], TEXTS[2]]),  # the same characters, cut elsewhere
    ):
        _forget()
        computed.clear()
        _batch(answerer, texts)
        assert len(computed) == len(set(QUESTIONS))


def test_a_damaged_row_is_a_miss_and_the_switch_turns_the_store_off(computed, tmp_path, monkeypatch):
    first = _batch(ExtractiveAnswerer())
    _forget()
    with sqlite3.connect(tmp_path / "answers.sqlite") as conn:
        conn.execute("UPDATE answers SET value = x'00ff'")
    computed.clear()
    assert [a.model_dump() for a in _batch(ExtractiveAnswerer())] == [a.model_dump() for a in first]
    assert len(computed) == len(set(QUESTIONS))

    _forget()
    (tmp_path / "answers.sqlite").unlink()
    monkeypatch.setenv("RAGSWEEP_SCORED_CACHE", "0")
    computed.clear()
    assert [a.model_dump() for a in _batch(ExtractiveAnswerer())] == [a.model_dump() for a in first]
    assert len(computed) == len(set(QUESTIONS))
    assert not (tmp_path / "answers.sqlite").exists()
