"""Statistics over per-case score arrays: confidence intervals, paired tests, Holm correction.

Inputs are sequences of per-case scores. ``None`` and NaN entries are *missing*: one-sample
functions drop them; paired functions drop every case where either side is missing (the
pairing is by position, so ``a[i]`` and ``b[i]`` must be the same case). Every function is
deterministic for a given ``seed``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Literal, cast, overload

import numpy as np
from scipy import stats

DEFAULT_BOOTSTRAP_RESAMPLES = 2000
DEFAULT_PERMUTATION_RESAMPLES = 9999
_PERMUTATION_BATCH = 500  # resamples per vectorised batch: bounds memory, ~3x faster at n=1600
# resamples per vectorised batch: without it scipy holds all of them at once (n x 2000 values);
# the same interval (the same random stream, drawn in batches)
_BOOTSTRAP_BATCH = 200

Number = float | int | None


def _clean(values: Sequence[Number]) -> np.ndarray:
    arr = np.array([np.nan if v is None else float(v) for v in values], dtype=float)
    kept: np.ndarray = arr[~np.isnan(arr)]
    return kept


def _clean_pairs(a: Sequence[Number], b: Sequence[Number]) -> tuple[np.ndarray, np.ndarray]:
    if len(a) != len(b):
        raise ValueError(f"paired arrays differ in length: {len(a)} != {len(b)}")
    x = np.array([np.nan if v is None else float(v) for v in a], dtype=float)
    y = np.array([np.nan if v is None else float(v) for v in b], dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    return x[keep], y[keep]


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    out: np.ndarray = np.mean(x, axis=axis)
    return out


def bootstrap_ci(
    values: Sequence[Number],
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    method: Literal["BCa", "percentile", "basic"] = "BCa",
) -> tuple[float | None, float | None]:
    """Bootstrap confidence interval of the mean, via ``scipy.stats.bootstrap``.

    Resamples cases with replacement ``n_resamples`` times (``rng = np.random.default_rng(seed)``)
    and returns ``(low, high)`` of the two-sided ``confidence`` interval (BCa by default; if BCa
    is degenerate -- NaN bounds, e.g. almost-constant data -- falls back to the percentile
    method). After dropping missing values: fewer than 2 values -> ``(None, None)``; all values
    equal -> ``(v, v)``.

    BCa is scipy's interval (Efron & Tibshirani 1993, 14.3 and Eq. 14.15) computed from scipy's
    bootstrap distribution, with the jackknife of the mean in closed form (:func:`_bca_mean`):
    scipy builds the n leave-one-out samples (n x (n - 1) values), O(n^2) in time, 2.7 s per
    interval at n = 20,910; here it is O(n). ``tests/test_stats.py`` checks the bounds equal
    ``scipy.stats.bootstrap(method="BCa")``'s on the same seed.
    """
    x = _clean(values)
    if x.size < 2:
        return (None, None)
    if np.all(x == x[0]):
        return (float(x[0]), float(x[0]))
    scipy_method = "percentile" if method == "BCa" else method
    low, high, distribution = _scipy_bootstrap(x, confidence, n_resamples, seed, scipy_method)
    if method == "BCa":
        low, high = _bca_mean(x, distribution, confidence)
        if math.isnan(low) or math.isnan(high):  # degenerate: the percentile interval of the same resamples
            low, high = _quantiles(distribution, (1 - confidence) / 2, (1 + confidence) / 2)
    if math.isnan(low) or math.isnan(high):
        return (None, None)
    return (low, high)


def abstention_f1_ci(
    pairs: Sequence[tuple[bool, bool]],
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of abstention F1 (``2PR / (P + R)``, see
    :func:`ragsweep.metrics.answer.aggregate_abstention`) over ``(abstained, unanswerable)`` cases.

    F1 is no mean of per-case values, so the cases are resampled in pairs (``scipy.stats.bootstrap``
    with ``paired=True``) and F1 is computed on each resample; a resample with no abstention or no
    unanswerable case has no F1 and is left out of the quantiles.
    """
    if len(pairs) < 2:
        return (None, None)
    abstained = np.array([bool(a) for a, _ in pairs], dtype=float)
    unanswerable = np.array([bool(u) for _, u in pairs], dtype=float)

    def f1(a: np.ndarray, u: np.ndarray, axis: int = -1) -> np.ndarray:
        both = (a * u).sum(axis=axis)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(
                (a.sum(axis=axis) > 0) & (u.sum(axis=axis) > 0),
                2 * both / (a.sum(axis=axis) + u.sum(axis=axis)),
                np.nan,
            )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap(
            (abstained, unanswerable),
            f1,
            paired=True,
            confidence_level=confidence,
            n_resamples=n_resamples,
            method="percentile",
            vectorized=True,
            rng=np.random.default_rng(seed),
            batch=_BOOTSTRAP_BATCH,
        )
    kept = res.bootstrap_distribution[~np.isnan(res.bootstrap_distribution)]
    if kept.size < 2:
        return (None, None)
    low, high = _quantiles(kept, (1 - confidence) / 2, (1 + confidence) / 2)
    return (low, high)


