"""Reads in Arrow tasks (the read path of object-store tables on a cluster master), on the shared
local session: the same rows as Spark's native parquet scan of the same plan, for full, sampled
and filtered plans, for every column type the engine writes, on a partitioned Delta table, on the
local disk and on an S3-compatible store (moto on loopback).

The end-to-end run on a standalone cluster, whose workers have no AWS settings at all, is in
tests/cluster/test_standalone_cluster.py; here the reader itself is pinned row for row.
"""
from __future__ import annotations

import dataclasses
import sys
import uuid
from pathlib import Path

import pytest
from s3_server import BUCKET

import qbeast
from qbeast.spark.file_access import FileAccess
from qbeast.spark.read.arrow_tasks import tasks_dataframe
from qbeast.spark.read.dataframe import plan_dataframe, spark_schema
from qbeast.spark.read.planner import load_snapshot, plan_read
from qbeast.spark.read.predicates import user_predicate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import file_descriptions  # noqa: E402

pytestmark = pytest.mark.spark

_TYPED = """
    id,
    cast(id % 997 as int) as user_id,
    cast(id * 7 % 1000 as double) / 10 as price,
    case when id % 11 = 0 then null else concat('name-', id % 37) end as name,
    date_add(date'2024-01-01', cast(id % 400 as int)) as day,
    timestamp'2024-03-01 12:00:00' + make_interval(0, 0, 0, 0, 0, cast(id % 600 as int), 0) as ts,
    cast(id % 1000 as decimal(12, 2)) / 8 as amount,
    id % 3 = 0 as flag,
    cast(id % 5 as tinyint) as small,
    cast(cast(id as string) as binary) as raw,
    case when id % 4 = 0 then 'a' when id % 4 = 1 then 'b' else 'c' end as region
"""


def _typed(spark, rows: int):
    return spark.range(rows).selectExpr(*[c.strip() for c in _TYPED.strip().split(",\n")])


def _force_arrow_tasks(patch) -> None:
    """Every decision in ``patch``'s scope sends the table's reads and writes to Arrow tasks
    (what an object-store table gets on a cluster), here on a local table."""
    decide = FileAccess.decide
    patch.setattr(FileAccess, "decide", classmethod(
        lambda cls, spark, location: dataclasses.replace(decide(spark, location), arrow_tasks=True)))


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def _same_rows_both_ways(spark, path: str, fraction: float | None = None, where: str | None = None) -> int:
    snapshot = load_snapshot(path)
    predicate, _ = user_predicate(snapshot, where)
    plan = plan_read(snapshot, fraction=fraction, predicate=predicate)
    filters = [where] if where else []
    native = plan_dataframe(FileAccess.decide(spark, path), plan, filters)
    tasks = tasks_dataframe(spark, plan, spark_schema(plan))
    for condition in filters:
        tasks = tasks.filter(condition)
    expected = _rows(native)
    assert _rows(tasks) == expected
    # the table's columns and types (the native scan marks partition columns non-null)
    assert [(f.name, f.dataType) for f in tasks.schema] == [(f.name, f.dataType) for f in native.schema]
    return len(expected)


def test_tasks_read_the_rows_of_the_native_scan(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "typed")
    qbeast.write(_typed(spark, 12_000), path, columns_to_index="user_id,price", cube_size=1_500,
                 mode="overwrite")
    assert _same_rows_both_ways(spark, path) == 12_000
    sampled = _same_rows_both_ways(spark, path, fraction=0.2)
    assert 0 < sampled < 12_000
    assert 0 < _same_rows_both_ways(spark, path, where="user_id < 100 and name is not null") < 12_000


def test_tasks_fill_partition_values_of_a_table_deltalake_wrote(spark, tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake", reason="delta-rs writes the partitioned Delta table")
    import pyarrow as pa

    path = str(tmp_path / "partitioned")
    ids = list(range(6_000))
    deltalake.write_deltalake(path, pa.table({
        "id": pa.array(ids, pa.int64()),
        "user_id": pa.array([i % 997 for i in ids], pa.int32()),
        "region": pa.array(["abc"[i % 3] for i in ids]),
        "day": pa.array([f"2024-01-{1 + i % 28:02d}" for i in ids]).cast(pa.date32()),
    }), partition_by=["region", "day"])
    assert _same_rows_both_ways(spark, path) == 6_000
    assert _same_rows_both_ways(spark, path, where="region = 'a' and day < date'2024-01-05'") > 0


def test_an_empty_plan_is_an_empty_frame(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "narrow")
    qbeast.write(_typed(spark, 2_000), path, columns_to_index="user_id", mode="overwrite")
    assert _same_rows_both_ways(spark, path, where="user_id > 5000") == 0


@pytest.mark.objectstore
def test_tasks_read_an_s3_table_with_the_settings_the_driver_resolved(spark, s3_environment: str,
                                                                      tmp_path: Path) -> None:
    spark.conf.set("spark.qbeast.storage.mirrorDir", str(tmp_path / "mirror"))
    try:
        path = f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}/typed"
        qbeast.write(_typed(spark, 8_000), path, columns_to_index="user_id,price", cube_size=1_000,
                     mode="overwrite")
        assert _same_rows_both_ways(spark, path, fraction=0.3) > 0
        assert _same_rows_both_ways(spark, path, where="price between 10 and 20") > 0
    finally:
        spark.conf.unset("spark.qbeast.storage.mirrorDir")


