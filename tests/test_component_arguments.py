"""The arguments of an app's components that decide what ragsweep scores, checked before any work.

- a splitter's ``max_tokens`` / ``min_tokens``, an index's ``dimensions``, an answerer's ``search_topk``,
  ``n_starting_documents``, ``factor``, ``max_iterations``: literal or ``$variable``, in ragsweep's own
  pipelines and in apps, and after ``--set <component>.<argument>=``: one line each, as the knobs';
- an adaptive answerer (``AdaptiveRAGQuestionAnswerer``) is scored at the depths it asks (2, 4, 8, 16), its
  first ask's depth the headline, unless ``--ks`` says otherwise;
- a hub model that is not on the machine is one line naming ``$embedder``, its class and the model id, rc 2,
  and no run folder;
- the documents are served under the path the app reads them from (its ``pw.io.fs.read`` folder as written).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pathway.xpacks.llm.splitters import TokenCountSplitter

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.served_paths import pathway_folder, served_path
from support import ROOT

RAGSWEEP = Path(sys.executable).parent / "ragsweep"

# llm-app's adaptive template in miniature: BM25 only (no embedder), Pathway's default Utf8Parser
ADAPTIVE_APP = """
$sources:
  - !pw.io.fs.read
    path: data
    format: binary
    with_metadata: true
$llm: !pw.xpacks.llm.llms.OpenAIChat
  model: gpt-4o-mini
$splitter: !pw.xpacks.llm.splitters.TokenCountSplitter
  max_tokens: {max_tokens}
$retriever_factory: !pw.stdlib.indexing.TantivyBM25Factory {{}}
$document_store: !pw.xpacks.llm.document_store.DocumentStore
  docs: $sources
  splitter: $splitter
  retriever_factory: $retriever_factory
question_answerer: !pw.xpacks.llm.question_answering.AdaptiveRAGQuestionAnswerer
  llm: $llm
  indexer: $document_store
  n_starting_documents: 2
  factor: {factor}
  max_iterations: 4
"""

HUB_APP = """
$sources:
  - !pw.io.fs.read
    path: data
    format: binary
    with_metadata: true
$embedder: !pw.xpacks.llm.embedders.SentenceTransformerEmbedder
  model: mixedbread-ai/mxbai-embed-large-v1
$splitter: !pw.xpacks.llm.splitters.TokenCountSplitter
  max_tokens: 400
$retriever_factory: !pw.stdlib.indexing.BruteForceKnnFactory
  embedder: $embedder
$document_store: !pw.xpacks.llm.document_store.DocumentStore
  docs: $sources
  splitter: $splitter
  retriever_factory: $retriever_factory
