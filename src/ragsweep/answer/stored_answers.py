"""Extractive answers kept on disk: a warm run does not split, stem and score the same chunks again.

An extractive answer is a pure function of the answerer's settings, the question, the served chunk
texts in their order and ragsweep's code (:func:`ragsweep.answer.extractive._answered` reads nothing
else), so the key hashes exactly those: every ragsweep source file (as the scored-case cache keys its
code), the settings, the question and the texts. In ``<cache dir>/answers.sqlite``, healed like the
other caches; ``RAGSWEEP_SCORED_CACHE=0`` turns it off with the scored-case cache (both hold what
ragsweep's own code computed). An entry is the answer's JSON; a row that does not read back as an
answer is a miss.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError

from ragsweep.answer.base import Answer
from ragsweep.core.cache_files import BlobTable, default_cache_dir
from ragsweep.core.environment import scored_cache_enabled
from ragsweep.core.keys import CodeDependencies, cache_key

# an extractive answer is computed by ragsweep's code alone
_CODE = CodeDependencies()


def answer_key(settings: Sequence[float | int], question: str, texts: Sequence[str]) -> str:
    """The key of one answer: ragsweep's code, the settings, the question and the texts in order."""
    return cache_key("stored-answer", _CODE.fingerprint(), list(settings), question, list(texts))


class StoredAnswers:
    """Answers by :func:`answer_key`."""

    def __init__(self, path: Path):
        self._db = BlobTable.shared(path, "answers", what="extractive-answer")

    @classmethod
    def default(cls) -> StoredAnswers | None:
        """The file in ragsweep's cache folder, or None when the cache is off."""
        return cls(default_cache_dir() / "answers.sqlite") if scored_cache_enabled() else None

    def get_many(self, keys: Sequence[str]) -> dict[str, Answer]:
        found: dict[str, Answer] = {}
        for key, blob in self._db.get_many(keys).items():
            try:
                found[key] = Answer.model_validate_json(blob)
            except ValidationError:  # a damaged or foreign row is a miss
                continue
        return found

    def put_many(self, answers: Mapping[str, Answer]) -> None:
        self._db.put_many({key: answer.model_dump_json().encode() for key, answer in answers.items()})
