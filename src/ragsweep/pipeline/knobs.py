"""The ``$variables`` ragsweep itself reads (the knobs), typed, with what is allowed for each.

A bad value is one line naming the knob and its rule (:data:`KNOB_RULES`); the arguments of components
that decide what is scored are checked by :data:`ARGUMENT_RULES`.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ragsweep.answer.prompt import validate_template

PositiveInt = Annotated[StrictInt, Field(ge=1)]
PositiveNumber = Annotated[StrictFloat, Field(gt=0, allow_inf_nan=False)]  # ints are accepted as numbers


class KnobContext(TypedDict):
    """What :meth:`ragsweep.pipeline.config.PipelineConfig.validate` gives the knobs' checks: the variables of the file
    holding a retriever factory (what ``$retriever_mode`` may name)."""

    retriever_factories: list[str]


class PipelineVariables(BaseModel):
    """The ``$variables`` ragsweep itself reads, typed; any other variable is free.

    An absent knob is not checked (the component's own default applies); ``null``
    is allowed where ragsweep has a fallback (``$top_k``, ``$retriever_mode``,
    ``$prompt_template``, the ``llm_*`` ones), not for values a component takes.
    The ``llm_*`` knobs mirror :class:`ragsweep.llm.settings.LLMSettings`.
    """

    model_config = ConfigDict(extra="allow")

    # a default of None is "absent" (defaults are not validated): an explicit null is rejected
    min_tokens: PositiveInt = None  # type: ignore[assignment]
    max_tokens: PositiveInt = None  # type: ignore[assignment]
    top_k: PositiveInt | None = None
    search_topk: PositiveInt | None = None
    retriever_mode: StrictStr | None = None
    rrf_k: PositiveNumber = None  # type: ignore[assignment]
    language: Literal["en", "zh"] | None = None
    embedder_model: Annotated[StrictStr, Field(min_length=1)] = None  # type: ignore[assignment]
    embedder_batch_size: PositiveInt = None  # type: ignore[assignment]
    embedder_cuda_batch_size: PositiveInt = None  # type: ignore[assignment]
    embedder_device: Annotated[StrictStr, Field(pattern=r"^(auto|cpu|cuda(:\d+)?)$")] = None  # type: ignore[assignment]
    embedder_dtype: Literal["auto", "float32", "float16", "bfloat16"] = None  # type: ignore[assignment]
    prompt_template: StrictStr | None = None
    # what the splitter prepends to each chunk (ragsweep.pipeline.chunking.CHUNK_HEADERS)
    chunk_header: Literal["none", "title", "title+heading"] = None  # type: ignore[assignment]
    # documents ranked first, chunks then retrieved inside the top N (ragsweep.pipeline.routing)
    route_docs: PositiveInt | None = None

    llm_base_url: StrictStr | None = None
    llm_model: Annotated[StrictStr, Field(min_length=1)] | None = None
    llm_api_key: StrictStr | None = None
    llm_api_key_env: Annotated[StrictStr, Field(min_length=1)] | None = None
    llm_temperature: Annotated[StrictFloat, Field(ge=0, le=2)] | None = None
    llm_max_tokens: PositiveInt | None = None
    llm_timeout: PositiveNumber | None = None
    llm_max_retries: Annotated[StrictInt, Field(ge=0)] | None = None
    llm_concurrency: Annotated[StrictInt, Field(ge=1, le=64)] | None = None
    llm_max_reply_bytes: Annotated[StrictInt, Field(ge=1_000)] | None = None
    llm_cache: StrictBool | None = None
    llm_cache_dir: Annotated[StrictStr, Field(min_length=1)] | None = None
    llm_price_per_1k_prompt: Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)] | None = None
    llm_price_per_1k_completion: Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)] | None = None
    llm_json_mode: StrictBool | None = None
    llm_embeddings: Literal["minilm", "endpoint"] | None = None
    llm_embedding_model: Annotated[StrictStr, Field(min_length=1)] | None = None
    # USD per 1,000 tokens the app's own embedder (OpenAIEmbedder...) sends: its cost in the manifest
    embedding_price_per_1k: Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)] | None = None

    # the reranking stage (ragsweep.pipeline.rerank); declared after top_k / search_topk: the check reads them
    reranker: Literal["encoder", "cross_encoder", "llm"] | None = None
    reranker_model: Annotated[StrictStr, Field(min_length=1)] | None = None
    rerank_candidates: PositiveInt | None = Field(default=None, validate_default=True)

    @field_validator("llm_base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^https?://\S+$", v):
            raise ValueError("must be an http:// or https:// URL, or null")
        return v

    @field_validator("embedder_model")
    @classmethod
    def _embedder_model(cls, v: str | None) -> str | None:
        if v is not None:  # a registered model or a local folder; whether it is installed is checked at build
            # deferred: embedding imports pathway (~1 s); importing config (the API, the CLI) must not
            from ragsweep.pipeline.embedding import check_model_name

            check_model_name(v)
        return v

    @field_validator("prompt_template")
    @classmethod
    def _template(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                validate_template(v)
            except ValueError as err:
                raise ValueError(f"must be null (Pathway's RAG prompt) or a template: {err}") from None
        return v

    @field_validator("retriever_mode")
    @classmethod
    def _mode(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None or info.context is None:  # no context: not validate()'s, no file to look in
            return v
        context: KnobContext = info.context
        factories = context["retriever_factories"]
        if v not in factories:
            choices = ", ".join(sorted(factories)) or "none is defined"
            raise ValueError(f"must name a variable of the file holding a retriever factory ({choices}), or be null")
        return v

    @field_validator("rerank_candidates")
    @classmethod
    def _rerank_candidates(cls, v: int | None, info: ValidationInfo) -> int | None:
        if v is None:
            if info.data.get("reranker") is not None:
                raise ValueError(
                    "must be set when $reranker is set: the number of chunks retrieved and "
                    "reranked, an integer >= $top_k"
                )
            return v
        top_k = info.data.get("top_k") or info.data.get("search_topk")
        if top_k is not None and v < top_k:
            raise ValueError(
                f"must be >= $top_k = {top_k}: the reranker keeps the best $top_k of the "
                "$rerank_candidates chunks retrieved"
            )
        return v

    @model_validator(mode="after")
    def _bounds(self) -> "PipelineVariables":
        if self.min_tokens is not None and self.max_tokens is not None and self.min_tokens > self.max_tokens:
            raise ValueError("min_tokens must be <= max_tokens")
        return self


# what is allowed, per knob (the message of a failed type or bound check)
KNOB_RULES: dict[str, str] = {
    "min_tokens": "must be an integer >= 1 (and <= $max_tokens)",
    "max_tokens": "must be an integer >= 1 (and >= $min_tokens)",
    "top_k": "must be an integer >= 1",
    "search_topk": "must be an integer >= 1",
    "retriever_mode": "must name a variable of the file holding a retriever factory, or be null",
    "rrf_k": "must be a number > 0",
    "language": "must be en or zh (zh: rjieba word segmentation for BM25 and token-level answer metrics), or null",
    "embedder_model": "must be a non-empty string",
    "embedder_batch_size": "must be an integer >= 1",
    "embedder_cuda_batch_size": "must be an integer >= 1",
    "embedder_device": "must be auto, cpu or cuda (cuda:N for one GPU of several)",
    "embedder_dtype": "must be auto, float32, float16 or bfloat16",
    "prompt_template": "must be null or a string with the {context} and {query} placeholders",
    "chunk_header": "must be none, title or title+heading (what is prepended to each chunk for embedding and BM25)",
    "route_docs": "must be an integer >= 1 (chunks are retrieved inside the top N documents), or null",
    "llm_base_url": "must be an http:// or https:// URL, or null",
    "llm_model": "must be a non-empty string, or null",
    "llm_api_key": "must be a string, or null",
    "llm_api_key_env": "must be the name of an environment variable, or null",
    "llm_temperature": "must be a number from 0 to 2, or null",
    "llm_max_tokens": "must be an integer >= 1, or null",
    "llm_timeout": "must be a number of seconds > 0, or null",
    "llm_max_retries": "must be an integer >= 0, or null",
    "llm_concurrency": "must be an integer from 1 to 64, or null",
    "llm_max_reply_bytes": "must be an integer >= 1000 (bytes), or null",
    "llm_cache": "must be true or false, or null",
    "llm_cache_dir": "must be a non-empty path, or null",
    "llm_price_per_1k_prompt": "must be a number >= 0, or null",
    "llm_price_per_1k_completion": "must be a number >= 0, or null",
    "llm_json_mode": "must be true or false, or null",
    "llm_embeddings": "must be 'minilm' or 'endpoint', or null",
    "llm_embedding_model": "must be a non-empty string, or null",
    "embedding_price_per_1k": "must be a number >= 0 (USD per 1,000 tokens), or null",
    "reranker": "must be null, 'encoder', 'cross_encoder' or 'llm'",
    "reranker_model": "must be a non-empty string (a model name or a local model folder), or null",
    "rerank_candidates": "must be an integer >= $top_k, or null (required when $reranker is set)",
}


# the arguments of components that ragsweep reads or that decide what it scores, literal or ``$variable``:
# (the least value allowed, what is allowed); null passes where the constructor's own default is null
ARGUMENT_RULES: dict[str, tuple[int, str]] = {
    "max_tokens": (1, "must be an integer >= 1 (and >= min_tokens)"),
    "min_tokens": (0, "must be an integer >= 0 (and <= max_tokens)"),
    "dimensions": (1, "must be an integer >= 1 (the width of the vectors)"),
    "search_topk": (1, "must be an integer >= 1"),
    "rerank_topk": (1, "must be an integer >= 1, or null"),
    "n_starting_documents": (1, "must be an integer >= 1 (the depth of the answerer's first ask)"),
    "factor": (1, "must be an integer >= 1 (how much the answerer widens at each new ask)"),
    "max_iterations": (1, "must be an integer >= 1 (how many times the answerer asks)"),
}
