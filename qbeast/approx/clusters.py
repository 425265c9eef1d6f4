"""Cluster statistics of one weight band, folded on the driver from the band's rows.

A small band (a few thousand to a few hundred thousand rows) costs far less to fold here than in
Spark: Spark's fold needs a shuffle per level (per weight, then per group), each a job of its own
at a fixed cost, while the rows of a small band come back from a single scan-only job as Arrow in
a fraction of that. The input is the table the band's scan returns, with the columns ``_met``
(the row meets the user's filter), ``_w`` (its weight), ``_g0, _g1, ...`` (the group columns,
null where ``_met`` is false) and ``_v0, _v1, ...`` (each input as a double, null where ``_met``
is false); the statistics are those :mod:`qbeast.spark.read.approx` computes in Spark for a large
band, so both folds give the same answer.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from qbeast.approx.estimator import ClusterStats

GroupStats = dict[tuple[Any, ...], dict[str | None, ClusterStats]]


def _column(table: Any, name: str, fill: float = 0.0) -> np.ndarray:
    return np.asarray(table.column(name).fill_null(fill).to_numpy(zero_copy_only=False),
                      dtype=np.float64)


def fold_band(rows: Any, groups: int, columns: list[str], per_weight: bool,
              ) -> tuple[GroupStats, int, float]:
    """``(statistics per group and input, band rows, sum over weights of rows x weight rows)``.

    ``rows`` is a ``pyarrow.Table`` as above; ``columns`` names the aggregated columns in the
    order of the ``_v`` columns (their statistics are keyed by these names, the row count by
    None). ``per_weight`` False folds each ``(filter met, group)`` as one cluster: for the band
    that completes the table, whose answer is exact. The last two values feed the row-count
    check (:func:`qbeast.approx.estimator.row_count_doubt`): rows of one weight in several groups
    count together there, as they are one cluster of the table.
    """
    group_keys = ["_met", *[f"_g{i}" for i in range(groups)]]
    values = [f"_v{i}" for i in range(len(columns))]
    cluster_keys = [*group_keys, "_w"] if per_weight else group_keys
    clusters = rows.group_by(cluster_keys, use_threads=False).aggregate(
        [([], "count_all"), *[(v, "sum") for v in values], *[(v, "count") for v in values]])
    n = _column(clusters, "count_all")
    if groups and per_weight:  # the rows of each weight over every group (and both filter sides)
        _, at = np.unique(clusters.column("_w").to_numpy(zero_copy_only=False), return_inverse=True)
        weight_rows = np.bincount(at, weights=n)[at]
    else:  # a weight's rows split at most by the filter, which never splits equal indexed
        # values; without groups the cross term is the cluster itself
        weight_rows = n
    derived: dict[str, np.ndarray] = {"n": n, "n_ss": n * n, "n_nw": n * weight_rows}
    for i, value in enumerate(values):
        y, m = _column(clusters, f"{value}_sum"), _column(clusters, f"{value}_count")
        derived |= {f"y{i}": y, f"m{i}": m, f"yy{i}": y * y, f"mm{i}": m * m, f"ym{i}": y * m,
                    f"ay{i}": np.abs(y), f"c{i}": (m > 0).astype(np.float64)}
    table = clusters.select(group_keys)
    for name, array in derived.items():
        table = table.append_column(name, [array])
    aggregations: list[tuple[Any, str]] = [([], "count_all"), ("n", "sum"), ("n_ss", "sum"),
                                           ("n", "max"), ("n_nw", "sum")]
    for i in range(len(values)):
        aggregations += [(f"c{i}", "sum"), (f"y{i}", "sum"), (f"m{i}", "sum"), (f"yy{i}", "sum"),
                         (f"mm{i}", "sum"), (f"ym{i}", "sum"), (f"ay{i}", "sum"),
                         (f"ay{i}", "max"), (f"m{i}", "max")]
    folded = table.group_by(group_keys, use_threads=False).aggregate(aggregations)
    found: GroupStats = {}
    band_rows = 0
    sum_sq = 0.0
    for row in folded.to_pylist():
        band_rows += int(row["n_sum"])
        sum_sq += float(row["n_nw_sum"])
        if not row["_met"]:
            continue
        n_s, n_ss, n_max = float(row["n_sum"]), float(row["n_ss_sum"]), float(row["n_max"])
        stats: dict[str | None, ClusterStats] = {
            None: ClusterStats(int(row["count_all"]), n_s, n_s, n_ss, n_ss, n_ss, n_s, n_max, n_max)}
        for i, column in enumerate(columns):
            stats[column] = ClusterStats(
                int(row[f"c{i}_sum"]), row[f"y{i}_sum"], row[f"m{i}_sum"], row[f"yy{i}_sum"],
                row[f"mm{i}_sum"], row[f"ym{i}_sum"], row[f"ay{i}_sum"], row[f"ay{i}_max"],
                row[f"m{i}_max"])
        found[tuple(row[f"_g{i}"] for i in range(groups))] = stats
    return found, band_rows, sum_sq
