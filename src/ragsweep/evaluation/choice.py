"""How a sweep chooses and compares like with like.

A deeper list always recalls more, so a metric at each configuration's own depth (``recall@k``) rewards
depth for itself. For such an objective:

- "best" is chosen on the lift over chance (value - chance level at the configuration's own depth: the
  chance level rises with depth as fast as a list's recall does by luck), never on the value alone;
- each configuration's paired test is against the baseline's pipeline at the same depth (the grid point
  with the baseline's values of every knob but the depth), so a configuration that differs from the
  baseline only in depth is not tested at all; where the grid has no such point the test is on each
  case's lift over chance.

An objective that does not depend on the depth (``recall@1500tok``, ``recall@5``) is compared on its value.
Ties on the measure go to the cheaper configuration (shallower, then faster) and are named as ties.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ragsweep.evaluation.records import ChoiceMeasure, ConfigResult
from ragsweep.metrics.registry import better

# the knobs a configuration's depth comes from (PipelineConfig.top_k reads $top_k, else $search_topk)
DEPTH_KNOBS = ("top_k", "search_topk")
TIE_TOLERANCE = 1e-12  # means of identical per-case values are equal to the last bit; this absorbs rounding only


def depends_on_depth(metric: str) -> bool:
    """``<family>@k``: at each configuration's own top_k, so a deeper one scores more by construction."""
    return metric.endswith("@k")


def same_depth_baseline(points: Mapping[str, tuple[Mapping[str, object], int]], baseline: str, cid: str) -> str | None:
    """The baseline's pipeline at ``cid``'s depth: the grid point (``points``: id -> (params, top_k)) with
    the baseline's value of every knob but the depth's; None when the grid has none."""
    base_params, base_k = points[baseline]
    _, k = points[cid]
    if k == base_k:
        return baseline
    same = {name: v for name, v in base_params.items() if name not in DEPTH_KNOBS}
    for other, (params, other_k) in points.items():
        if other_k == k and all(params.get(name) == v for name, v in same.items()):
            return other
    return None


def cost_key(row: ConfigResult) -> tuple[int, float]:
    """Cheaper first: fewer chunks in the context, then less time per query."""
    return row.top_k, row.latency_ms_per_query


@dataclass
class Choice:
    """Per objective: the best configuration, what it was chosen on, and the ones tied with it."""

    best: dict[str, str] = field(default_factory=dict)
    chosen_by: dict[str, ChoiceMeasure] = field(default_factory=dict)
    ties: dict[str, list[str]] = field(default_factory=dict)


def choice_measure(rows: Sequence[ConfigResult], metric: str) -> ChoiceMeasure:
    """ "lift" for an objective at each configuration's own depth where every configuration with a value
    has a chance level; "value" otherwise."""
    valued = [r for r in rows if r.metric(metric) is not None]
    if depends_on_depth(metric) and valued and all(r.lift(metric) is not None for r in valued):
        return "lift"
    return "value"


def measured(row: ConfigResult, metric: str, measure: str) -> float | None:
    return row.lift(metric) if measure == "lift" else row.metric(metric)


def best_configs(rows: Sequence[ConfigResult], objectives: Sequence[str]) -> Choice:
    """Each objective's best on its measure (:func:`choice_measure`); ties go to the cheapest (:func:`cost_key`)."""
    choice = Choice()
    for metric in objectives:
        measure = choice_measure(rows, metric)
        scored = sorted(
            ((r, v) for r in rows if (v := measured(r, metric, measure)) is not None), key=lambda s: cost_key(s[0])
        )
        if not scored:
            continue
        top = scored[0][1]
        for _, value in scored[1:]:
            # lift is higher-is-better exactly when the metric is
            if better(value, top, metric) and abs(value - top) > TIE_TOLERANCE:
                top = value
        tied = [r.id for r, v in scored if abs(v - top) <= TIE_TOLERANCE]
        choice.best[metric], choice.chosen_by[metric] = tied[0], measure
        if len(tied) > 1:
            choice.ties[metric] = tied
    return choice


def tie_knobs(rows: Sequence[ConfigResult], tied: Sequence[str]) -> list[str]:
    """The knobs the tied configurations differ in (what does not change the objective among them)."""
    among = [r for r in rows if r.id in tied]
    names = dict.fromkeys(name for r in among for name in r.params)
    return [name for name in names if len({repr(r.param(name)) for r in among}) > 1]


def case_lift(value: float | None, chance: float | None) -> float | None:
    """A case's lift over its chance level (None where either is missing)."""
    return None if value is None or chance is None else value - chance
