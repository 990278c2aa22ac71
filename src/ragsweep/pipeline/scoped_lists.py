"""Every scoped list an exact index serves for a question, cut from one unscoped ask for all its matches.

Pathway answers a scoped query (a metadata filter) by searching the whole index and filtering what it
finds, doubling the depth until k chunks of the scope are left: a few milliseconds a query, most of the
retrieve stage when each of a dataset's questions is asked of each of its documents (CUAD: 41 questions
x 40 contracts, 1,640 scoped queries, ~10 s). For an exact index (Tantivy's BM25, brute-force KNN) a
scoped query served in ragsweep's stable order (:mod:`ragsweep.pipeline.stable_order`) is the stable
order of the scope's own matches, cut at k: the groups of equal scores form from the top, so the
first ``2k + 8`` the index is asked for, or every chunk when a tie reaches that depth, give the same
first k as all of the scope's matches. And an unscoped ask at the index's full depth finds every match
with the score a scoped search gives it. So a question asked with several scopes is asked once of each
exact index for all its matches, and each (scope, depth) list is cut from that answer: one sub-list per
retriever at the deepest depth, fused by RRF at each depth for a hybrid
(:func:`ragsweep.pipeline.fused_depths.fused_order`). The lists are made into JSON in the graph, as the
store makes its own (Pathway's JSON gives some floats back a bit off: the app's lists go through it
too); their items name chunks, whose text and metadata :mod:`ragsweep.pipeline.store` puts back.
tests/test_scoped_lists.py compares every list with the store asked query by query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, cast

from ragsweep.core.offline import ensure_offline

ensure_offline()

import pathway as pw  # noqa: E402
from pathway.stdlib.indexing.colnames import _SCORE  # noqa: E402
from pathway.stdlib.indexing.data_index import DataIndex  # noqa: E402

from ragsweep.pipeline.fused_depths import fused_order  # noqa: E402
from ragsweep.pipeline.stable_order import TieKey, ordered, tie_key  # noqa: E402

Match = tuple[str, float, TieKey]  # a chunk (its row id as text), its score, its tie key
Served = list[dict[str, Any]]  # a list as JSON items: {"chunk": row id as text, "dist": -score}


class Ask(NamedTuple):
    """A question's lists wanted for one scope (None: the whole index), at each of ``depths``; ``group``
    names them in the reply."""

    group: int
    scope: tuple[str, ...] | None
    depths: tuple[int, ...]


def by_document(ids: Sequence[Any], keys: Sequence[Sequence[Any]], scores: Sequence[float]) -> dict[str, list[Match]]:
    """An index's matches for one question, by the document of each (the tie key's first part: the
    chunk's ``doc_id``, what a scope filter tests)."""
    out: dict[str, list[Match]] = {}
    for chunk, key, score in zip(ids, keys, scores, strict=True):
        tie = (str(key[0]), int(key[1]), str(key[2]))
        out.setdefault(tie[0], []).append((str(chunk), float(score), tie))
    return out


def scoped_cut(matches: dict[str, list[Match]], scope: tuple[str, ...] | None, k: int) -> list[Match]:
    """What the index serves for a query of ``scope`` at depth ``k``, in served order: the stable order
    of the scope's matches, cut at k (scores of a group of equal ones served as the group's best)."""
    found = [m for doc in (scope if scope is not None else matches) for m in matches.get(doc, ())]
    keys = {chunk: key for chunk, _, key in found}
    _, reply = ordered(found, k, len(found) + 1)  # every match of the scope is here: the cut is final
    return [(str(chunk), score, keys[str(chunk)]) for chunk, score in reply]


