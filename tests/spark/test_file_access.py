"""How an operation reaches a table's data files is decided once (:class:`FileAccess`).

A write, an append, a merge (the one-job key merge and the join path) and an optimize each run
several Spark jobs over one table's files (stats, writes, scans, rewrites, appends, per-revision
commits); every job follows the one decision the operation made when it started, on a local
table and on an S3-compatible store (moto on loopback). Each of these operations touches one
table: a merge's source is a DataFrame, not a table the engine reaches (a source read from
another Qbeast table would be that read's own decision, made when its DataFrame is built).

And the decision itself, on the shared ``local[2]`` session, for each value of
``spark.qbeast.storage.bridgeFiles``.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from s3_server import BUCKET

import qbeast
from qbeast.errors import InvalidOptionError
from qbeast.spark import settings
from qbeast.spark.bridge import bridge_active
from qbeast.spark.file_access import FileAccess, decisions, hadoop_file_system
from qbeast.spark.runtime import scoped_confs

pytestmark = pytest.mark.spark


def _decided(action: Callable[[], Any]) -> tuple[int, Any]:
    """How many times ``action`` decided how a table's files are reached; what it returned."""
    before = decisions()
    result = action()
    return decisions() - before, result


def _rows(spark, start: int, count: int):
    return spark.range(start, start + count).selectExpr(
        "id", "cast(id * 7919 % 1000 as int) as user_id", "cast(id % 97 as double) as price")


def _one_decision_per_operation(spark, path: str) -> None:
    """A write, an append, two merges and an optimize of the table at ``path``: one decision
    each (the append and the merges large enough to run their Spark jobs, not only the driver's
    indexing of a small input)."""
    counts: dict[str, int] = {}
    with scoped_confs(spark, {settings.LOCAL_ROWS.key: "0"}):  # every step as Spark jobs
        counts["write"], _ = _decided(lambda: qbeast.write(
            _rows(spark, 0, 6_000), path, columns_to_index="user_id,price", cube_size=500,
            mode="overwrite"))
        counts["append"], _ = _decided(lambda: qbeast.write(_rows(spark, 6_000, 3_000), path,
                                                            mode="append"))
        table = qbeast.QbeastTable.for_path(spark, path)
        # new prices within the indexed space: the rows move within the revision, which the
        # optimize then lays out again
        source = _rows(spark, 8_000, 2_000).selectExpr("id", "user_id",
                                                       "(price + 1) % 97 as price")
        counts["merge on a key"], keyed = _decided(lambda: table.merge(source, on="id"))
        counts["merge on a condition"], joined = _decided(lambda: table.merge(
            source.selectExpr("id", "user_id", "(price + 1) % 97 as price"),
            on="target.id = source.id"))
        counts["optimize"], optimized = _decided(table.optimize)
    assert counts == dict.fromkeys(counts, 1), counts
    # the operations did their jobs: rows updated and inserted, files rewritten
    assert (keyed.rows_updated, keyed.rows_inserted) == (1_000, 1_000)
    assert (joined.rows_updated, joined.rows_inserted) == (2_000, 0)
    assert optimized.commits and optimized.commits[0].files_removed
    assert table.to_df().count() == 10_000


def test_each_operation_decides_once_on_a_local_table(spark, tmp_path: Path) -> None:
    _one_decision_per_operation(spark, str(tmp_path / "local"))


@pytest.mark.objectstore
def test_each_operation_decides_once_on_a_bucket_table(spark, s3_environment: str,
                                                        tmp_path: Path) -> None:
    with scoped_confs(spark, {settings.MIRROR_DIR.key: str(tmp_path / "mirror")}):
        _one_decision_per_operation(spark, f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}/t")


def test_a_dataframe_read_decides_once(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "read")
    qbeast.write(_rows(spark, 0, 3_000), path, columns_to_index="user_id", cube_size=500)
    table = qbeast.QbeastTable.for_path(spark, path)
    counted, df = _decided(lambda: table.sample(0.5))
    assert counted == 1 and 0 < df.count() < 3_000


def test_the_decision_for_each_bridge_files_value(spark, tmp_path: Path) -> None:
    """On ``local[2]`` (tasks share this disk): a local table is read where it lies; a bucket
    table's files are local copies unless Spark's reader reads signed URLs (the bridge jar
    loaded) or Hadoop has a connector; never Arrow tasks. ``hadoop`` without a connector is
    decided without an error, and refused by the first use that needs Spark's reader."""
    local = FileAccess.decide(spark, str(tmp_path / "t"))
    assert (local.remote, local.scheme, local.mode, local.arrow_tasks) == (False, None, "local", False)
    assert local.native_reads() and not local.reads_local_copies()
    assert local.spark_readable([str(tmp_path / "t" / "a.parquet")]) == [str(tmp_path / "t" / "a.parquet")]
    connector = hadoop_file_system(spark, "s3")
    signed = bridge_active(spark)
    expected = {
        "auto": ("copies", "copies"),
        "copies": ("copies", "copies"),
        "signed": ("signed", "signed" if signed else "copies"),
        "hadoop": ("hadoop", "hadoop") if connector else (None, None),
    }
    assert set(expected) == set(settings.BRIDGE_FILES.choices or ())
    for value, (files_mode, mode) in expected.items():
        confs = {settings.BRIDGE_FILES.key: value, settings.MIRROR_DIR.key: str(tmp_path / "mirror")}
        with scoped_confs(spark, confs):
            access = FileAccess.decide(spark, "s3://bucket/table")
        assert (access.remote, access.scheme, access.arrow_tasks) == (True, "s3", False), value
        assert (access.files_mode, access.mode) == (files_mode, mode), value
        assert access.signed_reads is (value == "signed" and signed), value
        assert access.hadoop == connector
        if mode is None:  # bridgeFiles=hadoop, no connector: refused when it is used
            with pytest.raises(InvalidOptionError, match="bridgeFiles=hadoop"):
                access.native_reads()
            with pytest.raises(InvalidOptionError, match="bridgeFiles=hadoop"):
                access.spark_readable(["s3://bucket/table/a.parquet"], [10])
            assert access.spark_readable([]) == []  # nothing to open, nothing refused
        else:
            assert access.native_reads() is (mode in ("hadoop", "signed"))
            assert access.reads_local_copies() is (files_mode == "copies")
            access.check_native()  # tasks share this disk: nothing refused
            access.check_shared_disk()
