"""Chinese (and mixed Chinese/Latin) text for BM25 and for token-level answer metrics.

Why: Tantivy's default tokenizer, which Pathway's :class:`TantivyBM25Factory` uses and
gives no option to change, splits on non-alphanumeric characters only. A run of CJK
characters has none, so a whole Chinese sentence is *one* token, and its
``RemoveLongFilter`` (40 bytes) drops runs longer than 13 CJK characters (3 bytes each):
a Chinese corpus gets 0 hits.

:class:`SegmentedTantivyBM25Factory` indexes a *segmented copy* of each chunk (words cut by
rjieba, a Rust port of jieba with its built-in dictionary, joined by spaces) and segments
each query the same way. The copy only feeds the Tantivy index: rows keep their ids, so the
store returns the original chunk text, metadata and offsets. It works alone and inside
``HybridIndexFactory``, and from a pipeline file::

    $bm25: !ragsweep.pipeline.cjk.SegmentedTantivyBM25Factory {}

or, chosen by a ``$language`` knob (``en``: Pathway's plain factory; ``zh``: segmented)::

    $bm25: !ragsweep.pipeline.cjk.bm25_factory
      language: $language

:func:`tokenize` is the matching tokenizer for token F1 / exact match: ``en`` splits on
whitespace (what :mod:`ragsweep.metrics.answer` does), ``zh`` cuts with rjieba and drops
whitespace and punctuation tokens.

Segmentation modes: ``search`` (default; rjieba's ``cut_for_search``: the words plus the
dictionary words inside long ones, e.g. 保险公司 -> 保险 公司 保险公司, so a query word
matches a longer compound in a document and the reverse) or ``exact`` (``cut``: one
segmentation, no overlap).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import pathway as pw
from pathway.stdlib.indexing import TantivyBM25Factory
from pathway.stdlib.indexing.bm25 import TantivyBM25

from ragsweep.datasets.pathway_limits import clean_query

LANGUAGES = ("en", "zh")
SEGMENT_MODES = ("search", "exact")
Mode = Literal["search", "exact"]

_WORD = re.compile(r"\w", re.UNICODE)


@lru_cache(maxsize=1)
def _jieba():
    try:
        import rjieba
    except ImportError as err:  # pragma: no cover - rjieba is a dependency
        raise ImportError("Chinese segmentation needs rjieba: pip install rjieba") from err
    return rjieba


def _check_mode(mode: str) -> None:
    if mode not in SEGMENT_MODES:
        raise ValueError(f"segmentation mode {mode!r}: must be one of {', '.join(SEGMENT_MODES)}")


def segment_words(text: str, mode: Mode = "search") -> list[str]:
    """The words of ``text`` cut by rjieba; whitespace and tokens without a word
    character (punctuation, symbols) are dropped."""
    _check_mode(mode)
    jieba = _jieba()
    words = jieba.cut_for_search(text) if mode == "search" else jieba.cut(text)
    return [w.strip() for w in words if _WORD.search(w)]


def segment(text: str, mode: Mode = "search") -> str:
    """``text`` as words joined by single spaces: what the Tantivy index sees."""
    return " ".join(segment_words(text, mode))


# Tantivy's default tokenizer drops tokens of 40 UTF-8 bytes or more (RemoveLongFilter);
# a query of two or more such words, all dropped, ends the whole Pathway run with
# "Invalid query: Only excluding terms given" (one such word alone gives no hit).
TANTIVY_MAX_TOKEN_BYTES = 39


def segment_query(text: str, mode: Mode = "search") -> str:
    """A query segmented like the documents and made safe for Tantivy's query parser
    (:func:`ragsweep.datasets.pathway_limits.clean_query`: no syntax characters, boolean
    keywords lower-cased; words Tantivy would drop as too long are left out here, so a
    query of such words is empty and finds nothing instead of failing the run)."""
    words = clean_query(segment(text, mode)).split()
    return " ".join(w for w in words if len(w.encode("utf-8")) <= TANTIVY_MAX_TOKEN_BYTES)


# ------------------------------------------------------------------ BM25
@pw.udf(deterministic=True)
def _segment_search(text: str) -> str:
    return segment(text, "search")


@pw.udf(deterministic=True)
def _segment_exact(text: str) -> str:
    return segment(text, "exact")


@pw.udf(deterministic=True)
def _segment_query_search(text: str) -> str:
    return segment_query(text, "search")


@pw.udf(deterministic=True)
def _segment_query_exact(text: str) -> str:
    return segment_query(text, "exact")


_DOC_UDF = {"search": _segment_search, "exact": _segment_exact}
_QUERY_UDF = {"search": _segment_query_search, "exact": _segment_query_exact}


@dataclass(frozen=True)
class QueryMappedTantivyBM25(TantivyBM25):
    """Pathway's Tantivy BM25 index whose queries first go through :meth:`query_udf`: the BM25
    factory's own query path, so inside a hybrid only this side gets the changed query."""

    def query_udf(self) -> pw.UDF:
        raise NotImplementedError

    def query_as_of_now(
        self,
        query_column: pw.ColumnReference,
        number_of_matches: pw.ColumnExpression | int = 3,
        metadata_filter: pw.ColumnExpression | None = None,
    ) -> pw.Table:
        queries = query_column.table
        columns = {"_pw_bm25_query": self.query_udf()(query_column)}
        if isinstance(number_of_matches, pw.ColumnExpression):
            columns["_pw_bm25_k"] = number_of_matches
        if metadata_filter is not None:
            columns["_pw_bm25_filter"] = metadata_filter
        mapped = queries.select(**columns)  # same ids (and universe) as the queries
        return super().query_as_of_now(
            mapped._pw_bm25_query,
            number_of_matches=mapped._pw_bm25_k if "_pw_bm25_k" in columns else number_of_matches,
            metadata_filter=mapped._pw_bm25_filter if metadata_filter is not None else None,
        )


