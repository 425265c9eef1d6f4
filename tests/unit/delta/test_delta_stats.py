"""Delta stats of data files (no Spark): safe bounds from Arrow batches and from parquet footers."""
from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq

from qbeast.delta.stats import StatsAccumulator, footer_stats

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


# -- from parquet footers ---------------------------------------------------------------------------


def _mixed_table(rows: int = 1000, nan: bool = False) -> pa.Table:
    """Every kind of column the stats treat differently, nulls included."""
    base = dt.datetime(2024, 1, 1, tzinfo=UTC)
    return pa.table({
        "i": pa.array([None if k % 7 == 0 else (k * 7919) % 1009 - 300 for k in range(rows)],
                      pa.int64()),
        "f": pa.array([float("nan") if nan and k == 500 else k / 3 for k in range(rows)]),
        "b": pa.array([None if k % 5 == 0 else k % 2 == 0 for k in range(rows)]),
        "bin": pa.array([f"x{k % 13}".encode() for k in range(rows)], pa.binary()),
        "s": pa.array([f"s{k % 300:03d}" + ("z" * 40 if k == 7 else "") for k in range(rows)]),
        "d": pa.array([decimal.Decimal(k % 500) / 100 for k in range(rows)], pa.decimal128(9, 2)),
        "ts": pa.array([base + dt.timedelta(microseconds=1500 * k) for k in range(rows)],
                       pa.timestamp("us", tz="UTC")),
        "day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=k % 90) for k in range(rows)]),
        "nested": pa.array([{"a": k} for k in range(rows)]),
    })


def _footer(tmp_path, table: pa.Table, **options) -> pq.FileMetaData:
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, row_group_size=300, **options)
    return pq.read_metadata(path)


def test_footer_stats_equal_the_stats_of_the_data(tmp_path):
    """One rule, two sources: what a footer says is what the rows say (floats known finite)."""
    for nan in (False, True):
        table = _mixed_table(nan=nan)
        from_footer = json.loads(footer_stats(_footer(tmp_path, table),
                                              non_finite={"f"} if nan else set()))
        assert from_footer == _stats(table), nan
        assert "b" not in from_footer["minValues"] and "bin" not in from_footer["maxValues"]
        assert from_footer["nullCount"]["b"] == 200 and "nested" not in from_footer["nullCount"]


def test_footer_float_bounds_need_known_finite_values(tmp_path):
    """A footer's float bounds ignore NaN: without knowing the column is finite, none are given."""
    table = _mixed_table(nan=True)
    footer = _footer(tmp_path, table)
    unknown = json.loads(footer_stats(footer))
    assert "f" not in unknown["minValues"] and "f" not in unknown["maxValues"]
    ints = [v for v in table.column("i").to_pylist() if v is not None]
    assert unknown["nullCount"]["f"] == 0 and unknown["minValues"]["i"] == min(ints)
    assert json.loads(footer_stats(footer, non_finite=set()))["maxValues"]["f"] == 999 / 3


def test_footer_without_statistics_gives_no_bounds(tmp_path):
    table = pa.table({"k": pa.array(range(900), pa.int32()), "v": pa.array(range(900), pa.int32())})
    stats = json.loads(footer_stats(_footer(tmp_path, table, write_statistics=["k"])))
    assert stats == {"numRecords": 900, "minValues": {"k": 0}, "maxValues": {"k": 899},
                     "nullCount": {"k": 0}}
    only_nulls = pa.table({"k": pa.array([None] * 400 + list(range(500)), pa.int32())})
    stats = json.loads(footer_stats(_footer(tmp_path, only_nulls)))
    assert stats["minValues"] == {"k": 0} and stats["nullCount"] == {"k": 400}
