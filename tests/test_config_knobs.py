"""Pipeline configs: a hash that is the same in every process, every knob checked up front, --limit >= 1."""

import json
import os
import subprocess
import sys

import pytest

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.config import KNOB_RULES, PipelineConfig, PipelineVariables, parse_overrides
from support import ROOT

# ------------------------------------------------------------------ hash

KEYS_SCRIPT = """
import json, sys
from ragsweep.pipeline.config import PipelineConfig
base = PipelineConfig.load(sys.argv[1])
other = PipelineConfig.load(sys.argv[1], {"max_tokens": 400, "retriever_mode": "knn"})
print(json.dumps([[c.hash, c.chunking_key, c.index_key] for c in (base, other)]))
"""


def _keys(config: PipelineConfig) -> list[str]:
    return [config.hash, config.chunking_key, config.index_key]


def test_the_hash_is_the_same_in_every_process(default_pipeline):
    """The old hash held ``repr(BruteForceKnnMetricKind.COS)`` (``<... object at 0x7f...>``):
    a new process, a new hash, and ``--resume`` always refused."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", KEYS_SCRIPT, str(default_pipeline)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        )
        for seed in (1, 2)
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    here = [
        _keys(PipelineConfig.load(default_pipeline)),
        _keys(PipelineConfig.load(default_pipeline, {"max_tokens": 400, "retriever_mode": "knn"})),
    ]
    assert outputs[0] == outputs[1] == here
    assert here[0] != here[1]


def test_the_canonical_form_names_engine_values_and_never_holds_an_address(default_pipeline):
    from pathway.internals.yaml_loader import Value, Variable

    config = PipelineConfig.load(default_pipeline)
    text = config._canonical_text(config.raw)
    assert '"BruteForceKnnMetricKind.COS"' in text and " at 0x" not in text

    class Opaque:  # no fields, no stable repr
        __slots__ = ()

    opaque = PipelineConfig("x.yaml", {Variable("thing"): Value(constructed=True, value=Opaque())})
    assert " at 0x" not in opaque._canonical_text(opaque.symbols)
    assert opaque.hash == PipelineConfig("x.yaml", {Variable("thing"): Value(constructed=True, value=Opaque())}).hash
    leaked = PipelineConfig("x.yaml", {Variable("thing"): "<Thing object at 0x7f3a2b1c0d90>"})
    with pytest.raises(ConfigError, match=r"x.yaml: cannot hash this config stably: .* \(a memory address\)"):
        _ = leaked.hash


# ------------------------------------------------------------------ knobs


@pytest.fixture
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    return "pipelines/default.yaml"


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"top_k": -3}, "$top_k = -3: must be an integer >= 1"),
        ({"top_k": 0}, "$top_k = 0: must be an integer >= 1"),
        (parse_overrides(["top_k=abc"]), "$top_k = 'abc': must be an integer >= 1"),
        ({"top_k": 2.5}, "$top_k = 2.5: must be an integer >= 1"),
        ({"top_k": True}, "$top_k = true: must be an integer >= 1"),
        ({"max_tokens": 0}, "$max_tokens = 0: must be an integer >= 1 (and >= $min_tokens)"),
        ({"min_tokens": None}, "$min_tokens = null: must be an integer >= 1 (and <= $max_tokens)"),
        ({"min_tokens": 700}, "$min_tokens = 700 > $max_tokens = 600: $min_tokens must be <= $max_tokens"),
        ({"rrf_k": -1}, "$rrf_k = -1: must be a number > 0"),
        ({"rrf_k": 0}, "$rrf_k = 0: must be a number > 0"),
        ({"embedder_batch_size": 0}, "$embedder_batch_size = 0: must be an integer >= 1"),
        ({"embedder_model": ""}, "$embedder_model = '': must be a non-empty string"),
        (
            {"retriever_mode": "splitter"},
            "$retriever_mode = 'splitter': must name a variable of the file holding "
            "a retriever factory (bm25, hybrid, knn), or be null",
        ),
        ({"llm_timeout": 0}, "$llm_timeout = 0: must be a number of seconds > 0, or null"),
        ({"llm_max_retries": -1}, "$llm_max_retries = -1: must be an integer >= 0, or null"),
        ({"llm_concurrency": 0}, "$llm_concurrency = 0: must be an integer from 1 to 64, or null"),
        (
            {"llm_base_url": "localhost:8000"},
            "$llm_base_url = 'localhost:8000': must be an http:// or https:// URL, or null",
        ),
        (
            {"prompt_template": "Answer {query}"},
            "$prompt_template = 'Answer {query}': must be null (Pathway's RAG "
            "prompt) or a template: prompt template must contain the {context} "
            "and {query} placeholders",
        ),
    ],
)
def test_a_bad_knob_is_named_with_its_value_and_what_is_allowed(at_root, overrides, message):
    with pytest.raises(ConfigError) as caught:
        PipelineConfig.load(at_root, overrides)
    assert str(caught.value) == f"pipelines/default.yaml: {message}"
    # the same check after with_overrides (sweep grids, --set on a loaded config)
    with pytest.raises(ConfigError) as again:
        PipelineConfig.load(at_root).with_overrides(overrides)
    assert str(again.value) == str(caught.value)


def test_every_bad_knob_is_listed(at_root):
    with pytest.raises(ConfigError) as caught:
        PipelineConfig.load(at_root, {"top_k": 0, "rrf_k": "x"})
    assert str(caught.value).splitlines() == [
        "pipelines/default.yaml: $top_k = 0: must be an integer >= 1",
        "pipelines/default.yaml: $rrf_k = 'x': must be a number > 0",
    ]


def test_a_secret_knob_value_never_reaches_the_error(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text((ROOT / "pipelines/default.yaml").read_text() + "\n$llm_api_key: 12345678\n")
    with pytest.raises(ConfigError) as caught:
        PipelineConfig.load(path)
    assert str(caught.value) == f"{path}: $llm_api_key = ***: must be a string, or null"
    assert "12345678" not in str(caught.value)


def test_valid_knobs_and_free_extra_variables_load(tmp_path, default_pipeline):
    text = default_pipeline.read_text() + "\n$my_label: experiment 7\n$my_list: [1, 2]\n$my_number: -4\n"
    path = tmp_path / "p.yaml"
    path.write_text(text)
    config = PipelineConfig.load(
        path,
        {
            "top_k": None,
            "llm_timeout": 2.5,
            "rrf_k": 30.5,
            "min_tokens": 600,
            "retriever_mode": "bm25",
            "my_number": -5,
        },
    )
    assert config.top_k == 5 and config.get("my_number") == -5
    assert PipelineConfig.load(path, parse_overrides(["top_k=7", "llm_max_retries=0"])).top_k == 7
    # every point of the shipped sweep grid is a valid configuration
    from ragsweep.evaluation.sweep import SweepGrid

    base = PipelineConfig.load(default_pipeline)
    for params in SweepGrid.load(ROOT / "pipelines" / "sweep.yaml").configurations():
        base.with_overrides(params)


def test_the_knob_model_covers_the_llm_settings():
    from ragsweep.llm.settings import LLMSettings

    assert set(KNOB_RULES) == set(PipelineVariables.model_fields)
    assert {f"llm_{name}" for name in LLMSettings.model_fields} <= set(PipelineVariables.model_fields)


def test_the_llm_knobs_take_their_bounds_from_the_llm_settings(monkeypatch):
    """``LLMSettings`` is the one declaration of the ``llm_*`` bounds: a changed bound changes the knob."""
    from pydantic import Field

    from ragsweep.core.knob import knobs_of_model
    from ragsweep.llm import settings

    knobs = {k.name: k for k in settings.KNOBS}
    assert set(knobs) == {f"llm_{name}" for name in settings.LLMSettings.model_fields}
    assert knobs["llm_concurrency"].domain() == {"integer": True, "low": 1, "high": 64}
    assert knobs["llm_timeout"].domain() == {"integer": False, "low": 0, "low_open": True}
    assert knobs["llm_embeddings"].domain() == {"choices": ["minilm", "endpoint"]}
    assert knobs["llm_max_tokens"].default == 512 and knobs["llm_max_tokens"].nullable

    class Wider(settings.LLMSettings):
        concurrency: int = Field(default=4, ge=1, le=128)

    wider = {k.name: k for k in knobs_of_model(Wider, "llm_", settings._KNOB_MESSAGES, settings._KNOB_STAGES)}
    assert wider["llm_concurrency"].domain()["high"] == 128


def test_each_stage_marks_what_its_knobs_change():
    from ragsweep.pipeline.knobs import knobs_affecting

    assert knobs_affecting("chunks") == ("min_tokens", "max_tokens", "chunk_header")
    assert "route_docs" in knobs_affecting("index") and "top_k" not in knobs_affecting("index")
    # the ones a key adds by value: a component's argument is in that component's definition already
    assert knobs_affecting("index", applied_by="ragsweep") == ("route_docs",)
    assert knobs_affecting("chunks", applied_by="ragsweep") == ()


# ------------------------------------------------------------------ --limit


@pytest.mark.parametrize("command", ["eval", "sweep"])
@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5"])
def test_limit_must_be_at_least_one(capsys, command, value):
    from ragsweep.cli import build_parser

    extra = ["--grid", "g.yaml"] if command == "sweep" else []
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args([command, "--dataset", "d", *extra, "--limit", value])
    assert caught.value.code == 2
    assert f"argument --limit: must be a whole number of cases >= 1, got {value!r}" in capsys.readouterr().err
    assert build_parser().parse_args([command, "--dataset", "d", *extra, "--limit", "3"]).limit == 3