def test_a_sampled_task_reads_only_the_row_groups_of_its_prefix(spark, tmp_path: Path) -> None:
    """Band-piece files (the default layout) are read up to the planned prefix, as Spark's
    reader reads them through the bridge: fewer rows read, the same rows returned."""
    import copy

    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    from qbeast.core.band_row_groups import PieceLayout
    from qbeast.spark.read.datasource import plan_partitions, read_partition

    path = str(tmp_path / "banded")
    qbeast.write(spark.range(40_000).selectExpr("id", "rand(7) * 100 as a", "cast(rand(8) * 1000 as int) as b"),
                 path, columns_to_index="a,b", cube_size=1_000, mode="overwrite")
    plan = plan_read(load_snapshot(path), fraction=0.1)
    assert plan.prefix_reads
    target = to_arrow_schema(spark_schema(plan), timezone="UTC")
    read = expected = whole = 0
    for partition in plan_partitions(plan):
        unweighted = copy.copy(partition)
        unweighted.weight_range = None  # every row of the row groups read, not only the sample's
        read += sum(batch.num_rows for batch in read_partition(unweighted, target))
        for file in partition.paths:
            meta = pq.read_metadata(file)
            whole += meta.num_rows
            prefix = partition.read_sizes.get(file)
            expected += meta.num_rows if prefix is None else PieceLayout.of(meta).rows_within(prefix)
    assert read == expected < whole
    assert _same_rows_both_ways(spark, path, fraction=0.1) > 0


def test_a_write_in_tasks_lays_out_the_files_spark_s_writer_lays_out(spark, tmp_path: Path,
                                                                    monkeypatch, caplog) -> None:
    """The Arrow-task writer (object-store tables on a cluster; forced here on a local table)
    writes the same files as Spark's writer: same rows, Delta stats and blocks per file, for
    the first write and for an append into it."""
    import logging

    from pyspark.sql import functions as F

    native, tasks = str(tmp_path / "native"), str(tmp_path / "tasks")
    more = _typed(spark, 9_000).withColumn("id", F.col("id") + 100_000)
    first: dict[str, list[tuple]] = {}
    for path in (native, tasks):
        with monkeypatch.context() as patch, caplog.at_level(logging.INFO, "qbeast.spark.write.writer"):
            if path == tasks:
                _force_arrow_tasks(patch)
            caplog.clear()
            qbeast.write(_typed(spark, 12_000), path, columns_to_index="user_id,price",
                         cube_size=1_500, mode="overwrite")
            first[path] = file_descriptions(path)
            qbeast.write(more, path, mode="append")
            in_tasks = sum("write in Arrow tasks" in r.getMessage() for r in caplog.records)
            assert in_tasks == (2 if path == tasks else 0)
    assert first[tasks] == first[native]
    assert len(first[tasks]) > 3
    assert file_descriptions(tasks) == file_descriptions(native)
    assert _rows(qbeast.QbeastTable.for_path(spark, tasks).to_df()) == \
        _rows(qbeast.QbeastTable.for_path(spark, native).to_df())
    assert _same_rows_both_ways(spark, tasks, fraction=0.2) > 0


def test_a_failed_write_in_tasks_leaves_the_table_as_it_was(spark, tmp_path: Path, monkeypatch) -> None:
    """A task fails after other tasks have uploaded their files: nothing is committed and every
    file the write uploaded is deleted again."""
    import os

    from qbeast.delta.log import DeltaLog
    from qbeast.spark.write import task_files
    from qbeast.storage import LocalStorage

    path = str(tmp_path / "table")
    qbeast.write(_typed(spark, 6_000), path, columns_to_index="user_id,price", cube_size=1_000,
                 mode="overwrite")
    before = sorted(os.listdir(path))
    removed: list[str] = []

    class Failing(LocalStorage):
        """Pickled into the tasks (defined here, so by value): the upload of the file holding id
        29,999 fails once another file of the write is in the table; the driver's deletes are
        recorded."""

        def upload(self, local_file: str, target: str):
            import time

            import pyarrow.compute as pc
            import pyarrow.parquet as pq

            ids = pq.read_table(local_file, columns=["id"]).column("id")
            if pc.any(pc.equal(ids, 29_999)).as_py():
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and not set(os.listdir(path)) - set(before):
                    time.sleep(0.1)
                raise OSError("upload refused for the test")
            return super().upload(local_file, target)

        def delete(self, file: str) -> None:
            if os.path.exists(file):
                removed.append(file)
            super().delete(file)

    _force_arrow_tasks(monkeypatch)
    monkeypatch.setattr(task_files, "storage_for", lambda location: Failing())
    with pytest.raises(Exception, match="upload refused for the test"):
        qbeast.write(_typed(spark, 30_000), path, mode="append")
    assert removed  # files other uploads had put in the table, deleted by the failed write
    assert sorted(os.listdir(path)) == before
    assert DeltaLog.for_path(path).snapshot().version == 0