"""

TEXTS = {
    "rent.txt": "The Tenant pays a monthly rent of eight thousand dollars on the first day of each month.",
    "term.txt": "This Agreement starts on the Effective Date and runs for three years.",
    "law.txt": "This Agreement is governed by the laws of the State of New York.",
}


def _write(tmp_path: Path, text: str, name: str = "app.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _load_error(path: Path, overrides: dict | None = None) -> str:
    with pytest.raises(ConfigError) as err:
        PipelineConfig.load(path, overrides)
    return str(err.value)


# ----------------------------------------------------------------- component arguments
def test_a_literal_max_tokens_0_in_ragsweeps_own_splitter_is_refused(tmp_path):
    """Before: every chunk was ``start 0, end 0, text ""`` and every metric 0.000, rc 0."""
    text = (ROOT / "pipelines" / "default.yaml").read_text().replace("max_tokens: $max_tokens", "max_tokens: 0")
    message = _load_error(_write(tmp_path, text))
    assert message == (
        f"{tmp_path / 'app.yaml'}: $splitter.max_tokens = 0: must be an integer >= 1 (and >= min_tokens)"
    )


@pytest.mark.parametrize("value", ["0", "-5", "$chunk"])
def test_an_apps_splitter_max_tokens_that_would_never_end_is_refused(tmp_path, value):
    """Pathway's TokenCountSplitter with max_tokens 0 or -5 grows without bound: refused at load, literal
    or through a variable of the file."""
    text = ADAPTIVE_APP.format(max_tokens=value, factor=2) + "$chunk: 0\n"
    message = _load_error(_write(tmp_path, text))
    shown = "$chunk = 0" if value == "$chunk" else value
    assert message.endswith(f"$splitter.max_tokens = {shown}: must be an integer >= 1 (and >= min_tokens)")
    assert "\n" not in message


def test_min_tokens_above_max_tokens_and_an_adaptive_factor_of_0_are_named(tmp_path):
    text = ADAPTIVE_APP.format(max_tokens=100, factor=0).replace(
        "  max_tokens: 100", "  max_tokens: 100\n  min_tokens: 300"
    )
    lines = _load_error(_write(tmp_path, text)).splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [
        "$splitter.min_tokens = 300 > $splitter.max_tokens = 100: min_tokens must be <= max_tokens",
        "question_answerer.factor = 0: must be an integer >= 1 (how much the answerer widens at each new ask)",
    ]


def test_set_splitter_max_tokens_0_stops_eval_in_one_line_without_a_run_folder(tmp_path):
    """``--set splitter.max_tokens=0`` grew an app's run to 18-20 GB: now rc 2 and one line, in seconds."""
    app = _write(tmp_path, ADAPTIVE_APP.format(max_tokens=400, factor=2))
    dataset = _dataset(tmp_path)
    proc = subprocess.run(
        [str(RAGSWEEP), "eval", "--pipeline", str(app), "--dataset", str(dataset), "--out", str(tmp_path / "runs"),
         "--set", "splitter.max_tokens=0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip() == (
        f"ragsweep: error: {app}: $splitter.max_tokens = 0: must be an integer >= 1 (and >= min_tokens)"
    )
    assert not (tmp_path / "runs").exists()


class EmptySplitter(TokenCountSplitter):
    """A user's splitter whose arguments pass every check and that cuts no text: one empty chunk a document."""

    def chunk(self, text: str, metadata: dict | None = None) -> list[tuple[str, dict]]:
        return [("", dict(metadata or {}))]


def test_a_chunk_table_of_only_empty_chunks_is_an_error_not_a_run_of_zeros(tmp_path):
    from ragsweep.pipeline.corpus import parse_corpus
    from ragsweep.pipeline.store import RagStore

    text = ADAPTIVE_APP.format(max_tokens=400, factor=2).replace(
        "!pw.xpacks.llm.splitters.TokenCountSplitter", "!test_component_arguments.EmptySplitter"
    )
    config = PipelineConfig.load(_write(tmp_path, text))
    store = RagStore(config, parse_corpus(_dataset(tmp_path) / "docs"))
    with pytest.raises(
        ConfigError, match=r"the splitter \(EmptySplitter\) cut the documents into 3 chunk\(s\), every one empty"
    ):
        store.index()


# ----------------------------------------------------------------- an adaptive answerer's depths
def _dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "dataset"
    (folder / "docs").mkdir(parents=True)
    for name, text in TEXTS.items():
        (folder / "docs" / name).write_text(text + "\n")
    cases = [
        {"id": "rent", "question": "How much is the monthly rent?", "evidence": [{"text": "eight thousand dollars"}]},
        {"id": "term", "question": "How long does the agreement run?", "evidence": [{"text": "runs for three years"}]},
        {"id": "law", "question": "Which law governs it?", "evidence": [{"text": "laws of the State of New York"}]},
    ]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "README.md").write_text("Written by tests/test_component_arguments.py.\n")
    return folder


def test_an_adaptive_answerer_is_read_at_the_depths_it_asks(tmp_path):
    config = PipelineConfig.load(_write(tmp_path, ADAPTIVE_APP.format(max_tokens=400, factor=2)))
    assert config.answerer_depths() == [2, 4, 8, 16]
    assert config.top_k == 2  # its first ask; before: 5, a depth it never uses
    source = config.manifest()["top_k"]
    assert source["value"] == 2 and source["from"].startswith("question_answerer.n_starting_documents; ")
    assert "widens" in source["from"] and "2, 4, 8, 16" in source["from"]
    assert config.report_depths([1, 3, 5, 10], asked=False) == [2, 4, 8, 16]
    assert config.report_depths([1, 3], asked=True) == [1, 3]
    base = PipelineConfig.load(ROOT / "tests" / "fixtures" / "apps" / "parity_base.yaml")
    assert base.answerer_depths() is None and base.report_depths([1, 3, 5, 10], asked=False) == [1, 3, 5, 10]


