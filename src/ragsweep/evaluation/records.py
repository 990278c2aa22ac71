"""The typed records that flow from retrieval to report.

:class:`CaseResult` is one case after retrieval, answering and scoring: one line of
``cases.jsonl``, the element of a Python API report, and what report.html, compare
and MLflow read. :func:`build_case_result` is the one function that builds it, for
eval, sweep and the API alike.

Depths. ``served[k]`` is exactly what the pipeline's DocumentStore returned when
asked for ``k`` (a hybrid top-3 is not the prefix of a hybrid top-10). Every
``<family>@k`` metric is computed on ``served[k]``; ``r_precision``,
``first_relevant_rank`` and citations on ``served[top_k]``, the list the
configuration really returns. A depth in ``unserved_ks`` (deeper than a sweep
configuration's top_k) is reported as missing, never computed from ranks the
configuration does not return.

Chance and oracle. For every retrieval metric the record also holds, when the
case's candidate chunks are known (every chunk of its scoped documents, or of the
corpus), the metric's expected value under a uniformly random ordering of those
candidates (``chance``) and the best value any ordering reaches (``oracle``), so a
number is read against what it would be by luck and at best.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from pydantic import BaseModel, Field

from ragsweep.answer.base import Answer
from ragsweep.datasets.schema import Case, RelevanceConfig
from ragsweep.metrics.registry import AT_K_FAMILIES, RANKING_METRICS, at_own_k
from ragsweep.pipeline.hits import Hit

RECORD_VERSION = 2


class JudgedHit(Hit):
    """A served chunk with the relevance verdict of the dataset's rule."""

    relevant: bool = False
    grade: int = 0


