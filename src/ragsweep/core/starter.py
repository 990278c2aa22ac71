"""The files the wheel ships for a fresh project (package data under ``ragsweep/starter/``): the default
pipeline and a starter evaluation set, which ``ragsweep init`` copies next to a user's app. The default
``--pipeline`` names ``pipelines/default.yaml``: in a project without that file, the packaged copy is
used, so the default works outside a clone of ragsweep."""

from __future__ import annotations

from pathlib import Path

DEFAULT_PIPELINE = "pipelines/default.yaml"
STARTER_DIR = Path(__file__).resolve().parent.parent / "starter"


def packaged_pipeline() -> Path:
    """The default pipeline as the wheel ships it (the same file as ``pipelines/default.yaml``)."""
    return STARTER_DIR / "pipeline.yaml"


def packaged_dataset() -> Path:
    """The starter evaluation set: 3 CUAD contracts and their 123 cases (``datasets/cuad-mini``)."""
    return STARTER_DIR / "eval-set"


def pipeline_path(given: str | Path) -> Path:
    """``given`` as a path; the default name where the project has no such file: the packaged default."""
    path = Path(given)
    if path.as_posix() == DEFAULT_PIPELINE and not path.is_file():
        return packaged_pipeline()
    return path
