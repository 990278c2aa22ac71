"""One case scored: :func:`build_case_result`, the one function that builds a :class:`CaseResult`,
for eval, sweep and the API alike.

Depths. ``served[k]`` is exactly what the pipeline's DocumentStore returned when
asked for ``k`` (a hybrid top-3 is not the prefix of a hybrid top-10). Every
``<family>@k`` metric is computed on ``served[k]``; ``r_precision``,
``first_relevant_rank`` and citations on ``served[top_k]``, the list the
configuration really returns; every ``<family>@<N>tok`` (a context-token budget) on the
deepest list served (``served[max(served)]``), whatever the top_k: the chunks that fit in N
tokens of it. A case whose deepest list ran out before N tokens while its store had more
chunks has no value there (a note says so): the depth asked was too shallow to tell. A sweep's ``<family>@k`` (at each configuration's own
top_k) is read with :meth:`CaseResult.metric`; a sweep reports a depth deeper than a
configuration's top_k as missing in its aggregate (:class:`ConfigResult`).

Chance and oracle. For every retrieval metric the record also holds, when the
case's candidate chunks are known (every chunk of its scoped documents, or of the
corpus), the metric's expected value under a uniformly random ordering of those
candidates (``chance``) and the best value any ordering reaches (``oracle``), so a
number is read against what it would be by luck and at best.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TypedDict

from ragsweep.answer.base import Answer
from ragsweep.core.hits import Hit, chunk_key
from ragsweep.datasets.schema import Case, RelevanceConfig
from ragsweep.evaluation.records import CaseResult, JudgedHit
from ragsweep.funnel.attribute import CaseFunnel, StageInputs, StageLists, case_funnel
from ragsweep.judge.metric import JudgeVerdict
from ragsweep.metrics.answer import UNPARSED_SCOPE, answer_metrics_for_case, unparsed_scope_note, without_abstention
from ragsweep.metrics.baselines import case_baselines
from ragsweep.metrics.ragas_bridge import id_based_context_scores
from ragsweep.metrics.registry import (
    CITATION_PRECISION,
    JUDGE_CORRECT,
    at_k_families,
    budget_names,
    leveled_names,
    ranking_metrics,
)
from ragsweep.metrics.relevance import mark_hits
from ragsweep.metrics.retrieval import Judgement, UnlocatedSpan, per_case_value


def _judged(hits: Sequence[Hit], judgement: Judgement) -> list[JudgedHit]:
    """The hits with their verdicts: ``judgement`` is of these hits (``mark_hits`` or
    :func:`_judge_from_pool`), one verdict per hit in rank order."""
    ranked = sorted(hits, key=lambda h: h.rank)
    return [
        JudgedHit(**hit.model_dump(), relevant=bool(jh.relevant), grade=int(jh.grade))
        for hit, jh in zip(ranked, judgement.hits, strict=True)
    ]


def _num(value: float | None) -> float | None:
    return None if value is None else float(value)


def build_case_result(
    case: Case,
    served: Mapping[int, Sequence[Hit]],
    *,
    top_k: int,
    relevance: RelevanceConfig,
    texts: Mapping[str, str],
    answer: Answer | None = None,
    verdict: JudgeVerdict | None = None,
    candidates: Sequence[Hit] | None = None,
    notes: Mapping[str, str] | None = None,
    language: str = "en",
    budgets: Sequence[int] = (),
    stages: StageInputs = StageInputs(),
) -> CaseResult:
    """Judge the served lists, score them, carry the answer and verdict, and say where its evidence was lost.

    ``served``: ``{k: hits the store returned for k}``; must hold ``top_k``.
    ``candidates``: every chunk the case could have been served (for chance/oracle, the chunking
    stage and the chunk-id context metrics); None skips those. ``budgets``: the context-token
    budgets of the ``<family>@<N>tok`` metrics. ``stages``: what the funnel's later stages read.
    """
    if top_k not in served:
        raise ValueError(f"case {case.id}: no list served at its top_k={top_k}")
    cited = (answer.cited or None) if answer is not None else None
    pool = _candidate_pool(case, candidates, relevance, texts, budgets) if candidates is not None else None
    metrics, own, judged = _retrieval_metrics(case, served, top_k, relevance, texts, pool, candidates, cited)
    budget_notes = _budget_metrics(metrics, case, served, relevance, texts, budgets, pool, candidates)
    chance: dict[str, float | None] = {}
    oracle: dict[str, float | None] = {}
    if pool is not None and candidates is not None and own.scored:
        chance, oracle = _levels(pool, sorted(served), budgets)
        relevant_ids = {chunk_key(h) for h, jh in zip(candidates, pool.hits, strict=True) if jh.relevant}
        metrics.update(chunk_id_context_scores([chunk_key(h) for h in served[top_k]], relevant_ids))
    if answer is not None:
        metrics.update(_answer_metrics(case, answer, language))
        if (unscored := unparsed_scope_note(case.unanswerable, case.doc_scope, texts)) is not None:
            metrics.update(without_abstention(metrics))
            budget_notes[UNPARSED_SCOPE] = unscored
    if verdict is not None:  # the mean of the case's replicate verdicts (the verdict itself with one)
        metrics[JUDGE_CORRECT] = _num(verdict.score)
    return CaseResult(
        id=case.id,
        question=case.question,
        type=case.type,
        doc_scope=case.doc_scope,
        unanswerable=case.unanswerable,
        reference_answer=case.reference_answer,
        split=case.split,
        top_k=top_k,
        hits=_judged(served[top_k], own),
        answer=answer,
        judge=verdict,
        metrics=metrics,
        chance=chance,
        oracle=oracle,
        relevance_rule=own.rule,
        **vars(_funnel(case, judged, served, top_k, answer, metrics, pool, candidates, relevance, texts, stages)),
        **_unlocated_fields(own, relevance, {**budget_notes, **(notes or {})}),
    )


def _funnel(
    case: Case,
    judged: Mapping[int, Judgement],
    served: Mapping[int, Sequence[Hit]],
    top_k: int,
    answer: Answer | None,
    metrics: Mapping[str, float | None],
    pool: Judgement | None,
    candidates: Sequence[Hit] | None,
    relevance: RelevanceConfig,
    texts: Mapping[str, str],
    stages: StageInputs,
) -> CaseFunnel:
    """Where the case's evidence was lost (:mod:`ragsweep.funnel`), the store's list before the
    reranker judged from the candidates' verdicts where they hold it."""
    pre = stages.pre_rerank
    pre_judged = (
        None if pre is None else _judge_from_pool(pool, candidates, pre, None) or mark_hits(case, pre, relevance, texts)
    )
    return case_funnel(
        case, judged, served, top_k, (metrics, answer.answerer) if answer is not None else None, pool=pool,
        candidates=candidates, texts=texts, lists=StageLists(route_docs=stages.route_docs, pre_rerank=pre_judged),
    )  # fmt: skip


