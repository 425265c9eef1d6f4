"""The driver-side fold of a band's rows into cluster statistics, on rows with known clusters.

The Spark fold of the same rows is compared with it in tests/spark/test_approx.py; here the
statistics are checked against sums written out by hand from the clusters.
"""
from __future__ import annotations

import pyarrow as pa
import pytest

from qbeast.approx.clusters import fold_band
from qbeast.approx.estimator import ClusterStats


def _rows() -> pa.Table:
    # weight 7: 2 rows in group "a" (values 1, null) and 1 in group "b" (value 4): two clusters
    # of one weight; weight 9: 3 rows in "a" (2, 3, 5); weight 11: 1 row failing the filter
    return pa.table({
        "_met": [True, True, True, True, True, True, False],
        "_w": pa.array([7, 7, 7, 9, 9, 9, 11], pa.int32()),
        "_g0": ["a", "a", "b", "a", "a", "a", None],
        "_v0": [1.0, None, 4.0, 2.0, 3.0, 5.0, None],
    })


def test_clusters_are_the_rows_of_one_group_sharing_one_weight():
    found, band_rows, sum_sq = fold_band(_rows(), 1, ["v"], per_weight=True)
    assert set(found) == {("a",), ("b",)}
    # group a: clusters (w7: 2 rows, y=1, m=1) and (w9: 3 rows, y=10, m=3)
    assert found[("a",)][None] == ClusterStats(2, 5.0, 5.0, 13.0, 13.0, 13.0, 5.0, 3.0, 3.0)
    assert found[("a",)]["v"] == ClusterStats(2, 11.0, 4.0, 101.0, 10.0, 31.0, 11.0, 10.0, 3.0)
    assert found[("b",)]["v"] == ClusterStats(1, 4.0, 1.0, 16.0, 1.0, 4.0, 4.0, 4.0, 1.0)
    # every row counts for the row-count check, the filtered-out one too; weight 7 holds 3 rows
    # over two groups: its clusters add 2*3 + 1*3, weight 9 adds 3*3, weight 11 1*1
    assert band_rows == 7
    assert sum_sq == pytest.approx(2 * 3 + 1 * 3 + 9 + 1)


def test_a_cluster_without_values_counts_rows_but_not_for_the_value():
    rows = pa.table({"_met": [True, True], "_w": pa.array([1, 2], pa.int32()),
                     "_v0": pa.array([None, 6.0], pa.float64())})
    found, band_rows, sum_sq = fold_band(rows, 0, ["v"], per_weight=True)
    assert found[()][None].clusters == 2 and found[()]["v"].clusters == 1
    assert found[()]["v"].s_y == 6.0 and found[()]["v"].s_m == 1.0
    assert (band_rows, sum_sq) == (2, 2.0)


def test_the_completing_band_folds_each_group_as_one_cluster():
    found, band_rows, _ = fold_band(_rows(), 1, ["v"], per_weight=False)
    assert found[("a",)][None] == ClusterStats(1, 5.0, 5.0, 25.0, 25.0, 25.0, 5.0, 5.0, 5.0)
    assert found[("a",)]["v"].s_y == 11.0 and found[("a",)]["v"].s_m == 4.0
    assert band_rows == 7


def test_an_empty_band_has_no_group():
    empty = _rows().slice(0, 0)
    assert fold_band(empty, 1, ["v"], per_weight=True) == ({}, 0, 0.0)
