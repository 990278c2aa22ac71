"""LLMAnswerer against the fake OpenAI server: prompt, citations, refusals, failures, cache, dry run."""

from __future__ import annotations

import pytest

from ragsweep.answer.llm import (
    DEFAULT_PROMPT_TEMPLATE,
    LLMAnswerer,
    estimate_answer_calls,
    is_refusal,
    parse_citations,
    render_prompt,
)
from ragsweep.answer.prompt import validate_template
from ragsweep.core.hits import Hit


def _hits(*texts: str) -> list[Hit]:
    return [Hit(rank=i, score=1.0 / i, text=t, doc_id="c.txt", start=0, end=len(t)) for i, t in enumerate(texts, 1)]


HITS = _hits(
    "This Agreement is governed by the laws of the State of New York. Other text.",
    "The initial term is three years from the Effective Date. Renewal follows.",
    "Either party may terminate on ninety days notice.",
)


def test_default_template_is_pathways_prompt_qa():
    from ragsweep.core.offline import ensure_offline

    ensure_offline()
    prompts = pytest.importorskip("pathway.xpacks.llm.prompts")
    from ragsweep.answer.llm import CITATION_RULE

    fn = getattr(prompts.prompt_qa, "__wrapped__", prompts.prompt_qa)
    assert fn("{context}", "{query}", additional_rules=CITATION_RULE) == DEFAULT_PROMPT_TEMPLATE
    assert "No information found." in DEFAULT_PROMPT_TEMPLATE


def test_prompt_numbers_chunks():
    p = render_prompt("What is the term?", HITS)
    assert "[1] This Agreement is governed" in p and "[3] Either party" in p
    assert p.endswith("Query: What is the term?\nAnswer:")


def test_template_validation():
    assert validate_template("C: {context} Q: {query}")
    with pytest.raises(ValueError):
        validate_template("no placeholders")
    with pytest.raises(ValueError):
        validate_template("{context} {query} {other}")


def test_parse_citations():
    assert parse_citations("A [2]. B [1, 3] and [2][4].", 4) == [2, 1, 3, 4]
    assert parse_citations("see [7] and [0]", 3) == []
    assert parse_citations("no cites", 3) == []


@pytest.mark.parametrize(
    "text,refusal",
    [
        ("No information found.", True),
        ("`No information found.`", True),
        ("I don't know.", True),
        ("I don’t know the answer.", True),
        ("The question cannot be inferred from the documents.", True),
        ("", True),
        ("New York law governs [1].", False),
        ("No, the contract has no non-compete clause [2].", False),
        (
            "The term is three years; no information on renewal beyond that is needed here because the clause is clear.",
            False,
        ),
    ],
)
def test_is_refusal(text, refusal):
    assert is_refusal(text) is refusal


def test_answer_with_citation(fake_server, llm_settings):
    a = LLMAnswerer(llm_settings)
    ans = a.answer("What is the initial term?", HITS)
    assert ans.error is None
    assert ans.text == "The initial term is three years from the Effective Date. [2]"
    assert ans.cited == [2] and not ans.abstained
    assert ans.answerer == "llm:fake-model"
    assert ans.prompt_tokens > 0 and ans.completion_tokens > 0 and not ans.cached


def test_refusal_is_abstained(fake_server, llm_settings):
    ans = LLMAnswerer(llm_settings).answer("#unknown Who audits?", HITS)
    assert ans.abstained and ans.error is None and ans.cited == []


def test_no_hits_needs_no_call(fake_server, llm_settings):
    ans = LLMAnswerer(llm_settings).answer("Anything?", [])
    assert ans.abstained and fake_server.requests == 0


def test_failures_are_recorded_not_raised(fake_server, llm_settings):
    a = LLMAnswerer(llm_settings)
    out = a.answer_batch(
        [
            ("#timeout What law?", HITS),
            ("#malformed What law?", HITS),
            ("#fail429 What law governs?", HITS),
            ("#fail500 Which law governs?", HITS),
            ("What is the initial term?", HITS),
        ]
    )
    assert out[0].error.startswith("timeout") and out[0].text == "" and not out[0].abstained
    assert out[1].error.startswith("malformed reply")
    assert out[2].error is None and out[2].cited == [1]
    assert out[3].error is None and out[3].cited == [1]
    assert out[4].cited == [2]


def test_second_run_is_cached_and_free(fake_server, llm_settings):
    items = [(f"What is the initial term? ({i})", HITS) for i in range(5)] + [("Nothing?", [])]
    first = LLMAnswerer(llm_settings).answer_batch(items)
    calls = fake_server.requests
    assert calls == 5
    second = LLMAnswerer(llm_settings).answer_batch(items)
    assert fake_server.requests == calls
    assert all(a.cached for a in second[:5])
    assert [a.text for a in first] == [a.text for a in second]


def test_custom_template_from_config(fake_server, llm_settings):
    tpl = "Sources:\n------\n{context}\n------\nQuery: {query}\nAnswer:"
    ans = LLMAnswerer(llm_settings, prompt_template=tpl).answer("Who may terminate?", HITS)
    assert ans.cited == [3]
    assert fake_server.log[0][1]["messages"][0]["content"].startswith("Sources:")


def test_dry_run_counts_without_calling(fake_server, llm_settings):
    items = [("What is the term?", HITS), ("Q2?", HITS[:1]), ("Q3?", [])]
    est = estimate_answer_calls(items, llm_settings)
    assert fake_server.requests == 0
    assert est.calls == 2
    assert est.prompt_tokens > 50
    assert est.completion_tokens == 2 * llm_settings.max_tokens
    assert est.cost_usd == pytest.approx(est.prompt_tokens / 1000 * 0.5 + est.completion_tokens / 1000 * 1.5, rel=1e-4)
    # the estimate matches what the endpoint is then sent (tiktoken count of the same prompt)
    LLMAnswerer(llm_settings).answer_batch(items)
    assert fake_server.chat_requests() == 2


def test_whole_run_dry_run(fake_server, llm_settings):
    from ragsweep.dry_run.llm_calls import estimate_llm_run

    items = [("What is the term?", HITS), ("Who audits?", HITS)]
    est = estimate_llm_run(items, llm_settings, references=["Three years.", ""])
    assert set(est) == {"answer", "judge", "ragas_llm", "total"}
    assert est["answer"].calls == 2 and est["judge"].calls == 1
    assert est["total"].calls == sum(est[k].calls for k in ("answer", "judge", "ragas_llm"))
    assert est["total"].cost_usd == pytest.approx(sum(est[k].cost_usd for k in ("answer", "judge", "ragas_llm")))
    assert "ragas_llm" not in estimate_llm_run(items, llm_settings, ragas_metrics=())
    assert fake_server.requests == 0
