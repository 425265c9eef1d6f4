"""Estimates and intervals from a Qbeast sample, treating the rows of one weight as one cluster.

Why clusters: a sample of fraction ``f`` keeps the rows whose weight ``hash(indexed columns)``
is below ``Weight(f)``. Rows with equal indexed values have equal weights, so they are in or out
of every sample together. Hashing places the distinct weights uniformly, so each *cluster* (the
rows of one group sharing one weight) is in the sample of weight range ``[MIN, W)`` with
probability ``p``, the share of the weight space below ``W``, independently of the others
(Poisson sampling of clusters). The rows of a cluster are not independent draws: treating them
as such would report intervals far too narrow on tables with duplicated indexed values.

Estimators (Horvitz-Thompson over clusters; ``y_c`` a cluster's total, ``m_c`` its count of
non-null values, sums over the clusters read):

* total ``T = sum(y_c) / p``, variance ``(1 - p) / p^2 * sum(y_c^2)`` (the ``1 - p`` is the
  finite-population factor: it is 0 once every weight is read, and the answer is exact);
* ratio (``avg``) ``R = sum(y_c) / sum(m_c)``, linearised variance
  ``(1 - p) * sum((y_c - R m_c)^2) / sum(m_c)^2``.

An interval is ``estimate +- z * sqrt(variance)`` (normal approximation). It is only claimed to
meet the tolerance when the approximation has grounds: enough clusters were read, no single
cluster carries a large share of the estimate, and (when the caller knows the table's row count)
the clusters read explain the rows that were not read. Otherwise ``tolerance_met`` is False and
the reason says why: a giant cluster that has not been read leaves no trace in the rows that
were, so the variance estimate alone can never reveal it.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, fields
from statistics import NormalDist

import numpy as np

from qbeast.approx.aggregates import Aggregate
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.errors import InvalidOptionError

#: Fewest clusters (distinct weights with a value) of a group whose normal interval is trusted.
MIN_CLUSTERS = 30
#: Largest share of an estimate one cluster may carry before the interval is not trusted: a
#: cluster that large among those read means one as large may be among those not read.
MAX_CLUSTER_SHARE = 0.1

_SPACE = float(MAX_WEIGHT) - float(MIN_WEIGHT) + 1.0  # 2^32 weights


def coverage(upper: int | None) -> float:
    """The share of the weight space ``[MIN_WEIGHT, upper)`` covers (None: every weight, 1.0)."""
    if upper is None:
        return 1.0
    return (float(upper) - float(MIN_WEIGHT)) / _SPACE


def z_value(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence`` (0.95 -> 1.96)."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) \
            or not 0.0 < float(confidence) < 1.0:
        raise InvalidOptionError(f"confidence must be a number in (0, 1), got {confidence!r}",
                                 option="confidence", value=confidence, allowed="a number in (0, 1)")
    return NormalDist().inv_cdf(0.5 + float(confidence) / 2.0)


@dataclass(frozen=True)
class ClusterStats:
    """Sufficient statistics of one input (a column, or the row count) over the clusters read.

    ``y`` is a cluster's sum of the input (its row count for the row count), ``m`` its count of
    non-null values (rows for the row count). Statistics of disjoint weight bands add up, so a
    sample grown band by band folds each band's statistics into the previous ones.
    """

    clusters: int = 0  # clusters with at least one non-null value
    s_y: float = 0.0
    s_m: float = 0.0
    s_yy: float = 0.0
    s_mm: float = 0.0
    s_ym: float = 0.0
    s_abs_y: float = 0.0
    max_abs_y: float = 0.0
    max_m: float = 0.0

    @classmethod
    def of_clusters(cls, y: Iterable[float], m: Iterable[float]) -> ClusterStats:
        """The statistics of clusters given by their sums ``y`` and non-null counts ``m``."""
        ys = np.asarray(list(y) if not isinstance(y, np.ndarray) else y, dtype=np.float64)
        ms = np.asarray(list(m) if not isinstance(m, np.ndarray) else m, dtype=np.float64)
        keep = ms > 0
        ys, ms = ys[keep], ms[keep]
        if not ys.size:
            return cls()
        return cls(int(ys.size), float(ys.sum()), float(ms.sum()), float((ys * ys).sum()),
                   float((ms * ms).sum()), float((ys * ms).sum()), float(np.abs(ys).sum()),
                   float(np.abs(ys).max()), float(ms.max()))

    def __add__(self, other: ClusterStats) -> ClusterStats:
        values = {}
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            values[f.name] = max(a, b) if f.name.startswith("max_") else a + b
        return ClusterStats(**values)


@dataclass(frozen=True)
class Estimate:
    """One aggregate's answer: the estimate, its interval, and whether the tolerance is met."""

    estimate: float | None
    low: float | None
    high: float | None
    tolerance_met: bool
    reason: str | None = None  # why the tolerance is not met (None when it is)

    @property
    def relative_half_width(self) -> float:
        """Half the interval's width over the estimate's magnitude (inf when undefined)."""
        if self.estimate is None or self.low is None or self.high is None:
            return math.inf
        half = (self.high - self.low) / 2.0
        if half == 0.0:
            return 0.0
        return math.inf if self.estimate == 0.0 else half / abs(self.estimate)


