"""The approximate-answer statistics on simulated tables with known answers, many seeds each.

A simulated table is a list of clusters (rows sharing one weight: equal indexed values) with a
group, a row count, a value sum and a non-null count each; weights are drawn uniformly from the
weight space as Spark's hash spreads them. The growing sample of :mod:`qbeast.approx.sequential`
runs over it exactly as it runs over Spark (the band reader is the only difference), and every
answer is checked against the exact aggregate of the whole table.

The claim tested (docs/approx.md): over independent tables, the intervals of the answers that
say ``tolerance_met`` cover the truth at least at the confidence minus :data:`SLACK`; when they
cannot be trusted (a giant single-weight cluster, too few clusters) the answer says so instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from qbeast.approx.aggregates import Aggregate, parse_aggregate, parse_aggregates
from qbeast.approx.estimator import ClusterStats, coverage, estimate, row_count_doubt, z_value
from qbeast.approx.sequential import BandRead, approximate
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.errors import InvalidOptionError

#: Coverage an answer may fall short of its confidence by: the normal approximation on skewed
#: cluster totals and the data-dependent stopping rule (docs/approx.md, "Assumptions").
SLACK = 0.03
# The simulations never switch to an exact read early (``exact_from=1.0``): that switch is a cost
# rule of the Spark reads, and the point here is the intervals of sampled answers.
CONFIDENCE = 0.95
SEEDS = 120
AGGREGATES = parse_aggregates(["count(*)", "sum(v)", "avg(v)"])


@dataclass
class Table:
    """Clusters of a simulated table: group, weight, rows, sum of v, non-null v count."""

    group: np.ndarray
    weight: np.ndarray
    rows: np.ndarray
    total: np.ndarray
    nonnull: np.ndarray

    def truth(self, group: int, aggregate: Aggregate) -> float | None:
        mine = self.group == group
        if aggregate.column is None:
            return float(self.rows[mine].sum())
        if aggregate.function == "count":
            return float(self.nonnull[mine].sum())
        if not self.nonnull[mine].sum():
            return None
        if aggregate.function == "sum":
            return float(self.total[mine].sum())
        return float(self.total[mine].sum() / self.nonnull[mine].sum())

    #: clusters of the stratum read in full (rows with all indexed columns null), if any
    stratum: np.ndarray | None = None

    def read_band(self, lo: int, hi: int | None) -> BandRead:
        upper = MAX_WEIGHT + 1 if hi is None else hi
        inside = (self.weight >= lo) & (self.weight < upper)
        if self.stratum is not None:
            inside &= ~self.stratum
        return self._read(inside)

    def read_stratum(self) -> BandRead:
        assert self.stratum is not None
        return self._read(self.stratum)

    def _read(self, inside: np.ndarray) -> BandRead:
        groups = {}
        for g in np.unique(self.group[inside]):
            mine = inside & (self.group == g)
            groups[(int(g),)] = {
                None: ClusterStats.of_clusters(self.rows[mine], self.rows[mine]),
                "v": ClusterStats.of_clusters(self.total[mine], self.nonnull[mine]),
            }
        per_weight = np.bincount(np.unique(self.weight[inside], return_inverse=True)[1],
                                 weights=self.rows[inside]) if inside.any() else np.zeros(0)
        rows = int(self.rows[inside].sum())
        return BandRead(groups, rows, float((per_weight ** 2).sum()), rows)


def _table(rng: np.random.Generator, sizes: np.ndarray, values: np.ndarray, groups: np.ndarray,
           null_share: float = 0.0) -> Table:
    """Clusters of ``sizes`` rows whose rows each carry ``values`` (one per cluster, scaled by
    per-row noise summed), in ``groups``; ``null_share`` of the rows have a null value."""
    sizes = sizes.astype(np.int64)
    nonnull = rng.binomial(sizes, 1.0 - null_share)
    noise = rng.normal(0.0, 1.0, len(sizes)) * np.sqrt(np.maximum(nonnull, 1))
    totals = np.where(nonnull > 0, values * nonnull + noise * np.abs(values) * 0.1, 0.0)
    weights = rng.integers(MIN_WEIGHT, MAX_WEIGHT, len(sizes), endpoint=True)
    return Table(groups.astype(np.int64), weights, sizes, totals, nonnull.astype(np.int64))


def _uniform(rng):
    n = 20_000
    return _table(rng, np.ones(n), rng.normal(100.0, 20.0, n), rng.integers(0, 4, n))


def _skewed(rng):
    n = 20_000
    return _table(rng, np.ones(n), rng.lognormal(3.0, 1.2, n), rng.integers(0, 3, n))


def _duplicates(rng):
    n = 4_000  # indexed values repeated: clusters of geometric sizes (mean 5)
    return _table(rng, rng.geometric(0.2, n), rng.normal(50.0, 15.0, n), rng.integers(0, 2, n))


def _small_groups(rng):
    n = 20_000  # group 1 holds about 40 rows
    groups = (rng.random(n) < 0.002).astype(np.int64)
    return _table(rng, np.ones(n), rng.normal(10.0, 3.0, n), groups)


def _giant(rng):
    n = 10_000  # one weight holds 20% of the rows (all indexed values null)
    sizes = np.ones(n + 1)
    sizes[-1] = n / 4
    return _table(rng, sizes, rng.normal(30.0, 5.0, n + 1), np.zeros(n + 1))


def _nulls(rng):
    n = 10_000  # a third of the values null, and a null-key cluster of 1% of the rows
    sizes = np.ones(n + 1)
    sizes[-1] = 100
    return _table(rng, sizes, rng.normal(5.0, 2.0, n + 1), rng.integers(0, 2, n + 1), null_share=0.33)


NULL_WEIGHT = 42  # the weight of rows whose indexed columns are all null: Spark's hash seed


def _null_keys(rng):
    n = 10_000  # 8% of the rows null in every indexed column: one cluster at the hash seed
    table = _table(rng, np.concatenate([np.ones(n), [800]]), rng.normal(20.0, 4.0, n + 1),
                   rng.integers(0, 2, n + 1))
    table.weight[-1] = NULL_WEIGHT
    table.stratum = np.arange(n + 1) == n
    return table

SCENARIOS = {"uniform": _uniform, "skewed": _skewed, "duplicates": _duplicates,
             "small_groups": _small_groups, "giant": _giant, "nulls": _nulls,
             "null_keys": _null_keys}


def _run(scenario: str, tolerance: float, known_rows: bool) -> tuple[int, int, int, list[float]]:
    """(sampled answers met, of them covering the truth, answers not met, fractions) over the
    seeds; answers at fraction 1 are exact and checked, but not counted as sampled."""
    met = covered = unmet = 0
    fractions = []
    for seed in range(SEEDS):
        rng = np.random.default_rng([seed, len(scenario)])
        table = SCENARIOS[scenario](rng)
        answer = approximate(AGGREGATES, table.read_band, tolerance=tolerance, confidence=CONFIDENCE,
                             total_rows=int(table.rows.sum()) if known_rows else None, grouped=True,
                             first_rows=200, exact_from=1.0,
                             read_certain=table.read_stratum if table.stratum is not None else None)
        fractions.append(answer.fraction)
        for (group,), by_aggregate in answer.estimates.items():
            for aggregate, result in by_aggregate.items():
                truth = table.truth(group, aggregate)
                if not result.tolerance_met:
                    unmet += 1
                    continue
                assert truth is not None and result.low is not None and result.high is not None
                assert result.relative_half_width <= tolerance
                if answer.fraction == 1.0:
                    assert result.estimate == pytest.approx(truth, rel=1e-9)
                    continue
                met += 1
                covered += result.low <= truth <= result.high
    return met, covered, unmet, fractions


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_intervals_that_claim_the_tolerance_cover_the_truth(scenario):
    met, covered, _, fractions = _run(scenario, tolerance=0.1, known_rows=True)
    sampled = sum(f < 1.0 for f in fractions) / len(fractions)
    if scenario in ("giant", "small_groups"):  # read (nearly) whole: nothing to claim early
        assert sampled <= 0.25
    else:  # most answers stop early, and their claims hold
        assert sampled >= 0.5
    if met:
        assert covered / met >= CONFIDENCE - SLACK, (scenario, covered, met)


def test_a_giant_single_weight_cluster_is_reported_not_hidden():
    """20% of the rows share one weight: no answer below the fraction that reads it claims the
    tolerance; every answer that does claim it has read the giant cluster or covers the truth."""
    for seed in range(SEEDS):
        table = _giant(np.random.default_rng([seed, 99]))
        giant_fraction = coverage(int(table.weight[-1]) + 1)
        answer = approximate(AGGREGATES, table.read_band, tolerance=0.02, confidence=CONFIDENCE,
                             total_rows=int(table.rows.sum()), grouped=True, exact_from=1.0)
        for by_aggregate in answer.estimates.values():
            for aggregate, result in by_aggregate.items():
                if result.tolerance_met and aggregate.function != "avg":
                    assert answer.fraction >= giant_fraction, (seed, aggregate, result)


def test_without_the_row_count_no_sampled_answer_claims_the_tolerance():
    """A giant cluster not read leaves no trace in the rows read: without the table's row count
    (files without numRecords statistics) nothing below fraction 1 is claimed."""
    table = _giant(np.random.default_rng(7))
    answer = approximate(AGGREGATES, table.read_band, tolerance=0.02, confidence=CONFIDENCE,
                         grouped=True, max_fraction=0.5)
    for result in answer.estimates[(0,)].values():
        assert not result.tolerance_met and "row count" in result.reason


def test_small_groups_are_not_claimed_from_few_clusters():
    met = 0
    for seed in range(40):
        table = _small_groups(np.random.default_rng([seed, 3]))
        answer = approximate(AGGREGATES, table.read_band, tolerance=0.05, confidence=CONFIDENCE,
                             grouped=True, exact_from=1.0)
        # a group none of whose rows was read is absent from the answer (docs/approx.md)
        small = answer.estimates.get((1,), {})
        for result in small.values():
            if result.tolerance_met:
                met += 1
                assert answer.fraction == 1.0  # 40 rows: never 30 clusters below fraction 1
            else:
                assert "distinct weights" in (result.reason or "")
    assert met > 0


def test_tolerance_zero_reads_everything_once_and_is_exact():
    table = _duplicates(np.random.default_rng(5))
    answer = approximate(AGGREGATES, table.read_band, tolerance=0.0, confidence=CONFIDENCE, grouped=True)
    assert answer.steps == [(0.0, 1.0)] and answer.fraction == 1.0
    for (group,), by_aggregate in answer.estimates.items():
        for aggregate, result in by_aggregate.items():
            assert result.tolerance_met and result.low == result.high == result.estimate
            assert result.estimate == pytest.approx(table.truth(group, aggregate), rel=1e-12)


def test_each_step_reads_a_new_band_and_the_bands_tile_the_weights():
    table = _uniform(np.random.default_rng(11))
    bands = []

    def read(lo, hi):
        bands.append((lo, hi))
        return table.read_band(lo, hi)

    answer = approximate(AGGREGATES, read, tolerance=0.001, confidence=CONFIDENCE, max_fraction=0.5,
                         grouped=True)
    assert bands[0][0] == MIN_WEIGHT and answer.fraction == 0.5
    assert all(a[1] == b[0] for a, b in zip(bands, bands[1:]))  # contiguous, no overlap
    fractions = [to for _, to in answer.steps]
    assert fractions == sorted(set(fractions)) and len(fractions) >= 2
    assert answer.rows_read == int(table.rows[table.weight < bands[-1][1]].sum())


def test_a_step_that_would_fold_a_tenth_of_the_weights_reads_the_rest_exactly():
    table = _uniform(np.random.default_rng(4))
    answer = approximate(AGGREGATES, table.read_band, tolerance=0.01, confidence=CONFIDENCE,
                         grouped=True, total_rows=int(table.rows.sum()))
    assert answer.fraction == 1.0 and all(0 < a < b and (b < 0.1 or b == 1.0) for a, b in answer.steps[1:])
    assert all(r.tolerance_met and r.low == r.high for by in answer.estimates.values() for r in by.values())


def test_the_all_null_weight_is_read_in_full_first_and_never_again():
    """8% of the rows share the all-null weight: read as a stratum of its own, the answers stop
    early and cover the truth, where without it the missing-cluster check keeps reading."""
    table = _null_keys(np.random.default_rng(3))
    calls = []

    def read(lo, hi):
        calls.append("band")
        return table.read_band(lo, hi)

    def stratum():
        calls.append("stratum")
        return table.read_stratum()

    total = int(table.rows.sum())
    answer = approximate(AGGREGATES, read, tolerance=0.1, confidence=CONFIDENCE, grouped=True,
                         total_rows=total, first_rows=200, exact_from=1.0, read_certain=stratum)
    assert calls[0] == "stratum" and calls.count("stratum") == 1 and len(calls) >= 2
    assert answer.fraction < 1.0
    for (group,), by_aggregate in answer.estimates.items():
        for aggregate, result in by_aggregate.items():
            assert result.tolerance_met and result.low <= table.truth(group, aggregate) <= result.high
    table.stratum = None  # the same table read without the stratum
    blind = approximate(AGGREGATES, table.read_band, tolerance=0.1, confidence=CONFIDENCE,
                        grouped=True, total_rows=total, first_rows=200, exact_from=1.0, max_fraction=0.5)
    if table.weight[-1] >= 0:  # the all-null weight 42 lies above Weight(0.5)
        assert not any(r.tolerance_met for by in blind.estimates.values() for r in by.values())


def test_cluster_variance_is_wider_than_a_row_variance_would_be():
    """The same rows as clusters of 10 equal values: the interval widens ~sqrt(10)x."""
    rng = np.random.default_rng(1)
    values = rng.normal(10, 2, 5000)
    rows = ClusterStats.of_clusters(values, np.ones(5000))
    clusters = ClusterStats.of_clusters(values * 10, np.full(5000, 10.0))
    total = parse_aggregate("sum(v)")
    a = estimate(total, rows, 0.1, tolerance=0.5, z=1.96)
    b = estimate(total, clusters, 0.1, tolerance=0.5, z=1.96)
    ratio = (b.high - b.low) / (a.high - a.low)
    assert ratio == pytest.approx(math.sqrt(10) * math.sqrt(10) / math.sqrt(10) * math.sqrt(10), rel=1e-9)


def test_row_count_check_flags_rows_the_clusters_read_do_not_explain():
    assert row_count_doubt(10_000, 1_000, 1_000, 0.1, 1.96) is None
    assert "missing" in row_count_doubt(12_000, 1_000, 1_000, 0.1, 1.96)
    assert row_count_doubt(12_000, 12_000, 1.0, 1.0, 1.96) is None


@pytest.mark.parametrize("text, message", [
    ("min(v)", "cannot be approximated"), ("max(v)", "cannot be approximated"),
    ("percentile(v, 0.5)", "cannot be approximated"), ("count(distinct v)", "must name one column"),
    ("sum(*)", "not an aggregate"), ("avg(v + 1)", "must name one column"), ("v", "is not one of"),
    (3, "must be a string"),
])
def test_unsupported_aggregates_are_refused_by_name(text, message):
    with pytest.raises(InvalidOptionError, match=message) as caught:
        parse_aggregate(text)
    assert caught.value.allowed == ["count", "sum", "avg"]


def test_aggregate_forms():
    assert parse_aggregates("COUNT(*)") == (Aggregate("count", None),)
    assert parse_aggregates(["avg(`a b`)", "avg(`a b`)"]) == (Aggregate("avg", "a b"),)
    with pytest.raises(InvalidOptionError, match="at least one"):
        parse_aggregates([])
    with pytest.raises(InvalidOptionError, match="confidence"):
        z_value(1.0)
    assert z_value(0.95) == pytest.approx(1.959964, rel=1e-6)
