"""Bootstrap intervals kept on disk: the same values give the interval computed before, without scipy.

A bootstrap interval (:func:`ragsweep.metrics.stats.bootstrap_ci`, :func:`~ragsweep.metrics.stats.abstention_f1_ci`)
is a pure function of its values, its seed, its number of resamples and the code that computes it
(ragsweep's source, scipy's and numpy's versions). The key hashes all of them (each value by its
``repr``, which gives a float back bit for bit), so a hit is the interval scipy would compute again; a
warm run (a pytest session's evaluation, ``make eval`` after ``make eval``, a watch update whose values
did not move) so never imports scipy (~0.6 s). On with the scored-case cache
(``RAGSWEEP_SCORED_CACHE``), in ``<cache dir>/intervals.sqlite``, healed like the other caches.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from ragsweep.core.cache_files import BlobTable, default_cache_dir
from ragsweep.core.environment import scored_cache_enabled
from ragsweep.core.keys import CodeDependencies, cache_key

Interval = tuple[float | None, float | None]


# an interval is computed by ragsweep's code with scipy and numpy
_CODE = CodeDependencies(packages=("scipy", "numpy"))


def _file() -> BlobTable | None:
    return (
        BlobTable.shared(default_cache_dir() / "intervals.sqlite", "intervals", "interval")
        if scored_cache_enabled()
        else None
    )


def _cached(kind: str, data: str, compute: Callable[[], Interval]) -> Interval:
    store = _file()
    if store is None:
        return compute()
    key = cache_key("interval", _CODE.fingerprint(), kind, data)
    if (found := store.get_many([key]).get(key)) is not None:
        try:
            low, high = json.loads(found)
            return (None if low is None else float(low), None if high is None else float(high))
        except (ValueError, TypeError):  # a damaged row is a miss
            pass
    interval = compute()
    store.put_many({key: json.dumps(interval).encode()})
    return interval


def bootstrap_interval(values: Sequence[float], *, seed: int = 0, n_resamples: int | None = None) -> Interval:
    """:func:`ragsweep.metrics.stats.bootstrap_ci` of ``values`` (its default resamples unless given)."""

    def compute() -> Interval:
        # deferred: metrics.stats imports scipy (~0.6 s); an interval computed before needs none
        from ragsweep.metrics.stats import bootstrap_ci

        return (
            bootstrap_ci(values, seed=seed)
            if n_resamples is None
            else bootstrap_ci(values, n_resamples=n_resamples, seed=seed)
        )

    return _cached(f"mean/{seed}/{n_resamples}", repr([float(v) for v in values]), compute)


def abstention_f1_interval(pairs: Sequence[tuple[bool, bool]], *, seed: int = 0) -> Interval:
    """:func:`ragsweep.metrics.stats.abstention_f1_ci` of ``(abstained, unanswerable)`` pairs."""

    def compute() -> Interval:
        # deferred: metrics.stats imports scipy (~0.6 s); an interval computed before needs none
        from ragsweep.metrics.stats import abstention_f1_ci

        return abstention_f1_ci(pairs, seed=seed)

    return _cached(f"abstention_f1/{seed}", repr([(bool(a), bool(u)) for a, u in pairs]), compute)
