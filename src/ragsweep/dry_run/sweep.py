"""What an answer sweep would cost at its endpoints, without a single call (``ragsweep sweep --dry-run``).

Per configuration: the LLM calls its answerer makes (the app's ``BaseRAGQuestionAnswerer``: one per
question it is asked, exactly; an ``AdaptiveRAGQuestionAnswerer``: at most ``max_iterations`` each),
their prompt tokens (each question with the longest chunks it could be served at the configuration's
``search_topk``: an upper bound), completion tokens (``max_tokens`` per call: a bound) and the price
at its ``$llm_price_per_1k_*``; the judge's calls when judging; the held-out verdict's. Requests the
endpoint gets can be fewer: a prompt two configurations share is sent once.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from ragsweep.cost.configuration import NO_PRICE, Prices, prices_of
from ragsweep.datasets.schema import Case
from ragsweep.dry_run.llm_calls import estimate_llm_run
from ragsweep.dry_run.run import longest_chunks, split_corpus
from ragsweep.evaluation.grid_size import GridSize
from ragsweep.evaluation.settings import SweepSettings
from ragsweep.llm.settings import LLMSettings
from ragsweep.pipeline.app_components import EmbeddingSpend, estimate_embeddings
from ragsweep.pipeline.arguments import ComponentArguments
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus
from ragsweep.pipeline.retrieval import parsed_scopes

ADAPTIVE = "AdaptiveRAGQuestionAnswerer"


class ConfigEstimate(BaseModel):
    """One configuration's predicted answer calls, tokens and price, and its judge's calls."""

    answerer: str
    calls: int = 0
    exact: bool = True  # False: ``calls`` is an upper bound (an adaptive answerer stops when it has an answer)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float | str = NO_PRICE
    judge_calls: int = 0


class SweepEstimate(BaseModel):
    """``ragsweep sweep --dry-run``'s output."""

    dry_run: bool = True
    configurations: int
    size: GridSize | None = None  # counted before the grid is expanded
    cases: int
    configs: dict[str, ConfigEstimate] = Field(default_factory=dict)
    calls: int = 0  # every configuration's answer calls
    judge_calls: int = 0
    holdout_calls_at_most: int = 0  # the chosen configuration and the baseline on the held-out cases
    # per chunking (its key): what the app's embedder would send, the texts its vector cache lacks
    embeddings: dict[str, EmbeddingSpend] = Field(default_factory=dict)
    usd: float | str = NO_PRICE
    notes: list[str] = Field(default_factory=list)


def answer_shape(config: PipelineConfig) -> tuple[str, int, bool, str | None, object]:
    """(answerer, calls per question, exact, the prompt template, the model) of a configuration's answers."""
    spec = config.spec
    found = spec.question_answerer_ref()
    if found is None:
        return "llm", 1, True, config.variables.prompt_template, config.variables.llm_model
    kind, given = found[1].name, ComponentArguments.of(found[1].kwargs)
    _, template = spec.follow(given.prompt_template, "prompt_template")
    _, llm = spec.llm_ref(*found)
    _, model = spec.follow(ComponentArguments.of(getattr(llm, "kwargs", None) or {}).model, "model")
    per_question, exact = 1, kind != ADAPTIVE
    if kind == ADAPTIVE:
        _, iterations = spec.follow(given.max_iterations, "max_iterations")
        per_question = iterations if isinstance(iterations, int) else 4  # Pathway's default
    return f"app:{kind}", per_question, exact, template if isinstance(template, str) else None, model


def estimate_config(
    config: PipelineConfig, corpus: Corpus, chunks: dict[str, list[str]], cases: Sequence[Case], settings: SweepSettings
) -> ConfigEstimate:
    """One configuration's answer and judge calls over ``cases``, nothing sent."""
    kind, per_question, exact, template, model = answer_shape(config)
    use_given = not settings.answer.use_llm
    todo = [c for c in cases if not (use_given and c.response is not None)]
    scopes = parsed_scopes(todo, {d.doc_id for d in corpus.documents})
    asked = [c for c, scope in zip(todo, scopes) if scope != []]
    items = [(c.question, longest_chunks(chunks, s, config.top_k)) for c, s in zip(asked, scopes) if s != []]
    llm = LLMSettings.from_mapping(config.scalars())
    llm = llm.with_updates(model=str(model)) if model else llm
    estimates = estimate_llm_run(
        items,
        llm,
        prompt_template=template,
        references=[c.reference_answer or "" for c in asked],
        unanswerable=[c.unanswerable for c in asked],
        judge=settings.answer.judge,
        ragas_metrics=(),
        replicates=settings.answer.judge_replicates,
    )
    answer = estimates["answer"]
    out = ConfigEstimate(answerer=kind, exact=exact)
    # the app asks every question it is given (an empty list of chunks too); bounded by max_iterations
    out.calls = len(asked) * per_question if kind.startswith("app:") else answer.calls
    scale = per_question if kind.startswith("app:") else 1
    out.prompt_tokens, out.completion_tokens = answer.prompt_tokens * scale, answer.completion_tokens * scale
    out.judge_calls = estimates["judge"].calls if "judge" in estimates else 0
    out.usd = _price(prices_of(config), out)
    return out


def _price(prices: Prices, est: ConfigEstimate) -> float | str:
    if not prices.llm_set:
        return NO_PRICE
    return round(
        est.prompt_tokens / 1000 * (prices.prompt or 0.0) + est.completion_tokens / 1000 * (prices.completion or 0.0), 6
    )


def estimate_sweep(
    configs: dict[str, PipelineConfig],
    corpus: Corpus,
    cases: Sequence[Case],
    holdout: Sequence[Case],
    settings: SweepSettings,
) -> SweepEstimate:
    """Every configuration's predicted calls and price, their sums, and the held-out verdict's bound."""
    out = SweepEstimate(configurations=len(configs), cases=len(cases))
    chunks_of: dict[str, dict[str, list[str]]] = {}
    for config in configs.values():
        if config.chunking_key not in chunks_of:
            pipeline = config.build()
            chunks = chunks_of[config.chunking_key] = split_corpus(pipeline.splitter, corpus)
            texts = [t for doc in chunks.values() for t in doc]
            questions = [c.question for c in cases]
            spend = estimate_embeddings(pipeline.embedder, texts, questions, config.variables.embedding_price_per_1k)
            if spend is not None:
                out.embeddings[config.chunking_key] = spend
    if not settings.answers:
        out.notes.append("retrieval only (no --answers): no LLM call")
        return out
    for cid, config in configs.items():
        out.configs[cid] = estimate_config(config, corpus, chunks_of[config.chunking_key], cases, settings)
    out.calls = sum(e.calls for e in out.configs.values())
    out.judge_calls = sum(e.judge_calls for e in out.configs.values())
    if holdout:  # the chosen configuration and the baseline, each at most its calls per question
        out.holdout_calls_at_most = 2 * len(holdout) * max(answer_shape(c)[1] for c in configs.values())
    prices = [e.usd for e in out.configs.values()]
    out.usd = (
        round(sum(p for p in prices if isinstance(p, float)), 6)
        if all(isinstance(p, float) for p in prices)
        else NO_PRICE
    )
    if not all(e.exact for e in out.configs.values()):
        out.notes.append("an adaptive question answerer's calls are an upper bound (it stops at an answer)")
    out.notes.append(
        "prompt tokens: each question with the longest chunks it could be served (an upper bound); completion "
        "tokens: max_tokens per call; the endpoint gets fewer requests where configurations share a prompt (cache)"
    )
    return out
