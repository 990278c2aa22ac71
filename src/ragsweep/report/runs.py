"""Reading eval and sweep run folders (read-only) and the conventions the reports share:
metric ordering, the main k, the correctness metric, and what counts as a failing case."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from ragsweep.metrics.registry import (  # noqa: F401 - the one registry, re-exported for the reports
    ANSWER_ORDER,
    lower_is_better,
    metric_sort_key,
    ordered,
    split_at_k,
)

CURVE_FAMILIES = ["hit_rate", "recall", "precision", "ndcg", "map"]


class RunFolderError(FileNotFoundError):
    """A run folder, or a file it must hold, is missing or unreadable."""


def read_json(path: Path) -> Any:
    if not path.is_file():
        raise RunFolderError(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise RunFolderError(f"{path}: not valid JSON ({err})") from err


def read_cases(path: Path) -> list[dict]:
    """The case records of a ``cases.jsonl`` (every layout), as :meth:`CaseResult.line` gives them."""
    if not path.is_file():
        raise RunFolderError(f"{path}: no such file")
    cases = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                cases.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise RunFolderError(f"{path}:{n}: not valid JSON ({err})") from err
    return expand_cases(cases, path.parent)


def chunk_table_paths(folder: Path) -> list[Path]:
    """Where the chunk table of the cases in ``folder`` may be, in order: the folder's own
    ``chunks.jsonl`` (an eval run), then, for a sweep configuration (``<sweep>/configs/<id>``),
    the sweep's ``<sweep>/chunks.jsonl``, which every configuration shares (sweep layout 4)."""
    folder = Path(folder)
    paths = [folder / "chunks.jsonl"]
    if folder.parent.name == "configs":
        paths.append(folder.parent.parent / "chunks.jsonl")
    return paths


def read_chunk_rows(folder: Path) -> dict[str, dict]:
    """The chunk table of the cases in ``folder`` (:func:`chunk_table_paths`): chunk id -> its row
    (``id, doc_id, start, end, text``; layout 2 wrote only ``id, text``); {} when absent. A torn
    line (a killed run) is skipped: this reads, it never rewrites a folder."""
    path = next((p for p in chunk_table_paths(folder) if p.is_file()), None)
    if path is None:
        return {}
    table = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                row = json.loads(line)
                key, _ = row["id"], row["text"]
            except (ValueError, KeyError, TypeError):
                continue
            table[key] = row
    return table


def read_chunk_texts(folder: Path) -> dict[str, str]:
    """The chunk table of the cases in ``folder``: chunk id -> text ({} when absent)."""
    return {key: row["text"] for key, row in read_chunk_rows(folder).items()}


def expand_cases(lines: list[dict], folder: Path) -> list[dict]:
    """Stored case lines in full (:func:`ragsweep.evaluation.records.expand_lines`): hit texts from the
    chunk table (the folder's own, or a sweep configuration's, :func:`chunk_table_paths`; a
    layout-1 eval folder or a sweep of layout 3 or earlier, with the text in every hit, needs
    none), the metrics from the folder's report.json's ``case_metrics``."""
    from ragsweep.evaluation.records import expand_lines

    needs_table = any("text" not in h for c in lines for h in c.get("hits") or [])
    texts = read_chunk_texts(folder) if needs_table else {}
    if needs_table and not texts:
        raise RunFolderError(
            f"{folder}: cases.jsonl refers to chunks by id but chunks.jsonl is missing (looked for "
            f"{' and '.join(str(p) for p in chunk_table_paths(folder))})"
        )
    report = Path(folder) / "report.json"
    names = read_json(report).get("case_metrics") or [] if report.is_file() else []
    return expand_lines(lines, texts, names)


def run_kind(run_dir: Path) -> Literal["eval", "sweep"]:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunFolderError(f"{run_dir}: no such run folder")
    if (run_dir / "sweep.json").is_file():
        return "sweep"
    if (run_dir / "report.json").is_file() or (run_dir / "cases.jsonl").is_file():
        return "eval"
    raise RunFolderError(f"{run_dir}: neither report.json / cases.jsonl (eval run) nor sweep.json (sweep run)")


def num(value: Any) -> float | None:
    """A metric value as float, or None for missing / NaN / non-numeric."""
    if value is None or isinstance(value, str):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def main_k(ks: Iterable[int], variables: dict | None = None) -> int | None:
    """The k that matches what the answerer sees: the pipeline's top_k when it is one of
    ``ks``, else the largest k below it, else 5 when present, else the largest k."""
    ks = sorted({int(k) for k in ks})
    if not ks:
        return None
    top_k = (variables or {}).get("top_k")
    if isinstance(top_k, int) and not isinstance(top_k, bool):
        if top_k in ks:
            return top_k
        below = [k for k in ks if k <= top_k]
        if below:
            return below[-1]
    return 5 if 5 in ks else ks[-1]


def case_ks(cases: list[dict]) -> list[int]:
    return sorted({at[1] for c in cases for m in (c.get("metrics") or {}) if (at := split_at_k(m))})


def has_values(cases: list[dict], metric: str) -> bool:
    return any(num((c.get("metrics") or {}).get(metric)) is not None for c in cases)


def correctness_metric(cases: list[dict], k: int | None) -> str | None:
    """judge_correct when judged, else hit_rate@k, else pathway_strsim (first with values)."""
    candidates = ["judge_correct"]
    if k is not None:
        candidates.append(f"hit_rate@{k}")
    candidates += [
        m for m in ordered({m for c in cases for m in (c.get("metrics") or {})}) if m.startswith("hit_rate@")
    ]
    candidates += ["pathway_strsim", "token_f1"]
    return next((m for m in candidates if has_values(cases, m)), None)


FAILURE_KINDS = {
    "retrieval-miss": "retrieval miss",
    "judged-wrong": "judged wrong",
    "bad-abstention": "bad abstention",
    "error": "error",
}


def case_failures(case: dict, k: int | None) -> list[str]:
    """Why a case fails (empty list: it passes).

    retrieval-miss: an answerable case with hit_rate@k == 0 (or, without that metric, no
    relevant hit in the top k); judged-wrong: the LLM judge (or judge_correct == 0) says the
    answer is wrong; bad-abstention: abstained on an answerable case, or answered an
    unanswerable one; error: the answerer reported an error.
    """
    kinds = []
    metrics = case.get("metrics") or {}
    answer = case.get("answer") or {}
    unanswerable = bool(case.get("unanswerable"))
    if not unanswerable:
        hit = num(metrics.get(f"hit_rate@{k}")) if k is not None else None
        if hit is None and case.get("hits") is not None and k is not None:
            hits = [h for h in case["hits"] if (h.get("rank") or 0) <= k]
            hit = 1.0 if any(h.get("relevant") for h in hits) else 0.0
        if hit is not None and hit == 0:
            kinds.append("retrieval-miss")
    judge = case.get("judge")
    if isinstance(judge, dict) and judge.get("is_correct") is not None:
        if not judge["is_correct"]:
            kinds.append("judged-wrong")
    elif num(metrics.get("judge_correct")) == 0:
        kinds.append("judged-wrong")
    if answer.get("abstained") is not None and bool(answer.get("abstained")) != unanswerable:
        kinds.append("bad-abstention")
    if answer.get("error"):
        kinds.append("error")
    return kinds


def natural_key(label: Any) -> list:
    """Sort key: 'type 2' before 'type 10'."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", str(label))]


def doc_label(case: dict) -> str:
    scope = case.get("doc_scope")
    if scope:
        return ", ".join(str(s) for s in scope)
    return "(unscoped)"
