"""The embedding stage's knobs (:mod:`ragsweep.pipeline.embedding`), Pathway-free."""

from __future__ import annotations

from ragsweep.core.knob import Knob
from ragsweep.pipeline.embedding_names import check_model_name


def _check_model(value: str | None) -> str | None:
    if value is not None:  # a registered model or a local folder; whether it is installed is checked at build
        check_model_name(value)
    return value


KNOBS = (
    Knob(
        name="embedder_model",
        kind="str",
        min_length=1,
        message="must be a non-empty string",
        affects="index",
        check=_check_model,
    ),
    Knob(name="embedder_batch_size", kind="int", low=1, message="must be an integer >= 1", affects="run"),
    Knob(name="embedder_cuda_batch_size", kind="int", low=1, message="must be an integer >= 1", affects="run"),
    Knob(
        name="embedder_device",
        kind="str",
        pattern=r"^(auto|cpu|cuda(:\d+)?)$",
        default="auto",
        message="must be auto, cpu or cuda (cuda:N for one GPU of several)",
        affects="index",
    ),
    Knob(
        name="embedder_dtype",
        kind="str",
        choices=("auto", "float32", "float16", "bfloat16"),
        default="auto",
        message="must be auto, float32, float16 or bfloat16",
        affects="index",
    ),
    # USD per 1,000 tokens the app's own embedder (OpenAIEmbedder...) sends: its cost in the manifest
    Knob(
        name="embedding_price_per_1k",
        kind="float",
        low=0,
        nullable=True,
        message="must be a number >= 0 (USD per 1,000 tokens), or null",
        affects="cost",
        applied_by="ragsweep",
    ),
)
