"""A metric's name is written once, by the metrics layer: every other module (reports, the gate, the
sweep, cost, the API and its examples) reads it from the registry or from the module that declares it.

Scanned in the source text, docstrings included: a quoted string outside ``src/ragsweep/metrics/``
that is a registered metric's name at a depth (``@5`` / ``@k``) or a token budget (``@1500tok``), its
name alone, or one of the registry's run-level names. A name alone that is also a field of a case's
record (``hits``, ``abstained``) reads as that field, and a per-case figure with no row of its own
(kind ``case``) is no reported metric: neither counts.
"""

from __future__ import annotations

import re
from pathlib import Path

from ragsweep.answer.base import Answer
from ragsweep.evaluation.records import CaseResult
from ragsweep.metrics import registry

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "ragsweep"
METRICS_LAYER = PACKAGE / "metrics"
ALLOWED = 2  # the most literals a module outside the metrics layer may still hold, all modules together


def _alternatives(names: set[str]) -> str:
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


def _literal() -> re.Pattern[str]:
    fields = set(CaseResult.model_fields) | set(Answer.model_fields)
    reported = {m.name for m in registry.metrics() if m.kind != "case"}
    alone = (reported - fields) | set(registry.SUMMARY_RANKING) | set(registry.RAGAS_SUMMARY)
    at_depth = {m.name for m in registry.metrics("at_k")}
    return re.compile(rf"""["']({_alternatives(alone)}|({_alternatives(at_depth)})@(\d+|k)(tok)?)["']""")


def literals_outside_metrics() -> list[str]:
    pattern = _literal()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(METRICS_LAYER):
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.relative_to(PACKAGE)}:{lineno}: {m.group()}" for m in pattern.finditer(line)]
    return found


def test_the_pattern_finds_a_registered_name_in_each_form():
    pattern = _literal()
    for text in (
        '{"recall@5": 0.9}',
        "'ndcg@k'",
        '"recall@1500tok"',
        '"judge_correct"',
        '"hits@10"',
        '"abstention_f1"',
    ):
        assert pattern.search(text), text
    for text in ('"recall_floor"', "recall@5", '"coverage"', '"hits"', '"answer_error"'):
        assert not pattern.search(text), text


def test_metric_names_are_written_only_in_the_metrics_layer():
    found = literals_outside_metrics()
    assert len(found) <= ALLOWED, "metric names outside src/ragsweep/metrics/ (read them from the registry):\n" + (
        "\n".join(found)
    )
