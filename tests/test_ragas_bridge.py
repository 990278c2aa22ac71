"""The ragas bridge returns exactly what ragas computes, and None for missing inputs."""

from __future__ import annotations

import asyncio

import pytest

from ragsweep.core.offline import ensure_offline

ensure_offline()

from ragsweep.metrics.ragas_bridge import (  # noqa: E402
    METRIC_NAMES,
    RagasRow,
    ragas_nonllm_ascores,
    ragas_nonllm_scores,
    ragas_nonllm_scores_batch,
)

LAW = "This Agreement will be governed by the laws of the State of California."
TERM = "The term of this Agreement shall continue for one (1) year following the Launch Date."
NOISE = "zzzz qqqq xxxx"
QUESTION = "Which law governs the contract?"
ANSWER = "The contract is governed by California law."
REFERENCE = "The laws of the State of California govern the agreement."


def test_hand_computed_context_metrics():
    out = ragas_nonllm_scores(QUESTION, ANSWER, [LAW, NOISE, LAW], REFERENCE, [LAW, TERM])
    assert set(out) == set(METRIC_NAMES)
    # LAW is an exact match (similarity 1 >= 0.5), NOISE is not: verdicts [1, 0, 1]
    # AP = (1/1 + 2/3) / (2 + 1e-10)
    assert out["ragas_context_precision"] == pytest.approx((1 + 2 / 3) / 2)
    # LAW is retrieved, TERM is not (its best similarity is < 0.5): 1/2
    assert out["ragas_context_recall"] == pytest.approx(0.5)
    # identical strings
    same = ragas_nonllm_scores(QUESTION, REFERENCE, [LAW], REFERENCE, [LAW])
    assert same["ragas_string_similarity"] == pytest.approx(1.0)
    assert same["ragas_rouge"] == pytest.approx(1.0)


def test_matches_ragas_directly():
    from ragas.dataset_schema import SingleTurnSample
    from ragas.metrics._context_precision import NonLLMContextPrecisionWithReference
    from ragas.metrics._context_recall import NonLLMContextRecall
    from ragas.metrics.collections import BleuScore, NonLLMStringSimilarity, RougeScore

    retrieved = [TERM, "This Agreement is governed by California law.", NOISE]
    refs = [LAW]
    out = ragas_nonllm_scores(QUESTION, ANSWER, retrieved, REFERENCE, refs)
    sample = SingleTurnSample(retrieved_contexts=retrieved, reference_contexts=refs)
    assert out["ragas_context_precision"] == NonLLMContextPrecisionWithReference().single_turn_score(sample)
    assert out["ragas_context_recall"] == NonLLMContextRecall().single_turn_score(sample)
    assert out["ragas_string_similarity"] == NonLLMStringSimilarity().score(reference=REFERENCE, response=ANSWER).value
    assert out["ragas_bleu"] == BleuScore().score(reference=REFERENCE, response=ANSWER).value
    assert out["ragas_rouge"] == RougeScore().score(reference=REFERENCE, response=ANSWER).value
    assert 0.0 < out["ragas_string_similarity"] < 1.0
    assert 0.0 < out["ragas_rouge"] < 1.0


def test_missing_inputs_are_none():
    out = ragas_nonllm_scores(QUESTION, ANSWER, [LAW], None, None)
    assert all(v is None for v in out.values())
    out = ragas_nonllm_scores(QUESTION, None, [LAW], REFERENCE, [LAW])
    assert out["ragas_string_similarity"] is None and out["ragas_bleu"] is None and out["ragas_rouge"] is None
    assert out["ragas_context_recall"] == 1.0
    out = ragas_nonllm_scores(QUESTION, ANSWER, None, "  ", [])
    assert all(v is None for v in out.values())


def test_empty_retrieval_scores_zero():
    out = ragas_nonllm_scores(QUESTION, ANSWER, [], REFERENCE, [LAW])
    assert out["ragas_context_precision"] == 0.0 and out["ragas_context_recall"] == 0.0


def test_batch_and_async_agree_with_single():
    rows = [
        RagasRow(
            question=QUESTION,
            answer=ANSWER,
            retrieved_contexts=[LAW, NOISE],
            reference=REFERENCE,
            reference_contexts=[LAW],
        ),
        RagasRow(question=QUESTION, answer=ANSWER),
    ]
    batch = ragas_nonllm_scores_batch(rows)
    assert batch[0] == ragas_nonllm_scores(QUESTION, ANSWER, [LAW, NOISE], REFERENCE, [LAW])
    assert all(v is None for v in batch[1].values())

    async def inside_loop():
        # the sync form also works from code that already runs an event loop
        return ragas_nonllm_scores(QUESTION, ANSWER, [LAW, NOISE], REFERENCE, [LAW]), await ragas_nonllm_ascores(
            QUESTION, ANSWER, [LAW, NOISE], REFERENCE, [LAW]
        )

    sync_in_loop, async_result = asyncio.run(inside_loop())
    assert sync_in_loop == batch[0] == async_result
