"""``QbeastTable.approx``: count, sum and avg within a stated tolerance, from as few rows as that needs.

Orchestration only: :mod:`qbeast.approx.sequential` decides which weight bands to read and what
the answer is, :mod:`qbeast.spark.read.approx` reads one band in Spark. The arguments are checked
here, before any data is read. docs/approx.md states the method and its assumptions.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from qbeast.approx.aggregates import Aggregate, input_columns, parse_aggregates
from qbeast.approx.estimator import coverage, z_value
from qbeast.approx.sequential import Answer, approximate, check_fraction, check_tolerance
from qbeast.errors import InvalidOptionError
from qbeast.core.weight import MIN_WEIGHT
from qbeast.progress import Phase
from qbeast.snapshot import NotAQbeastTableError
from qbeast.spark.file_access import FileAccess
from qbeast.spark.read.approx import (
    answer_dataframe,
    fold_on_driver,
    read_band,
    read_small_bands,
)
from qbeast.spark.read.planner import load_snapshot, plan_read
from qbeast.spark.read.predicates import user_predicate
from qbeast.spark.task_progress import task_monitor

logger = logging.getLogger("qbeast.operations.approx")


def _group_columns(group_by: Any, columns: Sequence[str]) -> list[str]:
    if group_by is None:
        return []
    if isinstance(group_by, str):
        group_by = [group_by]
    if not isinstance(group_by, (list, tuple)) or not all(isinstance(g, str) for g in group_by):
        raise InvalidOptionError(f"group_by must be a column name or a list of column names, got "
                                 f"{group_by!r}", option="group_by", value=group_by, allowed=list(columns))
    for name in group_by:
        if name not in columns:
            raise InvalidOptionError(f"group_by column {name!r} is not a column of the table; "
                                     f"columns: {', '.join(columns)}", option="group_by",
                                     value=name, allowed=list(columns))
    return list(dict.fromkeys(group_by))


def _check_columns(aggregates: Sequence[Aggregate], columns: Sequence[str]) -> None:
    for aggregate in aggregates:
        if aggregate.column is not None and aggregate.column not in columns:
            raise InvalidOptionError(
                f"aggregate {aggregate.label} reads {aggregate.column!r}, which is not a column of "
                f"the table; columns: {', '.join(columns)}", option="aggregates",
                value=aggregate.label, allowed=list(columns))


def _all_null_rows(snapshot: Any) -> int | None:
    """At most how many rows have every indexed column null (the log's null counts; None:
    unknown, a file lacks them).

    Such rows all weigh Spark's hash seed, one cluster that can be a large share of a table
    (2.24% of TPC-DS store_sales), so the growing sample reads them in full first. A
    column without nulls in every file rules them out (0); missing statistics do not.
    """
    columns = list(snapshot.latest_revision.columns)
    nulls = dict.fromkeys(columns, 0)
    unknown = False
    for add in snapshot.delta.files.values():
        stats = add.parsed_stats or {}
        counts = stats.get("nullCount")
        if not isinstance(counts, dict):
            unknown = True
            continue
        for column in columns:
            count = counts.get(column)
            if not isinstance(count, int):
                unknown = True
            else:
                nulls[column] += count
    bound = min(nulls.values()) if nulls else 0
    return None if unknown else bound


def _sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((value is None, value) for value in key)


def approx_answer(spark: Any, path: str, aggregates: Any, *, group_by: Any = None,
                  filter: Any = None,  # noqa: A002 - mirrors QbeastTable.to_df
                  tolerance: float = 0.01, confidence: float = 0.95, max_fraction: float = 1.0,
                  version: int | None = None) -> tuple[Answer, list[str], dict[str, Any]]:
    """The :class:`Answer` of :func:`approx_table` with the group columns and the table schema;
    its band reads are one phase in the log (and a bar row on a terminal)."""
    parsed = parse_aggregates(aggregates)
    tolerance = check_tolerance(tolerance)
    z_value(confidence)
    max_fraction = check_fraction("max_fraction", max_fraction)
    snapshot = load_snapshot(path, version)
    if not snapshot.is_qbeast:
        raise NotAQbeastTableError(
            f"approx needs row weights, but {path} is a plain Delta table without Qbeast metadata; "
            "convert it with qbeast.convert_to_qbeast or aggregate it exactly")
    schema = snapshot.delta.schema
    columns = [f["name"] for f in schema["fields"]]
    groups = _group_columns(group_by, columns)
    _check_columns(parsed, columns)
    predicate, row_filter = user_predicate(snapshot, filter)
    total_rows = plan_read(snapshot, predicate=predicate).file_rows
    inputs = input_columns(parsed)

    null_rows = _all_null_rows(snapshot)
    nulls = null_rows != 0
    access = FileAccess.decide(spark, snapshot.delta.table_path)  # once for every band read

    def read(lo: int, hi: int | None):
        expected = None if total_rows is None else (coverage(hi) - coverage(lo)) * total_rows
        return read_band(access, snapshot, predicate, row_filter, filter, groups, inputs, lo, hi,
                         nulls=False if nulls else None, expected_rows=expected)

    def read_nulls():
        return read_band(access, snapshot, predicate, row_filter, filter, groups, inputs,
                         MIN_WEIGHT, None, nulls=True, expected_rows=null_rows)

    def read_nulls_with(lo: int, hi: int | None):
        """The all-null stratum and the first band: one job when both are small."""
        expected = None if total_rows is None else (coverage(hi) - coverage(lo)) * total_rows
        if all(fold_on_driver(n, schema, groups) for n in (null_rows, expected)):
            stratum, first = read_small_bands(access, snapshot, predicate, row_filter, filter,
                                              groups, inputs,
                                              [(MIN_WEIGHT, None, True), (lo, hi, False)])
            return stratum, first
        return read_nulls(), read(lo, hi)

    phase = Phase(logger, "approx", snapshot.table_path, "sample bands",
                  monitor=task_monitor(spark))
    answer = approximate(parsed, read, tolerance=tolerance, confidence=confidence,
                         max_fraction=max_fraction, total_rows=total_rows, grouped=bool(groups),
                         read_certain=read_nulls if nulls else None,
                         read_certain_with=read_nulls_with if nulls else None)
    phase.done(steps=len(answer.steps), fraction=f"{answer.fraction:.4g}", rows=answer.rows_read)
    return answer, groups, schema


def approx_table(spark: Any, path: str, aggregates: Any, **options: Any):
    """One row per group and aggregate: the group columns, ``aggregate``, ``estimate``, ``low``,
    ``high``, ``fraction``, ``rows_read``, ``bytes_read``, ``tolerance_met`` and ``reason``
    (why the tolerance is not met; null when it is). See :meth:`qbeast.QbeastTable.approx`."""
    answer, groups, schema = approx_answer(spark, path, aggregates, **options)
    rows = []
    for key in sorted(answer.estimates, key=_sort_key):
        for aggregate, result in answer.estimates[key].items():
            rows.append((*key, aggregate.label, result.estimate, result.low, result.high,
                         answer.fraction, answer.rows_read, answer.bytes_read,
                         result.tolerance_met, result.reason))
    return answer_dataframe(spark, schema, groups, rows)
