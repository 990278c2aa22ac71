"""Evaluation datasets: canonical case schema, loaders, validation and importers.

Public API::

    from ragsweep.datasets import load_dataset, load_cases, validate_dataset
    ds = load_dataset("datasets/cuad", split="dev")   # Dataset(name, root, docs_dir, cases, relevance, ...)
    problems = validate_dataset("datasets/cuad")       # [] when valid

Importers (each also a CLI via ``python -m``): :mod:`.cuad`, :mod:`.pathway_tsv`,
:mod:`.trec` (Cranfield); :mod:`.build` regenerates the shipped datasets.
"""

from .loader import DatasetError, Problem, load_cases, load_dataset, read_cases, write_cases
from .schema import Case, Dataset, Evidence, RelevanceConfig, RelevantId, list_doc_ids

_LAZY = {"validate_dataset", "validate_cases_file", "validate_main"}


def __getattr__(name: str):  # lazy, so ``python -m ragsweep.datasets.validate`` imports it once
    if name in _LAZY:
        from . import validate

        return validate.main if name == "validate_main" else getattr(validate, name)
    raise AttributeError(name)


__all__ = [
    "Case",
    "Dataset",
    "DatasetError",
    "Evidence",
    "Problem",
    "RelevanceConfig",
    "RelevantId",
    "list_doc_ids",
    "load_cases",
    "load_dataset",
    "read_cases",
    "validate_cases_file",
    "validate_dataset",
    "validate_main",
    "write_cases",
]