def _scipy_bootstrap(
    x: np.ndarray, confidence: float, n_resamples: int, seed: int, method: str
) -> tuple[float, float, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's DegenerateDataWarning: handled via NaN check
        res = stats.bootstrap(
            (x,),
            _mean,
            confidence_level=confidence,
            n_resamples=n_resamples,
            method=method,
            vectorized=True,
            rng=np.random.default_rng(seed),
            batch=_BOOTSTRAP_BATCH,
        )
    return float(res.confidence_interval.low), float(res.confidence_interval.high), res.bootstrap_distribution


def _quantiles(distribution: np.ndarray, *probabilities: float) -> tuple[float, float]:
    """Quantiles of a bootstrap distribution, as ``scipy.stats.bootstrap`` takes them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = stats.quantile(distribution, np.asarray(probabilities, dtype=float))
    return float(q[0]), float(q[1])


def _bca_mean(x: np.ndarray, distribution: np.ndarray, confidence: float) -> tuple[float, float]:
    """The BCa interval of the mean of ``x`` from its bootstrap ``distribution`` (scipy's
    ``_bca_interval``, step for step, except the jackknife).

    - Bias: ``z0 = Phi^-1(p)``, ``p`` the share of bootstrap means below the mean (ties
      count half).
    - Acceleration: ``a = sum(U^3) / (6 * sum(U^2)^(3/2))`` with ``U_i = (n - 1) * (mean of
      the theta_i - theta_i)``. For the mean the leave-one-out values are
      ``theta_i = (sum(x) - x_i) / (n - 1)``, so they need no resampling.
    - Bounds: the quantiles ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` of the distribution for
      ``z = Phi^-1(alpha)`` and ``Phi^-1(1 - alpha)``, ``alpha = (1 - confidence) / 2``.
    """
    from scipy.special import ndtr, ndtri

    n = float(x.size)
    theta_hat = float(np.mean(x))
    share = (np.count_nonzero(distribution < theta_hat) + np.count_nonzero(distribution <= theta_hat)) / (
        2 * distribution.size
    )
    z0 = float(ndtri(share))
    theta_i = (np.sum(x) - x) / (n - 1)
    u = (n - 1) * (np.mean(theta_i) - theta_i)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = float(1 / 6 * (np.sum(u**3) / n**3) / (np.sum(u**2) / n**2) ** (3 / 2))
        z_alpha = float(ndtri((1 - confidence) / 2))
        bounds = []
        for z in (z_alpha, -z_alpha):
            bounds.append(float(ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))))
    if any(math.isnan(b) for b in bounds):
        return (math.nan, math.nan)
    return _quantiles(distribution, *bounds)


def paired_bootstrap_ci(
    a: Sequence[Number],
    b: Sequence[Number],
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    method: Literal["BCa", "percentile", "basic"] = "BCa",
) -> tuple[float | None, float | None]:
    """Bootstrap CI of the mean paired difference ``mean(a_i - b_i)``.

    Cases are resampled jointly (the same case indices for both systems), i.e. the bootstrap
    of the per-case differences ``d_i = a_i - b_i``; same conventions as :func:`bootstrap_ci`.
    """
    x, y = _clean_pairs(a, b)
    return bootstrap_ci(list(x - y), confidence=confidence, n_resamples=n_resamples, seed=seed, method=method)


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    out: np.ndarray = np.mean(x - y, axis=axis)
    return out


def paired_test(
    a: Sequence[Number],
    b: Sequence[Number],
    n_resamples: int = DEFAULT_PERMUTATION_RESAMPLES,
    seed: int = 0,
) -> float | None:
    """Two-sided paired randomization (sign-flip permutation) test of ``mean(a - b) == 0``.

    ``scipy.stats.permutation_test((a, b), mean(a - b), permutation_type='samples',
    alternative='two-sided')``: under H0 the two systems' scores of a case are exchangeable,
    so each case's pair is swapped (its difference's sign flipped) at random. When
    ``2**n <= n_resamples`` scipy enumerates all ``2**n`` swaps (an exact test); otherwise it
    draws ``n_resamples`` random ones with ``rng = default_rng(seed)``. Two-sided p =
    ``min(1, 2 * min(P(T <= t_obs), P(T >= t_obs)))`` (scipy's definition).

    Returns ``None`` with no complete pairs; 1.0 when every difference is 0 or with one pair.
    """
    x, y = _clean_pairs(a, b)
    if x.size == 0:
        return None
    if np.all(x == y) or x.size == 1:
        # one pair: the only two sign assignments are +d and -d, so the exact two-sided p is 1
        return 1.0
    res = stats.permutation_test(
        (x, y),
        _mean_diff,
        permutation_type="samples",
        alternative="two-sided",
        n_resamples=n_resamples,
        vectorized=True,
        batch=_PERMUTATION_BATCH,
        rng=np.random.default_rng(seed),
    )
    return float(min(1.0, res.pvalue))


@overload
def holm(pvalues: Mapping[str, float | None]) -> dict[str, float | None]: ...
@overload
def holm(pvalues: Sequence[float | None]) -> list[float | None]: ...
def holm(
    pvalues: Mapping[str, float | None] | Sequence[float | None],
) -> dict[str, float | None] | list[float | None]:
    """Holm–Bonferroni step-down adjusted p-values (same keys/order as the input).

    Sort the m non-missing p-values ascending, ``p_(1) <= ... <= p_(m)``; then
    ``adj_(i) = min(1, max_{j <= i} (m - j + 1) * p_(j))`` (the running max keeps the adjusted
    values monotone). Reject H_(i) at level alpha iff ``adj_(i) <= alpha``. ``None``/NaN inputs
    stay ``None`` and do not count in m. Ties keep their input order (the result is the same).
    """
    if isinstance(pvalues, Mapping):
        keys = list(pvalues)
        adjusted = holm([pvalues[k] for k in keys])
        return dict(zip(keys, adjusted, strict=True))
    values = list(pvalues)
    present = [(i, float(p)) for i, p in enumerate(values) if p is not None and not math.isnan(float(p))]
    out: list[float | None] = [None] * len(values)
    m = len(present)
    running = 0.0
    for rank, (i, p) in enumerate(sorted(present, key=lambda ip: ip[1])):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


@overload
def significant(adjusted_p: Mapping[str, float | None], alpha: float = 0.05) -> dict[str, bool]: ...
@overload
def significant(adjusted_p: Sequence[float | None], alpha: float = 0.05) -> list[bool]: ...
@overload
def significant(adjusted_p: float | None, alpha: float = 0.05) -> bool: ...
def significant(
    adjusted_p: float | None | Mapping[str, float | None] | Sequence[float | None], alpha: float = 0.05
) -> bool | dict[str, bool] | list[bool]:
    """``p <= alpha`` for one (adjusted) p-value, or element-wise over a dict/list.

    A missing p-value (``None``/NaN) is never significant.
    """
    if isinstance(adjusted_p, Mapping):
        return {k: _significant(v, alpha) for k, v in adjusted_p.items()}
    if isinstance(adjusted_p, (list, tuple)):
        return [_significant(v, alpha) for v in adjusted_p]
    return _significant(cast(float | None, adjusted_p), alpha)  # one p-value: the containers were handled above


def _significant(adjusted_p: float | None, alpha: float) -> bool:
    if adjusted_p is None:
        return False
    p = float(adjusted_p)
    return (not math.isnan(p)) and p <= alpha
