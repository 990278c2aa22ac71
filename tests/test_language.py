"""A corpus in a script the pipeline cannot search is said once, before any number, naming
pipelines/chinese.yaml (ragsweep.pipeline.language)."""

from __future__ import annotations

import json

import pytest

from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.language import english_only, is_cjk_text, language_warning, mostly_cjk
from support import CHINESE, ZH
from support import PIPELINE as DEFAULT

ZH_QUESTIONS = [json.loads(line)["question"] for line in (ZH / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
EN_QUESTIONS = ["Which state's law governs the agreement?", "Who pays the royalties?"]


def test_script_of_a_text():
    assert is_cjk_text("大熊猫每天吃多少竹子？") and is_cjk_text("東京タワーはどこですか")
    assert not is_cjk_text("Which law governs?") and not is_cjk_text("123 ？！") and not is_cjk_text("")
    assert is_cjk_text("Pathway 的混合索引如何融合两个检索器的结果？")  # a Latin word in Chinese text
    assert not is_cjk_text("The word 熊猫 means panda in Chinese.")
    assert mostly_cjk(ZH_QUESTIONS) and not mostly_cjk(EN_QUESTIONS)
    assert not mostly_cjk(ZH_QUESTIONS[:1] + EN_QUESTIONS) and not mostly_cjk([])


def test_english_only_embedders():
    for model in ("sentence-transformers:all-MiniLM-L6-v2", "all-mpnet-base-v2", "BAAI/bge-small-en-v1.5"):
        assert english_only(model), model
    for model in ("use-multilingual", "paraphrase-multilingual-MiniLM-L12-v2", "BAAI/bge-m3", "text-embedding-3-small"):
        assert not english_only(model), model


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({}, ["all-MiniLM-L6-v2 is English-only", "TantivyBM25Factory"]),
        ({"retriever_mode": "knn"}, ["all-MiniLM-L6-v2 is English-only"]),
        ({"retriever_mode": "bm25"}, ["TantivyBM25Factory"]),
    ],
)
def test_the_default_pipeline_on_chinese_questions_is_named(overrides, named):
    line = language_warning(PipelineConfig.load(DEFAULT, overrides), ZH_QUESTIONS, [])
    assert line is not None and line.startswith("warning: most questions are Chinese or Japanese")
    assert all(part in line for part in named) and "pipelines/chinese.yaml" in line
    assert ("TantivyBM25Factory" in line) == ("TantivyBM25Factory" in named)


def test_chinese_documents_alone_are_enough():
    docs = [p.read_text(encoding="utf-8") for p in sorted((ZH / "docs").iterdir())]
    line = language_warning(PipelineConfig.load(DEFAULT, {"retriever_mode": "bm25"}), EN_QUESTIONS, docs)
    assert line is not None and "most documents are" in line


@pytest.mark.parametrize(
    ("pipeline", "overrides"),
    [
        (CHINESE, {}),
        (CHINESE, {"retriever_mode": "knn"}),
        (CHINESE, {"retriever_mode": "bm25"}),
        (DEFAULT, {"language": "zh"}),
    ],
)
def test_a_pipeline_that_searches_chinese_is_not_warned(pipeline, overrides):
    assert language_warning(PipelineConfig.load(pipeline, overrides), ZH_QUESTIONS, []) is None


def test_english_text_is_not_warned():
    assert language_warning(PipelineConfig.load(DEFAULT), EN_QUESTIONS, ["The parties agree to the terms."]) is None


def test_eval_says_it_once_before_the_numbers(tmp_path, capsys):
    from ragsweep.cli import main

    args = ["eval", "--pipeline", str(DEFAULT), "--dataset", str(ZH), "--set", "retriever_mode=bm25"]
    assert main([*args, "--limit", "4", "--workers", "1", "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err.count("pipelines/chinese.yaml") == 1 and "most questions are Chinese" in err
    assert "recall@5" in out and "pipelines/chinese.yaml" not in out
