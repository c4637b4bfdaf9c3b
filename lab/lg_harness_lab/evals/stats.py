"""Intervals for the figures of an A/B comparison: Wilson for small counts, a cluster bootstrap otherwise.

Why clusters: scenarios made from one template (or written about one behaviour) tend to succeed or fail
together, so counting 336 scenarios as 336 independent draws overstates how sure a figure is. The unit of
resampling is the scenario's *kind* (:func:`evals.clusters.cluster_of`); every seed and every turn of a scenario stays in
its cluster. A figure is a pooled ratio (sum of a numerator over sum of a denominator: successes over runs,
valid calls over calls, tokens over messages), and its interval is the 2.5th-97.5th percentile of that ratio
over ``RESAMPLES`` resamples of the clusters with replacement. Paired differences resample the clusters
once for both designs, so what the designs share (the same hard scenarios) cancels out.

The RNG seed is fixed: the same records give the same intervals on every run and machine.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy.stats import norm

RESAMPLES = 2000
SEED = 13  # fixed so that a report is reproducible from its records
LEVEL = 0.95
MIN_CLUSTERS = 5
"""A proportion that rests on fewer clusters than this gets a Wilson interval on its pooled count instead:
resampling two or three clusters says almost nothing about the spread (one cluster gives a zero width)."""

# ------------------------------------------------------------------------------------------- intervals


def wilson(successes: float, n: float, level: float = LEVEL) -> list[float] | None:
    """Wilson score interval of a proportion ``successes / n`` (None when ``n`` is 0).

    Unlike the normal approximation it stays inside [0, 1] and keeps a sensible width at 0/n and n/n, which
    is what small counts (34 recall turns, a dozen 429s) need.
    """
    if n <= 0:
        return None
    z = float(norm.ppf(0.5 + level / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def _resample(k: int, resamples: int, seed: int) -> np.ndarray:
    """How often each of ``k`` clusters is drawn in each resample of ``k`` draws: shape (resamples, k)."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(k, np.full(k, 1.0 / k), size=resamples).astype(float) if k else np.zeros((resamples, 0))


def _percentiles(values: np.ndarray, level: float) -> list[float] | None:
    values = values[np.isfinite(values)]  # a resample without any denominator has no ratio
    if not values.size:
        return None
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return [float(lo), float(hi)]


