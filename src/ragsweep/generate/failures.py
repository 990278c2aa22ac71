"""``--from-failures RUN_DIR``: the failed cases of an eval run, as seeds for new cases.

A case of the run's ``cases.jsonl`` failed when

- answerable: no served chunk was relevant (``retrieval_miss``), the LLM judge said the
  answer is wrong (``judged_wrong``), the system abstained (``abstained``) or answering
  failed (``answer_error``);
- unanswerable: the system answered instead of abstaining (``answered_unanswerable``).

Each failed case seeds new cases of the *same question type* (its ``type``, e.g. a CUAD
category) about *other documents* than its ``doc_scope``: the failed question is asked of
the pipeline's store over the other documents and the best unused chunk becomes the
passage (an unanswerable seed takes a passage of another document, drawn like any
other); the proposal prompt shows the failed question as the example of the kind to ask.
The new cases then go through the same verification as any generated case.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class FailuresError(Exception):
    pass


def read_run(run_dir: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The run's case records and its manifest (``report.json``; {} when absent)."""
    root = Path(run_dir)
    cases_file = root / "cases.jsonl"
    if not cases_file.is_file():
        raise FailuresError(f"{root}: no cases.jsonl (is it an eval run folder?)")
    records = []
    for n, line in enumerate(cases_file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError as err:
            raise FailuresError(f"{cases_file}:{n}: not JSON: {err}") from None
    manifest: dict[str, Any] = {}
    report = root / "report.json"
    if report.is_file():
        try:
            manifest = json.loads(report.read_text(encoding="utf-8")).get("manifest") or {}
        except ValueError:
            manifest = {}
    return records, manifest


def failure_reason(record: dict[str, Any]) -> str | None:
    """Why a case record counts as failed, or None when it passed."""
    answer = record.get("answer") or {}
    judge = record.get("judge") or {}
    if record.get("unanswerable"):
        if answer and not answer.get("abstained") and not answer.get("error"):
            return "answered_unanswerable"
        return None
    hits = record.get("hits") or []
    if hits and not any(h.get("relevant") for h in hits):
        return "retrieval_miss"
    if judge.get("is_correct") is False:
        return "judged_wrong"
    if answer.get("error"):
        return "answer_error"
    if answer and answer.get("abstained"):
        return "abstained"
    return None


def failed_seeds(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The failed cases, in the run's order, with ``failure`` set to the reason."""
    out = []
    for r in records:
        reason = failure_reason(r)
        if reason:
            out.append(
                {
                    "id": r.get("id"),
                    "question": r.get("question", ""),
                    "type": r.get("type"),
                    "doc_scope": r.get("doc_scope"),
                    "unanswerable": bool(r.get("unanswerable")),
                    "failure": reason,
                    "relevant_docs": sorted({h["doc_id"] for h in r.get("hits") or [] if h.get("relevant")}),
                }
            )
    return out


def run_docs_dir(manifest: dict[str, Any]) -> str | None:
    """The documents folder an eval run read, from its manifest."""
    corpus = manifest.get("corpus") or {}
    if corpus.get("docs_dir"):
        return str(corpus["docs_dir"])
    dataset = manifest.get("dataset") or {}
    if dataset.get("path"):
        return str(Path(dataset["path"]) / "docs")
    return None


def run_dataset(manifest: dict[str, Any]) -> str | None:
    dataset = manifest.get("dataset") or {}
    return str(dataset["path"]) if dataset.get("path") else None


def seed_kind(seed: dict[str, Any]) -> str:
    """The kind of case a seed of :func:`failed_seeds` (every key present) grows."""
    if seed["unanswerable"]:
        return "unanswerable"
    return "multi_hop" if seed["type"] == "multi_hop" else "single_hop"
