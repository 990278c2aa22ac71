"""The one registry of metric names: family, depth k, direction and display order.

Every report, the sweep's "best" and Pareto set, compare's flip meanings and the
terminal tables ask this module what a name means; no other module keeps a list.

A name is either a retrieval metric at a depth (``recall@5``: family ``recall``,
k = 5), ``<family>@k`` in a sweep (at the configuration's own top-k), a retrieval
metric at a context-token budget (``recall@1500tok``: over the served chunks that fit
in 1500 tokens, :mod:`ragsweep.metrics.retrieval`), or a plain name
(``first_relevant_rank``, ``token_f1``, ``ragas_llm_faithfulness``...).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from .levels import BudgetLevels

LevelFn = Callable[[Any, int], "float | None"]  # (the case's candidates as one Judgement, depth k) -> level


@dataclass(frozen=True)
class PooledLevel:
    """A level over a case's candidates grouped by (covered items, relevant) (a
    :class:`~ragsweep.metrics.levels.Candidates`, shared by every metric leveled this way):
    ``level(candidates, k)`` gives an :class:`~ragsweep.metrics.levels.Estimate`, or None where its
    closed form does not hold (the orderings are then enumerated or sampled)."""

    level: Callable[[Any, int], Any]


Kind = Literal["at_k", "ranking", "answer", "set", "case", "judge", "ragas"]


@dataclass(frozen=True)
class MetricSpec:
    """One metric, declared once, by the module that computes it (``register(MetricSpec(...))``).

    ``name``: the family of an ``at_k`` metric (``ndcg`` is scored as ``ndcg@5``...), else the
    metric's own name. ``kind``: ``at_k`` (a retrieval metric at each depth k), ``ranking`` (over the
    whole list served at top_k), ``answer`` (per case, of the answer), ``set`` (over the cases only),
    ``case`` (a per-case figure with no row of its own), ``judge``, ``ragas`` (ordered by
    :data:`RAGAS_METRICS`, not by ``order``). ``compute``: a retrieval metric's
    ``(Judgement, k) -> value``, an answer metric's ``(AnsweredCase) -> value``; None where the
    computing module fills the value itself. ``chance`` / ``oracle``: ``(candidates, k) -> level`` over
    a case's candidate chunks (one :class:`~ragsweep.metrics.retrieval.Judgement` holding them all), or a
    :class:`PooledLevel` over them grouped by chunk type; a metric without them has no baseline.
    ``reads``: what of a chunk's verdict the metric reads (``relevance``, ``covers`` or ``both``: chunk
    types differing only in the rest are merged when orderings are enumerated). ``at_items``: read at
    depth R, the case's number of items (k is ignored). ``partial``: None for an ordering with no
    relevant chunk in reach (its chance is its mean over the orderings where it has a value).
    ``budget``: the value at a context-token budget (``<name>@<N>tok``), ``(Judgement, tokens) ->
    value``; ``budget_levels``: its chance and oracle there (:class:`~ragsweep.metrics.levels.BudgetLevels`).
    ``order``: display order (lower first).
    ``says_nothing_for``: answerer kind -> why the metric says nothing about that answerer's answers.
    ``curve``: drawn over k in the reports; ``headline``: its place among the report's key numbers;
    ``summary``: a row of an eval run's terminal summary; ``scored``: computed for every case (False:
    only when asked for by name).
    """

    name: str
    kind: Kind
    order: float
    compute: Callable[..., float | None] | None = None
    higher_is_better: bool = True
    chance: LevelFn | PooledLevel | None = None
    oracle: LevelFn | PooledLevel | None = None
    reads: Literal["relevance", "covers", "both"] = "both"
    at_items: bool = False
    partial: bool = False
    budget: Callable[[Any, int], float] | None = None
    budget_levels: BudgetLevels | None = None
    says_nothing_for: Mapping[str, str] = field(default_factory=dict)
    curve: bool = False
    headline: float | None = None
    summary: bool = True
    scored: bool = True


_SPECS: dict[str, MetricSpec] = {}
# the modules whose records every query needs (imported on first use: they import this one)
_DECLARING = (
    "ragsweep.metrics.retrieval",
    "ragsweep.metrics.answer",
    "ragsweep.judge.metric",
    "ragsweep.metrics.ragas_bridge",
)


def register(metric: MetricSpec) -> MetricSpec:
    """Declare ``metric``: every list of names, the baselines and the reports read it from here."""
    if metric.name in _SPECS and _SPECS[metric.name] != metric:
        raise ValueError(f"metric {metric.name!r} is already registered")
    _SPECS[metric.name] = metric
    _ordered_specs.cache_clear()
    return metric


def unregister(name: str) -> None:
    _SPECS.pop(name, None)
    _ordered_specs.cache_clear()


@cache
def _load() -> None:
    import importlib

    for module in _DECLARING:
        importlib.import_module(module)


def metrics(*kinds: Kind) -> list[MetricSpec]:
    """The registered metrics of ``kinds`` (all when none is given), in display order."""
    _load()
    return list(_ordered_specs(kinds))


def registered(*kinds: Kind) -> list[MetricSpec]:
    """The registered metrics of ``kinds`` in the order they were registered (the order a case's
    record holds them)."""
    _load()
    return [m for m in _SPECS.values() if not kinds or m.kind in kinds]


@cache
def _ordered_specs(kinds: tuple[str, ...]) -> tuple[MetricSpec, ...]:
    # sorted is stable: equal orders keep their registration order
    return tuple(sorted((m for m in _SPECS.values() if not kinds or m.kind in kinds), key=lambda m: m.order))


def find(name: str) -> MetricSpec | None:
    """The record of a family (``ndcg``) or plain name (``token_f1``); None if none is registered."""
    _load()
    return _SPECS.get(name)


def at_k_families() -> tuple[str, ...]:
    """The retrieval metrics computed at every scored depth k, in display order."""
    return tuple(m.name for m in metrics("at_k") if m.scored)


def budget_families() -> tuple[str, ...]:
    """The retrieval metrics at a context-token budget (``<family>@<N>tok``), in display order."""
    return tuple(m.name for m in metrics("at_k") if m.budget is not None)


def ranking_metrics() -> tuple[str, ...]:
    """The retrieval metrics over the whole list a configuration returns (its top_k)."""
    return tuple(m.name for m in metrics("ranking") if m.scored)


def set_metrics() -> tuple[str, ...]:
    """The metrics that only exist over a set of cases (computed by the aggregator)."""
    return tuple(m.name for m in metrics("set"))


def answer_order() -> tuple[str, ...]:
    """The answer, abstention and judge metrics in display order."""
    return tuple(m.name for m in metrics("answer", "set", "judge"))


def curve_families() -> tuple[str, ...]:
    """The retrieval families drawn as curves over k in the reports."""
    return tuple(m.name for m in metrics("at_k") if m.scored and m.curve)


def headline() -> tuple[str, ...]:
    """The report's key numbers, ``{k}`` standing for the depth the pipeline serves."""
    chosen = sorted((m for m in metrics() if m.headline is not None), key=lambda m: m.headline or 0.0)
    return tuple(f"{m.name}@{{k}}" if m.kind == "at_k" else m.name for m in chosen)


