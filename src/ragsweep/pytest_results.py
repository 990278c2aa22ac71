"""The pytest plugin's result cache: a session whose inputs did not change since a stored
evaluation gets that evaluation's report back without evaluating again.

A warm evaluation (every parse, embedding and served list cached) still imports Pathway (its
YAML loader imports every class the pipeline names), scipy and ragsweep's scoring: seconds of
every pytest run. An entry stores the report with what it was computed from, and is used only
when all of it is unchanged:

- the content (sha256) of every file of the pipeline YAML, the dataset (its folder, walked with
  links followed: added and removed files count) and the documents folder the run read;
- every Python module the evaluating process had loaded (ragsweep's code, the pipeline's own
  classes, what they import in turn, pathway, scipy, torch, ...), by file size and modification
  time as Python's own bytecode cache checks them; an upgraded package rewrites its files;
  the session's test files and conftest.py are left out, so editing a test's floors keeps the entry;
- the environment variables that can change a result (``RAGSWEEP_*``, ``OPENAI_*``, ``HF_*``, ...,
  and every ``$UPPER_CASE`` name in the pipeline YAML, which Pathway's loader reads from the
  environment), kept as one hash: no secret is written to disk;
- the key: the resolved pipeline and dataset paths, the options given, the Python executable and version.

Only runs without an LLM are stored (``report.no_llm``). ``RAGSWEEP_SERVED_CACHE=0``, the
plugin's ``--ragsweep-fresh`` or ``ragsweep_result_cache = false`` evaluate again. An entry is
``<cache dir>/pytest-results/<key>.json``; one that cannot be read is a miss, never an error.
Standard library only at import: pytest loads the plugin in every session of the environment.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragsweep.core.keys import cache_key, digest_blocks, read_blocks

if TYPE_CHECKING:
    from ragsweep.evaluation.records import RunResult

FORMAT = 1
ENV_PREFIXES = (
    "RAGSWEEP_",
    "OPENAI_",
    "HF_",
    "TRANSFORMERS_",
    "SENTENCE_TRANSFORMERS_",
    "TORCH_",
    "CUDA_",
    "PATHWAY_",
    "TIKTOKEN_",
    "OMP_",
)
_UPPER_VARIABLE = re.compile(r"\$([A-Z][A-Z0-9_]*)\b")


def entry_key(pipeline: Path, dataset: Path, options: Mapping[str, object]) -> str:
    """What names an entry: the evaluation asked for, by whom (which Python)."""
    what = [FORMAT, str(pipeline.resolve()), str(dataset.resolve()), repr(sorted(options.items()))]
    what += [sys.executable, sys.version]
    return cache_key("pytest-result", *what, length=32)


def file_hashes(roots: Iterable[Path]) -> dict[str, str]:
    """sha256 of every file under each root (a file or a folder, links followed), by absolute path."""
    out: dict[str, str] = {}
    for root in roots:
        root = root.resolve()
        if root.is_file():
            out[str(root)] = digest_blocks(read_blocks(root))
            continue
        for folder, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            for name in sorted(files):
                path = Path(folder, name)
                out[str(path)] = digest_blocks(read_blocks(path))
    return out


GONE = [-1, -1]  # the stat of a module file that is not there: an entry recording it never matches


def module_stats(skip_patterns: Sequence[str] = ()) -> dict[str, list[int]]:
    """``file -> [size, mtime_ns]`` of every loaded module with a file, except those whose file
    name matches ``skip_patterns`` (the session's test files and conftest.py). A module imported
    from an archive (``/x.zip/pkg/mod.py``) is covered by the archive's stat; one whose file is
    gone by :data:`GONE`. A relative ``__file__`` (a relative ``sys.path`` entry) is the file under the
    working folder; where none is there it names no file (torch sets ``_ops.py``)."""
    out: dict[str, list[int]] = {}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        if not os.path.isabs(file):
            file = os.path.abspath(file)
            if not os.path.isfile(file):
                continue
        if any(fnmatch.fnmatch(os.path.basename(file), p) for p in skip_patterns):
            continue
        target = _stat_target(Path(file))
        if target is None:
            out[file] = GONE
        else:
            out[str(target[0])] = [target[1].st_size, target[1].st_mtime_ns]
    return out


def _stat_target(file: Path) -> tuple[Path, os.stat_result] | None:
    """The file whose size and mtime stand for a module's source, with its stat: the file, or the
    archive holding it; None where neither is there."""
    for candidate in (file, *file.parents):
        try:
            st = candidate.stat()
        except OSError:
            continue  # not there: a path inside an archive, or gone
        return (candidate, st) if stat.S_ISREG(st.st_mode) else None  # a folder: the file itself is gone
    return None


def _stats_unchanged(stored: dict[str, list[int]]) -> bool:
    for file, (size, mtime) in stored.items():
        try:
            st = os.stat(file)
        except OSError:
            return False
        if st.st_size != size or st.st_mtime_ns != mtime:
            return False
    return True


def env_hash(pipeline_text: str) -> str:
    """One hash of the environment variables that can change a result (values never stored)."""
    named = set(_UPPER_VARIABLE.findall(pipeline_text))
    items = sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in named)
    items += [(name, "<unset>") for name in sorted(named - set(os.environ))]
    return cache_key("pytest-environment", items)


class ResultCache:
    """Entries under ``<folder>/<key>.json``."""

    def __init__(self, folder: Path):
        self.folder = folder

    def load(self, key: str) -> RunResult | None:
        """The stored report with its cases, as :func:`ragsweep.evaluate` returned it, when every
        recorded input is unchanged, else None."""
        # deferred: the typed results import numpy and the scoring; pytest loads this module in every session
        from ragsweep.evaluation.records import CaseResult, RunResult

        try:
            entry = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
            inputs = entry["inputs"]
            if entry["format"] != FORMAT or inputs["env"] != env_hash(
                Path(inputs["pipeline"]).read_text(encoding="utf-8")
            ):
                return None
            if file_hashes(Path(r) for r in inputs["roots"]) != inputs["files"]:
                return None
            if not _stats_unchanged(inputs["modules"]):
                return None
            report = RunResult.model_validate(entry["report"])
            report.cases = [CaseResult.model_validate(c) for c in entry["cases"]]
            return report
        except (OSError, ValueError, KeyError, TypeError):  # missing, torn or foreign (a ValidationError too): a miss
            return None

    def store(
        self,
        key: str,
        pipeline: Path,
        env: str,
        roots: Sequence[Path],
        modules: dict[str, list[int]],
        report: RunResult,
    ) -> None:
        """Keep ``report`` (a RunResult with its cases) with its inputs; a write that fails is skipped.
        ``env``: :func:`env_hash` taken before the evaluation, which sets offline variables itself."""
        inputs = {
            "pipeline": str(pipeline.resolve()),
            "env": env,
            "roots": [str(r.resolve()) for r in roots],
            "files": file_hashes(roots),
            "modules": modules,
        }
        entry = {
            "format": FORMAT,
            "inputs": inputs,
            "report": report.model_dump(mode="json"),
            "cases": [c.model_dump(mode="json") for c in report.cases],
        }
        path = self.folder / f"{key}.json"
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(entry), encoding="utf-8")
            os.replace(tmp, path)  # whole or not at all: a reader never sees half an entry
        except OSError:
            tmp.unlink(missing_ok=True)
