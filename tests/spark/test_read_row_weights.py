"""The Python port of Spark's hash() must agree with F.hash bit for bit on every supported type.

The data source samples in Python workers with it, so any difference would silently change which
rows a sample returns.
"""
from __future__ import annotations

import datetime as dt
import decimal
import random

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from qbeast.errors import UnsupportedTypeError
from qbeast.index.row_weights import spark_hash

pytestmark = pytest.mark.spark

SCHEMA = (
    "i int, l bigint, d double, s string, dt date, ts timestamp, dec decimal(12,2), "
    "wdec decimal(38,3), b boolean, f float, sh smallint, by tinyint"
)


def _random_rows(n: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)

    def maybe(value):
        return None if rng.random() < 0.1 else value

    alphabet = "abcXYZ09 é€😀"
    rows = []
    for _ in range(n):
        rows.append(
            (
                maybe(rng.randint(-(2**31), 2**31 - 1)),
                maybe(rng.randint(-(2**63), 2**63 - 1)),
                maybe(rng.choice([rng.uniform(-1e9, 1e9), -0.0, 0.0, float("nan"), float("-inf")])),
                maybe("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 23)))),
                maybe(dt.date(1900, 1, 1) + dt.timedelta(days=rng.randint(0, 80000))),
                maybe(dt.datetime(1950, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=rng.randint(0, 10**17))),
                maybe(decimal.Decimal(rng.randint(-(10**11), 10**11)) / 100),
                maybe(decimal.Decimal(rng.randint(-(10**37), 10**37)) / 1000),
                maybe(rng.random() < 0.5),
                maybe(rng.choice([rng.uniform(-100, 100), -0.0])),
                maybe(rng.randint(-(2**15), 2**15 - 1)),
                maybe(rng.randint(-128, 127)),
            )
        )
    return rows


def test_matches_spark_hash_per_type_and_chained(spark):
    df = spark.createDataFrame(_random_rows(2000, 11), SCHEMA)
    columns = df.columns
    expected = df.select(
        *[F.hash(c).alias(f"h_{c}") for c in columns],
        F.hash(*columns).alias("all"),
        F.hash("s", "i", "ts").alias("three"),
    ).toArrow()
    table = df.toArrow()
    for column in columns:
        assert np.array_equal(spark_hash([table[column]]), expected[f"h_{column}"].to_numpy()), column
    assert np.array_equal(spark_hash([table[c] for c in columns]), expected["all"].to_numpy())
    assert np.array_equal(spark_hash([table[c] for c in ("s", "i", "ts")]), expected["three"].to_numpy())


def test_sliced_arrays_and_other_timestamp_units(spark):
    df = (
        spark.createDataFrame(_random_rows(400, 5), SCHEMA)
        .select("s", "ts")
        .filter("ts IS NULL OR ts < TIMESTAMP '2200-01-01 00:00:00'")  # nanosecond range
    )
    expected = df.select(F.hash("s", "ts").alias("h")).toArrow()["h"].to_numpy()
    table = df.toArrow()
    # A slice keeps the parent's buffers with an offset: the hash must honour it.
    sliced = [table["s"].combine_chunks().slice(100, 50), table["ts"].combine_chunks().slice(100, 50)]
    assert np.array_equal(spark_hash(sliced), expected[100:150])
    # Parquet INT96 timestamps arrive as nanoseconds; Spark truncates them to microseconds.
    nanos = table["ts"].cast(pa.timestamp("ns", tz="UTC"))
    assert np.array_equal(spark_hash([table["s"], nanos]), expected)


def test_unsupported_types_are_named():
    with pytest.raises(UnsupportedTypeError, match="list"):
        spark_hash([pa.array([[1], [2]])])
