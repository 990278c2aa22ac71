"""The cases a run takes from a dataset: scopable ones, then a stratified sample, then the first N."""

from __future__ import annotations

import random
import sys
from collections import defaultdict
from collections.abc import Sequence

from ragsweep.core.errors import RunError
from ragsweep.datasets.pathway_limits import unscopable_reason
from ragsweep.datasets.schema import Case
from ragsweep.evaluation.settings import Selection


def stratified_sample(cases: Sequence[Case], n: int, seed: int) -> list[Case]:
    """``n`` cases drawn at random, each question type in proportion to its share
    (largest remainders), reproducible for a seed; the dataset's order is kept."""
    if n >= len(cases):
        return list(cases)
    by_type: dict[str, list[int]] = defaultdict(list)
    for i, case in enumerate(cases):
        by_type[case.type or "(none)"].append(i)
    quotas = {t: n * len(ix) / len(cases) for t, ix in by_type.items()}
    take = {t: int(q) for t, q in quotas.items()}
    for t in sorted(quotas, key=lambda t: (-(quotas[t] - take[t]), t))[: n - sum(take.values())]:
        take[t] += 1
    rng = random.Random(seed)
    chosen: set[int] = set()
    for t in sorted(by_type):
        chosen.update(rng.sample(by_type[t], take[t]))
    return [cases[i] for i in sorted(chosen)]


def select_cases(cases: Sequence[Case], selection: Selection) -> list[Case]:
    """The cases a run evaluates: each one the app could scope (else a warning names it), then
    ``--sample``, then ``--limit``; an empty selection is an error."""
    chosen = []
    for case in cases:
        reason = next((r for d in case.doc_scope or [] if (r := unscopable_reason(d))), None)
        if reason:
            print(f"warning: case {case.id} skipped: {reason}", file=sys.stderr)
        else:
            chosen.append(case)
    if selection.sample:
        chosen = stratified_sample(chosen, selection.sample, selection.seed)
    if selection.limit:
        chosen = chosen[: selection.limit]
    if not chosen:
        raise RunError(f"{selection.dataset}: no case to evaluate (split={selection.split}, limit={selection.limit})")
    return chosen
