"""Statistics helpers against hand-computed values and direct scipy calls."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ragsweep.metrics.stats import (
    bootstrap_ci,
    holm,
    paired_bootstrap_ci,
    paired_test,
    significant,
)

RNG = np.random.default_rng(12345)
A = RNG.random(60).round(3)
B = (A + RNG.normal(0.05, 0.1, 60)).round(3)


def test_holm_known_example():
    # sorted: d 0.005*4=0.02, a 0.01*3=0.03, c 0.03*2=0.06, b 0.04*1=0.04 -> running max 0.06
    p = {"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005}
    adj = holm(p)
    assert adj == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06, "d": 0.02})
    assert list(adj) == ["a", "b", "c", "d"]
    assert significant(adj) == {"a": True, "b": False, "c": False, "d": True}


def test_holm_list_cap_and_missing():
    out = holm([0.5, 0.2, None, float("nan")])
    assert out[0] == pytest.approx(0.5)  # 0.2*2=0.4, then max(0.4, 0.5*1)=0.5
    assert out[1] == pytest.approx(0.4)
    assert out[2] is None and out[3] is None
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # capped at 1 (0.8*2=1.6)
    assert holm([]) == []
    assert holm([0.03]) == pytest.approx([0.03])


def test_significant():
    assert significant(0.05) and not significant(0.0501)
    assert significant(0.01, alpha=0.01) and not significant(0.02, alpha=0.01)
    assert not significant(None) and not significant(float("nan"))
    assert significant([0.01, None, 0.2]) == [True, False, False]


def test_paired_test_exact_tiny_case():
    # d = [0.4, 0.2, -0.05, 0.2], observed sum 0.75. Of the 2^4 sign flips only (+,+,+,+) = 0.85
    # and (+,+,-,+) = 0.75 reach 0.75, so P(T >= t) = 2/16 and the two-sided p = 2 * 2/16 = 0.25.
    a = [0.9, 0.8, 0.7, 0.6]
    b = [0.5, 0.6, 0.75, 0.4]
    assert paired_test(a, b) == pytest.approx(0.25)
    assert paired_test(b, a) == pytest.approx(0.25)


def test_paired_test_matches_scipy():
    p = paired_test(A, B, n_resamples=999, seed=7)
    direct = stats.permutation_test(
        (A, B),
        lambda x, y, axis=-1: np.mean(x - y, axis=axis),
        permutation_type="samples",
        alternative="two-sided",
        n_resamples=999,
        vectorized=True,
        batch=500,
        rng=np.random.default_rng(7),
    ).pvalue
    assert p == pytest.approx(direct)
    assert p < 0.01  # B is A + 0.05 on average
    assert paired_test(A, B, n_resamples=999, seed=7) == p  # deterministic


def test_paired_test_edge_cases():
    assert paired_test([], []) is None
    assert paired_test([None], [1.0]) is None
    assert paired_test([1, 2, 3], [1, 2, 3]) == 1.0
    # missing pairs are dropped: same as the tiny case above
    assert paired_test([0.9, None, 0.8, 0.7, 0.6], [0.5, 0.1, 0.6, 0.75, 0.4]) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        paired_test([1, 2], [1])


def test_bootstrap_ci_matches_scipy():
    low, high = bootstrap_ci(A, n_resamples=999, seed=3)
    res = stats.bootstrap(
        (A,),
        lambda x, axis=-1: np.mean(x, axis=axis),
        n_resamples=999,
        method="BCa",
        vectorized=True,
        rng=np.random.default_rng(3),
    )
    assert (low, high) == pytest.approx((res.confidence_interval.low, res.confidence_interval.high))
    assert low < A.mean() < high
    pl, ph = bootstrap_ci(A, confidence=0.9, n_resamples=999, seed=3, method="percentile")
    res = stats.bootstrap(
        (A,),
        lambda x, axis=-1: np.mean(x, axis=axis),
        n_resamples=999,
        method="percentile",
        confidence_level=0.9,
        vectorized=True,
        rng=np.random.default_rng(3),
    )
    assert (pl, ph) == pytest.approx((res.confidence_interval.low, res.confidence_interval.high))
    assert bootstrap_ci(A, n_resamples=999, seed=3) == (low, high)  # deterministic


@pytest.mark.parametrize("kind", ["uniform", "binary", "rare-binary", "skewed", "graded"])
def test_bootstrap_ci_bca_equals_scipys_on_many_samples(kind):
    """The closed-form jackknife gives scipy's BCa bounds (scipy resamples n x (n - 1) values)."""
    import warnings

    rng = np.random.default_rng(7)
    for trial in range(8):
        n = int(rng.integers(5, 1500))
        x = {
            "uniform": lambda: rng.random(n),
            "binary": lambda: (rng.random(n) < 0.4).astype(float),
            "rare-binary": lambda: (rng.random(n) < 0.03).astype(float),
            "skewed": lambda: rng.exponential(size=n),
            "graded": lambda: rng.integers(0, 4, n) / 3,
        }[kind]()
        if np.all(x == x[0]):
            continue
        for confidence in (0.95, 0.8):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = stats.bootstrap(
                    (x,),
                    lambda v, axis=-1: np.mean(v, axis=axis),
                    n_resamples=499,
                    method="BCa",
                    confidence_level=confidence,
                    vectorized=True,
                    rng=np.random.default_rng(trial),
                )
            expected = (res.confidence_interval.low, res.confidence_interval.high)
            if any(math.isnan(b) for b in expected):
                continue
            got = bootstrap_ci(list(x), confidence=confidence, n_resamples=499, seed=trial)
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), (kind, n, confidence)


def test_bootstrap_ci_edge_cases():
    assert bootstrap_ci([]) == (None, None)
    assert bootstrap_ci([0.7]) == (None, None)
    assert bootstrap_ci([None, 0.7, float("nan")]) == (None, None)
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    # a nearly-constant binary array: BCa may be degenerate; we still get finite bounds
    low, high = bootstrap_ci([1] + [0] * 19, n_resamples=999)
    assert low is not None and 0.0 <= low <= 0.05 <= high <= 1.0
    assert not math.isnan(low) and not math.isnan(high)


def test_paired_bootstrap_ci():
    low, high = paired_bootstrap_ci(B, A, n_resamples=999, seed=1)
    assert (low, high) == bootstrap_ci(list(B - A), n_resamples=999, seed=1)
    assert 0.0 < low < float(np.mean(B - A)) < high
    assert paired_bootstrap_ci([1, 2, None], [0, 1, 5]) == (1.0, 1.0)  # constant difference of 1
    with pytest.raises(ValueError):
        paired_bootstrap_ci([1], [1, 2])