def says_nothing(metric: str, answerer_kind: str) -> str | None:
    """Why ``metric`` says nothing about the answers of an answerer of ``answerer_kind`` (None: it does)."""
    record = find(metric)
    reasons = record.says_nothing_for if record is not None else {}
    return reasons[answerer_kind] if answerer_kind in reasons else None


def leveled_names(ks: Iterable[int], budgets: Iterable[int] = ()) -> list[str]:
    """The per-case names with a chance and oracle level: each at-k family that has them at the depths
    ``ks``, and the token-budget names at ``budgets``."""
    families = [m.name for m in metrics("at_k") if m.scored and m.chance is not None]
    return [f"{family}@{k}" for k in ks for family in families] + budget_names(budgets)


# ragas' own non-LLM context metrics (metrics.ragas_bridge; string similarity to the reference contexts)
RAGAS_CONTEXT_METRICS: tuple[str, ...] = ("ragas_context_precision", "ragas_context_recall")
# ragas' non-LLM answer metrics (metrics.ragas_bridge), what eval and sweep report of ragas without an LLM
RAGAS_ANSWER_METRICS: tuple[str, ...] = ("ragas_string_similarity", "ragas_bleu", "ragas_rouge")
# every non-LLM ragas metric of metrics.ragas_bridge, in its order
RAGAS_METRICS: tuple[str, ...] = (*RAGAS_CONTEXT_METRICS, *RAGAS_ANSWER_METRICS)
# ragas' ID-based context metrics over the chunk ids the dataset's rule judges relevant (metrics.ragas_bridge)
RAGAS_ID_CONTEXT_METRICS: tuple[str, ...] = ("ragas_id_context_precision", "ragas_id_context_recall")
# ragas' LLM metrics (metrics.ragas_llm), in its order
RAGAS_LLM_METRICS: tuple[str, ...] = (
    "ragas_llm_faithfulness",
    "ragas_llm_answer_correctness",
    "ragas_llm_context_precision",
    "ragas_llm_context_recall",
    "ragas_llm_answer_relevancy",
)
# the run-level first-relevant-rank figures of that summary (the aggregator's names)
FIRST_RELEVANT_RANK_MEAN = "first_relevant_rank_mean"
FIRST_RELEVANT_RANK_MEDIAN = "first_relevant_rank_median"
SUMMARY_RANKING: tuple[str, ...] = (FIRST_RELEVANT_RANK_MEAN, FIRST_RELEVANT_RANK_MEDIAN)
# aggregate names whose value is another metric's mean: a report shows that one (with its CI and n)
REPEATS: dict[str, str] = {FIRST_RELEVANT_RANK_MEAN: "first_relevant_rank"}
# the ragas metrics of an eval run's terminal summary, after the registered answer metrics
RAGAS_SUMMARY: tuple[str, ...] = (*RAGAS_ID_CONTEXT_METRICS, "ragas_rouge", *RAGAS_LLM_METRICS)
# the metrics named by their role (the pages, the gate, compare, the sweep and cost pick them from here)
FIRST_RELEVANT_RANK = "first_relevant_rank"  # the rank of a case's first relevant chunk (its mean, median: below)
SCORED_RETRIEVAL = "r_precision"  # at no depth: a case has a value when its retrieval is scored
HIT_FAMILY = "hit_rate"  # a case's hit: correctness without a judge, a retrieval miss at 0
JUDGE_CORRECT = "judge_correct"  # the judge's verdict: a case's correctness when a judge ran
CITATION_PRECISION = "citation_precision"  # of the answer's citations (the case scorer fills it), not of a depth
FACT_COVERAGE = "fact_coverage"  # the share of a case's expected facts its answer states
# the answer-quality measures a cost Pareto set is drawn for, those a run computed
COST_QUALITY: tuple[str, ...] = (JUDGE_CORRECT, "ragas_llm_faithfulness", "abstention_f1")
DEFAULT_OBJECTIVES: tuple[str, ...] = ("recall@k", "mrr@k", "ndcg@k")  # a sweep's objectives when none is asked
FALLBACK_QUALITY = "token_f1"  # the quality cost is weighed against without the judge, ragas or unanswerable cases
# the answer metrics the pages show when a case has them, and correctness without a judge or a hit rate
PAGE_ANSWERS: tuple[str, ...] = (JUDGE_CORRECT, "token_f1", "pathway_strsim")
SIMILARITY_CORRECTNESS: tuple[str, ...] = ("pathway_strsim", "token_f1")
# the funnel's answer stage: the first of these a case has judges its answer, correct at or above the value
ANSWER_VERDICTS: tuple[tuple[str, float], ...] = (
    (JUDGE_CORRECT, 0.5),
    (FACT_COVERAGE, 1.0),
    ("token_f1", 0.5),
    ("exact_match", 1.0),
    ("pathway_strsim", 1.0),
)
FAITHFULNESS = "ragas_llm_faithfulness"  # the funnel tells an answer that went beyond its context by it
CASE_BARS: tuple[str, ...] = ("hit_rate", "recall", "ndcg")  # the families (at the served k) of the pages' bars
# the eval page's document-type heatmap: families (at the served k) and answer metrics, after correctness
DOC_TYPE_HEAT: tuple[str, ...] = ("hit_rate", "pathway_strsim", "token_f1", "recall")
SWEEP_DEPTH_10: tuple[str, ...] = ("mrr@10", "ndcg@10")  # a sweep page's tables after the families at k
# lower is better for these names (and any name starting with them), besides the registered metrics
LOWER_IS_BETTER: tuple[str, ...] = (
    "latency",
    "seconds",
    "peak_rss",
    "cost",
)

