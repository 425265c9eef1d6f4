"""The growing sample: read weight band after weight band until every estimate is good enough.

Samples are nested (the rows of fraction ``f1`` are inside those of any ``f2 > f1``), so a step
reads only the new band ``[Weight(f1), Weight(f2))`` and adds its cluster statistics to those of
the bands before it: no row is read twice. Fractions come from a geometric 1-2-5 ladder (the
edges of the writer's weight bands, :data:`qbeast.core.weight_bands.BAND_FRACTIONS`, then 1.0),
so a step never reads part of a band layout's row group or file it will not use. After each
step the next fraction is the smallest ladder fraction at which the widest interval is expected
to meet the tolerance (the variance shrinks as ``(1 - p) / p``); an interval that is not trusted
for another reason (too few clusters, a dominant cluster) quadruples the fraction.

The reading is the caller's (``read_band``): this module decides which bands to read and what
the answer is, and runs the same way on simulated data and on Spark.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from qbeast.approx.aggregates import Aggregate
from qbeast.approx.estimator import (
    ClusterStats,
    Estimate,
    coverage,
    coverage_needed,
    estimate,
    row_count_doubt,
    z_value,
)
from qbeast.core.weight import MIN_WEIGHT, weight_from_fraction
from qbeast.core.weight_bands import BAND_FRACTIONS
from qbeast.errors import InvalidOptionError

#: The fractions a growing sample stops at.
LADDER: tuple[float, ...] = (*BAND_FRACTIONS, 1.0)
#: A step that would reach this fraction or more reads the rest of the table instead: the band
#: completing the table is folded per group (its answer is exact), while a band this large is
#: past what the driver folds and folding it per weight in Spark shuffles every row of it, which
#: costs more than reading the whole table from there on
#: (benchmarks/results/approx.md: 4M rows folded per weight took 10x a 20M-row exact sum).
EXACT_FROM = 0.1
#: Rows the first step aims to read (when the table's row count is known).
FIRST_STEP_ROWS = 5_000

GroupKey = tuple[Any, ...]

_UNKNOWN_ROWS = ("the table's row count is unknown (files without numRecords statistics), so a "
                 "cluster of rows sharing one weight that was not read cannot be ruled out")


@dataclass
class BandRead:
    """What reading one weight band returned.

    ``groups`` maps a group's key to the statistics of each input (None: the row count) of the
    rows that meet the filter. ``band_rows`` counts the band's rows before the filter (in the
    files that may hold a matching row) and ``sum_sq_weight_rows`` sums, over the band's
    distinct weights, their squared row counts (for the row-count check); the rest is what the
    read cost.
    """

    groups: dict[GroupKey, dict[str | None, ClusterStats]]
    band_rows: int = 0
    sum_sq_weight_rows: float = 0.0
    rows_scanned: int = 0
    bytes_read: int = 0


@dataclass
class Answer:
    """Estimates per group and aggregate, and what reading them cost."""

    fraction: float
    estimates: dict[GroupKey, dict[Aggregate, Estimate]]
    rows_read: int  # rows Spark's scans returned over every step
    bytes_read: int
    steps: list[tuple[float, float]] = field(default_factory=list)  # (from, to) fraction per step


def check_fraction(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < float(value) <= 1.0:
        raise InvalidOptionError(f"{name} must be a number in (0, 1], got {value!r}",
                                 option=name, value=value, allowed="a number in (0, 1]")
    return float(value)


def check_tolerance(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) < 1.0 \
            or math.isnan(float(value)):
        raise InvalidOptionError(
            f"tolerance must be a relative error in [0, 1) (0.01 = within 1%, 0 = exact), got {value!r}",
            option="tolerance", value=value, allowed="a number in [0, 1)")
    return float(value)


def first_fraction(total_rows: int | None, tolerance: float, max_fraction: float,
                   first_rows: int = FIRST_STEP_ROWS, totals_at_z: float | None = None,
                   exact_from: float = EXACT_FROM) -> float:
    """The first step: everything when the answer must be exact, else the smallest ladder
    fraction expected to hold ``first_rows`` rows.

    ``totals_at_z``: the answer has a count or a sum at this z. Their relative half-width is at
    least ``z * sqrt((1 - p) / (p N))`` (every cluster a single row, all values equal), so
    fewer than ``(z / tolerance)^2 (1 - p)`` rows read can never meet the tolerance: the first
    step reads at least that many, saving the steps that could not succeed.
    """
    if tolerance == 0.0:
        return max_fraction
    if not total_rows:
        return min(LADDER[0], max_fraction)
    wanted = first_rows / total_rows
    if totals_at_z is not None:
        needed = (totals_at_z / tolerance) ** 2
        wanted = max(wanted, needed / (total_rows + needed))  # p N >= needed (1 - p)
    return next_fraction(0.0, wanted, max_fraction, exact_from)


def next_fraction(current: float, wanted: float, max_fraction: float,
                  exact_from: float = EXACT_FROM) -> float:
    """The smallest ladder fraction above ``current`` and at or above ``wanted``, capped; 1.0
    (exact) instead of any fraction from ``exact_from`` on when ``max_fraction`` allows."""
    chosen = max_fraction
    for f in LADDER:
        if f > current and f >= wanted * (1 - 1e-9):
            chosen = min(f, max_fraction)
            break
    return 1.0 if chosen >= exact_from and max_fraction >= 1.0 else chosen


def band(lower: float, upper: float) -> tuple[int, int | None]:
    """The weights ``[lo, hi)`` between two fractions (``hi`` None: up to and with the largest)."""
    lo = MIN_WEIGHT if lower <= 0.0 else weight_from_fraction(lower)
    return lo, None if upper >= 1.0 else weight_from_fraction(upper)


def _add(into: dict[GroupKey, dict[str | None, ClusterStats]], read: BandRead) -> None:
    for key, inputs in read.groups.items():
        mine = into.setdefault(key, {})
        for column, stats in inputs.items():
            mine[column] = mine.get(column, ClusterStats()) + stats


def approximate(
    aggregates: Sequence[Aggregate],
    read_band: Callable[[int, int | None], BandRead],
    *,
    tolerance: float,
    confidence: float,
    max_fraction: float = 1.0,
    total_rows: int | None = None,
    grouped: bool = False,
    first_rows: int = FIRST_STEP_ROWS,
    read_certain: Callable[[], BandRead] | None = None,
    exact_from: float = EXACT_FROM,
    read_certain_with: Callable[[int, int | None], tuple[BandRead, BandRead]] | None = None,
) -> Answer:
    """Grow the sample until every estimate meets ``tolerance`` (or ``max_fraction`` is read).

    ``read_band(lo, hi)`` reads the rows with ``lo <= weight < hi`` (``hi`` None: no upper
    bound) and returns their :class:`BandRead`. ``read_certain``, when given, reads a stratum
    in full first (the rows whose indexed columns are all null: one weight, a cluster that can
    hold a large share of a table); its rows add to every estimate without variance, and
    ``read_band`` must then leave them out. ``read_certain_with(lo, hi)``, when given, reads
    that stratum and the first band together (``(stratum, band)``, e.g. in one job); the first
    band is then chosen from ``total_rows`` before the stratum's rows are known. A step
    reaching ``exact_from`` reads the rest of the table instead (:data:`EXACT_FROM`). ``total_rows`` is the row count of the files
    that may hold a matching row (from the log's statistics; None when unknown): every step
    checks that the clusters read explain the rows not read (:func:`row_count_doubt`). The
    first step aims at ``first_rows`` rows. ``grouped``: whether the rows are grouped (a grouped
    answer has no row for a group none of whose rows was read).
    """
    tolerance = check_tolerance(tolerance)
    z = z_value(confidence)
    max_fraction = check_fraction("max_fraction", max_fraction)
    # without groups the answer has its one row even when no row is read (count 0, sum null)
    stats: dict[GroupKey, dict[str | None, ClusterStats]] = {} if grouped else {(): {}}
    sum_sq = 0.0
    rows = size = band_rows = 0
    certain: dict[GroupKey, dict[str | None, ClusterStats]] = {}
    certain_rows = 0
    totals = any(a.function in ("count", "sum") for a in aggregates)
    target: float | None = None
    first: BandRead | None = None  # the first band, when read with the stratum
    if read_certain is not None:
        if read_certain_with is not None:
            target = first_fraction(total_rows, tolerance, max_fraction, first_rows,
                                    z if totals else None, exact_from)
            read, first = read_certain_with(*band(0.0, target))
        else:
            read = read_certain()
        _add(certain, read)
        certain_rows += read.band_rows
        rows += read.rows_scanned
        size += read.bytes_read
    if total_rows is not None:
        total_rows -= certain_rows
    done = 0.0
    if target is None:
        target = first_fraction(total_rows, tolerance, max_fraction, first_rows,
                                z if totals else None, exact_from)
    steps: list[tuple[float, float]] = []
    while True:
        lo, hi = band(done, target)
        read, first = (read_band(lo, hi), None) if first is None else (first, None)
        _add(stats, read)
        sum_sq += read.sum_sq_weight_rows
        band_rows += read.band_rows
        rows += read.rows_scanned
        size += read.bytes_read
        steps.append((done, target))
        done = target
        p = coverage(hi)
        doubt = None if p >= 1.0 else _UNKNOWN_ROWS
        if total_rows is not None:
            doubt = row_count_doubt(total_rows, band_rows, sum_sq, p, z)
        for key in certain:
            stats.setdefault(key, {})
        answers = {key: {a: estimate(a, inputs.get(a.column, ClusterStats()), p, tolerance=tolerance,
                                     z=z, doubt=doubt, exact=certain.get(key, {}).get(a.column))
                         for a in aggregates}
                   for key, inputs in stats.items()}
        pending = [e for by_aggregate in answers.values() for e in by_aggregate.values()
                   if not e.tolerance_met]
        if (not pending and stats) or done >= max_fraction:
            return Answer(done, answers, rows, size, steps)
        wanted = 4.0 * p
        widths = [e.relative_half_width for e in pending]
        if stats and all(e.reason and e.reason.startswith("relative half-width") for e in pending):
            wanted = max(coverage_needed(p, w, tolerance) for w in widths)
        target = next_fraction(done, wanted, max_fraction, exact_from)
