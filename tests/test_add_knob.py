"""How to add a knob: declared here alone (``ragsweep.pipeline.knobs.declare``), a pipeline that hands it to
its splitter follows it through ``--set``: the chunks, the chunking and index keys and the served lists
change with it, and a bad value is refused before any work with the knob's own message and domain. A knob
ragsweep applies itself is in the keys of the stage it marks, and only there.

Real Pathway and tantivy over three small text files (BM25: no embedder to load)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsweep.cli import main
from ragsweep.core.knob import Knob
from ragsweep.pipeline import knobs
from ragsweep.pipeline.config import PipelineConfig, parse_overrides
from support import MINI, PIPELINE

# a splitter argument as a knob of its own: the most tokens of a chunk, within a range a search may try
CHUNK_TOKENS = Knob(
    name="chunk_tokens",
    kind="int",
    low=8,
    high=400,
    default=30,
    message="must be an integer from 8 to 400 (the most tokens of a chunk)",
    affects="chunks",
)
TEXTS = {
    "lease.txt": "The tenant pays rent on the first day of each month. Repairs are the landlord's duty. " * 6,
    "supply.txt": "This supply agreement replaces any earlier lease of equipment between the parties. " * 6,
    "rust.txt": "The borrow checker makes sure every value has a single owner at a time. " * 6,
}
QUESTIONS = ("when is rent paid", "who owns a value")


@pytest.fixture(scope="module")
def declared() -> Iterator[Knob]:
    knobs.declare(CHUNK_TOKENS)
    yield CHUNK_TOKENS
    knobs.withdraw(CHUNK_TOKENS.name)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> Path:
    """The default pipeline whose splitter takes ``$chunk_tokens`` as its ``max_tokens``."""
    text = PIPELINE.read_text()
    wired = text.replace("  max_tokens: $max_tokens\n", "  max_tokens: $chunk_tokens\n")
    assert wired != text
    path = tmp_path_factory.mktemp("knob") / "pipeline.yaml"
    path.write_text(wired.replace("$max_tokens: 600\n", "$max_tokens: 600\n$chunk_tokens: 30\n"))
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from ragsweep.pipeline.corpus import parse_corpus

    docs = tmp_path_factory.mktemp("knob-docs")
    for name, text in TEXTS.items():
        (docs / name).write_text(text)
    return parse_corpus(docs, cache_dir=tmp_path_factory.mktemp("knob-parse-cache"))


def _load(pipeline: Path, value: str) -> PipelineConfig:
    overrides = parse_overrides([f"chunk_tokens={value}", "retriever_mode=bm25", "min_tokens=5"])
    return PipelineConfig.load(pipeline, overrides)


def test_the_declared_knob_is_data_a_search_can_read(declared):
    assert declared.name in knobs.knobs_affecting("chunks")
    assert declared.domain() == {"integer": True, "low": 8, "high": 400}
    assert knobs.PipelineVariables.model_validate({"chunk_tokens": 12}).model_dump()["chunk_tokens"] == 12


def test_every_declaration_is_read_without_pathway():
    """What a search reads (each knob's domain and stage) imports no Pathway."""
    script = (
        "import json, sys\n"
        "from ragsweep.pipeline.knobs import KNOBS\n"
        "print(json.dumps([sorted({k.affects for k in KNOBS}), 'pathway' in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    stages, pathway = json.loads(done.stdout)
    assert not pathway and {"chunks", "index", "query", "answer"} <= set(stages)


def test_the_chunks_the_keys_and_the_served_lists_follow_the_knob(declared, pipeline, corpus):
    from ragsweep.pipeline.store import Query, RagStore

    small, large = _load(pipeline, "12"), _load(pipeline, "60")
    assert small.chunking_key != large.chunking_key and small.index_key != large.index_key
    runs = {
        size: RagStore(config, corpus).run([Query(q, 1) for q in QUESTIONS])
        for size, config in ((12, small), (60, large))
    }
    for size, run in runs.items():
        assert run.chunks and max(c.tokens for c in run.chunks) <= size
    assert len(runs[12].chunks) > len(runs[60].chunks)
    served = {size: [[h.text for h in hits] for hits in run.hits] for size, run in runs.items()}
    assert served[12] != served[60]
    assert all(len(a[0]) < len(b[0]) for a, b in zip(served[12], served[60]))


@pytest.mark.parametrize("value", ["3", "401", "many"])
def test_a_bad_value_is_refused_with_the_knobs_message_before_any_work(declared, pipeline, value, tmp_path, capsys):
    args = ["eval", "--pipeline", str(pipeline), "--dataset", str(MINI), "--out", str(tmp_path / "runs")]
    code = main([*args, "--name", "knob", "--set", f"chunk_tokens={value}"])
    err = capsys.readouterr().err
    assert code == 2
    shown = repr(value) if value == "many" else value
    assert f"$chunk_tokens = {shown}: must be an integer from 8 to 400 (the most tokens of a chunk)" in err
    assert "parse" not in err and not (tmp_path / "runs" / "knob").exists()


def test_a_name_taken_is_refused(declared):
    with pytest.raises(ValueError, match="knobs declared already: chunk_tokens, top_k"):
        knobs.declare(declared, CHUNK_TOKENS.model_copy(update={"name": "top_k"}))


def test_a_knob_ragsweep_applies_is_in_the_keys_of_the_stage_it_marks(tmp_path):
    """No component takes these two: the keys follow their marks alone (``knobs_affecting``)."""
    marked = Knob(
        name="chunk_casing",
        kind="str",
        choices=("keep", "lower"),
        message="must be keep or lower",
        affects="chunks",
        applied_by="ragsweep",
    )
    later = Knob(
        name="probe_depth", kind="int", low=1, message="must be an integer >= 1", affects="query", applied_by="ragsweep"
    )
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE.read_text() + "\n$chunk_casing: keep\n$probe_depth: 1\n")
    knobs.declare(marked, later)
    try:
        keys = {
            name: (config.chunking_key, config.index_key, config.hash)
            for name, config in (
                ("base", PipelineConfig.load(path)),
                ("cased", PipelineConfig.load(path, parse_overrides(["chunk_casing=lower"]))),
                ("deeper", PipelineConfig.load(path, parse_overrides(["probe_depth=3"]))),
            )
        }
    finally:
        knobs.withdraw(marked.name, later.name)
    assert keys["base"][0] != keys["cased"][0] and keys["base"][1] != keys["cased"][1]
    assert keys["deeper"][:2] == keys["base"][:2]
    assert len({config_hash for _, _, config_hash in keys.values()}) == 3
