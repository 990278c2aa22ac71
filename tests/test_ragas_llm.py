"""ragas 0.4.3 LLM metrics wired to the fake OpenAI server (instructor JSON mode)."""

from __future__ import annotations

import asyncio
import math

import pytest

from ragsweep.metrics.ragas_llm import (
    ANSWER_CORRECTNESS,
    ANSWER_RELEVANCY,
    CONTEXT_PRECISION,
    CONTEXT_RECALL,
    FAITHFULNESS,
    METRIC_NAMES,
    MetricScore,
    RagasCase,
    RagasLLMScorer,
    applicability,
    estimate_ragas_calls,
)

CONTEXTS = [
    "The agreement is governed by the laws of the State of New York.",
    "The initial term is three years from the Effective Date.",
]
GOOD = RagasCase(
    question="What is the initial term?",
    answer="The initial term is three years from the Effective Date. [2]",
    contexts=CONTEXTS,
    reference="Three years.",
)
REFUSAL_UNANSWERABLE = RagasCase(
    question="Who audits the distributor?", answer="No information found.", contexts=CONTEXTS, reference=""
)
REFUSAL_ANSWERABLE = RagasCase(
    question="What is the initial term?", answer="I don't know.", contexts=CONTEXTS, reference="Three years."
)
MALFORMED = RagasCase(
    question="#malformed What is the term?", answer="Three years.", contexts=CONTEXTS, reference="Three years."
)


def _check(score: MetricScore) -> None:
    assert isinstance(score, MetricScore)
    if score.value is not None:
        assert 0.0 <= score.value <= 1.0 and not math.isnan(score.value)
    else:
        assert score.reason or score.error


def test_all_metrics_on_fake_server_with_minilm(fake_server, llm_settings):
    scorer = RagasLLMScorer(llm_settings)  # embeddings: offline all-MiniLM-L6-v2
    out = scorer.score_batch([GOOD, REFUSAL_UNANSWERABLE, REFUSAL_ANSWERABLE, MALFORMED])
    assert [list(row) for row in out] == [list(METRIC_NAMES)] * 4
    for row in out:
        for score in row.values():
            _check(score)
    good = out[0]
    for name in METRIC_NAMES:
        assert good[name].value is not None, (name, good[name])
    assert good[FAITHFULNESS].value == 1.0  # the fake supports every statement
    assert good[CONTEXT_RECALL].value == 1.0
    assert good[CONTEXT_PRECISION].value == pytest.approx(1.0)
    assert good[ANSWER_RELEVANCY].value > 0.3

    unans = out[1]
    assert unans[FAITHFULNESS].value is None and "refusal" in unans[FAITHFULNESS].reason
    assert unans[ANSWER_RELEVANCY].value is None
    assert all(
        unans[n].value is None and "no reference" in unans[n].reason
        for n in (ANSWER_CORRECTNESS, CONTEXT_PRECISION, CONTEXT_RECALL)
    )

    refused = out[2]
    assert refused[FAITHFULNESS].value is None
    assert refused[ANSWER_CORRECTNESS].value == 0.0
    assert refused[CONTEXT_RECALL].value is not None  # does not depend on the answer

    bad = out[3]  # the question carries #malformed: prompts containing it get a non-JSON body
    for name in (FAITHFULNESS, ANSWER_CORRECTNESS, CONTEXT_PRECISION, CONTEXT_RECALL):
        assert bad[name].value is None and bad[name].error and "malformed" in bad[name].error

    # a second run is served from the cache except for the failed calls (never cached)
    calls = fake_server.requests
    malformed_calls = sum(1 for _, b in fake_server.log if "#malformed" in str(b))
    again = RagasLLMScorer(llm_settings).score_batch([GOOD, REFUSAL_UNANSWERABLE])
    assert fake_server.requests == calls
    assert again[0] == good
    assert malformed_calls > 0


def test_endpoint_embeddings_and_one_case(fake_server, llm_settings):
    s = llm_settings.with_updates(embeddings="endpoint", embedding_model="fake-emb")
    row = RagasLLMScorer(s, metrics=[ANSWER_RELEVANCY]).score(
        GOOD.question, GOOD.answer, GOOD.contexts, reference=GOOD.reference
    )
    assert list(row) == [ANSWER_RELEVANCY] and row[ANSWER_RELEVANCY].value is not None
    assert any(path.endswith("/embeddings") for path, _ in fake_server.log)


def test_applicability_rules():
    failed = RagasCase(question="q", answer="", contexts=CONTEXTS, reference="r", answer_error="timeout")
    assert all(applicability(failed, n).reason for n in METRIC_NAMES)
    no_ctx = RagasCase(question="q", answer="An answer.", contexts=[], reference="r")
    assert applicability(no_ctx, FAITHFULNESS).reason.endswith("no retrieved contexts")
    assert applicability(no_ctx, CONTEXT_RECALL).value is None
    assert applicability(GOOD, FAITHFULNESS) is None
    flagged = GOOD.model_copy(update={"abstained": True})
    assert applicability(flagged, FAITHFULNESS).value is None


def test_nan_and_exceptions_become_recorded_none(llm_settings):
    class Stub:
        def __init__(self, value=None, exc=None):
            self.value, self.exc = value, exc

        async def ascore(self, **kwargs):
            if self.exc:
                raise self.exc
            return type("R", (), {"value": self.value})()

    scorer = RagasLLMScorer(llm_settings, metrics=[FAITHFULNESS])

    async def run(stub):
        return await scorer._one(
            lambda case: stub.ascore(question=case.question), FAITHFULNESS, GOOD, asyncio.Semaphore(1)
        )

    nan = asyncio.run(run(Stub(value=float("nan"))))
    assert nan.value is None and "NaN" in nan.reason
    boom = asyncio.run(run(Stub(exc=RuntimeError("ragas exploded"))))
    assert boom.value is None and "ragas exploded" in boom.error
    assert asyncio.run(run(Stub(value=0.25))).value == 0.25


def test_unknown_metric_rejected(llm_settings):
    with pytest.raises(ValueError):
        RagasLLMScorer(llm_settings, metrics=["bleu"])


def test_estimate_without_calls(fake_server, llm_settings):
    cases = [(GOOD.question, GOOD.contexts, GOOD.reference), ("Who audits?", GOOD.contexts, "")]
    est = estimate_ragas_calls(cases, llm_settings)
    # GOOD: faithfulness 2 + correctness 3 + precision 2 (contexts) + recall 1 + relevancy 1 (cached repeats)
    # unanswerable: faithfulness 2 + relevancy 1
    assert est.calls == 9 + 3
    assert est.prompt_tokens > 1000 and est.cost_usd > 0
    assert fake_server.requests == 0
