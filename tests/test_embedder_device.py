"""Embedder device, dtype and batch size from the pipeline (issue 13).

This machine has no GPU and a CPU build of torch: ``auto`` must resolve to ``cpu`` (without
importing torch for a ``+cpu`` build, and through ``torch.cuda`` otherwise), the knobs must
reach the SentenceTransformer itself (its ``.device`` and parameter dtype), ``cuda`` must be a
named error, and the CUDA branch (bf16/fp16, the larger batch, the cache key) is checked with
torch's answers faked. ``make install TORCH=cuda`` is checked as a dry run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline import embedding
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.embedding import (
    CUDA_BATCH_SIZE,
    CachedSentenceTransformerEmbedder,
    EmbedderConfigError,
    resolve_device,
    resolve_dtype,
)
from support import ROOT


def device_pipeline(tmp_path: Path, device: str = "auto", dtype: str = "auto") -> Path:
    """pipelines/default.yaml with its ``$embedder_device`` / ``$embedder_dtype`` set to these values
    (the file passes them, with ``$embedder_cuda_batch_size``, to its ``CachedSentenceTransformerEmbedder``)."""
    import re

    text = (ROOT / "pipelines" / "default.yaml").read_text()
    for knob, value in (("embedder_device", device), ("embedder_dtype", dtype)):
        assert re.search(rf"^\${knob}: ", text, re.M) and f"${knob}\n" in text, knob
        text = re.sub(rf"^\${knob}: \S+", f"${knob}: {value}", text, flags=re.M)
    path = tmp_path / "device.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def fresh_detection():
    embedding.cuda_available.cache_clear()
    yield
    embedding.cuda_available.cache_clear()


# ----------------------------------------------------------------- auto resolves to cpu here
def test_auto_is_cpu_here_without_importing_torch_for_a_cpu_build(fresh_detection):
    from importlib.metadata import version

    assert resolve_device("auto") == "cpu"
    assert resolve_device(None) == "cpu"
    assert resolve_dtype("auto", "cpu") == "float32"
    if "+cpu" in version("torch"):  # what `make install` installs here
        code = (
            "import sys; from ragsweep.pipeline.embedding import resolve_device; "
            "assert resolve_device('auto') == 'cpu'; print('torch' in sys.modules)"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip().splitlines()[-1] == "False"


def test_auto_asks_torch_when_torch_is_not_a_cpu_build(monkeypatch, fresh_detection):
    import importlib.metadata

    import torch

    monkeypatch.setattr(importlib.metadata, "version", lambda name: "2.13.0")  # as PyPI's CUDA build says
    asked = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: asked.append(1) or False)
    assert resolve_device("auto") == "cpu" and asked == [1]


def test_the_knobs_reach_the_sentence_transformer(tmp_path):
    import torch

    built = PipelineConfig.load(device_pipeline(tmp_path), {"retriever_mode": "knn"}).build()
    emb = built.embedder
    assert isinstance(emb, CachedSentenceTransformerEmbedder)
    assert (emb.device, emb.dtype, emb.batch_size, emb.max_batch_size) == ("cpu", "float32", 32, 32)
    assert emb.model.device.type == "cpu"
    assert next(emb.model.parameters()).dtype == torch.float32
    assert emb.embedder_id == "sentence-transformers:all-MiniLM-L6-v2"  # float32: the key of every earlier cache

    half = PipelineConfig.load(device_pipeline(tmp_path, "cpu", "bfloat16"), {"retriever_mode": "knn"}).build().embedder
    assert (half.device, half.dtype) == ("cpu", "bfloat16")
    assert half.model.device.type == "cpu"
    assert next(half.model.parameters()).dtype == torch.bfloat16
    assert half.model is not emb.model
    assert half.embedder_id == "sentence-transformers:all-MiniLM-L6-v2@bfloat16"  # never mixed with float32 vectors
    texts = ["The agreement is governed by the laws of Delaware.", "Governing law: the State of Delaware."]
    full, low = np.asarray(emb.embed(texts)), np.asarray(half.embed(texts))
    assert low.dtype == np.float32 and low.shape == full.shape == (2, 384)
    assert np.allclose(low, full, atol=0.05) and not np.array_equal(low, full)


def test_batch_size_per_device_on_cpu():
    emb = CachedSentenceTransformerEmbedder(batch_size=16, cuda_batch_size=1024, cache_dir=False)
    assert (emb.batch_size, emb.max_batch_size) == (16, 16)  # cuda_batch_size applies on CUDA only


# ----------------------------------------------------------------- the CUDA branch, torch's answers faked
@pytest.mark.parametrize("bf16, expected", [(True, "bfloat16"), (False, "float16")])
def test_on_cuda_auto_means_half_precision_and_the_larger_batch(monkeypatch, bf16, expected):
    import torch

    monkeypatch.setattr(embedding, "cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto") == "cuda" and resolve_device("cuda:1") == "cuda:1"
    assert resolve_dtype("auto", "cuda") == expected
    assert resolve_dtype("float32", "cuda") == "float32"
    with pytest.raises(EmbedderConfigError, match=r"embedder device 'cuda:2': torch sees 2 CUDA device\(s\)"):
        resolve_device("cuda:2")
    emb = CachedSentenceTransformerEmbedder(batch_size=32, cache_dir=False)  # the model is not loaded here
    assert (emb.device, emb.dtype) == ("cuda", expected)
    assert emb.batch_size == emb.max_batch_size == CUDA_BATCH_SIZE
    assert emb.embedder_id == f"sentence-transformers:all-MiniLM-L6-v2@{expected}"
    assert CachedSentenceTransformerEmbedder(cuda_batch_size=64, dtype="float32", cache_dir=False).batch_size == 64


# ----------------------------------------------------------------- named errors
def test_cuda_without_a_gpu_is_a_named_error_when_the_pipeline_is_built(tmp_path):
    config = PipelineConfig.load(device_pipeline(tmp_path, "cuda"), {"retriever_mode": "knn"})
    with pytest.raises(ConfigError) as caught:
        config.build()
    message = str(caught.value)
    assert "EmbedderConfigError: embedder device 'cuda':" in message and "sees no CUDA device" in message
    from importlib.metadata import version

    if "+cpu" in version("torch"):
        assert "make install TORCH=cuda" in message


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            {"embedder_device": "gpu"},
            "$embedder_device = 'gpu': must be auto, cpu or cuda (cuda:N for one GPU of several)",
        ),
        (
            {"embedder_device": None},
            "$embedder_device = null: must be auto, cpu or cuda (cuda:N for one GPU of several)",
        ),
        (
            {"embedder_device": "cuda:x"},
            "$embedder_device = 'cuda:x': must be auto, cpu or cuda (cuda:N for one GPU of several)",
        ),
        ({"embedder_dtype": "fp16"}, "$embedder_dtype = 'fp16': must be auto, float32, float16 or bfloat16"),
        ({"embedder_dtype": 16}, "$embedder_dtype = 16: must be auto, float32, float16 or bfloat16"),
        ({"embedder_cuda_batch_size": 0}, "$embedder_cuda_batch_size = 0: must be an integer >= 1"),
        ({"embedder_cuda_batch_size": "big"}, "$embedder_cuda_batch_size = 'big': must be an integer >= 1"),
    ],
)
def test_a_bad_device_knob_is_named_on_load(tmp_path, overrides, message):
    path = device_pipeline(tmp_path)
    with pytest.raises(ConfigError) as caught:
        PipelineConfig.load(path, overrides)
    assert str(caught.value) == f"{path}: {message}"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"device": "tpu"}, "embedder device 'tpu': must be one of auto, cpu, cuda (or cuda:N)"),
        ({"dtype": "int8"}, "embedder dtype 'int8': must be one of auto, float32, float16, bfloat16"),
        ({"batch_size": 0}, "embedder batch_size 0: must be an integer >= 1"),
        ({"cuda_batch_size": -4}, "embedder cuda_batch_size -4: must be an integer >= 1"),
        (
            {"model": "use-multilingual", "device": "cuda"},
            "embedder device 'cuda': use-multilingual runs on the CPU (numpy); use auto or cpu",
        ),
        (
            {"model": "use-multilingual", "dtype": "bfloat16"},
            "embedder dtype 'bfloat16': use-multilingual computes in float32; use auto or float32",
        ),
    ],
)
def test_a_bad_value_given_to_the_embedder_is_named(kwargs, message):
    with pytest.raises(EmbedderConfigError) as caught:
        CachedSentenceTransformerEmbedder(cache_dir=False, **kwargs)
    assert str(caught.value) == message


# ----------------------------------------------------------------- make install TORCH=...
def _dry_run(*args: str) -> subprocess.CompletedProcess:
    venv = "/nonexistent-ragsweep-venv"  # every stamp out of date: make prints every command, runs none
    return subprocess.run(
        ["make", "-n", "-C", str(ROOT), "install", f"VENV={venv}", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_install_torch_variable_leaves_the_cpu_path_as_it_was():
    default = _dry_run()
    assert default.returncode == 0, default.stderr
    torch_lines = [line for line in default.stdout.splitlines() if "torch" in line]
    assert torch_lines == ["/nonexistent-ragsweep-venv/bin/python -m pip install -q torch==2.13.0"]
    assert _dry_run("TORCH=cpu").stdout == default.stdout

    cuda = _dry_run("TORCH=cuda")
    assert cuda.returncode == 0, cuda.stderr
    assert cuda.stdout.startswith(default.stdout.rsplit("touch", 1)[0])  # the CPU path first, unchanged
    assert re.search(r'pip install -q "torch==2\.13\.0,!=2\.13\.0\+cpu"', cuda.stdout)

    bad = _dry_run("TORCH=gpu")
    assert bad.returncode != 0 and "TORCH=gpu: must be cpu (the default) or cuda" in bad.stderr