def answer_lists(
    per_index: Sequence[dict[str, list[Match]]], asks: Sequence[Ask], rrf_k: float | None
) -> list[tuple[int, int, Served]]:
    """Each ask's list at each of its depths, as ``(group, depth, items)``: the index's own cut, or, for
    a hybrid (``rrf_k`` set), RRF over each sub-retriever's cut at the deepest depth."""
    out: list[tuple[int, int, Served]] = []
    for ask in asks:
        if rrf_k is None:
            (matches,) = per_index
            for depth in ask.depths:
                out.append((ask.group, depth, _items(scoped_cut(matches, ask.scope, depth))))
            continue
        deepest = max(ask.depths)
        subs = [[(chunk, key) for chunk, _, key in scoped_cut(m, ask.scope, deepest)] for m in per_index]
        for depth in ask.depths:
            out.append((ask.group, depth, _items(fused_order(subs, rrf_k, depth))))
    return out


def _items(ranked: Sequence[Match]) -> Served:
    """Served order: distance (the negated score), then the tie key, as the store sorts its reply."""
    return [{"chunk": chunk, "dist": -score} for chunk, score, _ in sorted(ranked, key=lambda m: (-m[1], m[2]))]


@pw.udf(deterministic=True)
def _tie(text: str, metadata: pw.Json | None) -> tuple[str, int, str]:
    return tie_key(text, metadata)


def answer_table(
    chunks: pw.Table,
    indexes: Sequence[Any],
    questions: pw.Table,
    asks: Mapping[int, Sequence[Ask]],
    rrf_k: float | None,
) -> pw.Table:
    """``(group, k, result)`` rows: every list of every question of ``questions`` (columns ``query``,
    the question, which each index takes as its own query path does: Pathway's Tantivy BM25 cleaned,
    a KNN as it is; and ``row``, whose lists ``asks`` names), from one ask of each of ``indexes`` (inner
    indexes built over ``chunks``' text and metadata) for all its matches."""
    keys = chunks.select(_pw_sl_id=pw.this.id, _pw_sl_key=_tie(pw.this.text, pw.this.metadata))
    size = keys.reduce(_pw_sl_size=pw.reducers.count()).with_columns(_pw_sl_one=0)
    asked = questions.with_columns(_pw_sl_one=0)
    asked = asked.asof_now_join(size, asked._pw_sl_one == size._pw_sl_one, id=asked.id).select(
        *pw.left, _pw_sl_depth=pw.right._pw_sl_size
    )
    replies = [_all_matches(keys, index, asked, j) for j, index in enumerate(indexes)]
    joined = replies[0]
    for j, reply in enumerate(replies[1:], start=1):
        joined = joined.join(reply, joined.id == reply.id, id=joined.id).select(
            *pw.left, *(pw.right[n] for n in _names(j))
        )

    def lists(row: int, *columns: tuple) -> list[tuple[int, int, pw.Json]]:
        per_index = [by_document(*columns[3 * j : 3 * j + 3]) for j in range(len(indexes))]
        return [(g, k, pw.Json(cast(list[Any], items))) for g, k, items in answer_lists(per_index, asks[row], rrf_k)]

    args = [pw.this[n] for j in range(len(indexes)) for n in _names(j)]
    flat = joined.select(at=pw.apply_with_type(lists, list[tuple[int, int, pw.Json]], pw.this.row, *args))
    flat = flat.flatten(pw.this.at)
    return flat.select(group=pw.this.at[0], k=pw.this.at[1], result=pw.this.at[2])


def _names(j: int) -> tuple[str, str, str]:
    return f"_pw_sl_ids{j}", f"_pw_sl_keys{j}", f"_pw_sl_scores{j}"


def _all_matches(keys: pw.Table, index: Any, asked: pw.Table, j: int) -> pw.Table:
    """Every match of ``index`` for each question (unscoped, at the index's full depth): ids, tie keys, scores."""
    found = DataIndex(keys, index).query_as_of_now(asked.query, number_of_matches=asked._pw_sl_depth)
    ids, tie_keys, scores = _names(j)
    return found.select(
        *pw.left,
        **{
            ids: pw.coalesce(pw.right._pw_sl_id, ()),
            tie_keys: pw.coalesce(pw.right._pw_sl_key, ()),
            scores: pw.coalesce(pw.right[_SCORE], ()),
        },
    )
