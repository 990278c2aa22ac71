"""Each case's funnel: the stage that lost each of its evidence items at each depth served, the
case's stage (the first among its items' in pipeline order: :mod:`ragsweep.funnel.stages`), and
the run's totals (:func:`diagnose`).

An item is what the dataset's rule asks to be retrieved: an evidence span (``evidence_offsets``,
``word_overlap``) or a relevant document (``doc_id``), as recall counts them. A case is found at
depth k when every item is served within k (recall@k = 1); the answer stage is judged at the
depth the answerer read (the configuration's top_k) only.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ragsweep.core.hits import Hit
from ragsweep.datasets.schema import Case
from ragsweep.evaluation.records import CaseResult
from ragsweep.funnel.records import Diagnosis, DiagnosisCounts, SpanLoss
from ragsweep.funnel.stages import (
    ANSWER,
    CHUNKING,
    FOUND,
    PARSE,
    RERANK,
    RETRIEVAL,
    ROUTING,
    STAGES,
    answer_loss_kind,
    answer_verdict,
    earliest,
    lost_at_answer,
    lost_at_chunking,
    lost_at_parse,
    lost_at_retrieval,
    lost_at_routing,
)
from ragsweep.metrics.relevance import UNLOCATED, locate_spans
from ragsweep.metrics.retrieval import Judgement

UNANSWERABLE = "unanswerable"
NO_RELEVANCE = "no relevance information"


@dataclass(frozen=True)
class StageInputs:
    """What the funnel's later stages read besides the served lists: ``$route_docs`` (None: no routing)
    and the store's list before the reranker (None: no reranker, or not kept)."""

    route_docs: int | None = None
    pre_rerank: Sequence[Hit] | None = None


@dataclass(frozen=True)
class StageLists:
    """What the stages after chunking are judged from besides the served lists: ``$route_docs``
    (None: no routing) and the store's list before the reranker (None: no reranker, or not kept:
    the served hits' ``retrieval_rank`` stands in)."""

    route_docs: int | None = None
    pre_rerank: Judgement | None = None


@dataclass(frozen=True)
class CaseFunnel:
    """A case's place in the funnel, as its record carries it."""

    lost_at: str | None = None
    lost_at_k: dict[int, str] = field(default_factory=dict)
    loss: list[SpanLoss] = field(default_factory=list)
    correct_without_context: bool = False


@dataclass(frozen=True)
class _Item:
    """What the stages know of one evidence item."""

    id: str
    index: int
    doc_id: str | None
    text: str  # the span ("" for a relevant document)
    located: bool
    reachable: bool | None  # a candidate covers it (None: the candidates are not known)
    routed: bool | None  # its document was routed to the question (None: no routing, or not known)
    ranks: dict[int, int | None]  # k -> the rank of the first chunk covering it in the list served at k
    pre_rerank_rank: int | None


def case_funnel(
    case: Case,
    judged: Mapping[int, Judgement],
    served: Mapping[int, Sequence[Hit]],
    top_k: int,
    answered: tuple[Mapping[str, float | None], str | None] | None,
    *,
    pool: Judgement | None = None,
    candidates: Sequence[Hit] | None = None,
    texts: Mapping[str, str] | None = None,
    lists: StageLists = StageLists(),
) -> CaseFunnel:
    """The case's stage at every depth of ``judged`` (each served list's judgement), and each item's
    loss at ``top_k``; an empty funnel for a case without relevance information or unanswerable.
    ``answered``: the case's metrics and its answerer, when it has an answer."""
    own = judged[top_k]
    if own.excluded not in (None, UNLOCATED):
        return CaseFunnel()
    items = _items(case, judged, served, pool, candidates, lists)
    if not items:
        return CaseFunnel()
    by_k = {k: earliest([s for item in items if (s := _item_stage(item, k)) != FOUND]) for k in sorted(judged)}
    verdict = answer_verdict(*answered) if answered is not None else None
    correct = None if verdict is None else verdict[1]
    if by_k[top_k] == FOUND and lost_at_answer(correct):
        by_k[top_k] = ANSWER
    loss = [_span_loss(item, top_k, served, candidates, texts) for item in items]
    without_context = correct is True and all(item.ranks[top_k] is None for item in items)
    lost = by_k[top_k]
    return CaseFunnel(None if lost == FOUND else lost, by_k, loss, without_context)


