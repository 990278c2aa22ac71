"""Evaluation datasets: canonical case schema, loaders and importers.

Public API::

    from ragsweep.datasets import load_dataset, load_cases
    ds = load_dataset("datasets/cuad", split="dev")   # Dataset(name, root, docs_dir, cases, relevance, ...)
    clean_query("What?!")      # the question as the query parser gets it ("" = nothing to search)
    unscopable_reason("a`b")  # why a doc id cannot be in a doc_scope (None = it can)

A dataset's checks, on its own and against its parsed documents: :mod:`ragsweep.validate`.

Importers (each also a CLI via ``python -m``): :mod:`.cuad`, :mod:`.pathway_tsv`,
:mod:`.trec` (Cranfield); :mod:`.build` regenerates the shipped datasets.
"""

from .loader import (
    CasesFile,
    DatasetError,
    Problem,
    load_cases,
    load_dataset,
    read_cases,
    read_cases_file,
    resolve_doc_ids,
    write_cases,
)
from .pathway_limits import UNSCOPABLE_REASON, clean_query, unscopable_reason
from .schema import Case, Dataset, Evidence, RelevanceConfig, RelevantId, list_doc_ids

__all__ = [
    "UNSCOPABLE_REASON",
    "Case",
    "CasesFile",
    "Dataset",
    "DatasetError",
    "Evidence",
    "Problem",
    "RelevanceConfig",
    "RelevantId",
    "clean_query",
    "list_doc_ids",
    "load_cases",
    "load_dataset",
    "read_cases",
    "read_cases_file",
    "resolve_doc_ids",
    "unscopable_reason",
    "write_cases",
]
