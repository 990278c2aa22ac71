"""The names ``$embedder_model`` takes besides a local folder, Pathway-free: what a pipeline's spec checks
without loading the embedding stage (:mod:`ragsweep.pipeline.embedding` registers how to get each model
under these names)."""

from __future__ import annotations

from pathlib import Path

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MPNET_MODEL = "all-mpnet-base-v2"
USE_MULTILINGUAL = "use-multilingual"
# each model by its name, with the other names it goes by
MODEL_NAMES: dict[str, tuple[str, ...]] = {
    DEFAULT_MODEL: (f"sentence-transformers/{DEFAULT_MODEL}",),
    MPNET_MODEL: (f"sentence-transformers/{MPNET_MODEL}",),
    USE_MULTILINGUAL: (),
}


def check_model_name(name: str) -> str:
    """For config validation: a registered name or an existing folder (installation is checked at build)."""
    known = any(name == model or name in aliases for model, aliases in MODEL_NAMES.items())
    if not known and not Path(name).expanduser().is_dir():
        raise ValueError(f"must be one of {', '.join(MODEL_NAMES)}, or a local sentence-transformers model folder")
    return name
