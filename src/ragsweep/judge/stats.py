"""Statistics about a judge: self-agreement, agreement with reference verdicts, corrected estimates.

Everything here is plain arithmetic on lists (no LLM, no file): each function states its
formula and where it comes from, and ``tests/test_judge_trust.py`` checks each on a
hand-computed example.

Self-agreement of one judge over replicates (the same case judged ``R`` times):

- :func:`pairwise_agreement`  mean share of agreeing replicate pairs per case (Fleiss' P-bar);
- :func:`fleiss_kappa`        chance-corrected agreement, complete data (Fleiss 1971);
- :func:`krippendorff_alpha`  chance-corrected agreement, missing replicates allowed,
                              nominal (verdicts) or interval (scores) (Krippendorff 2011);
- :func:`flip_share`          share of cases whose replicates do not all agree;
- :func:`intra_case_sd`       mean and pooled within-case standard deviation (scores);
- :func:`noise_share`         how much of the CI of the metric's mean is judge noise
                              rather than case sampling (one-way random-effects variance
                              components; Miller 2024, "Adding error bars to evals").

Agreement with reference verdicts (people, or a documented rule):

- :func:`cohen_kappa` and :func:`confusion_matrix` (Cohen 1960);
- :func:`ppi_mean`            prediction-powered estimate of a mean with its CI
                              (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023).

Values that cannot be computed (one case, no variation, no pair) are ``None``, never NaN.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Hashable, Sequence
from statistics import NormalDist
from typing import cast

Number = float | int
# ppi_mean's result: counts, means, and [low, high] intervals (None where not computable)
PpiEstimate = dict[str, float | int | list[float] | None]


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _var(values: Sequence[float]) -> float | None:
    """Sample variance (``n - 1`` denominator); None below two values."""
    return statistics.variance(values) if len(values) >= 2 else None


# ----------------------------------------------------------------- self-agreement (verdicts)


def pairwise_agreement(units: Sequence[Sequence[Hashable]]) -> float | None:
    """Mean share of agreeing pairs of replicates per case.

    For case ``i`` with ``m_i >= 2`` values, ``n_ic`` of them in category ``c``:
    ``P_i = sum_c n_ic (n_ic - 1) / (m_i (m_i - 1))``; the result is the mean of ``P_i``
    over cases with at least two values (Fleiss 1971's P-bar, here allowing ``m_i`` to vary).
    1.0: every replicate of every case agreed. None: no case has two values.
    """
    shares = []
    for unit in units:
        m = len(unit)
        if m < 2:
            continue
        counts = Counter(unit)
        shares.append(sum(n * (n - 1) for n in counts.values()) / (m * (m - 1)))
    return statistics.fmean(shares) if shares else None


def flip_share(units: Sequence[Sequence[Hashable]]) -> tuple[float | None, list[int]]:
    """Share of cases (with >= 2 values) whose values are not all equal, and those cases' indices."""
    considered = [i for i, u in enumerate(units) if len(u) >= 2]
    flipped = [i for i in considered if len(set(units[i])) > 1]
    return (len(flipped) / len(considered) if considered else None), flipped


def fleiss_kappa(units: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa for ``N`` cases each rated by the same number ``n >= 2`` of raters.

    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
    Psychological Bulletin 76(5), 378-382. With ``n_ij`` the number of ratings of case
    ``i`` in category ``j``::

        P_i   = (sum_j n_ij^2 - n) / (n (n - 1))        P-bar   = mean_i P_i
        p_j   = sum_i n_ij / (N n)                      P-bar_e = sum_j p_j^2
        kappa = (P-bar - P-bar_e) / (1 - P-bar_e)

    Only cases with the most common number of ratings are used (a replicate that failed
    makes its case incomplete; :func:`krippendorff_alpha` uses those too). None when
    fewer than one such case, fewer than two ratings each, or ``P-bar_e == 1`` (every
    rating in one category: agreement is perfect but kappa is undefined).
    """
    sizes = Counter(len(u) for u in units if len(u) >= 2)
    if not sizes:
        return None
    n = max(sizes, key=lambda s: (sizes[s], s))
    complete = [u for u in units if len(u) == n]
    total = len(complete) * n
    categories = Counter(v for u in complete for v in u)
    p_bar = statistics.fmean((sum(c * c for c in Counter(u).values()) - n) / (n * (n - 1)) for u in complete)
    p_e = sum((c / total) ** 2 for c in categories.values())
    if p_e >= 1.0 - 1e-12:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def krippendorff_alpha(units: Sequence[Sequence[Number | Hashable]], level: str = "nominal") -> float | None:
    """Krippendorff's alpha, nominal or interval, with missing values.

    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School
    for Communication, University of Pennsylvania (departmental paper 43); Hayes &
    Krippendorff (2007), Communication Methods and Measures 1(1), 77-89.

    Units (cases) with fewer than two values are not pairable and are dropped. With
    ``m_u`` values in unit ``u``, ``n`` pairable values in all, and ``delta`` the
    difference function (nominal: 1 if different, 0 if equal; interval: squared difference)::

        D_o   = (1/n) sum_u 1/(m_u - 1) sum_{i != j in u} delta(v_ui, v_uj)
        D_e   = 1/(n (n - 1)) sum_{i != j over all pairable values} delta(v_i, v_j)
        alpha = 1 - D_o / D_e

    (the coincidence-matrix form of Krippendorff 2011, written over ordered pairs).
    None when nothing is pairable or ``D_e == 0`` (every value equal: alpha undefined).
    """
    if level not in ("nominal", "interval"):
        raise ValueError(f"level must be 'nominal' or 'interval', got {level!r}")
    pairable = [list(u) for u in units if len(u) >= 2]
    n = sum(len(u) for u in pairable)
    if n < 2:
        return None

    def disagreement(values: Sequence[Number | Hashable]) -> float:
        """sum over ordered pairs i != j of delta(v_i, v_j), in O(len(values))."""
        m = len(values)
        if level == "nominal":
            return float(m * m - sum(c * c for c in Counter(values).values()))
        xs = [float(cast(Number, v)) for v in values]  # the interval level's values are numbers
        s, s2 = sum(xs), sum(x * x for x in xs)
        return 2.0 * m * s2 - 2.0 * s * s

    d_o = sum(disagreement(u) / (len(u) - 1) for u in pairable) / n
    d_e = disagreement([v for u in pairable for v in u]) / (n * (n - 1))
    if d_e <= 1e-15:
        return None
    return 1.0 - d_o / d_e


# ----------------------------------------------------------------- self-agreement (scores)


def intra_case_sd(units: Sequence[Sequence[float]]) -> dict[str, float | None]:
    """Within-case spread of replicate scores.

    ``mean_sd``: mean over cases (with >= 2 values) of the sample SD of the case's replicates;
    ``pooled_sd``: sqrt of the mean within-case sample variance (the one-way ANOVA
    within-group SD with equal group sizes); ``max_sd``: the largest case SD.
    """
    variances = [v for v in (_var([float(x) for x in u]) for u in units) if v is not None]
    if not variances:
        return {"mean_sd": None, "pooled_sd": None, "max_sd": None, "cases": 0}
    return {
        "mean_sd": statistics.fmean(math.sqrt(v) for v in variances),
        "pooled_sd": math.sqrt(statistics.fmean(variances)),
        "max_sd": math.sqrt(max(variances)),
        "cases": len(variances),
    }


def noise_share(
    units: Sequence[Sequence[float]], deterministic: Sequence[bool] | None = None, confidence: float = 0.95
) -> dict[str, float | int | None]:
    """How much of the CI of the metric's mean comes from judge noise, how much from case sampling.

    Model (one-way random effects): replicate ``r`` of case ``i`` scores
    ``y_ir = mu_i + e_ir``, the case means ``mu_i`` vary across the population of cases
    (variance ``s2_case``) and the judge's noise ``e_ir`` has variance ``s2_noise``. The
    per-case score is the mean of its ``R_i`` replicates, ``ybar_i``, and the metric is the
    mean of ``ybar_i`` over ``n`` cases, so (Miller 2024, "Adding error bars to evals: a
    statistical approach to language model evaluations", arXiv:2411.00640, section 3)::

        Var(metric) = (s2_case + mean_i s2_noise / R_i) / n

    ``var(ybar_i)`` across cases (``n - 1`` denominator) estimates the bracket; the noise
    term is estimated without bias from each case's replicate variance ``s2_i`` (``R_i - 1``
    denominator) as ``mean_i s2_i / R_i`` (a case judged by a deterministic rule, flagged
    in ``deterministic``, has no noise; a case left with one valid replicate gets the
    pooled ``s2`` of the others). Then:

    - ``variance_share`` = noise term / ``var(ybar_i)`` (clipped to [0, 1]);
    - ``width_share`` = ``1 - sqrt(1 - variance_share)``: the fraction of the CI's width that
      would vanish with a noise-free judge (CI width is proportional to the SD);
    - ``single_replicate_variance_share``: the same share had each case been judged once;
    - ``ci_half_width`` and ``ci_half_width_noise_free``: normal-approximation half-widths.
    """
    det = list(deterministic) if deterministic is not None else [False] * len(units)
    cases = [(list(map(float, u)), d) for u, d in zip(units, det) if len(u) >= 1]
    n = len(cases)
    empty = _no_noise(n)
    if n < 2:
        return empty
    means = [statistics.fmean(u) for u, _ in cases]
    total = statistics.variance(means)
    s2 = [v for v in (_var(u) for u, d in cases if not d) if v is not None]
    pooled = statistics.fmean(s2) if s2 else None
    if pooled is None:
        return {**empty, "case_variance": total}
    noise_terms, single_terms = _noise_terms(cases, pooled)
    noise = statistics.fmean(noise_terms)
    case_var = max(total - noise, 0.0)
    z = _z(confidence)
    share = min(max(noise / total, 0.0), 1.0) if total > 0 else 0.0
    single_noise = statistics.fmean(single_terms)
    single_total = case_var + single_noise
    return {
        "cases": n,
        "variance_share": share,
        "width_share": 1.0 - math.sqrt(1.0 - share),
        "single_replicate_variance_share": (single_noise / single_total) if single_total > 0 else 0.0,
        "ci_half_width": z * math.sqrt(total / n),
        "ci_half_width_noise_free": z * math.sqrt(case_var / n),
        "case_variance": case_var,
        "noise_variance": pooled,
    }


def _no_noise(n: int) -> dict[str, float | int | None]:
    """:func:`noise_share`'s result when nothing can be computed over ``n`` cases."""
    return {
        "cases": n,
        "variance_share": None,
        "width_share": None,
        "single_replicate_variance_share": None,
        "ci_half_width": None,
        "ci_half_width_noise_free": None,
        "case_variance": None,
        "noise_variance": None,
    }


def _noise_terms(cases: Sequence[tuple[list[float], bool]], pooled: float) -> tuple[list[float], list[float]]:
    """Per case (its replicate values, deterministic?): the noise term ``s2_i / R_i`` and the
    single-replicate term ``s2_i`` (both 0 for a deterministic case; a case with one value gets
    the ``pooled`` variance)."""
    noise_terms: list[float] = []
    single_terms: list[float] = []
    for u, d in cases:
        if d:
            noise_terms.append(0.0)
            single_terms.append(0.0)
            continue
        v_i = _var(u)  # None below two replicates: the pooled variance stands in
        s2_i = v_i if v_i is not None else pooled
        noise_terms.append(s2_i / len(u))
        single_terms.append(s2_i)
    return noise_terms, single_terms


# ----------------------------------------------------------------- agreement with references


def confusion_matrix(reference: Sequence[bool], judge: Sequence[bool]) -> dict[str, int]:
    """2x2 counts: ``tp`` (reference true, judge true), ``fn`` (reference true, judge false),
    ``fp`` (reference false, judge true), ``tn`` (both false)."""
    out = {"tp": 0, "fn": 0, "fp": 0, "tn": 0}
    for r, j in zip(reference, judge):
        out[("t" if r == j else "f") + ("p" if j else "n")] += 1
    return out


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters on the same items.

    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and
    Psychological Measurement 20(1), 37-46::

        p_o   = share of items where a == b
        p_e   = sum_c P(a = c) P(b = c)        (the raters' own marginals)
        kappa = (p_o - p_e) / (1 - p_e)

    None with no item or when ``p_e == 1`` (both raters always give the same single category).
    """
    pairs = list(zip(a, b))
    if not pairs:
        return None
    n = len(pairs)
    p_o = sum(1 for x, y in pairs if x == y) / n
    ca, cb = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    p_e = sum(ca[c] * cb[c] for c in set(ca) | set(cb)) / (n * n)
    if p_e >= 1.0 - 1e-12:
        return None
    return (p_o - p_e) / (1.0 - p_e)


def ppi_mean(
    judge_all: Sequence[float],
    judge_labelled: Sequence[float],
    reference_labelled: Sequence[float],
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> PpiEstimate:
    """Prediction-powered estimate of a mean, with its CI.

    Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I. & Zrnic, T. (2023).
    Prediction-powered inference. Science 382(6671), 669-674 (the mean-estimation case,
    with lambda = 1; ARES, Saad-Falcon et al. 2024, applies it to RAG judges). With the
    judge's value ``f`` on all ``N`` judged cases and, on ``n`` labelled ones, the
    reference value ``Y`` beside the judge's ``f``::

        theta_PP = mean_N(f) + mean_n(Y - f)                       (judge mean + rectifier)
        se       = sqrt( var_N(f) / N + var_n(Y - f) / n )          (sample variances, n - 1)
        CI       = theta_PP -/+ z_(1 - alpha/2) * se

    Also returned: the raw judge mean with its normal CI (what an uncorrected report
    says), the reference-only estimate ``mean_n(Y)`` with its CI (what the labels alone
    say) and the rectifier (the judge's mean bias on the labelled cases). The two terms of
    ``se`` are treated as independent; when the labelled cases are among the ``N`` this is
    an approximation that is close when ``n`` is small against ``N``. The correction is
    valid when the labelled cases are a random sample of the judged ones. ``bounds``
    (e.g. ``(0, 1)`` for a share) clips the intervals to the metric's range.
    """
    f_all = [float(x) for x in judge_all]
    pairs = [(float(f), float(y)) for f, y in zip(judge_labelled, reference_labelled)]
    z = _z(confidence)
    out: PpiEstimate = {
        "N": len(f_all),
        "n": len(pairs),
        "confidence": confidence,
        "judge_mean": None,
        "judge_ci": None,
        "rectifier": None,
        "estimate": None,
        "ci": None,
        "reference_mean": None,
        "reference_ci": None,
    }
    if not f_all:
        return _clip(out, bounds)
    judge_mean = statistics.fmean(f_all)
    out["judge_mean"] = judge_mean
    out["judge_ci"] = _normal_ci(judge_mean, _var(f_all), len(f_all), z)
    if pairs:
        out.update(_rectified(f_all, judge_mean, pairs, z))
    return _clip(out, bounds)


def _normal_ci(mean: float, variance: float | None, n: int, z: float) -> list[float] | None:
    """``mean -/+ z sqrt(variance / n)``; None without a variance."""
    if variance is None:
        return None
    half = z * math.sqrt(variance / n)
    return [mean - half, mean + half]


def _rectified(
    f_all: list[float], judge_mean: float, pairs: list[tuple[float, float]], z: float
) -> dict[str, float | list[float] | None]:
    """:func:`ppi_mean`'s rectifier, estimate and its CI, and the reference-only mean and its CI
    (``pairs``: (judge, reference) on the labelled cases)."""
    rect = [y - f for f, y in pairs]
    ys = [y for _, y in pairs]
    rectifier = statistics.fmean(rect)
    estimate = judge_mean + rectifier
    reference_mean = statistics.fmean(ys)
    out: dict[str, float | list[float] | None] = {
        "rectifier": rectifier,
        "estimate": estimate,
        "reference_mean": reference_mean,
        "ci": None,
        "reference_ci": _normal_ci(reference_mean, _var(ys), len(ys), z),
    }
    var_f, var_r = _var(f_all), _var(rect)
    if var_f is not None and var_r is not None:
        half = z * math.sqrt(var_f / len(f_all) + var_r / len(pairs))
        out["ci"] = [estimate - half, estimate + half]
    return out


def _clip(out: PpiEstimate, bounds: tuple[float, float] | None) -> PpiEstimate:
    """:func:`ppi_mean`'s intervals clipped to ``bounds`` (each of its keys is always there)."""
    if bounds is not None:
        for key in ("judge_ci", "ci", "reference_ci"):
            ci = out[key]
            if isinstance(ci, list) and ci:
                out[key] = [min(max(v, bounds[0]), bounds[1]) for v in ci]
    return out


def verdict_agreement(reference: Sequence[bool], judge: Sequence[bool]) -> dict[str, object]:
    """Cohen's kappa, raw agreement and the confusion matrix of judge verdicts against reference ones."""
    pairs = [(bool(r), bool(j)) for r, j in zip(reference, judge)]
    return {
        "n": len(pairs),
        "agreement": (sum(1 for r, j in pairs if r == j) / len(pairs)) if pairs else None,
        "cohen_kappa": cohen_kappa([r for r, _ in pairs], [j for _, j in pairs]),
        "confusion": confusion_matrix([r for r, _ in pairs], [j for _, j in pairs]),
    }
