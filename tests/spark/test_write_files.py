"""Delta stats of data files computed on Arrow batches (no Spark): safe bounds, first 32 columns."""
from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa

from qbeast.delta.stats import StatsAccumulator

UTC = dt.timezone.utc


def _stats(table: pa.Table) -> dict:
    acc = StatsAccumulator(table.schema)
    for batch in table.to_batches(max_chunksize=3):
        acc.update(batch)
    return json.loads(acc.to_json())


def test_stats_are_safe_bounds():
    long_low, long_high = "a" * 40, "z" * 40
    table = pa.table({
        "i": pa.array([3, None, -7, 12], pa.int32()),
        "short": pa.array(["pear", "apple", None, "fig"]),
        "long": pa.array([long_low, "m", long_high, None]),
        "ts": pa.array([dt.datetime(2021, 1, 1, 0, 0, 0, 1500, tzinfo=UTC),
                        dt.datetime(2020, 5, 5, 12, 0, 0, 999, tzinfo=UTC), None, None],
                       pa.timestamp("us", tz="UTC")),
        "f": pa.array([1.5, float("nan"), 0.0, None]),
        "g": pa.array([1.5, -2.25, None, 0.0], pa.float32()),
        "dec": pa.array([decimal.Decimal("1.10"), decimal.Decimal("-3.05"), None, None],
                        pa.decimal128(5, 2)),
        "day": pa.array([dt.date(1969, 12, 31), dt.date(2000, 2, 29), None, None]),
        "flag": pa.array([True, False, None, True]),
        "st": pa.array([{"a": 1}, None, {"a": 2}, {"a": 3}]),
    })
    stats = _stats(table)
    assert stats["numRecords"] == 4
    mins, maxs, nulls = stats["minValues"], stats["maxValues"], stats["nullCount"]
    assert (mins["i"], maxs["i"]) == (-7, 12)
    assert (mins["short"], maxs["short"]) == ("apple", "pear")
    assert mins["long"] == "a" * 32 and "long" not in maxs  # a prefix is a lower bound only
    assert mins["ts"] == "2020-05-05T12:00:00.000Z"  # floored to the millisecond
    assert maxs["ts"] == "2021-01-01T00:00:00.002Z"  # 1.5 ms rounded up
    assert "f" not in mins and "f" not in maxs  # NaN: no safe bound
    assert (mins["g"], maxs["g"]) == (-2.25, 1.5)
    assert (mins["day"], maxs["day"]) == ("1969-12-31", "2000-02-29")
    assert "flag" not in mins and nulls["flag"] == 1
    assert "st" not in nulls
    assert nulls == {"i": 1, "short": 1, "long": 1, "ts": 2, "f": 1, "g": 1, "dec": 2, "day": 2,
                     "flag": 1}
    raw = StatsAccumulator(table.schema)
    raw.update(table)
    assert '"dec":-3.05' in raw.to_json() and '"dec":1.10' in raw.to_json()  # exact digits


def test_stats_describe_only_the_first_32_columns():
    table = pa.table({f"c{i}": pa.array([i, None]) for i in range(40)})
    stats = _stats(table)
    assert list(stats["nullCount"]) == [f"c{i}" for i in range(32)]