def _candidate_pool(
    case: Case, candidates: Sequence[Hit], relevance: RelevanceConfig, texts: Mapping[str, str], budgets: Sequence[int]
) -> Judgement:
    """Every candidate judged once (a chunk's verdict does not depend on the list it stands in),
    with its length in tokens when budgets are scored."""
    ranked = [h.model_copy(update={"rank": i}) for i, h in enumerate(candidates, start=1)]
    pool = mark_hits(case, ranked, relevance, texts)
    return with_tokens(pool, candidates) if budgets else pool


class _Unlocated(TypedDict):
    unlocated: list[UnlocatedSpan]
    evidence_unlocated: bool
    notes: dict[str, str]


def _unlocated_fields(judgement: Judgement, relevance: RelevanceConfig, notes: Mapping[str, str]) -> _Unlocated:
    """The record's unlocated spans, and the note of a case none of whose evidence is found:
    what its retrieval numbers are."""
    spans = list(judgement.detail.unlocated)
    none_located = judgement.detail.none_located
    fields: _Unlocated = {"unlocated": spans, "evidence_unlocated": none_located, "notes": dict(notes)}
    if none_located:
        what = (
            "left out of the retrieval metrics" if relevance.unlocated == "exclude" else "scored 0 (--unlocated zero)"
        )
        named = "; ".join(f"{s.shown()} in {s.doc_id or 'its scope'} ({s.reason})" for s in spans[:3])
        nothing = (
            "no relevant document has parsed text"
            if judgement.rule == "doc_id"
            else "no evidence span is found in the parsed documents"
        )
        note = f"unlocated evidence: {nothing} ({named}): {what}"
        fields["notes"] = {"retrieval": note, **notes}
    return fields


def _answer_metrics(case: Case, answer: Answer, language: str) -> dict[str, float | None]:
    scores = answer_metrics_for_case(
        answer, case.reference_answer, case.expected_facts, case.unanswerable, language=language
    )
    return {k: _num(v) for k, v in scores.items()}


