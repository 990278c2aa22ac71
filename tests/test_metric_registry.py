"""The registry is the one list of metric names: the ragas modules and the reports read theirs from it."""

from __future__ import annotations

from ragsweep.metrics import ragas_bridge, ragas_llm, registry


def test_the_ragas_modules_use_the_registrys_lists():
    assert ragas_bridge.METRIC_NAMES is registry.RAGAS_METRICS
    assert ragas_bridge.ANSWER_METRIC_NAMES is registry.RAGAS_ANSWER_METRICS
    assert ragas_bridge.ID_CONTEXT_METRIC_NAMES is registry.RAGAS_ID_CONTEXT_METRICS
    assert ragas_llm.METRIC_NAMES is registry.RAGAS_LLM_METRICS
    assert (
        ragas_llm.FAITHFULNESS,
        ragas_llm.ANSWER_CORRECTNESS,
        ragas_llm.CONTEXT_PRECISION,
        ragas_llm.CONTEXT_RECALL,
        ragas_llm.ANSWER_RELEVANCY,
    ) == (
        "ragas_llm_faithfulness",
        "ragas_llm_answer_correctness",
        "ragas_llm_context_precision",
        "ragas_llm_context_recall",
        "ragas_llm_answer_relevancy",
    )
    assert registry.RAGAS_METRICS == (
        "ragas_context_precision",
        "ragas_context_recall",
        "ragas_string_similarity",
        "ragas_bleu",
        "ragas_rouge",
    )
    assert set(registry.RAGAS_ANSWER_METRICS) <= set(registry.RAGAS_METRICS)


def test_curve_families_are_at_k_families_in_their_order():
    assert registry.curve_families() == ("hit_rate", "recall", "precision", "ndcg", "map")
    assert [f for f in registry.at_k_families() if f in registry.curve_families()] == list(registry.curve_families())


def test_the_summary_rows_at_a_depth():
    assert registry.summary_metrics(5) == [
        "hit_rate@5",
        "recall@5",
        "precision@5",
        "mrr@5",
        "ndcg@5",
        "map@5",
        "first_relevant_rank_mean",
        "first_relevant_rank_median",
        "citation_precision",
        "exact_match",
        "token_f1",
        "fact_coverage",
        "pathway_strsim",
        "abstention_precision",
        "abstention_recall",
        "judge_correct",
        "ragas_id_context_precision",
        "ragas_id_context_recall",
        "ragas_rouge",
        "ragas_llm_faithfulness",
        "ragas_llm_answer_correctness",
        "ragas_llm_context_precision",
        "ragas_llm_context_recall",
        "ragas_llm_answer_relevancy",
    ]
    assert len(set(registry.summary_metrics(5))) == len(registry.summary_metrics(5))
    assert all(registry.spec(name).family != "other" for name in registry.summary_metrics(3))


def test_spec_of_a_plain_name_and_of_a_depth():
    plain = registry.spec("token_f1")
    assert (plain.family, plain.base, plain.k, plain.higher_is_better) == ("answer", "token_f1", None, True)
    assert registry.spec("first_relevant_rank").higher_is_better is False
    at_k = registry.spec("recall@5")
    assert (at_k.family, at_k.base, at_k.k) == ("retrieval", "recall", 5)
    assert registry.spec("ndcg@k").k is None
