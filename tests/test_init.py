"""``ragsweep init``: the packaged pipeline and starter dataset written into a project, never over a file
without saying so; ``--pipeline``'s default in a project without ``pipelines/default.yaml``; a missing
pipeline file as one line from the command and the Python API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsweep.cli import main
from ragsweep.core.errors import ConfigError, RunError
from ragsweep.core.starter import DEFAULT_PIPELINE, packaged_dataset, packaged_pipeline, pipeline_path
from support import MINI, ROOT


def test_the_packaged_files_are_the_repository_s_default_pipeline_and_cuad_mini():
    assert packaged_pipeline().read_bytes() == (ROOT / DEFAULT_PIPELINE).read_bytes()
    starter = packaged_dataset()
    assert (starter / "cases.jsonl").read_bytes() == (MINI / "cases.jsonl").read_bytes()
    docs = sorted(p.name for p in (starter / "docs").iterdir())
    assert docs == sorted(p.name for p in (MINI / "docs").iterdir()) and len(docs) == 3
    for name in docs:
        assert (starter / "docs" / name).read_bytes() == (MINI / "docs" / name).read_bytes()
    assert "CC BY 4.0" in (starter / "README.md").read_text()


def test_init_writes_a_runnable_project_and_keeps_what_is_there(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "rag"]) == 0
    out = capsys.readouterr().out
    assert (
        "wrote    rag/pipeline.yaml" in out
        and "ragsweep eval --pipeline rag/pipeline.yaml --dataset rag/eval-set" in out
    )
    assert (tmp_path / "rag/pipeline.yaml").read_bytes() == packaged_pipeline().read_bytes()
    cases = (tmp_path / "rag/eval-set/cases.jsonl").read_text().splitlines()
    assert len(cases) == 123 and json.loads(cases[0])["doc_scope"]
    assert main(["validate", "--dataset", "rag/eval-set"]) == 0
    assert "rag/eval-set: no problems" in capsys.readouterr().out

    (tmp_path / "rag/pipeline.yaml").write_text("# mine\n")
    assert main(["init", "rag"]) == 0
    out = capsys.readouterr().out
    assert "kept     rag/pipeline.yaml (already there; --force overwrites it)" in out
    assert "7 file(s) already there were kept as they were" in out
    assert (tmp_path / "rag/pipeline.yaml").read_text() == "# mine\n"

    assert main(["init", "rag", "--force"]) == 0
    assert "replaced rag/pipeline.yaml" in capsys.readouterr().out
    assert (tmp_path / "rag/pipeline.yaml").read_bytes() == packaged_pipeline().read_bytes()


def test_init_empty_writes_the_skeleton_alone(tmp_path, capsys):
    assert main(["init", str(tmp_path / "rag"), "--empty"]) == 0
    dataset = tmp_path / "rag" / "eval-set"
    assert (dataset / "docs").is_dir() and not list((dataset / "docs").iterdir())
    assert (dataset / "cases.jsonl").read_text() == "" and "licence" in (dataset / "README.md").read_text()
    assert "relevance: evidence_offsets" in (dataset / "dataset.yaml").read_text()
    assert "next: put your documents in" in capsys.readouterr().out


def test_the_default_pipeline_name_falls_back_to_the_packaged_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert pipeline_path(DEFAULT_PIPELINE) == packaged_pipeline()
    assert pipeline_path("./pipelines/default.yaml") == packaged_pipeline()
    assert pipeline_path("rag/pipeline.yaml") == Path("rag/pipeline.yaml")  # any other name is the user's
    (tmp_path / "pipelines").mkdir()
    (tmp_path / DEFAULT_PIPELINE).write_text("$top_k: 3\n")
    assert pipeline_path(DEFAULT_PIPELINE) == Path(DEFAULT_PIPELINE)  # the project's own wins


def test_a_missing_pipeline_file_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"pipeline config 'nope.yaml' does not exist \(`ragsweep init DIR`"):
        from ragsweep.pipeline.config import PipelineConfig

        PipelineConfig.load("nope.yaml")

    assert main(["eval", "--pipeline", "nope.yaml", "--dataset", str(MINI)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragsweep: error: pipeline config 'nope.yaml' does not exist") and err.count("\n") == 1

    import ragsweep

    with pytest.raises(RunError, match="pipeline config 'nope.yaml' does not exist") as raised:
        ragsweep.evaluate("nope.yaml", MINI)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # one exception, not two
