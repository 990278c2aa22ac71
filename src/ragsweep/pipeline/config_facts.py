"""What ragsweep reads of a pipeline file's built components, remembered, so that loading it again needs no
Pathway.

A pipeline's spec is read without Pathway; what only its built components answer (whether its index is
exact, whether a question reaches Tantivy, the source files of its classes...) and what a constructor's
default decides (an app's top-k) needs Pathway's build (1-2 s). Those facts are a function of the file's bytes,
the overrides, the path it was given and the code of those classes. For a file whose every tag
names Pathway's or ragsweep's code, those facts are kept in ``<cache dir>/config_facts.sqlite``
under a key of all of that (Pathway's version, ragsweep's source files, Python's version), each
fact as it is first computed. A later load of the same bytes answers them from there; anything
else (building the components, a fact not kept yet) loads the file with Pathway's loader then.

A file naming a class of the user's (``!mypackage.MyEmbedder``) is always loaded by Pathway: the
key cannot see that code.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ragsweep.core.cache_files import BlobTable, default_cache_dir
from ragsweep.core.keys import CodeDependencies, cache_key

# a YAML local tag (``!pw.stdlib.indexing.BruteForceKnnFactory``); ``!!str`` and a word's ``!`` are not
_TAG = re.compile(r"(?<![\w!])!([A-Za-z_][\w.:]*)")
_KNOWN_CODE = ("pw.", "pw:", "pathway.", "pathway:", "ragsweep.", "ragsweep:")


# the facts are computed by ragsweep's code and Pathway's loader
_CODE = CodeDependencies(packages=("pathway",))


@lru_cache(maxsize=1)
def _where() -> tuple[str, str]:
    """Where ragsweep and Pathway are installed: a fact may name a file of theirs (a component's source)."""
    return str(Path(__file__).resolve().parents[1]), str(getattr(find_spec("pathway"), "origin", None))


def facts_key(text: str, path: Path, overrides: Mapping[str, object]) -> str | None:
    """The key of a file's facts (None: it names code outside Pathway and ragsweep)."""
    if any(not tag.startswith(_KNOWN_CODE) for tag in _TAG.findall(text)):
        return None
    given = sorted((str(k), repr(v)) for k, v in overrides.items())
    where = [text, str(path), str(path.resolve())]
    return cache_key("config-facts", *where, given, _CODE.fingerprint(), sys.version, _where())


class ConfigFacts:
    """One file's facts, by name: read once, each new one written through (to ``path``; None: kept here only).
    It pickles with its config (a Ray task, a worker process): its file is opened where it is used."""

    def __init__(self, key: str, values: dict[str, JsonValue], path: Path | None):
        self.key = key
        self.values = values
        self.path = path

    @staticmethod
    def _table(path: Path) -> BlobTable:
        return BlobTable.shared(path, "facts", what="pipeline-facts")

    @classmethod
    def open(cls, key: str) -> ConfigFacts:
        path = default_cache_dir() / "config_facts.sqlite"
        blob = cls._table(path).get_many([key]).get(key)
        values: dict[str, JsonValue] = {}
        if blob is not None:
            try:
                found = json.loads(blob)
            except ValueError:  # a damaged row: the facts are computed again
                found = None
            values = found if isinstance(found, dict) else {}
        return cls(key, values, path)

    def remember(self, name: str, value: Any) -> None:
        self.values[name] = value
        if self.path is not None:
            self._table(self.path).put_many({self.key: json.dumps(self.values).encode()})
