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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# retrieval metrics computed at every scored depth k, in display order
AT_K_FAMILIES: tuple[str, ...] = ("hit_rate", "recall", "precision", "mrr", "ndcg", "map")
# retrieval metrics at a context-token budget (``<family>@<N>tok``), in display order
BUDGET_FAMILIES: tuple[str, ...] = ("hit_rate", "recall")
# retrieval metrics over the whole list a configuration returns (its top_k)
RANKING_METRICS: tuple[str, ...] = ("r_precision", "first_relevant_rank")
# metrics that only exist over a set of cases (computed by the aggregator)
SET_METRICS: tuple[str, ...] = (
    "abstention_precision",
    "abstention_recall",
    "abstention_f1",
    "answered_unanswerable_rate",
    "abstained_on_answerable_rate",
)
ANSWER_ORDER: tuple[str, ...] = (
    "citation_precision",
    "exact_match",
    "token_f1",
    "fact_coverage",
    "pathway_strsim",
    "abstained",
    *SET_METRICS,
    "judge_correct",
)
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
# the retrieval families drawn as curves over k in the reports (mrr is left out)
CURVE_FAMILIES: tuple[str, ...] = ("hit_rate", "recall", "precision", "ndcg", "map")
# the retrieval families of an eval run's terminal summary, each at the served k
SUMMARY_FAMILIES: tuple[str, ...] = AT_K_FAMILIES
# the run-level first-relevant-rank figures of that summary (the aggregator's names)
SUMMARY_RANKING: tuple[str, ...] = ("first_relevant_rank_mean", "first_relevant_rank_median")
# aggregate names whose value is another metric's mean: a report shows that one (with its CI and n)
REPEATS: dict[str, str] = {"first_relevant_rank_mean": "first_relevant_rank"}
# the answer metrics of that summary, in its order (a run shows those it computed)
ANSWER_SUMMARY: tuple[str, ...] = (
    "citation_precision",
    "exact_match",
    "token_f1",
    "fact_coverage",
    "pathway_strsim",
    "abstention_precision",
    "abstention_recall",
    "judge_correct",
    *RAGAS_ID_CONTEXT_METRICS,
    "ragas_rouge",
    *RAGAS_LLM_METRICS,
)
# per-case figures the aggregator averages too (no summary row of their own)
CASE_FIGURES: tuple[str, ...] = ("abstention_correct", "answer_error")
# lower is better for these names (and any name starting with them)
LOWER_IS_BETTER: tuple[str, ...] = (
    "first_relevant_rank",
    "answered_unanswerable_rate",
    "abstained_on_answerable_rate",
    "latency",
    "seconds",
    "peak_rss",
    "cost",
)

_AT_K = re.compile(r"^(?P<family>[a-z_]+)@(?P<k>\d+|k)$")
_AT_TOKENS = re.compile(r"^(?P<family>[a-z_]+)@(?P<tokens>\d+)tok$")


@dataclass(frozen=True)
class MetricSpec:
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
    return [f"{family}@{b}tok" for b in sorted(set(budgets)) for family in BUDGET_FAMILIES]


def asked_budgets(names: Iterable[str]) -> list[int]:
    """The context budgets that ``names`` (floors, objectives) ask for."""
    return sorted({at[1] for name in names if (at := split_budget(name)) is not None})


def split_at_k(name: str) -> tuple[str, int] | None:
    """``"recall@5"`` -> ``("recall", 5)``; None for a name without a numeric depth."""
    m = _AT_K.match(name)
    return (m["family"], int(m["k"])) if m and m["k"] != "k" else None


def lower_is_better(name: str) -> bool:
    return name.startswith(LOWER_IS_BETTER)