class CaseResult(BaseModel):
    """One case, scored: what goes in ``cases.jsonl`` and what every report reads."""

    id: str
    question: str
    type: str | None = None
    doc_scope: list[str] | None = None
    unanswerable: bool = False
    reference_answer: str | None = None
    split: str | None = None
    top_k: int  # the depth the configuration serves; ``hits`` holds that list
    hits: list[JudgedHit] = Field(default_factory=list)
    answer: Answer | None = None
    judge: dict[str, Any] | None = None
    metrics: dict[str, float | None] = Field(default_factory=dict)
    chance: dict[str, float | None] = Field(default_factory=dict)
    oracle: dict[str, float | None] = Field(default_factory=dict)
    relevance_rule: str | None = None
    notes: dict[str, str] = Field(default_factory=dict)  # metric or stage -> why it is missing / what happened
    version: int = RECORD_VERSION

    def line(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# ------------------------------------------------------------------ the stored line


def compact(line: dict[str, Any], *, settled: bool = False) -> dict[str, Any]:
    """The line a run folder stores for a :meth:`CaseResult.line` (read back by :func:`expand_lines`).

    Left out: each hit's text (the run's ``chunks.jsonl`` holds it once, keyed by the
    :func:`chunk_id` of the hit's ``doc_id``, ``start`` and ``end``) and every field at its
    default (None, false, 0, empty) in the case, its hits and its answer; ``version`` is
    always kept. ``settled``: ``report.json`` holds the run's aggregate, so the case's chance
    and oracle values (their means are there) and its metrics without a value (the list of
    metrics is there, ``case_metrics``) are left out too.
    """
    out = _without_defaults(line, CaseResult)
    if out.get("hits"):
        out["hits"] = [
            _without_defaults({k: v for k, v in hit.items() if k not in ("text", "chunk")}, JudgedHit)
            for hit in out["hits"]
        ]
    if out.get("answer"):
        out["answer"] = _without_defaults(out["answer"], Answer)
    if settled:
        out.pop("chance", None)
        out.pop("oracle", None)
        out["metrics"] = {name: value for name, value in out.get("metrics", {}).items() if value is not None}
        if not out["metrics"]:
            del out["metrics"]
    out["version"] = line.get("version", RECORD_VERSION)
    return out


def expand_lines(
    lines: Sequence[dict[str, Any]], chunk_texts: Mapping[str, str], names: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Stored lines of one run back in the shape of :meth:`CaseResult.line`: defaults filled
    in, each hit's text put back from the chunk table, and in each line every metric of
    ``names`` (report.json's ``case_metrics``) or of any line, None where the case
    has no value. Lines of older layouts (hit texts inline, or a ``chunk`` id per hit; every
    field written) come back the same way."""
    every = _merged_order([names, *(line.get("metrics") or {} for line in lines)])
    return [_expand(line, chunk_texts, every) for line in lines]


def metric_names(lines: Sequence[dict[str, Any]]) -> list[str]:
    """Every metric of the lines, in the order the lines give them."""
    return _merged_order(line.get("metrics") or {} for line in lines)


def chunk_id(doc_id: str, start: int, end: int) -> str:
    """A chunk's identity within a run: its document and character offsets (the key of the
    run folder's chunk table)."""
    return f"{doc_id}#{start}-{end}"


def chunk_key(hit: Hit) -> str:
    return chunk_id(hit.doc_id, hit.start, hit.end)


@cache
def _fields(model: type[BaseModel]) -> tuple[tuple[str, bool, Any, Callable[[], Any] | None], ...]:
    """(name, has a default, default, default factory) of each field but ``version``, in order."""
    return tuple(
        (name, not field.is_required() and name != "version", field.default, field.default_factory)
        for name, field in model.model_fields.items()
    )


def _defaults(model: type[BaseModel]) -> dict[str, Any]:
    """Fresh default values (a new list or dict each call)."""
    return {name: factory() if factory else default for name, has, default, factory in _fields(model) if has}


def _same(value: Any, default: Any) -> bool:
    return value is None if default is None else type(value) is type(default) and value == default


def _without_defaults(record: Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    defaults = _defaults(model)
    return {k: v for k, v in record.items() if not (k in defaults and _same(v, defaults[k]))}


def _with_defaults(record: Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """The record with the model's defaults filled in, in the model's field order (other keys after)."""
    out = {}
    for name, has, default, factory in _fields(model):
        if name in record:
            out[name] = record[name]
        elif has:
            out[name] = factory() if factory else default
    out.update((k, v) for k, v in record.items() if k not in out)
    return out


def _expand(line: dict[str, Any], chunk_texts: Mapping[str, str], names: Sequence[str]) -> dict[str, Any]:
    out = _with_defaults(line, CaseResult)
    out["hits"] = [_expand_hit(hit, chunk_texts) for hit in out["hits"]]
    if out["answer"] is not None:
        out["answer"] = _with_defaults(out["answer"], Answer)
    metrics = out["metrics"]
    out["metrics"] = {name: metrics.get(name) for name in names}
    return out


def _expand_hit(hit: dict[str, Any], chunk_texts: Mapping[str, str]) -> dict[str, Any]:
    out = _with_defaults({k: v for k, v in hit.items() if k != "chunk"}, JudgedHit)
    if "text" not in out:
        out["text"] = chunk_texts.get(hit.get("chunk") or chunk_id(hit["doc_id"], hit["start"], hit["end"]), "")
    return out


def _merged_order(sequences: Iterable[Iterable[str]]) -> list[str]:
    """Every name of the sequences once; a name first seen in a later sequence goes right
    after the name it follows there (so sequences missing some names keep the full order)."""
    merged: list[str] = []
    seen: set[str] = set()
    for sequence in sequences:
        sequence = list(sequence)
        if seen.issuperset(sequence):
            continue
        previous = None
        for name in sequence:
            if name not in seen:
                merged.insert(merged.index(previous) + 1 if previous is not None else 0, name)
                seen.add(name)
            previous = name
    return merged


def _judged(hits: Sequence[Hit], judgement) -> list[JudgedHit]:
    by_rank = {jh.rank: jh for jh in judgement.hits}
    out = []
    for pos, hit in enumerate(sorted(hits, key=lambda h: h.rank), start=1):
        jh = by_rank.get(pos)
        out.append(JudgedHit(**hit.model_dump(), relevant=bool(jh and jh.relevant), grade=int(jh.grade) if jh else 0))
    return out


def _num(value: Any) -> float | None:
    return None if value is None else float(value)


def build_case_result(
    case: Case,
    served: Mapping[int, Sequence[Hit]],
    *,
    top_k: int,
    relevance: RelevanceConfig,
    texts: Mapping[str, str],
    unserved_ks: Sequence[int] = (),
    own_k_aliases: bool = False,
    answer: Answer | None = None,
    verdict: Any = None,
    candidates: Sequence[Hit] | None = None,
    notes: Mapping[str, str] | None = None,
    language: str = "en",
) -> CaseResult:
    """Judge the served lists, score them, and carry the answer and verdict.

    ``served``: ``{k: hits the store returned for k}``; must hold ``top_k``.
    ``candidates``: every chunk the case could have been served (for chance/oracle
    and the chunk-id context metrics); None skips those.
    """
    from ragsweep.metrics.answer import answer_metrics_for_case
    from ragsweep.metrics.relevance import mark_hits
    from ragsweep.metrics.retrieval import per_case_value

    if top_k not in served:
        raise ValueError(f"case {case.id}: no list served at its top_k={top_k}")
    cited = (answer.cited or None) if answer is not None else None
    # a chunk's verdict does not depend on the list it stands in: judge every candidate once
    pool = None
    if candidates is not None:
        pool = mark_hits(
            case, [h.model_copy(update={"rank": i}) for i, h in enumerate(candidates, start=1)], relevance, texts
        )
    metrics: dict[str, float | None] = {}
    judgements = {}
    for k in sorted(served):
        judgement = _judge_from_pool(pool, candidates, served[k], cited if k == top_k else None)
        if judgement is None:
            judgement = mark_hits(case, served[k], relevance, texts, cited if k == top_k else None)
        judgements[k] = judgement
        for family in AT_K_FAMILIES:
            metrics[f"{family}@{k}"] = _num(per_case_value(judgement, f"{family}@{k}"))
    for k in unserved_ks:
        for family in AT_K_FAMILIES:
            metrics[f"{family}@{k}"] = None
    own = judgements[top_k]
    for name in RANKING_METRICS:
        metrics[name] = _num(per_case_value(own, name))
    metrics["citation_precision"] = _num(per_case_value(own, "citation_precision")) if cited and own.scored else None
    if own_k_aliases:
        for family in AT_K_FAMILIES:
            metrics[at_own_k(family)] = metrics[f"{family}@{top_k}"]

    chance: dict[str, float | None] = {}
    oracle: dict[str, float | None] = {}
    if pool is not None and own.scored:
        from ragsweep.metrics.baselines import case_baselines

        names = [f"{family}@{k}" for k in sorted(served) for family in AT_K_FAMILIES]
        levels = case_baselines([pool], names)
        chance = {n: _num(v) for n, v in levels.chance.get(case.id, {}).items()}
        oracle = {n: _num(v) for n, v in levels.oracle.get(case.id, {}).items()}
        if own_k_aliases:
            for family in AT_K_FAMILIES:
                chance[at_own_k(family)] = chance.get(f"{family}@{top_k}")
                oracle[at_own_k(family)] = oracle.get(f"{family}@{top_k}")
        relevant_ids = {chunk_key(h) for h, jh in zip(candidates, pool.hits) if jh.relevant}
        served_ids = [chunk_key(h) for h in served[top_k]]
        metrics.update(chunk_id_context_scores(served_ids, relevant_ids))

    if answer is not None:
        scores = answer_metrics_for_case(
            answer, case.reference_answer, case.expected_facts, case.unanswerable, language=language
        )
        metrics.update({k: _num(v) for k, v in scores.items()})
    judge = None
    if verdict is not None:
        judge = verdict.model_dump() if hasattr(verdict, "model_dump") else dict(verdict)
        correct = judge.get("is_correct")
        metrics["judge_correct"] = None if correct is None else float(bool(correct))

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
        judge=judge,
        metrics=metrics,
        chance=chance,
        oracle=oracle,
        relevance_rule=own.rule,
        notes=dict(notes or {}),
    )


def _judge_from_pool(pool, candidates: Sequence[Hit] | None, hits: Sequence[Hit], cited):
    """A served list's judgement from the candidates' verdicts (None if a hit is not a candidate)."""
    if pool is None or candidates is None:
        return None
    from dataclasses import replace

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
    from ragsweep.metrics.ragas_bridge import id_based_context_scores

    return id_based_context_scores(list(served_ids), sorted(relevant_ids))