_AT_K = re.compile(r"^(?P<family>[a-z_]+)@(?P<k>\d+|k)$")
_AT_TOKENS = re.compile(r"^(?P<family>[a-z_]+)@(?P<tokens>\d+)tok$")


@dataclass(frozen=True)
class MetricName:
    """What a metric name means: its family, base metric, depth or budget, and direction."""

    name: str
    family: str  # "retrieval" | "answer" | "abstention" | "ragas" | "judge" | "cost" | "other"
    base: str  # hit_rate, recall, ... or the name itself
    k: int | None  # the depth of an @k metric (None for "@k" = the configuration's own top_k)
    higher_is_better: bool
    tokens: int | None = None  # the context budget of a ``@<N>tok`` metric


def split_budget(name: str) -> tuple[str, int] | None:
    """``"recall@1500tok"`` -> ``("recall", 1500)``; None for a name without a token budget."""
    m = _AT_TOKENS.match(name)
    return (m["family"], int(m["tokens"])) if m else None


def budget_names(budgets: Iterable[int]) -> list[str]:
    """The per-case token-budget metric names scored at the context budgets ``budgets``."""
    return [f"{family}@{b}tok" for b in sorted(set(budgets)) for family in budget_families()]


def asked_budgets(names: Iterable[str]) -> list[int]:
    """The context budgets that ``names`` (floors, objectives) ask for."""
    return sorted({at[1] for name in names if (at := split_budget(name)) is not None})