def spec(name: str) -> MetricSpec:
    if (budget := split_budget(name)) is not None:
        return MetricSpec(name, "retrieval", budget[0], None, True, tokens=budget[1])
    m = _AT_K.match(name)
    if m:
        k = None if m["k"] == "k" else int(m["k"])
        return MetricSpec(name, "retrieval", m["family"], k, True)
    if name in RANKING_METRICS or name.startswith("first_relevant_rank"):
        family = "retrieval"
    elif name in SET_METRICS or name == "abstained":
        family = "abstention"
    elif name.startswith("ragas_"):
        family = "ragas"
    elif name.startswith("judge_"):
        family = "judge"
    elif name in ANSWER_ORDER:
        family = "answer"
    elif name.startswith(("latency", "seconds", "peak_rss", "cost")):
        family = "cost"
    else:
        family = "other"
    return MetricSpec(name, family, name, None, not lower_is_better(name))


def judged_by_relevance(name: str) -> bool:
    """Whether a per-case metric is computed from the relevance verdicts of the served chunks
    (retrieval metrics, citation precision, ragas' ID-based context metrics): the metrics a case
    without a findable label has no value of."""
    return (
        spec(name).family == "retrieval" or name == "citation_precision" or name in RAGAS_ID_CONTEXT_METRICS
    ) and name not in SUMMARY_RANKING


def retrieval_names(ks: Iterable[int]) -> list[str]:
    """The per-case retrieval metric names scored at the depths ``ks``."""
    names = [f"{family}@{k}" for k in sorted(set(ks)) for family in AT_K_FAMILIES]
    return names + list(RANKING_METRICS)


def known_names(ks: Iterable[int], budgets: Iterable[int] = ()) -> list[str]:
    """Every metric name a run scored at the depths ``ks`` and context budgets ``budgets`` can report
    (which ones it does depends on its answerer, judge and ragas options)."""
    return [
        *retrieval_names(ks),
        *budget_names(budgets),
        *SUMMARY_RANKING,
        *ANSWER_ORDER,
        *CASE_FIGURES,
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
    if at_k is not None and at_k[0] in AT_K_FAMILIES:
        listed = ", ".join(map(str, depths))
        return f"{name} is not scored: the depths scored are {listed} (add {at_k[1]} to --ks)"
    budget = split_budget(name)
    if budget is not None and budget[0] in BUDGET_FAMILIES:
        listed = ", ".join(map(str, sorted(set(budgets)))) or "none"
        return f"{name} is not scored: the context budgets scored are {listed} (add {budget[1]} to --budgets)"
    # a misspelt budget is told apart from the at-k names by the budget names of its own family
    known += [f"{family}@<N>tok" for family in BUDGET_FAMILIES]
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    return f"{name} is not a metric ragsweep computes" + (f"; did you mean {' or '.join(close)}?" if close else "")


def summary_metrics(k: int, budgets: Iterable[int] = ()) -> list[str]:
    """The rows of an eval run's terminal summary at the served depth ``k`` (and the context
    budgets ``budgets``), in order."""
    at_k = [f"{family}@{k}" for family in SUMMARY_FAMILIES]
    return at_k + budget_names(budgets) + [*SUMMARY_RANKING, *ANSWER_SUMMARY]


def at_own_k(family: str) -> str:
    """A sweep's name for ``family`` at each configuration's own top-k."""
    return f"{family}@k"


def metric_sort_key(name: str) -> tuple:
    if (budget := split_budget(name)) is not None:
        fam = budget[0]
        fi = BUDGET_FAMILIES.index(fam) if fam in BUDGET_FAMILIES else len(BUDGET_FAMILIES)
        return (0, len(AT_K_FAMILIES) + 1 + fi, budget[1], name)
    m = _AT_K.match(name)
    if m:
        fam = m["family"]
        fi = AT_K_FAMILIES.index(fam) if fam in AT_K_FAMILIES else len(AT_K_FAMILIES)
        return (0, fi, 10**9 if m["k"] == "k" else int(m["k"]), name)
    if name.startswith(RANKING_METRICS):
        return (1, 0, 0, name)
    if name in ANSWER_ORDER:
        return (2, ANSWER_ORDER.index(name), 0, name)
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