def test_an_adaptive_apps_report_holds_its_depths_unless_ks_are_given(tmp_path):
    import ragsweep

    app = _write(tmp_path, ADAPTIVE_APP.format(max_tokens=400, factor=2))
    dataset = _dataset(tmp_path)
    ragsweep.evaluate(app, dataset, out=tmp_path / "runs")
    (report,) = (tmp_path / "runs").glob("*/report.json")
    data = json.loads(report.read_text())
    assert data["ks"] == [2, 4, 8, 16]
    assert {c["top_k"] for c in map(json.loads, report.with_name("cases.jsonl").read_text().splitlines())} == {2}
    page = report.with_name("report.html").read_text()
    assert "the answerer widens its context when it finds no answer: 2, 4, 8, 16 chunks" in page
    assert ragsweep.evaluate(app, dataset, ks=[1, 3]).ks == [1, 2, 3]  # --ks given: those, and the headline


# ----------------------------------------------------------------- a hub model not on the machine
def test_an_offline_hub_model_is_one_line_before_any_work(tmp_path):
    """Before: ``building the splitter and retriever factory failed: OSError: We couldn't connect to
    'https://huggingface.co'...``, after ``run folder:`` was printed."""
    app = _write(tmp_path, HUB_APP)
    dataset = _dataset(tmp_path)
    hub = tmp_path / "hub"
    hub.mkdir()
    env = {**os.environ, "HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [str(RAGSWEEP), "eval", "--pipeline", str(app), "--dataset", str(dataset), "--out", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(
        f"ragsweep: error: {app}: $embedder (SentenceTransformerEmbedder) model: "
        "'mixedbread-ai/mxbai-embed-large-v1' is not on this machine"
    )
    assert str(hub) in line and "HF_HOME" in line and "model: a local folder" in line
    assert "run folder" not in proc.stderr and not (tmp_path / "runs").exists()


def test_a_hub_model_in_a_local_folder_passes_and_the_bundled_one_is_pointed_at(tmp_path):
    from ragsweep.core.offline import embedder_model_path

    app = _write(tmp_path, HUB_APP.replace("mixedbread-ai/mxbai-embed-large-v1", embedder_model_path()))
    assert PipelineConfig.load(app).embedder_description() is not None
    bare = _write(tmp_path, HUB_APP.replace("mixedbread-ai/mxbai-embed-large-v1", "all-MiniLM-L6-v2"), "bare.yaml")
    message = _load_error(bare)
    assert f"(ragsweep ships this one: model: {embedder_model_path()})" in message


# ----------------------------------------------------------------- the served path
@pytest.mark.parametrize(
    ("written", "folder"),
    [("data", "data"), ("./data/", "data"), ("data//sub", "data/sub"), (".", ""), ("/srv/docs/", "/srv/docs")],
)
def test_the_folder_is_written_as_pathway_writes_it(written, folder):
    """As measured with pw.io.fs.read: ``./data/`` -> ``data/a.md``, ``.`` -> ``a.md``."""
    assert pathway_folder(written) == folder
    assert served_path(folder, "sub/a.md") == (f"{folder}/sub/a.md" if folder else "sub/a.md")


def test_the_served_folder_is_the_apps_as_written(tmp_path, monkeypatch):
    app = PipelineConfig.load(_write(tmp_path, ADAPTIVE_APP.format(max_tokens=400, factor=2)))
    assert app.served_folder() == "data"
    # a folder named by an environment variable: its value; unset, the dataset's own folder (the app cannot run)
    env_app = _write(tmp_path, ADAPTIVE_APP.format(max_tokens=400, factor=2).replace("path: data", "path: $RAGSWEEP_T"))
    monkeypatch.setenv("RAGSWEEP_T", "./shared//docs/")
    assert PipelineConfig.load(env_app).served_folder() == "shared/docs"
    monkeypatch.delenv("RAGSWEEP_T")
    assert PipelineConfig.load(env_app).served_folder() is None
    assert PipelineConfig.load(ROOT / "pipelines" / "default.yaml").served_folder() is None