def split_at_k(name: str) -> tuple[str, int] | None:
    """``"recall@5"`` -> ``("recall", 5)``; None for a name without a numeric depth."""
    m = _AT_K.match(name)
    return (m["family"], int(m["k"])) if m and m["k"] != "k" else None


def lower_is_better(name: str) -> bool:
    return name.startswith(_lower_is_better())


def _lower_is_better() -> tuple[str, ...]:
    return (*(m.name for m in metrics() if not m.higher_is_better), *LOWER_IS_BETTER)


def spec(name: str) -> MetricName:
    if (budget := split_budget(name)) is not None:
        return MetricName(name, "retrieval", budget[0], None, True, tokens=budget[1])
    m = _AT_K.match(name)
    if m:
        k = None if m["k"] == "k" else int(m["k"])
        return MetricName(name, "retrieval", m["family"], k, True)
    if name in ranking_metrics() or name.startswith("first_relevant_rank"):
        family = "retrieval"
    elif name in set_metrics() or name == "abstained":
        family = "abstention"
    elif name.startswith("ragas_"):
        family = "ragas"
    elif name.startswith("judge_"):
        family = "judge"
    elif name in answer_order():
        family = "answer"
    elif name.startswith(("latency", "seconds", "peak_rss", "cost")):
        family = "cost"
    else:
        family = "other"
    return MetricName(name, family, name, None, not lower_is_better(name))


def judged_by_relevance(name: str) -> bool:
    """Whether a per-case metric is computed from the relevance verdicts of the served chunks
    (retrieval metrics, citation precision, ragas' ID-based context metrics): the metrics a case
    without a findable label has no value of."""
    return (
        spec(name).family == "retrieval" or name == "citation_precision" or name in RAGAS_ID_CONTEXT_METRICS
    ) and name not in SUMMARY_RANKING


def retrieval_names(ks: Iterable[int]) -> list[str]:
    """The per-case retrieval metric names scored at the depths ``ks``."""
    names = [f"{family}@{k}" for k in sorted(set(ks)) for family in at_k_families()]
    return names + list(ranking_metrics())