def _retrieval_metrics(
    case: Case,
    served: Mapping[int, Sequence[Hit]],
    top_k: int,
    relevance: RelevanceConfig,
    texts: Mapping[str, str],
    pool: Judgement | None,
    candidates: Sequence[Hit] | None,
    cited: Sequence[int] | None,
) -> tuple[dict[str, float | None], Judgement, dict[int, Judgement]]:
    """Every ``<family>@k`` on the list served at k; the ranking metrics and citations on the one
    served at ``top_k``. That list's judgement comes back, and each list's."""
    metrics: dict[str, float | None] = {}
    judgements: dict[int, Judgement] = {}
    for k in sorted(served):
        judgement = _judge_from_pool(pool, candidates, served[k], cited if k == top_k else None)
        if judgement is None:
            judgement = mark_hits(case, served[k], relevance, texts, cited if k == top_k else None)
        judgements[k] = judgement
        for family in at_k_families():
            metrics[f"{family}@{k}"] = _num(per_case_value(judgement, f"{family}@{k}"))
    own = judgements[top_k]
    for name in ranking_metrics():
        metrics[name] = _num(per_case_value(own, name))
    metrics[CITATION_PRECISION] = _num(per_case_value(own, CITATION_PRECISION)) if cited and own.scored else None
    return metrics, own, judgements


def _budget_metrics(
    metrics: dict[str, float | None],
    case: Case,
    served: Mapping[int, Sequence[Hit]],
    relevance: RelevanceConfig,
    texts: Mapping[str, str],
    budgets: Sequence[int],
    pool: Judgement | None,
    candidates: Sequence[Hit] | None,
) -> dict[str, str]:
    """Every ``<family>@<N>tok`` on the deepest list served, into ``metrics``; the notes of the
    budgets that list could not fill (missing, not under-counted)."""
    if not budgets:
        return {}
    deepest = max(served)
    hits = sorted(served[deepest], key=lambda h: h.rank)
    judgement = with_tokens(
        _judge_from_pool(pool, candidates, hits, None) or mark_hits(case, hits, relevance, texts), hits
    )
    held = sum(h.tokens or 0 for h in judgement.hits)
    # fewer chunks than asked: the store had no more to serve, the list is all there is
    more = len(hits) >= deepest and (candidates is None or len(candidates) > len(hits))
    notes: dict[str, str] = {}
    for budget in sorted(set(budgets)):
        short = more and held < budget
        for name in budget_names([budget]):
            metrics[name] = None if short or not judgement.scored else _num(per_case_value(judgement, name))
        if short:
            notes[f"@{budget}tok"] = (
                f"the list served at depth {deepest} holds {held} tokens, fewer than the {budget}-token budget, "
                "and the store has more chunks: no value (ask deeper, e.g. a larger k in --ks)"
            )
    return notes


def with_tokens(judgement: Judgement, hits: Sequence[Hit]) -> Judgement:
    """The judgement with each rank's chunk length in tokens as served (its header included: the
    context a model reads), ``hits`` in the judgement's order."""
    # deferred: pipeline.chunking imports pathway (~1.5 s); the API import and --help must not
    from ragsweep.pipeline.chunking import chunk_tokens

    judged = [replace(jh, tokens=chunk_tokens(h.served_text)) for jh, h in zip(judgement.hits, hits, strict=True)]
    return replace(judgement, hits=judged)


def _levels(
    pool: Judgement, ks: Sequence[int], budgets: Sequence[int] = ()
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """The case's chance and oracle level of every ``<family>@k`` and ``<family>@<N>tok`` over its
    candidate pool (none where the pool is not scored: no relevance information)."""
    if not pool.scored:
        return {}, {}
    levels = case_baselines([pool], leveled_names(ks, budgets))
    chance = {n: _num(v) for n, v in levels.chance[pool.case_id].items()}
    oracle = {n: _num(v) for n, v in levels.oracle[pool.case_id].items()}
    return chance, oracle


def _judge_from_pool(
    pool: Judgement | None, candidates: Sequence[Hit] | None, hits: Sequence[Hit], cited: Sequence[int] | None
) -> Judgement | None:
    """A served list's judgement from the candidates' verdicts (None if a hit is not a candidate)."""
    if pool is None or candidates is None:
        return None
    verdict = {chunk_key(h): jh for h, jh in zip(candidates, pool.hits)}
    judged = []
    for pos, hit in enumerate(sorted(hits, key=lambda h: h.rank), start=1):
        jh = verdict.get(chunk_key(hit))
        if jh is None:
            return None
        judged.append(replace(jh, rank=pos))
    return replace(pool, hits=judged, cited=list(cited) if cited is not None else None)


def chunk_id_context_scores(served_ids: Sequence[str], relevant_ids: set[str]) -> dict[str, float | None]:
    """ragas' ID-based context precision and recall over chunk ids.

    ``IDBasedContextPrecision`` = |served ∩ relevant| / |served|;
    ``IDBasedContextRecall`` = |served ∩ relevant| / |relevant|, where "relevant" is
    every candidate chunk the dataset's rule judges relevant. Computed by ragas
    itself (:mod:`ragsweep.metrics.ragas_bridge`).
    """
    return id_based_context_scores(list(served_ids), sorted(relevant_ids))
