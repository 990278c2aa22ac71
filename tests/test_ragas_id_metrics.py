"""ragsweep's ID-based context metrics give exactly ragas' own ``IDBasedContextPrecision`` /
``IDBasedContextRecall`` values: ragsweep computes them without importing ragas (seconds saved
on every run), so this test is what keeps the two equal."""

from __future__ import annotations

import math
import random

import pytest

from ragsweep.core.offline import ensure_offline
from ragsweep.metrics.ragas_bridge import ID_CONTEXT_METRIC_NAMES, id_based_context_scores

# served ids, relevant ids: orders, duplicates, disjoint, subsets, one of each empty
CASES = [
    (["d1#0", "d1#1", "d1#2"], ["d1#1"]),
    (["d1#0", "d1#1", "d1#2", "d1#3", "d1#4"], ["d1#1", "d1#4", "d2#0"]),
    (["a", "b"], ["c", "d", "e"]),
    (["a", "a", "b"], ["a"]),
    (["a"], ["a", "a", "b"]),
    (["x#3", "x#1"], ["x#1", "x#3"]),
    (["1", "2", "3"], ["3", "4", "5", "6", "7", "8", "9"]),
    ([], ["a"]),
    (["a"], []),
    ([], []),
]


def _ragas_scores(retrieved: list[str], reference: list[str]) -> dict[str, float | None]:
    """ragas' own metric objects on the same ids (NaN -> None, as ragsweep reports a missing value)."""
    ensure_offline()
    from ragas.dataset_schema import SingleTurnSample
    from ragas.metrics import IDBasedContextPrecision, IDBasedContextRecall

    sample = SingleTurnSample(retrieved_context_ids=retrieved, reference_context_ids=reference)
    out: dict[str, float | None] = {}
    for name, metric in zip(ID_CONTEXT_METRIC_NAMES, (IDBasedContextPrecision(), IDBasedContextRecall())):
        value = float(metric.single_turn_score(sample))
        out[name] = None if math.isnan(value) else value
    return out


def _random_cases(n: int, seed: int) -> list[tuple[list[str], list[str]]]:
    rng = random.Random(seed)
    pool = [f"doc{d}#{c}" for d in range(3) for c in range(12)]
    return [
        (rng.choices(pool, k=rng.randint(1, 10)), rng.sample(pool, rng.randint(1, 8)))  # duplicates in served
        for _ in range(n)
    ]


def test_names_are_precision_then_recall():
    assert ID_CONTEXT_METRIC_NAMES == ("ragas_id_context_precision", "ragas_id_context_recall")


@pytest.mark.parametrize("retrieved,reference", [c for c in CASES if c[0] and c[1]])
def test_equal_to_ragas(retrieved, reference):
    assert id_based_context_scores(retrieved, reference) == _ragas_scores(retrieved, reference)


def test_equal_to_ragas_on_random_lists():
    cases = _random_cases(300, seed=7)
    ours = [id_based_context_scores(r, g) for r, g in cases]
    assert ours == [_ragas_scores(r, g) for r, g in cases]
    assert len({v["ragas_id_context_precision"] for v in ours}) > 10  # the lists do vary


def test_empty_lists():
    # nothing served: ragas' precision is NaN and its recall 0, as ragsweep's
    assert (
        id_based_context_scores([], ["a"])
        == _ragas_scores([], ["a"])
        == {
            "ragas_id_context_precision": None,
            "ragas_id_context_recall": 0.0,
        }
    )
    # no relevant chunk: ragas' recall is NaN, its precision 0; ragsweep leaves such a case out
    # of both (it has no relevance information: counted as missing, as it was when ragas computed it)
    assert _ragas_scores(["a"], []) == {"ragas_id_context_precision": 0.0, "ragas_id_context_recall": None}
    assert id_based_context_scores(["a"], []) == dict.fromkeys(ID_CONTEXT_METRIC_NAMES)
    assert id_based_context_scores([], []) == _ragas_scores([], []) == dict.fromkeys(ID_CONTEXT_METRIC_NAMES)


def test_ragas_is_not_imported():
    import subprocess
    import sys

    code = (
        "import sys; from ragsweep.metrics.ragas_bridge import id_based_context_scores as f;"
        "print(f(['a', 'b'], ['b'])); print('ragas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["{'ragas_id_context_precision': 0.5, 'ragas_id_context_recall': 1.0}", "False"]
