"""A sweep does nothing twice: parse once, embed each distinct text once, one index
run per (chunking, retriever); a repeated sweep does no work; a resumed one
recomputes no finished configuration."""

import csv
import json
from collections import Counter

import pytest

from support import MINI as DATASET
from support import ROOT

LIMIT = 6

GRID = """\
grid:
  chunking:
    - {min_tokens: 200, max_tokens: 400}
    - {min_tokens: 250, max_tokens: 600}
  top_k: [1, 3]
  retriever_mode: [bm25, hybrid]
baseline: {min_tokens: 250, max_tokens: 600, top_k: 3, retriever_mode: hybrid}
objectives: [recall@k, mrr@k]
ks: [1, 3]
"""


@pytest.fixture
def counters(tmp_path, monkeypatch):
    """Fresh caches, and counters on parsing, embedding and index runs."""
    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    import ragsweep.pipeline.corpus as corpus_mod
    import ragsweep.pipeline.embedding as emb_mod
    from ragsweep.pipeline.store import RagStore

    counts = {"parsed": Counter(), "encoded": Counter(), "runs": 0}

    original_parse_corpus = corpus_mod.parse_corpus

    def counting_parse_corpus(docs_dir, *args, **kwargs):
        inner = kwargs.pop("parse_fn", corpus_mod.docling_parse)

        def parse_fn(data, fmt, name, standard_pdf):
            counts["parsed"][name] += 1
            return inner(data, fmt, name, standard_pdf)

        return original_parse_corpus(docs_dir, *args, parse_fn=parse_fn, **kwargs)

    monkeypatch.setattr(corpus_mod, "parse_corpus", counting_parse_corpus)
    # where the sweep's parse stage calls it (imported by name there)
    monkeypatch.setattr("ragsweep.pipeline.retrieval.parse_corpus", counting_parse_corpus)

    original_loader = emb_mod.load_sentence_transformer

    class CountingModel:
        def __init__(self, model):
            self._model = model

        def encode(self, texts, *args, **kwargs):
            counts["encoded"].update(texts)
            return self._model.encode(texts, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(self._model, name)

    monkeypatch.setattr(emb_mod, "load_sentence_transformer", lambda name: CountingModel(original_loader(name)))

    original_run = RagStore.run

    def counting_run(self, *args, **kwargs):
        counts["runs"] += 1
        return original_run(self, *args, **kwargs)

    monkeypatch.setattr(RagStore, "run", counting_run)
    return counts


def test_sweep_does_no_work_twice(tmp_path, counters):
    from ragsweep.commands.sweep import SweepOptions, run_sweep
    from ragsweep.datasets.loader import load_dataset
    from ragsweep.pipeline.chunking import OffsetTokenCountSplitter

    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID)
    out = tmp_path / "runs"

    def options(**kw):
        return SweepOptions(
            pipeline=str(ROOT / "pipelines" / "default.yaml"),
            dataset=str(DATASET),
            grid=str(grid),
            limit=LIMIT,
            out=str(out),
            progress=False,
            **kw,
        )

    # ---- first sweep: 8 configurations, 4 index runs
    sweep_dir, report = run_sweep(options(name="first"))
    docs = sorted(p.name for p in (DATASET / "docs").iterdir())
    assert sorted(counters["parsed"]) == docs
    assert set(counters["parsed"].values()) == {1}, counters["parsed"]  # each document parsed once
    assert counters["runs"] == 4  # one per (chunking, retriever): 2 x 2
    assert len(report.configs) == 8

    # each distinct text embedded once, and exactly the distinct chunk texts + questions
    encoded = counters["encoded"]
    assert encoded and max(encoded.values()) == 1, [t[:40] for t, n in encoded.items() if n > 1]
    from ragsweep.pipeline.corpus import parse_corpus

    corpus = parse_corpus(DATASET / "docs")
    expected = set()
    for mn, mx in [(200, 400), (250, 600)]:
        splitter = OffsetTokenCountSplitter(min_tokens=mn, max_tokens=mx, encoding_name="cl100k_base")
        expected |= {piece for d in corpus.documents for piece, _ in splitter.chunk(d.text)}
    cases = list(load_dataset(str(DATASET)).cases)[:LIMIT]
    expected |= {c.question for c in cases}  # the KNN side embeds the question as it is
    assert set(encoded) - {"."} == expected  # "." at most: a dimension probe
    assert report.manifest.embedded_texts_this_run == sum(encoded.values())
    counters["parsed"].clear()

    # ---- report files
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    for key in ("best", "pareto"):
        assert sweep[key], key
    for row in sweep["configs"]:
        for key in ("intervals", "p_values", "p_adjusted", "significant"):
            assert key in row, key
    assert any(p is not None for row in sweep["configs"] for p in row["p_values"].values())
    with (sweep_dir / "sweep.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 8

    # ---- an identical second sweep: nothing parsed, nothing embedded
    encoded_before, runs_before = sum(encoded.values()), counters["runs"]
    _, report2 = run_sweep(options(name="second"))
    assert sum(counters["parsed"].values()) == 0
    assert sum(encoded.values()) == encoded_before
    assert report2.manifest.embedded_texts_this_run == 0
    assert counters["runs"] - runs_before == 4

    # ---- resume: drop one finished configuration; only its index group reruns, nothing else is rewritten
    configs = sorted((sweep_dir / "configs").iterdir())
    victim = configs[0]
    (victim / "result.json").unlink()
    others = {p.name: (p / "result.json").stat().st_mtime_ns for p in configs[1:]}
    runs_before = counters["runs"]
    _, report3 = run_sweep(options(resume=str(sweep_dir)))
    assert counters["runs"] - runs_before == 1
    assert (victim / "result.json").exists()
    assert {p.name: (p / "result.json").stat().st_mtime_ns for p in configs[1:]} == others
    assert len(report3.configs) == 8
    # resuming a complete sweep: no index run at all
    runs_before = counters["runs"]
    run_sweep(options(resume=str(sweep_dir)))
    assert counters["runs"] == runs_before