def test_an_app_reading_a_connector_without_a_folder_says_which_metadata_differs(tmp_path):
    text = ADAPTIVE_APP.format(max_tokens=400, factor=2).replace(
        "!pw.io.fs.read\n    path: data", "!pw.io.gdrive.read\n    object_id: a-drive-folder"
    )
    config = PipelineConfig.load(_write(tmp_path, text))
    assert config.served_folder() is None
    note = config.manifest()["served_metadata"]
    assert note.startswith("the app reads its documents with pathway.io.gdrive.read: ragsweep serves")
    assert "path" in note and "ids, URLs, times" in note
    from ragsweep.evaluation.records import RunResult
    from ragsweep.report.html import _served_app_html

    shown = _served_app_html(RunResult(manifest={"pipeline": config.manifest()}))
    assert "the app reads its documents with pathway.io.gdrive.read" in shown
    assert (
        "served_metadata"
        not in PipelineConfig.load(_write(tmp_path, ADAPTIVE_APP.format(max_tokens=400, factor=2))).manifest()
    )


def test_a_hub_model_in_the_hubs_cache_passes(tmp_path, monkeypatch):
    """The cache looked in is the hub's (``HF_HUB_CACHE``, or ``HF_HOME``/hub): a model stored there loads."""
    from huggingface_hub import constants

    snapshot = tmp_path / "hub" / "models--mixedbread-ai--mxbai-embed-large-v1" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0" * 40)
    app = _write(tmp_path, HUB_APP)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    assert str(tmp_path / "empty") in _load_error(app)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert (
        PipelineConfig.load(app).embedder_description()
        == "$embedder: SentenceTransformerEmbedder(mixedbread-ai/mxbai-embed-large-v1)"
    )


HYBRID_ADAPTIVE = ADAPTIVE_APP.format(max_tokens=400, factor=2).replace(
    "$retriever_factory: !pw.stdlib.indexing.TantivyBM25Factory {}",
    """$embedder: !ragsweep.pipeline.embedding.CachedSentenceTransformerEmbedder
  model: all-MiniLM-L6-v2
$retriever_factory: !pw.stdlib.indexing.HybridIndexFactory
  retriever_factories:
    - !pw.stdlib.indexing.TantivyBM25Factory {}
    - !pw.stdlib.indexing.BruteForceKnnFactory
      embedder: $embedder""",
)


class _Asked(Exception):
    pass


@pytest.mark.parametrize(("ks", "asked"), [([2, 4, 8, 16], [(16, (2, 4, 8, 16))]), ([2, 32], [(2, ()), (32, ())])])
def test_an_adaptive_answerers_depths_are_cut_from_the_one_list_it_asks(tmp_path, monkeypatch, ks, asked):
    """Pathway's adaptive answerer asks its index once, at its deepest depth (16), and gives the LLM the
    first 2, 4, 8 of that list: over a hybrid index (whose top 2 is not the first 2 of its top 16) each
    depth is that list's prefix, not a list of its own. A depth beyond it is asked on its own."""
    from ragsweep.datasets.schema import Case
    from ragsweep.pipeline import retrieval
    from ragsweep.pipeline.corpus import parse_corpus

    def record(config, corpus, queries, progress, fresh):
        raise _Asked([(q.k, q.prefix_ks) for q in queries])

    monkeypatch.setattr(retrieval, "_run_store", record)
    config = PipelineConfig.load(_write(tmp_path, HYBRID_ADAPTIVE))
    assert not config.prefix_exact()
    corpus = parse_corpus(_dataset(tmp_path) / "docs")
    with pytest.raises(_Asked) as got:
        retrieval.retrieve(config, corpus, [Case(id="q", question="What is the rent?")], ks)
    assert got.value.args[0] == asked


def test_a_hub_model_named_by_a_variable_is_looked_for_too(tmp_path):
    """``$embedder_model: all-MiniLM-L6-v2`` passes as ragsweep's knob (its own embedder ships that model),
    but Pathway's SentenceTransformerEmbedder given it looks in the hub's cache."""
    for name, model in (("st_model", "mixedbread-ai/mxbai-embed-large-v1"), ("embedder_model", "all-MiniLM-L6-v2")):
        text = HUB_APP.replace("model: mixedbread-ai/mxbai-embed-large-v1", f"model: ${name}") + f"${name}: {model}\n"
        message = _load_error(_write(tmp_path, text))
        assert f"$embedder (SentenceTransformerEmbedder) model: {model!r} is not on this machine" in message