def _point_and_variance(aggregate: Aggregate, stats: ClusterStats, p: float,
                        exact: ClusterStats) -> tuple[float | None, float]:
    """Estimate and variance from the sampled clusters (``stats``, each read with probability
    ``p``) and the clusters read with certainty (``exact``: no variance)."""
    factor = (1.0 - p) / (p * p)
    if aggregate.function == "count":
        return exact.s_m + stats.s_m / p, factor * stats.s_mm
    if stats.clusters == 0 and exact.clusters == 0:
        return None, 0.0  # sum and avg of no value are null, as in SQL
    if aggregate.function == "sum":
        return exact.s_y + stats.s_y / p, factor * stats.s_yy
    values = exact.s_m + stats.s_m / p
    ratio = (exact.s_y + stats.s_y / p) / values
    residual = stats.s_yy - 2.0 * ratio * stats.s_ym + ratio * ratio * stats.s_mm
    return ratio, factor * max(residual, 0.0) / (values * values)


def _largest_share(aggregate: Aggregate, stats: ClusterStats) -> float:
    """The largest share of the estimate one cluster read carries."""
    if aggregate.function == "count" or aggregate.is_ratio:
        return stats.max_m / stats.s_m if stats.s_m else 1.0
    return stats.max_abs_y / stats.s_abs_y if stats.s_abs_y else 0.0


def estimate(aggregate: Aggregate, stats: ClusterStats, p: float, *, tolerance: float, z: float,
             doubt: str | None = None, exact: ClusterStats | None = None) -> Estimate:
    """The estimate of ``aggregate`` from ``stats`` of a sample covering ``p`` of the weights.

    ``exact`` holds the clusters read whatever the fraction (a stratum read in full, e.g. the
    one weight of all rows whose indexed columns are all null); they add without variance.
    ``doubt`` is a reason, found by the caller for the whole answer (e.g. a failed row-count
    check), not to trust the interval. At ``p == 1`` every row was read: exact, interval of width 0.
    """
    if not 0.0 < p <= 1.0:
        raise InvalidOptionError(f"coverage must be in (0, 1], got {p!r}")
    value, variance = _point_and_variance(aggregate, stats, p, exact or ClusterStats())
    if value is None:
        return Estimate(None, None, None, p >= 1.0,
                        None if p >= 1.0 else f"no non-null value of {aggregate.column} read")
    if p >= 1.0:
        return Estimate(value, value, value, True)
    half = z * math.sqrt(variance)
    reason = doubt
    share = _largest_share(aggregate, stats)
    if reason is None and stats.clusters < MIN_CLUSTERS:
        reason = (f"only {stats.clusters} distinct weights (clusters) read for {aggregate.label}; "
                  f"at least {MIN_CLUSTERS} are needed to trust the interval")
    elif reason is None and share > MAX_CLUSTER_SHARE:
        reason = (f"one weight (rows with equal indexed values) carries {share:.0%} of "
                  f"{aggregate.label}: a cluster that large may also be among the rows not read")
    result = Estimate(value, value - half, value + half, False, reason)
    if reason is None:
        relative = result.relative_half_width
        if relative <= tolerance and tolerance > 0:
            return Estimate(value, value - half, value + half, True)
        reason = (f"relative half-width {relative:.3g} above the tolerance {tolerance:g}"
                  if math.isfinite(relative) else f"estimate of {aggregate.label} is 0")
    return Estimate(value, value - half, value + half, False, reason)


def row_count_doubt(total_rows: int, rows_read: float, sum_sq_cluster_rows: float, p: float,
                    z: float) -> str | None:
    """A reason to distrust every interval, from the table's known row count (None: no doubt).

    The rows read estimate the table's rows as ``rows_read / p`` with the cluster variance of
    the row counts of the weights read (over all groups). When the true count lies outside that
    estimate's own interval (``z`` standard errors, the answer's confidence), the clusters read
    do not explain the rows not read: a cluster much larger than any read is missing (or one
    was read that is far larger than its share), and no interval from this sample is trusted.
    The test is as strict as the intervals: a sound sample fails it at most ``1 - confidence``
    of the time, which only makes the answer read more.
    """
    if p >= 1.0:
        return None
    predicted = rows_read / p
    error = math.sqrt((1.0 - p) / (p * p) * sum_sq_cluster_rows)
    miss = abs(predicted - total_rows)
    if miss > z * error and miss > 0.5:
        return (f"the rows read predict {predicted:,.0f} rows in the table, which holds "
                f"{total_rows:,}: a cluster of rows sharing one weight (equal indexed values, "
                f"e.g. all null) far larger than those read is missing or over-represented")
    return None


def coverage_needed(current: float, relative: float, tolerance: float) -> float:
    """The coverage at which a relative half-width of ``relative`` at ``current`` is expected to
    shrink to ``tolerance``: the variance scales as ``(1 - p) / p`` (1.0 when it cannot).
    """
    if tolerance <= 0 or not math.isfinite(relative) or current >= 1.0:
        return 1.0
    if relative <= tolerance:
        return current
    scale = (1.0 - current) / current * (tolerance / relative) ** 2
    return 1.0 / (1.0 + scale)