def _item_stage(item: _Item, k: int) -> str:
    """The first stage whose rule holds for ``item`` at depth ``k`` (``found``: none)."""
    rank = item.ranks[k]
    if rank is not None:  # served within k: nothing lost it (as recall counts it)
        return FOUND
    if lost_at_parse(item.located):
        return PARSE
    if item.reachable is not None and lost_at_chunking(item.reachable):
        return CHUNKING
    if lost_at_routing(item.routed):
        return ROUTING
    return RETRIEVAL if lost_at_retrieval(rank, k, item.pre_rerank_rank) else RERANK


def _item_ids(case: Case, judgement: Judgement) -> list[tuple[str, str | None, str]]:
    """(item id, its document, its span text) of each item the rule judges, in recall's order."""
    if judgement.rule == "doc_id":
        grades = case.relevant_grades() or {e.doc_id: 1 for e in case.evidence if e.doc_id}
        return [(d, d, "") for d in grades]
    return [(f"e{i}", e.doc_id, e.text) for i, e in enumerate(case.evidence)]


def _items(
    case: Case,
    judged: Mapping[int, Judgement],
    served: Mapping[int, Sequence[Hit]],
    pool: Judgement | None,
    candidates: Sequence[Hit] | None,
    lists: StageLists,
) -> list[_Item]:
    own = judged[max(judged)]
    ids = _item_ids(case, own)
    unlocated = {ids[s.index][0] for s in own.detail.unlocated if s.index < len(ids)}
    covering = _covering_docs(pool, candidates)
    routed = _routed_docs(served, lists.route_docs)
    deepest = max(served)
    pre_ranks = _pre_rerank_ranks(lists.pre_rerank, served[deepest], judged[deepest])
    items = []
    for index, (item, doc, text) in enumerate(ids):
        docs = {doc} if doc is not None else covering.get(item, set())
        items.append(
            _Item(
                id=item,
                index=index,
                doc_id=doc,
                text=text,
                located=item not in unlocated,
                reachable=None if pool is None else item in covering,
                routed=None if routed is None or not docs else bool(docs & routed),
                ranks={k: _first_rank(j, item) for k, j in judged.items()},
                pre_rerank_rank=pre_ranks.get(item),
            )
        )
    return items


def _first_rank(judgement: Judgement, item: str) -> int | None:
    return next((v.rank for v in judgement.hits if item in v.covers), None)


def _covering_docs(pool: Judgement | None, candidates: Sequence[Hit] | None) -> dict[str, set[str]]:
    """Each item a candidate covers -> the documents of the candidates that cover it."""
    docs: dict[str, set[str]] = defaultdict(set)
    if pool is None or candidates is None:
        return docs
    for hit, verdict in zip(candidates, pool.hits, strict=True):
        for item in verdict.covers:
            docs[item].add(hit.doc_id)
    return docs


def _routed_docs(served: Mapping[int, Sequence[Hit]], route_docs: int | None) -> set[str] | None:
    """The documents routed to the question, where the served lists tell them: the deepest list draws
    on exactly ``route_docs`` documents (routing serves from no more, so those are the routed ones).
    None: no routing, or not told (fewer documents served: BM25 serves only the chunks that match, so a
    routed document may be missing from the list; more: the question was served unrouted)."""
    if route_docs is None:
        return None
    docs = {h.doc_id for h in served[max(served)]}
    return docs if len(docs) == route_docs else None


def _pre_rerank_ranks(pre_rerank: Judgement | None, deepest: Sequence[Hit], judged: Judgement) -> dict[str, int]:
    """Each item's best rank in the store's list before the reranker; without that list, the best
    ``retrieval_rank`` among the chunks covering it in the deepest list served (what the reranker
    kept of it). Empty without a reranker."""
    if pre_rerank is not None:
        return {item: rank for item in _covered(pre_rerank) if (rank := _first_rank(pre_rerank, item)) is not None}
    best: dict[str, int] = {}
    for hit, verdict in zip(sorted(deepest, key=lambda h: h.rank), judged.hits, strict=True):
        if hit.retrieval_rank is None:
            continue
        for item in verdict.covers:
            best[item] = min(best.get(item, hit.retrieval_rank), hit.retrieval_rank)
    return best


def _covered(judgement: Judgement) -> set[str]:
    return {item for verdict in judgement.hits for item in verdict.covers}