@dataclass(frozen=True)
class SegmentedTantivyBM25(QueryMappedTantivyBM25):
    """Pathway's Tantivy BM25 index over a segmented column; queries are segmented too.

    ``data_column`` is the segmented copy (same row ids as the chunks), so the matched ids
    are those of the original rows and ``DataIndex`` joins back the original text.
    """

    mode: str = "search"

    def query_udf(self) -> pw.UDF:
        return _QUERY_UDF[self.mode]


@dataclass
class SegmentedTantivyBM25Factory(TantivyBM25Factory):
    """:class:`~pathway.stdlib.indexing.TantivyBM25Factory` for Chinese text: the index
    holds rjieba-segmented copies of the chunks, queries are segmented the same way, the
    results are the original chunks.

    Args:
        ram_budget, in_memory_index: as Pathway's factory.
        mode: ``search`` (default: words and the dictionary words inside long ones) or
            ``exact`` (one segmentation).
    """

    mode: str = "search"

    def __post_init__(self) -> None:
        _check_mode(self.mode)
        _jieba()  # fail at build time, naming the package, not inside the graph run

    def build_inner_index(
        self,
        data_column: pw.ColumnReference,
        metadata_column: pw.ColumnExpression | None = None,
    ) -> TantivyBM25:
        columns = {"_pw_cjk_text": _DOC_UDF[self.mode](data_column)}
        if metadata_column is not None:
            columns["_pw_cjk_metadata"] = metadata_column
        segmented = data_column.table.select(**columns)  # select keeps the row ids
        return SegmentedTantivyBM25(
            segmented._pw_cjk_text,
            segmented._pw_cjk_metadata if metadata_column is not None else None,
            ram_budget=self.ram_budget,
            in_memory_index=self.in_memory_index,
            mode=self.mode,
        )


def bm25_factory(language: str = "en", mode: Mode = "search", **kwargs) -> TantivyBM25Factory:
    """The BM25 factory for a corpus language: ``en`` (Pathway's plain
    ``TantivyBM25Factory``) or ``zh`` (:class:`SegmentedTantivyBM25Factory`).
    ``kwargs`` (``ram_budget``, ``in_memory_index``) go to the factory."""
    language = check_language(language)
    if language == "zh":
        return SegmentedTantivyBM25Factory(mode=mode, **kwargs)
    return TantivyBM25Factory(**kwargs)


def check_language(language: str | None) -> str:
    """``None`` -> ``en``; anything but ``en`` / ``zh`` is a ``ValueError`` saying what is allowed."""
    if language is None:
        return "en"
    if language not in LANGUAGES:
        raise ValueError(f"language {language!r}: must be one of {', '.join(LANGUAGES)}")
    return language


# ------------------------------------------------------------------ answer metrics
def _is_punctuation(token: str) -> bool:
    return all(unicodedata.category(ch)[0] in "PSZC" for ch in token)


def tokenize(text: str, language: str | None = "en") -> list[str]:
    """Tokens for token F1 / exact match.

    ``en``: ``text.split()`` (what :func:`ragsweep.metrics.answer.token_f1` does after its
    SQuAD normalisation). ``zh``: rjieba's ``cut`` (one segmentation, so repeated words
    count once per occurrence, as for English), lower-cased, whitespace and punctuation
    tokens (ASCII or full-width: ，。？！、“”) dropped; Latin words and numbers inside
    Chinese text stay whole tokens.
    """
    if check_language(language) == "en":
        return text.split()
    return [w.lower() for w in _jieba().cut(text) if w.strip() and not _is_punctuation(w)]