def _ratios(weights: np.ndarray, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return (weights @ num) / (weights @ den)


def ratio_ci(num: Sequence[float], den: Sequence[float], *, resamples: int = RESAMPLES, seed: int = SEED,
             level: float = LEVEL) -> list[float] | None:
    """Cluster-bootstrap interval of ``sum(num) / sum(den)``; ``num[i]``, ``den[i]`` are cluster i's sums."""
    n, d = np.asarray(num, float), np.asarray(den, float)
    if not n.size or d.sum() <= 0:
        return None
    return _percentiles(_ratios(_resample(n.size, resamples, seed), n, d), level)


def paired_ratio_ci(num_a: Sequence[float], den_a: Sequence[float], num_b: Sequence[float],
                    den_b: Sequence[float], *, resamples: int = RESAMPLES, seed: int = SEED,
                    level: float = LEVEL) -> list[float] | None:
    """Interval of ratio(a) - ratio(b) when both are measured on the same clusters (same order): each
    resample draws the clusters once for both designs, so the difference is paired."""
    arrays = [np.asarray(x, float) for x in (num_a, den_a, num_b, den_b)]
    if not arrays[0].size or arrays[1].sum() <= 0 or arrays[3].sum() <= 0:
        return None
    weights = _resample(arrays[0].size, resamples, seed)
    return _percentiles(_ratios(weights, arrays[0], arrays[1]) - _ratios(weights, arrays[2], arrays[3]), level)


def percentile_ci(groups: Sequence[Sequence[float]], q: float, *, resamples: int = RESAMPLES, seed: int = SEED,
                  level: float = LEVEL, chunk: int = 250) -> list[float] | None:
    """Cluster-bootstrap interval of the ``q``-th percentile (0-100) of the pooled values of ``groups``.

    A resample weights each value by how often its cluster was drawn; its percentile is the first value
    whose cumulative weight reaches ``q``% (resamples are taken ``chunk`` at a time to bound memory).
    """
    arrays = [np.asarray(g, float) for g in groups if len(g)]
    if not arrays:
        return None
    values = np.concatenate(arrays)
    labels = np.concatenate([np.full(len(a), i) for i, a in enumerate(arrays)])
    order = np.argsort(values, kind="stable")
    values, labels = values[order], labels[order]
    weights = _resample(len(arrays), resamples, seed)
    picked = []
    for start in range(0, resamples, chunk):
        cum = np.cumsum(weights[start:start + chunk][:, labels], axis=1)
        target = cum[:, -1:] * q / 100
        picked.append(values[np.minimum((cum < target).sum(axis=1), len(values) - 1)])
    return _percentiles(np.concatenate(picked), level)


def excludes_zero(ci: Sequence[float] | None) -> bool:
    """Whether a difference is significant at the interval's level: its interval lies on one side of 0."""
    return ci is not None and (ci[0] > 0 or ci[1] < 0)


# ----------------------------------------------------------------------------------------- estimates


def _sums(by_cluster: Mapping[str, Sequence[float]]) -> tuple[list[str], list[float], list[float]]:
    keys = sorted(by_cluster)  # sorted so the resamples line up with the same clusters on every run
    return keys, [float(by_cluster[k][0]) for k in keys], [float(by_cluster[k][1]) for k in keys]


def estimate(by_cluster: Mapping[str, Sequence[float]], *, proportion: bool = False) -> dict[str, Any]:
    """The pooled ratio of ``{cluster: [num, den]}`` and its 95% interval.

    Returns ``mean`` (None without a denominator), ``ci``, ``method`` ("cluster-bootstrap" or "wilson"),
    ``clusters`` (how many have a denominator) and ``units`` (the pooled denominator: calls, turns, ...).
    """
    keys, num, den = _sums({k: v for k, v in by_cluster.items() if v[1]})
    total_num, total_den = sum(num), sum(den)
    if not total_den:
        return {"mean": None, "ci": None, "method": None, "clusters": 0, "units": 0}
    mean = total_num / total_den
    if proportion and len(keys) < MIN_CLUSTERS:
        ci, method = wilson(total_num, total_den), "wilson"
    else:
        ci, method = ratio_ci(num, den), "cluster-bootstrap"
    return {"mean": mean, "ci": ci, "method": method, "clusters": len(keys), "units": total_den}


def paired(target: Mapping[str, Sequence[float]], baseline: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """Target minus baseline, each a ``{cluster: [num, den]}`` ratio, over the clusters both have data in.

    ``significant`` is False when the interval contains 0: the data cannot tell the designs apart.
    """
    shared = sorted(k for k in set(target) & set(baseline) if target[k][1] and baseline[k][1])
    if not shared:
        return {"mean": None, "ci": None, "clusters": 0, "significant": False}
    t = [[float(target[k][i]) for k in shared] for i in (0, 1)]
    b = [[float(baseline[k][i]) for k in shared] for i in (0, 1)]
    mean = sum(t[0]) / sum(t[1]) - sum(b[0]) / sum(b[1])
    ci = paired_ratio_ci(t[0], t[1], b[0], b[1])
    return {"mean": mean, "ci": ci, "clusters": len(shared), "significant": excludes_zero(ci)}


def by_cluster(rows: Iterable[tuple[str, float, float]]) -> dict[str, list[float]]:
    """Sum ``(cluster, num, den)`` rows into ``{cluster: [num, den]}``."""
    out: dict[str, list[float]] = {}
    for cluster, num, den in rows:
        acc = out.setdefault(cluster, [0.0, 0.0])
        acc[0] += num
        acc[1] += den
    return out
