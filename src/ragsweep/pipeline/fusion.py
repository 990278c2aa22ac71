"""Pathway's hybrid index with exact RRF ties broken deterministically.

Pathway's ``HybridIndex`` fuses its retrievers by reciprocal rank fusion,
score(d) = sum_i 1 / (k + rank_i(d)), then sorts by that score alone and keeps the
first ``number_of_matches``. RRF scores tie exactly and often (every chunk ranked
r-th by one retriever only scores 1/(k + r)), and Pathway breaks those ties by
internal row keys that include the query's id: the same question served twice
can get different top-k lists, and a case's score changes with its position in
a batch. Measured on cuad-mini: 16 identical concurrent hybrid k=1 requests to a
``DocumentStoreServer`` returned one chunk 9 times and another 7 times.

:class:`HybridIndexFactory` here is Pathway's, with two changes: rows are ordered by
(-score, best rank in any retriever, index of that retriever), a key that is unique
per chunk (two chunks with the same best rank in the same retriever are the same
chunk); and a chunk's RRF terms are summed exactly rounded (``math.fsum``), so the sum
does not depend on the order Pathway gathers them in. Fusion and the cut are Pathway's;
only the order among exactly equal scores is fixed. A pipeline YAML names it as
``!ragsweep.pipeline.fusion.HybridIndexFactory``, so an in-process evaluation and a server
built from the same file serve the same lists.

The ranks it fuses are stable too: ragsweep's ``DocumentStore`` wraps each sub-retriever in
:mod:`ragsweep.pipeline.stable_order` (equal BM25 or KNN scores ordered by document id and
offset, not by where Pathway's index holds the chunks), and builds this fusion for a
Pathway ``HybridIndexFactory`` as well.

``$rrf_k``, with the retrieval knobs, is declared in :mod:`ragsweep.pipeline.retrieval_knobs` (Pathway-free).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pathway.internals as pw
from pathway.stdlib.indexing import hybrid_index as _pathway_hybrid
from pathway.stdlib.indexing.colnames import _INDEX_REPLY, _MATCHED_ID, _QUERY_ID, _SCORE
from pathway.stdlib.indexing.data_index import InnerIndex

_TIE = "_pw_ragsweep_tie"


@pw.udf(deterministic=True)
def _rrf_sum(terms: tuple) -> float:
    """A chunk's RRF terms summed exactly rounded, so in whatever order Pathway gathered them
    (a plain float sum of three or more terms can differ in its last bit by order)."""
    return math.fsum(terms)


class HybridIndex(_pathway_hybrid.HybridIndex):
    """Pathway's RRF hybrid index; exact score ties ordered by (best rank, retriever index)."""

    def _combine_results(
        self,
        query_retriever: Callable[[InnerIndex], pw.Table],
        query_table: pw.Table,
        number_of_matches: pw.ColumnExpression | int,
        *,
        as_of_now: bool,
    ) -> pw.Table:
        @pw.udf(deterministic=True)
        def enumerate_results(results: list[tuple[pw.Pointer, float]]) -> list[tuple[int, pw.Pointer]]:
            return [(i, x[0]) for i, x in enumerate(results, start=1)]

        results = pw.Table.concat_reindex(
            *(
                self._single_retriever(query_retriever, enumerate_results, i, r, as_of_now)
                for i, r in enumerate(self.retrievers)
            )
        )
        return self._limit(self._fuse(results), query_table, number_of_matches, as_of_now)

    def _single_retriever(
        self,
        query_retriever: Callable[[InnerIndex], pw.Table],
        enumerate_results: Callable,
        index: int,
        retriever: InnerIndex,
        as_of_now: bool,
    ) -> pw.Table:
        """One retriever's matches, one row each: its RRF term and its tie key."""
        n_retrievers = len(self.retrievers)
        results = (
            query_retriever(retriever)
            .select(**{_INDEX_REPLY: enumerate_results(pw.this[_INDEX_REPLY]), _QUERY_ID: pw.this.id})
            .flatten(pw.this[_INDEX_REPLY])
            .select(
                **{
                    _MATCHED_ID: pw.this[_INDEX_REPLY].get(1),
                    _SCORE: 1 / (self.k + pw.this[_INDEX_REPLY].get(0)),
                    _QUERY_ID: pw.this[_QUERY_ID],
                    # rank-major, retriever-minor: the smallest is the best rank, first retriever first
                    _TIE: pw.this[_INDEX_REPLY].get(0) * n_retrievers + index,
                }
            )
        )
        if as_of_now:
            results = results._forget_immediately()
        return results

    @staticmethod
    def _fuse(results: pw.Table) -> pw.Table:
        """Per query, the matches by (-RRF score, best tie key), as a tuple of (id, score)."""
        removed_duplicates = (
            results.groupby(results[_QUERY_ID], results[_MATCHED_ID])
            .reduce(
                pw.this[_QUERY_ID],
                pw.this[_MATCHED_ID],
                _pw_ragsweep_terms=pw.reducers.tuple(pw.this[_SCORE]),
                **{_TIE: pw.reducers.min(pw.this[_TIE])},
            )
            .select(
                pw.this[_QUERY_ID],
                pw.this[_MATCHED_ID],
                pw.this[_TIE],
                **{_SCORE: _rrf_sum(pw.this._pw_ragsweep_terms)},
            )
            .with_columns(_pw_groupby_sort_key=pw.make_tuple(-pw.this[_SCORE], pw.this[_TIE]))
        )
        return removed_duplicates.groupby(
            pw.this[_QUERY_ID], sort_by=pw.this._pw_groupby_sort_key, id=pw.this[_QUERY_ID]
        ).reduce(**{_INDEX_REPLY: pw.reducers.tuple(pw.make_tuple(pw.this[_MATCHED_ID], pw.this[_SCORE]))})

    @staticmethod
    def _limit(
        grouped_by_query: pw.Table,
        query_table: pw.Table,
        number_of_matches: pw.ColumnExpression | int,
        as_of_now: bool,
    ) -> pw.Table:
        """The first ``number_of_matches`` of each query's fused matches (Pathway's cut)."""

        @pw.udf(deterministic=True)
        def limit_results(results: tuple, count: int) -> tuple:
            return results[:count]

        if isinstance(number_of_matches, pw.ColumnExpression):
            number_of_matches_table = query_table.select(_pw_number_of_matches=number_of_matches)
            if as_of_now:
                number_of_matches_table = number_of_matches_table._forget_immediately()
            grouped_by_query.promise_universe_is_subset_of(number_of_matches_table)
            number_of_matches = number_of_matches_table.restrict(grouped_by_query)._pw_number_of_matches

        limited_results = grouped_by_query.select(
            **{_INDEX_REPLY: limit_results(pw.this[_INDEX_REPLY], number_of_matches)}
        )
        if as_of_now:
            limited_results = limited_results.filter_out_results_of_forgetting(ensure_consistency=False)
        return limited_results


class HybridIndexFactory(_pathway_hybrid.HybridIndexFactory):
    """Pathway's ``HybridIndexFactory`` building the tie-breaking :class:`HybridIndex`."""

    def build_inner_index(self, data_column: pw.ColumnReference, metadata_column: pw.ColumnExpression | None = None):
        retrievers = [f.build_inner_index(data_column, metadata_column) for f in self.retriever_factories]
        return HybridIndex(retrievers, self.k)
