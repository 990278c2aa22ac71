"""The ``path`` an app serves for each document: the folder its ``pw.io.fs.read`` names, as Pathway writes
it, joined with the file's path under the dataset's ``docs/`` (a prompt showing the path is the app's)."""

from __future__ import annotations

import re

# the connector that reads a folder: its documents' ``path`` is the folder as written joined with the file's
FOLDER_READER = "pathway.io.fs.read"


def pathway_folder(path: str) -> str:
    """A folder as Pathway's ``pw.io.fs.read`` writes it at the head of each file's ``path``: repeated
    slashes as one, a leading ``./`` and the trailing slash dropped (``./data/`` -> ``data``, ``.`` -> ``""``)."""
    folder = re.sub(r"/{2,}", "/", path)
    while folder.startswith("./"):
        folder = folder[2:]
    if folder in ("", ".", "/"):
        return "" if folder != "/" else "/"
    return folder.rstrip("/")


def served_path(folder: str, relative: str) -> str:
    """A document's ``path`` as the app reading ``folder`` serves it (:func:`pathway_folder`)."""
    return relative if not folder else folder + relative if folder.endswith("/") else f"{folder}/{relative}"
