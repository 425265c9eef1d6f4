"""The per-task file writer and its Delta stats, run directly on Arrow batches (no Spark)."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qbeast.core.cube_id import CubeId
from qbeast.core.weight import MAX_WEIGHT
from qbeast.spark.assignment import build_write_plan
from qbeast.spark.delta_stats import StatsAccumulator
from qbeast.spark.files import write_files_function

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


def _plan():
    root = CubeId.root(1)
    weights = {root: -1000, root.child(0): MAX_WEIGHT, root.child(1): MAX_WEIGHT}
    return build_write_plan(1, weights, {root: 10, root.child(0): 10, root.child(1): 10}, 5)


def _batch(n: int, start: int, files: np.ndarray, cubes: np.ndarray, weights: np.ndarray):
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.arange(start, start + n)),
            pa.array([f"v{i}" for i in range(start, start + n)]),
            pa.array(weights.astype(np.int32)),
            pa.StructArray.from_arrays(
                [pa.array(files.astype(np.int32)), pa.array(cubes.astype(np.int64))],
                names=["file", "cube"],
            ),
        ],
        names=["id", "s", "_qbeast_weight", "_qbeast_assignment"],
    )


def test_task_writes_one_file_per_group_with_its_blocks(tmp_path):
    plan = _plan()
    root_file, low_file = int(plan.files[0]), int(plan.files[1])
    rng = np.random.default_rng(1)
    batches = []
    for k in range(5):  # rows of both files interleaved over several batches
        files = rng.choice([root_file, low_file], size=50)
        cubes = np.where(files == root_file, 0, 1)
        weights = rng.integers(-2000, 2000, size=50)
        batches.append(_batch(50, k * 50, files, cubes, weights))
    run = write_files_function(str(tmp_path), plan, ["id", "s"], "_qbeast_weight",
                               "_qbeast_assignment", row_group_rows=64)
    out = pa.Table.from_batches(list(run(iter(batches)))).to_pylist()
    everything = pa.Table.from_batches(batches)
    assert sorted(r["file_id"] for r in out) == sorted({root_file, low_file})
    for r in out:
        data = pq.read_table(tmp_path / r["path"])
        assert data.column_names == ["id", "s"]
        assert r["size"] == os.path.getsize(tmp_path / r["path"])
        mine = everything.filter(pa.compute.equal(
            everything["_qbeast_assignment"].combine_chunks().field("file"), r["file_id"]))
        assert sorted(data["id"].to_pylist()) == sorted(mine["id"].to_pylist())
        assert json.loads(r["stats"])["numRecords"] == data.num_rows == r["num_records"]
        ((cube, low, high, count),) = json.loads(r["blocks"])
        assert count == data.num_rows and low == min(mine["_qbeast_weight"].to_pylist())
        assert (cube, high) == (("", -1000) if r["file_id"] == root_file else ("A", MAX_WEIGHT))
        assert pq.ParquetFile(tmp_path / r["path"]).metadata.num_row_groups >= 2


def test_failing_task_removes_its_files(tmp_path):
    plan = _plan()

    def broken():
        yield _batch(10, 0, np.zeros(10), np.zeros(10), np.zeros(10))
        raise RuntimeError("upstream failure")

    run = write_files_function(str(tmp_path), plan, ["id", "s"], "_qbeast_weight",
                               "_qbeast_assignment", row_group_rows=4)
    with pytest.raises(RuntimeError, match="upstream failure"):
        list(run(broken()))
    assert os.listdir(tmp_path) == []
