"""``--pathway-threads N`` (issue 13): index, retrieve, eval and sweep set ``PATHWAY_THREADS``
before ``pw.run`` (which reads it at every run), and more workers give the same hits."""

from __future__ import annotations

import os

import pytest

from ragsweep import cli


@pytest.mark.parametrize("command", ["index", "retrieve", "eval", "sweep"])
def test_the_option_sets_pathway_threads_before_the_command_runs(monkeypatch, command):
    monkeypatch.delenv("PATHWAY_THREADS", raising=False)  # restored after the test
    seen = {}

    def fake(args):
        seen["threads"] = os.environ.get("PATHWAY_THREADS")
        return 0

    monkeypatch.setattr(cli, f"cmd_{command}", fake)
    required = {
        "index": ["--docs", "d"],
        "retrieve": ["--docs", "d", "q"],
        "eval": ["--dataset", "x"],
        "sweep": ["--dataset", "x", "--grid", "g"],
    }[command]
    assert cli.main([command, "--pathway-threads", "2", *required]) == 0
    assert seen["threads"] == "2"
    monkeypatch.setenv("PATHWAY_THREADS", "3")
    assert cli.main([command, *required]) == 0
    assert seen["threads"] == "3"  # without the option, the environment's value stands


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_thread_count_is_refused(value, capsys):
    with pytest.raises(SystemExit) as caught:
        cli.build_parser().parse_args(["index", "--docs", "d", "--pathway-threads", value])
    assert caught.value.code == 2
    assert f"--pathway-threads: must be a whole number of threads >= 1, got {value!r}" in capsys.readouterr().err


def test_two_workers_serve_the_same_hits_as_one(monkeypatch, tmp_path, default_pipeline):
    """Real contract text (chunks that score exactly alike, cut and ordered the same by one
    worker or two: tests/test_same_lists.py). Tantivy's BM25 scores differ run to run in the
    last float32 digit, with one worker as with two: scores are compared to 1e-5."""
    import json
    import shutil
    from pathlib import Path

    from ragsweep.pipeline.config import PipelineConfig
    from ragsweep.pipeline.corpus import parse_corpus
    from ragsweep.pipeline.store import RagStore

    mini = Path(__file__).resolve().parent.parent / "datasets" / "cuad-mini"
    docs = tmp_path / "docs"
    docs.mkdir()
    for path in sorted((mini / "docs").glob("LUCIDINC*.txt")):
        shutil.copy(path, docs / path.name)
    corpus = parse_corpus(docs, progress=False)
    questions = sorted({json.loads(line)["question"] for line in (mini / "cases.jsonl").read_text().splitlines()})
    config = PipelineConfig.load(default_pipeline, {"retriever_mode": "hybrid"})

    def hits(threads: str):
        monkeypatch.setenv("PATHWAY_THREADS", threads)
        return RagStore(config, corpus).retrieve(questions, k=5)

    one, two = hits("1"), hits("2")
    assert len(questions) == 41 and all(one)
    assert [[(h.doc_id, h.start, h.end, h.rank) for h in hs] for hs in two] == [
        [(h.doc_id, h.start, h.end, h.rank) for h in hs] for hs in one
    ]
    assert all(abs(a.score - b.score) <= 1e-5 * max(1.0, abs(a.score)) for x, y in zip(one, two) for a, b in zip(x, y))
