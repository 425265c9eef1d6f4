"""Pruning on hashed, date and timestamp indexed columns keeps exactly the qualifying rows.

Hashed columns prune only by equality (their coordinate is a hash); dates and timestamps go
through linear transformations of epoch milliseconds, and boundary literals with microseconds
must still keep the rows equal to them.
"""
from __future__ import annotations

import datetime as dt
import random

import pytest
from pyspark.sql import functions as F

import qbeast
from qbeast import QbeastTable
from qbeast.core.weight import weight_from_fraction
from qbeast.spark.sql.sources import register

pytestmark = pytest.mark.spark

SCHEMA = "id BIGINT, s STRING, d DATE, ts TIMESTAMP"
UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def typed_table(spark, tmp_path_factory):
    rng = random.Random(99)
    base = dt.datetime(2022, 5, 1, tzinfo=UTC)
    rows = [
        (
            i,
            None if rng.random() < 0.02 else f"v{rng.randint(0, 60)}",
            dt.date(2022, 1, 1) + dt.timedelta(days=rng.randint(0, 365)),
            base + dt.timedelta(seconds=rng.randint(0, 86400 * 30), microseconds=rng.randint(0, 999_999)),
        )
        for i in range(5000)
    ]
    path = str(tmp_path_factory.mktemp("typed") / "t")
    qbeast.write(spark.createDataFrame(rows, SCHEMA), path, "s:hashing,d,ts", cube_size=250)
    return path


def _ids(df) -> list[int]:
    return sorted(r["id"] for r in df.select("id").collect())


@pytest.mark.parametrize(
    "condition, prunes",
    [
        ("s = 'v17'", True),
        ("s IN ('v3', 'v4')", False),  # several hashed values: no hash-space pruning
        ("s IS NULL", True),
        ("d BETWEEN DATE '2022-03-01' AND DATE '2022-03-10'", True),
        ("d = '2022-07-04'", True),
        ("ts < TIMESTAMP '2022-05-03 00:00:00'", True),
        ("s = 'v9' AND d >= DATE '2022-10-01'", True),
    ],
)
def test_typed_predicates(spark, typed_table, condition, prunes):
    table = QbeastTable.for_path(spark, typed_table)
    pruned = table.to_df(filter=condition)
    full = table.to_df()
    assert _ids(pruned) == _ids(full.filter(condition))
    read, total = len(pruned.inputFiles()), len(full.inputFiles())
    assert read <= total
    if prunes:
        assert read < total, f"{condition} should prune ({read} of {total} files)"


def test_microsecond_boundaries_keep_equal_rows(spark, typed_table):
    table = QbeastTable.for_path(spark, typed_table)
    picks = table.to_df().orderBy("id").limit(3).collect()
    for row in picks:
        literal = row["ts"].strftime("%Y-%m-%d %H:%M:%S.%f")
        for op in ("=", ">=", "<="):
            condition = f"ts {op} TIMESTAMP '{literal}'"
            assert row["id"] in _ids(table.to_df(filter=condition)), condition


def test_sampled_and_filtered_by_a_hashed_value(spark, typed_table):
    table = QbeastTable.for_path(spark, typed_table)
    got = table.sample(0.3, filter="s = 'v5'")
    weight_limit = weight_from_fraction(0.3)
    expected = table.to_df().filter("s = 'v5'").filter(F.hash("s", "d", "ts") < weight_limit)
    assert _ids(got) == _ids(expected)


def test_data_source_pushes_hashed_equality(spark, typed_table):
    register(spark)
    source = spark.read.format("qbeast").load(typed_table).filter("s = 'v17'")
    table = QbeastTable.for_path(spark, typed_table)
    assert _ids(source) == _ids(table.to_df().filter("s = 'v17'"))
    plan = table.read_plan(filter="s = 'v17'")
    assert len(plan.files) < plan.total_files


def test_core_expressions_with_dates_and_timestamps(spark, typed_table):
    """Python-built predicates (canonical millis inside) filter rows like the equivalent SQL."""
    from qbeast.core import expressions as ex

    table = QbeastTable.for_path(spark, typed_table)
    expr = ex.And(
        ex.GreaterThanOrEqual("d", dt.date(2022, 6, 1)),
        ex.LessThanOrEqual("d", dt.date(2022, 6, 10)),
        ex.LessThan("ts", dt.datetime(2022, 5, 20, 12, 0, 0, tzinfo=UTC)),
        ex.Or(ex.In("s", ("v1", "v2")), ex.IsNull("s")),
    )
    sql = (
        "d >= DATE '2022-06-01' AND d <= DATE '2022-06-10' AND ts < TIMESTAMP '2022-05-20 12:00:00' "
        "AND (s IN ('v1', 'v2') OR s IS NULL)"
    )
    got = table.to_df(filter=expr)
    assert _ids(got) == _ids(table.to_df().filter(sql))
    assert len(got.inputFiles()) < len(table.to_df().inputFiles())
