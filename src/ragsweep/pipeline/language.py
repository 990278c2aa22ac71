"""Is the corpus written in a script the pipeline cannot search?

Chinese and Japanese write words without spaces. Tantivy's default tokenizer (Pathway's
``TantivyBM25Factory``) makes one token of a run of CJK characters and drops runs of 14 or more
(40+ bytes), and English-only embedders (``all-MiniLM-L6-v2``) place such text almost at random:
``pipelines/default.yaml`` on a Chinese corpus finds little, yet prints a table like any other.
:func:`language_warning` says so once, before any number, naming the pipeline that handles it.
A pipeline with ragsweep's segmented BM25 (:mod:`ragsweep.pipeline.cjk`) or an embedder not known
to be English-only is taken to handle it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragsweep.datasets.schema import Case
    from ragsweep.pipeline.config import PipelineConfig
    from ragsweep.pipeline.corpus import Corpus

CJK_PIPELINE = "pipelines/chinese.yaml"
SAMPLE_CHARS = 2000  # of each text: enough to tell its script, bounded for long documents
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")  # kana and Han ideographs
# sentence-transformers and other model ids trained on English text only
_ENGLISH_ONLY = re.compile(
    r"(^|[/:])(all-|multi-qa-|msmarco-|nli-|stsb-|paraphrase-(?!multilingual)|mxbai-embed-|gist-)"
    r"|[-_]en([-_.]|$)",
    re.IGNORECASE,
)


def is_cjk_text(text: str) -> bool:
    """Are most letters of ``text`` (its first :data:`SAMPLE_CHARS` characters) Chinese or Japanese?"""
    sample = text[:SAMPLE_CHARS]
    letters = sum(ch.isalpha() for ch in sample)
    return letters > 0 and 2 * len(_CJK.findall(sample)) > letters


def mostly_cjk(texts: Iterable[str]) -> bool:
    """Are most of ``texts`` that hold a letter Chinese or Japanese text?"""
    flags = [is_cjk_text(t) for t in texts if any(ch.isalpha() for ch in t[:SAMPLE_CHARS])]
    return 2 * sum(flags) > len(flags)


def english_only(model_id: str) -> bool:
    return bool(_ENGLISH_ONLY.search(model_id))


def _factories(factory: Any) -> Iterable[Any]:
    """``factory`` and every factory it fuses or wraps."""
    yield factory
    for inner in getattr(factory, "retriever_factories", None) or []:
        yield from _factories(inner)
    if getattr(factory, "inner", None) is not None:
        yield from _factories(factory.inner)


def _model_id(embedder: Any) -> str | None:
    for name in ("embedder_id", "model_name", "model"):
        value = getattr(embedder, name, None)
        if isinstance(value, str):
            return value
    return None


def unsearchable_parts(factory: Any) -> list[str] | None:
    """What of this retriever factory cannot search Chinese or Japanese text; None when some part can
    (ragsweep's segmented BM25, or an embedder not known to be English-only)."""
    # deferred: Pathway only when a pipeline is checked
    from pathway.stdlib.indexing import TantivyBM25Factory

    # deferred: the CJK factory imports Pathway
    from ragsweep.pipeline.cjk import SegmentedTantivyBM25Factory

    parts = []
    for f in _factories(factory):
        if isinstance(f, SegmentedTantivyBM25Factory):
            return None
        if isinstance(f, TantivyBM25Factory):
            parts.append(
                f"its BM25 ({type(f).__name__}) makes one token of each run of CJK characters, and drops runs of 14+"
            )
        embedder = getattr(f, "embedder", None)
        if embedder is not None:
            model = _model_id(embedder)
            if model is None or not english_only(model):
                return None
            parts.append(f"its embedder {model.rsplit(':', 1)[-1]} is English-only")
    return parts or None


def _cjk_texts(questions: Iterable[str], documents: Iterable[str]) -> str | None:
    """Which texts are mostly Chinese or Japanese: "questions", "documents", or None."""
    return "questions" if mostly_cjk(questions) else "documents" if mostly_cjk(documents) else None


def language_warning(config: PipelineConfig, questions: Iterable[str], documents: Iterable[str]) -> str | None:
    """One line when most questions or documents are Chinese or Japanese and the pipeline cannot search
    them, naming the shipped pipeline that can; None otherwise (the pipeline is built only then)."""
    which = _cjk_texts(questions, documents)
    if which is None:
        return None
    parts = unsearchable_parts(config.build().retriever_factory)
    if parts is None:
        return None
    return (
        f"warning: most {which} are Chinese or Japanese, which {config.path} cannot search ({'; '.join(parts)}): "
        f"its numbers are not those of a pipeline that can; {CJK_PIPELINE} can (segmented BM25, a multilingual embedder)"
    )


def warn_unsearchable_language(config: PipelineConfig, cases: Sequence[Case], corpus: Corpus) -> None:
    """Print :func:`language_warning` for an evaluation's questions and parsed documents, if any."""
    line = language_warning(config, (c.question for c in cases), (d.text for d in corpus.documents))
    if line is not None:
        print(line, file=sys.stderr)


def sweep_language_warning(
    configs: Mapping[str, PipelineConfig], questions: Iterable[str], documents: Iterable[str]
) -> str | None:
    """:func:`language_warning` for a sweep: one line naming the configurations that cannot search the
    questions or documents (each index's retriever built once, and only when the texts are CJK)."""
    which = _cjk_texts(questions, documents)
    if which is None:
        return None
    by_index: dict[str, list[str] | None] = {}
    for config in configs.values():
        if config.index_key not in by_index:
            by_index[config.index_key] = unsearchable_parts(config.build().retriever_factory)
    cannot = [cid for cid, config in configs.items() if by_index[config.index_key] is not None]
    if not cannot:
        return None
    parts = dict.fromkeys(part for found in by_index.values() for part in found or [])
    named = ", ".join(cannot[:5]) + (f" ... (+{len(cannot) - 5})" if len(cannot) > 5 else "")
    return (
        f"warning: most {which} are Chinese or Japanese, which {len(cannot)} of {len(configs)} configurations "
        f"cannot search ({'; '.join(parts)}): {named}: their numbers are not those of a pipeline that can; "
        f"{CJK_PIPELINE} can (segmented BM25, a multilingual embedder)"
    )
