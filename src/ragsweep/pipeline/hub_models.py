"""Hugging Face models an app's components load when built, checked offline before any work: a model
that is neither a local folder nor in the hub's cache would fail deep inside the build, blamed on the
wrong component."""

from __future__ import annotations

import os
from pathlib import Path

from ragsweep.core.offline import embedder_model_path

# the components that load a Hugging Face model when built, and the argument that names it
HUB_MODEL_ARGUMENTS = {
    "pathway.xpacks.llm.embedders.SentenceTransformerEmbedder": "model",
    "pathway.xpacks.llm.rerankers.CrossEncoderReranker": "model_name",
    "pathway.xpacks.llm.rerankers.EncoderReranker": "model_name",
    "pathway.xpacks.llm.llms.HFPipelineChat": "model",
}
_BUNDLED_MODEL = "all-MiniLM-L6-v2"  # the one model ragsweep ships (core.offline.embedder_model_path)


def missing_hub_model(model: str, argument: str = "model") -> str | None:
    """Why ``model`` (a hub id or a local folder) cannot be loaded on this machine, offline: None when it
    is a folder here, the hub may be reached (``HF_HUB_OFFLINE=0``), or the hub's cache holds it."""
    if Path(model).expanduser().exists() or os.environ.get("HF_HUB_OFFLINE", "1").lower() in ("0", "false", "no"):
        return None
    # deferred: huggingface_hub only when an app names a hub model
    from huggingface_hub import constants, try_to_load_from_cache

    # sentence-transformers finds a bare name (all-MiniLM-L6-v2) under its organisation on the hub
    names = [model] if "/" in model else [model, f"sentence-transformers/{model}"]
    for name in names:
        try:
            if isinstance(try_to_load_from_cache(name, "config.json"), str):
                return None
        except Exception:  # noqa: BLE001 - not a hub id (a path that does not exist): not found
            continue
    bundled = ""
    if model.rsplit("/", 1)[-1] == _BUNDLED_MODEL:
        bundled = f" (ragsweep ships this one: {argument}: {embedder_model_path()})"
    return (
        f"is not on this machine and the hub is offline: not in the Hugging Face cache {constants.HF_HUB_CACHE} "
        "(HF_HOME or HF_HUB_CACHE name the cache looked in); download it where the hub is reached "
        f"(`huggingface-cli download {names[-1]}`) into that cache, or give {argument}: a local folder holding it"
        f"{bundled}"
    )
