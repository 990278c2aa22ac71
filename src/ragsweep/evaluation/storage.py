"""The stored line of a case: what a run folder writes for a :class:`CaseResult` and reads back.

:func:`compact` leaves out each hit's text (the run's ``chunks.jsonl`` holds it once) and every
field at its default; :func:`expand_lines` puts them back, in :meth:`CaseResult.line`'s shape,
for lines of every layout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from pydantic import BaseModel, JsonValue

from ragsweep.answer.base import Answer
from ragsweep.core.hits import chunk_id
from ragsweep.evaluation.records import RECORD_VERSION, CaseResult, JsonObject, JudgedHit
from ragsweep.funnel.records import SpanLoss


def compact(line: JsonObject, *, settled: bool = False) -> JsonObject:
    """The line a run folder stores for a :meth:`CaseResult.line` (read back by :func:`expand_lines`).

    Left out: each hit's text (the run's ``chunks.jsonl`` holds it once, keyed by the
    :func:`chunk_id` of the hit's ``doc_id``, ``start`` and ``end``, or by its ``chunk`` id where the
    line has one) and every field at its
    default (None, false, 0, empty) in the case, its hits, its answer and its span losses; ``version`` is
    always kept. ``settled``: ``report.json`` holds the run's aggregate, so the case's chance
    and oracle values (their means are there) and its metrics without a value (the list of
    metrics is there, ``case_metrics``) are left out too.

    ``line`` holds every field (a :meth:`CaseResult.line`, or a line :func:`expand_lines` gave back),
    but maybe ``version`` (lines of layout 1 had none).
    """
    out = _without_defaults(line, CaseResult)
    hits = _list(line["hits"])
    if hits:
        out["hits"] = [_without_defaults(_object(hit), JudgedHit, leave_out="text") for hit in hits]
    answer = line["answer"]
    if answer:
        out["answer"] = _without_defaults(_object(answer), Answer)
    loss = _list(line["loss"])
    if loss:
        out["loss"] = [_without_defaults(_object(span), SpanLoss) for span in loss]
    if settled:
        out.pop("chance", None)
        out.pop("oracle", None)
        valued: JsonObject = {k: v for k, v in _object(line["metrics"]).items() if v is not None}
        if valued:
            out["metrics"] = valued
        else:
            out.pop("metrics", None)
    out["version"] = line.get("version", RECORD_VERSION)
    return out


def expand_lines(
    lines: Sequence[JsonObject], chunk_texts: Mapping[str, str], names: Sequence[str] = ()
) -> list[JsonObject]:
    """Stored lines of one run back in the shape of :meth:`CaseResult.line`: defaults filled
    in, each hit's text put back from the chunk table, and in each line every metric of
    ``names`` (report.json's ``case_metrics``) or of any line, None where the case
    has no value. Lines of older layouts (hit texts inline, or a ``chunk`` id per hit; every
    field written) come back the same way."""
    every = _merged_order([names, *(_object(line.get("metrics") or {}) for line in lines)])
    return [_expand(line, chunk_texts, every) for line in lines]


def metric_names(cases: Sequence[CaseResult]) -> list[str]:
    """Every metric of the cases, in the order the cases give them."""
    return _merged_order(case.metrics for case in cases)


@cache
def _fields(model: type[BaseModel]) -> tuple[tuple[str, bool, Any, Callable[..., Any] | None], ...]:
    """(name, has a default, default, default factory) of each field but ``version``, in order."""
    return tuple(
        (name, not field.is_required() and name != "version", field.default, field.default_factory)
        for name, field in model.model_fields.items()
    )


@cache
def _field_names(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(model.model_fields)


@cache
def _default_values(model: type[BaseModel]) -> dict[str, Any]:
    """Each defaulted field's default, a factory's made once: only compared with, never handed out
    (a line is compacted per case, so this is not rebuilt each time)."""
    return {name: factory() if factory else default for name, has, default, factory in _fields(model) if has}


def _same(value: Any, default: Any) -> bool:
    return value is None if default is None else type(value) is type(default) and value == default


def _without_defaults(record: Mapping[str, JsonValue], model: type[BaseModel], leave_out: str = "") -> JsonObject:
    """``record`` without the fields at ``model``'s default, nor the key ``leave_out``."""
    defaults = _default_values(model)
    return {k: v for k, v in record.items() if k != leave_out and not (k in defaults and _same(v, defaults[k]))}


def _with_defaults(record: Mapping[str, JsonValue], model: type[BaseModel]) -> JsonObject:
    """The record with the model's defaults filled in, in the model's field order (other keys after)."""
    out: JsonObject = {}
    for name, has, default, factory in _fields(model):
        if name in record:
            out[name] = record[name]
        elif has:
            out[name] = factory() if factory else default
    if not _field_names(model).issuperset(record):  # a key of no field: rare, so checked at once first
        out.update((k, v) for k, v in record.items() if k not in out)
    return out


def _expand(line: JsonObject, chunk_texts: Mapping[str, str], names: Sequence[str]) -> JsonObject:
    out = _with_defaults(line, CaseResult)
    out["hits"] = [_expand_hit(_object(hit), chunk_texts) for hit in _list(out["hits"])]
    if out["answer"] is not None:
        out["answer"] = _with_defaults(_object(out["answer"]), Answer)
    out["loss"] = [_with_defaults(_object(span), SpanLoss) for span in _list(out["loss"])]
    # every name of ``names`` (those of every line: a superset of this line's), None where it has no value
    out["metrics"] = {**dict.fromkeys(names), **_object(out["metrics"])}
    return out


def _expand_hit(hit: JsonObject, chunk_texts: Mapping[str, str]) -> JsonObject:
    out = _with_defaults({k: v for k, v in hit.items() if k != "chunk"}, JudgedHit)
    if "text" not in out:
        stored = hit.get("chunk")
        key = stored if isinstance(stored, str) and stored else _chunk_id_of(hit)
        out["text"] = chunk_texts.get(key, "")
    return out


def _chunk_id_of(hit: JsonObject) -> str:
    """The chunk table's id of a stored hit: its document and offsets."""
    doc_id, start, end = hit["doc_id"], hit["start"], hit["end"]
    if not (isinstance(doc_id, str) and isinstance(start, int) and isinstance(end, int)):
        raise ValueError(f"a stored hit without its document and offsets: {hit!r}")
    return chunk_id(doc_id, start, end)


def _object(value: JsonValue) -> JsonObject:
    if not isinstance(value, dict):
        raise ValueError(f"a stored line holds {value!r} where an object belongs")
    return value


def _list(value: JsonValue) -> list[JsonValue]:
    if not isinstance(value, list):
        raise ValueError(f"a stored line holds {value!r} where a list belongs")
    return value


def _merged_order(sequences: Iterable[Iterable[str]]) -> list[str]:
    """Every name of the sequences once; a name first seen in a later sequence goes right
    after the name it follows there (so sequences missing some names keep the full order)."""
    merged: list[str] = []
    seen: set[str] = set()
    for sequence in sequences:
        sequence = list(sequence)
        if seen.issuperset(sequence):
            continue
        previous = None
        for name in sequence:
            if name not in seen:
                merged.insert(merged.index(previous) + 1 if previous is not None else 0, name)
                seen.add(name)
            previous = name
    return merged