def _span_loss(
    item: _Item,
    top_k: int,
    served: Mapping[int, Sequence[Hit]],
    candidates: Sequence[Hit] | None,
    texts: Mapping[str, str] | None,
) -> SpanLoss:
    """The item's stage at ``top_k`` with what tells it: the rank a relevant chunk has (within k when
    found; in the deepest list served when lost to retrieval or the reranker), the rank it had before
    the reranker, and how a span lost to the chunking lies across the chunks."""
    stage = _item_stage(item, top_k)
    rank = item.ranks[top_k] if stage == FOUND else item.ranks[max(served)]
    loss = SpanLoss(span=item.index, doc_id=item.doc_id, stage=stage, rank=rank, pre_rerank_rank=item.pre_rerank_rank)
    if stage == CHUNKING and item.text and candidates is not None and texts is not None:
        loss = loss.model_copy(update=_split_over_chunks(item, candidates, texts))
    return loss


def _split_over_chunks(item: _Item, candidates: Sequence[Hit], texts: Mapping[str, str]) -> dict[str, int | None]:
    """A span's length in tokens, the longest chunk of its document in tokens (the chunk size as cut),
    and how many chunks hold part of its first occurrence in the parsed text."""
    # deferred: pipeline.chunking imports pathway (~1.5 s); the API import and --help must not
    from ragsweep.pipeline.chunking import chunk_tokens

    by_doc: dict[str, list[Hit]] = defaultdict(list)
    for hit in candidates:
        if item.doc_id is None or hit.doc_id == item.doc_id:
            by_doc[hit.doc_id].append(hit)
    for doc, chunks in by_doc.items():
        text = texts.get(doc)
        spans = locate_spans(text, item.text)[1] if text else []
        if spans:
            start, end = spans[0]
            return {
                "span_tokens": chunk_tokens(item.text),
                "chunk_tokens": max(chunk_tokens(h.text) for h in chunks),
                "chunks_split": sum(1 for h in chunks if min(h.end, end) > max(h.start, start)),
            }
    return {"span_tokens": chunk_tokens(item.text)}


# ------------------------------------------------------------------ the run's totals


def _outside(case: CaseResult) -> str:
    return UNANSWERABLE if case.unanswerable else NO_RELEVANCE


def _counts(cases: Sequence[CaseResult], stage_of: Callable[[CaseResult], str | None]) -> DiagnosisCounts:
    stages = Counter(s for case in cases if (s := stage_of(case)) is not None)
    return DiagnosisCounts(found=stages.pop(FOUND, 0), lost={s: stages[s] for s in STAGES if stages[s]})


def _at(k: int) -> Callable[[CaseResult], str | None]:
    return lambda case: case.lost_at_k.get(k)


def _headline(case: CaseResult) -> str:
    return case.lost_at_k.get(case.top_k, FOUND)


def _groups(cases: Sequence[CaseResult]) -> dict[str, dict[str, DiagnosisCounts]]:
    keys: dict[str, Callable[[CaseResult], str | None]] = {
        "type": lambda case: case.type or "(none)",
        "document": lambda case: case.doc_scope[0] if case.doc_scope else None,
    }
    out: dict[str, dict[str, DiagnosisCounts]] = {}
    for name, key in keys.items():
        buckets: dict[str, list[CaseResult]] = defaultdict(list)
        for case in cases:
            if (value := key(case)) is not None:
                buckets[value].append(case)
        out[name] = {value: _counts(group, _headline) for value, group in sorted(buckets.items())}
    return out


def answer_rule(cases: Sequence[CaseResult]) -> str | None:
    """What judged the answers of ``cases`` at the answer stage, each rule named once (the judge, or
    a deterministic answer metric and its threshold); None: no answer is scored."""
    rules = dict.fromkeys(
        v[0] for case in cases if case.answer is not None and (v := answer_verdict(case.metrics, case.answer.answerer))
    )
    return ", ".join(rules) if rules else None


def diagnose(cases: Sequence[CaseResult]) -> Diagnosis | None:
    """Where ``cases`` were lost, at their top_k and at every depth they were served; None when no
    case is in the funnel (none is answerable with relevance information)."""
    inside = [case for case in cases if case.lost_at_k]
    if not inside:
        return None
    head = _counts(inside, _headline)
    depths = sorted({k for case in inside for k in case.lost_at_k})
    return Diagnosis(
        k=Counter(case.top_k for case in inside).most_common(1)[0][0],
        cases=len(inside),
        found=head.found,
        lost=head.lost,
        excluded=dict(Counter(_outside(case) for case in cases if not case.lost_at_k)),
        by_k={k: _counts(inside, _at(k)) for k in depths},
        groups=_groups(inside),
        answer_rule=answer_rule(inside),
        answer_kinds=dict(Counter(answer_loss_kind(c.metrics) for c in inside if _headline(c) == ANSWER)),
        correct_without_context=sum(case.correct_without_context for case in inside),
    )