def known_names(ks: Iterable[int], budgets: Iterable[int] = ()) -> list[str]:
    """Every metric name a run scored at the depths ``ks`` and context budgets ``budgets`` can report
    (which ones it does depends on its answerer, judge and ragas options)."""
    return [
        *retrieval_names(ks),
        *budget_names(budgets),
        *SUMMARY_RANKING,
        *answer_order(),
        *(m.name for m in metrics("case")),
        *RAGAS_METRICS,
        *RAGAS_ID_CONTEXT_METRICS,
        *RAGAS_LLM_METRICS,
    ]


def unknown_name(name: str, ks: Iterable[int], budgets: Iterable[int] = ()) -> str | None:
    """Why ``name`` cannot be asked of a run scored at ``ks`` and ``budgets`` (None: it can), with the
    names it may mean."""
    import difflib

    depths = sorted(set(ks))
    known = known_names(depths, budgets)
    if name in known:
        return None
    at_k = split_at_k(name)
    if at_k is not None and at_k[0] in at_k_families():
        listed = ", ".join(map(str, depths))
        return f"{name} is not scored: the depths scored are {listed} (add {at_k[1]} to --ks)"
    budget = split_budget(name)
    if budget is not None and budget[0] in budget_families():
        listed = ", ".join(map(str, sorted(set(budgets)))) or "none"
        return f"{name} is not scored: the context budgets scored are {listed} (add {budget[1]} to --budgets)"
    # a misspelt budget is told apart from the at-k names by the budget names of its own family
    known += [f"{family}@<N>tok" for family in budget_families()]
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    return f"{name} is not a metric ragsweep computes" + (f"; did you mean {' or '.join(close)}?" if close else "")


def summary_metrics(k: int, budgets: Iterable[int] = ()) -> list[str]:
    """The rows of an eval run's terminal summary at the served depth ``k`` (and the context
    budgets ``budgets``), in order."""
    at_k = [f"{family}@{k}" for family in at_k_families()]
    answers = [m.name for m in metrics("answer", "set", "judge") if m.summary]
    return at_k + budget_names(budgets) + [*SUMMARY_RANKING, *answers, *RAGAS_SUMMARY]


def at_own_k(family: str) -> str:
    """A sweep's name for ``family`` at each configuration's own top-k."""
    return f"{family}@k"


def at_served(names: Iterable[str], kk: str) -> list[str]:
    """``names`` with each at-k family at the depth suffix ``kk`` (``"@5"``; ``""``: the family's name)."""
    families = at_k_families()
    return [f"{name}{kk}" if name in families else name for name in names]


def metric_sort_key(name: str) -> tuple[int, int, int, str]:
    if (budget := split_budget(name)) is not None:
        fam = budget[0]
        budgeted, at_k = budget_families(), at_k_families()
        fi = budgeted.index(fam) if fam in budgeted else len(budgeted)
        return (0, len(at_k) + 1 + fi, budget[1], name)
    m = _AT_K.match(name)
    if m:
        fam = m["family"]
        families = at_k_families()
        fi = families.index(fam) if fam in families else len(families)
        return (0, fi, 10**9 if m["k"] == "k" else int(m["k"]), name)
    if name.startswith(ranking_metrics()):
        return (1, 0, 0, name)
    answers = answer_order()
    if name in answers:
        return (2, answers.index(name), 0, name)
    if name.startswith("ragas_"):
        return (3, 0, 0, name)
    if name.startswith("judge_"):
        return (4, 0, 0, name)
    return (5, 0, 0, name)


def ordered(names: Iterable[str]) -> list[str]:
    return sorted(dict.fromkeys(names), key=metric_sort_key)


def better(a: float, b: float, name: str) -> bool:
    """Is value ``a`` strictly better than ``b`` for metric ``name``?"""
    return a < b if lower_is_better(name) else a > b


def best_of(values: Sequence[tuple[str, float]], name: str) -> str | None:
    """The id with the best value of ``name`` among ``(id, value)`` pairs (first on ties)."""
    best: tuple[str, float] | None = None
    for ident, value in values:
        if best is None or better(value, best[1], name):
            best = (ident, value)
    return best[0] if best else None
