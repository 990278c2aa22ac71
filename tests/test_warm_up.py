"""A watch loads the parser, the embedding model and ragas while it waits, not in the first update."""

from __future__ import annotations

import sys

from ragsweep.evaluation.warm_up import warm_up
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import _converter
from ragsweep.pipeline.embedding import load_sentence_transformer
from support import ROOT


def test_warm_up_loads_what_a_changed_document_needs(tmp_path):
    config = PipelineConfig.load(ROOT / "pipelines" / "default.yaml")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Plain text needs no parser model.\n")
    (docs / "b.md").write_text("# Title\n\nA markdown document goes through Docling.\n")
    _converter.cache_clear()
    load_sentence_transformer.cache_clear()
    assert warm_up(config, str(docs), answer_metrics=True) == ["parser", "embedder", "ragas", "scipy"]
    assert _converter.cache_info().currsize == 1 and load_sentence_transformer.cache_info().currsize == 1
    assert "ragas" in sys.modules


def test_a_folder_of_text_files_needs_no_parser(tmp_path):
    config = PipelineConfig.load(ROOT / "pipelines" / "default.yaml")
    (tmp_path / "a.txt").write_text("text\n")
    assert warm_up(config, str(tmp_path), answer_metrics=False) == ["embedder", "scipy"]
