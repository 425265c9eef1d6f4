"""The driver-local indexed write against the Spark one, on the same input.

An input of at most ``spark.qbeast.write.localRows`` rows is collected and indexed on the driver
(:mod:`qbeast.spark.write.local`): an append always, a first write (a new table, an overwrite)
when Spark estimates its input, or what its query reads, at most
``spark.qbeast.write.localFirstWriteBytes``; the setting
at 0 runs the stats, estimation and write jobs in Spark. Both must leave the same table: the same
rows, revisions, blocks (cube, minWeight, maxWeight, elementCount per file), row groups and piece
records, Delta stats, and an index that holds (``write_checks.check_index``).
"""
from __future__ import annotations

import datetime
import json
import logging
import os
import random
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import qbeast
from qbeast.core.band_row_groups import FOOTER_KEY
from qbeast.errors import InvalidOptionError
from qbeast.snapshot import QbeastSnapshot
from qbeast.spark import settings
from qbeast.spark.file_access import FileAccess
from qbeast.spark.write.local import estimated_bytes
from qbeast.spark.write.steps import index_rows
from qbeast.table import QbeastTable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index  # noqa: E402

pytestmark = pytest.mark.spark

SCHEMA = "id long, x double, y int, s string, d date"
KEY = settings.LOCAL_ROWS.key


def _rows(start: int, n: int, scale: float, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    return [(i, None if i % 41 == 0 else float(rng.uniform(0, scale)),
             None if i % 53 == 1 else int(rng.integers(0, 1000)), f"s{i % 7}",
             datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 60))
            for i in range(start, start + n)]


@pytest.fixture(scope="module")
def base(spark, tmp_path_factory) -> str:
    """A table of two revisions, nulls in both indexed columns."""
    path = str(tmp_path_factory.mktemp("local-append") / "base")
    qbeast.write(spark.createDataFrame(_rows(0, 3000, 100.0, 1), SCHEMA), path,
                 columns_to_index=["x", "y"], cube_size=300)
    qbeast.write(spark.createDataFrame(_rows(3000, 1500, 400.0, 2), SCHEMA), path,
                 columns_to_index=["x", "y"], mode="append")
    return path


def _state(spark, path: str) -> tuple:
    """Rows, revisions, and per active file: blocks, rows, row groups, piece record, stats."""
    snapshot = QbeastSnapshot.load(path)
    rows = sorted((tuple(r) for r in QbeastTable.for_path(spark, path).to_df().collect()),
                  key=repr)
    revisions = sorted((rid, tuple(snapshot.revision(rid).columns),
                        json.dumps(snapshot.revision(rid).to_json_obj()["transformations"]))
                       for rid in snapshot.files_by_revision() if rid > 0)
    files = []
    for rid, adds in snapshot.files_by_revision().items():
        for add in adds:
            meta = pq.ParquetFile(os.path.join(path, add.path)).metadata
            pieces = (meta.metadata or {}).get(FOOTER_KEY.encode())
            blocks = tuple(sorted((b.cube, b.min_weight, b.max_weight, b.element_count)
                                  for b in snapshot.blocks(add)))
            files.append((rid, blocks, add.num_records, meta.num_row_groups,
                          pieces, json.dumps(add.parsed_stats, sort_keys=True)))
    return rows, revisions, sorted(files, key=repr)


def _both_paths(spark, base: str, tmp_path, change, confs=()) -> tuple[str, str]:
    """Run ``change(table)`` on two copies of ``base``: in Spark (setting 0), then locally."""
    in_spark, local = str(tmp_path / "spark"), str(tmp_path / "local")
    shutil.copytree(base, in_spark)
    shutil.copytree(base, local)
    for key, value in confs:
        spark.conf.set(key, value)
    try:
        spark.conf.set(KEY, "0")
        random.seed(17)  # a new revision's null values are random: the same draws for both
        change(QbeastTable.for_path(spark, in_spark))
        spark.conf.unset(KEY)
        random.seed(17)
        change(QbeastTable.for_path(spark, local))
    finally:
        spark.conf.unset(KEY)
        for key, _ in confs:
            spark.conf.unset(key)
    return in_spark, local


def _assert_same(spark, in_spark: str, local: str) -> None:
    a, b = _state(spark, in_spark), _state(spark, local)
    assert a[0] == b[0]
    assert a[1] == b[1]
    assert a[2] == b[2]
    assert set(check_index(spark, local)) == set(QbeastSnapshot.load(in_spark).files_by_revision())


def _plan_estimate(data) -> int:
    """Spark's own size estimate of ``data``'s optimized plan (its output)."""
    return int(str(data._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))


def _local_writes(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "local write done" in r.getMessage()]


def _merge(spark, rows):
    return lambda t: t.merge(spark.createDataFrame(rows, SCHEMA), on=["id"])


CASES = {
    # a few updates and 200 inserts into the latest revision (nulls in x and y)
    "inserts": lambda spark: _merge(spark, [(i, 1.0 + i % 5, 5, "u", None) for i in range(0, 40)]
                                    + _rows(10_000, 200, 390.0, 3)),
    # inserts larger than a cube: estimation against the existing index, several files
    "inserts-estimated": lambda spark: _merge(spark, _rows(20_000, 2500, 390.0, 4)),
    # inserts beyond the indexed space: a new revision
    "new-revision": lambda spark: _merge(spark, _rows(30_000, 700, 90_000.0, 5)),
    # inserts computed in three Spark partitions (not rows of the driver)
    "inserts-from-range": lambda spark: lambda t: t.merge(spark.range(70_000, 72_000, numPartitions=3)
        .selectExpr("id", "IF(id % 13 = 0, NULL, (abs(hash(id)) % 39000) / 100.0) AS x",
                    "CAST(abs(hash(id, 1)) % 1000 AS INT) AS y", "CONCAT('r', id % 5) AS s",
                    "DATE'2024-03-01' AS d"), on=["id"]),
    # qbeast.write(mode="append"): 500 rows into the latest revision, then rows that grow x
    "write-append": lambda spark: lambda t: qbeast.write(
        spark.createDataFrame(_rows(80_000, 500, 390.0, 8), SCHEMA), t.path, mode="append"),
    "write-append-new-revision": lambda spark: lambda t: qbeast.write(
        spark.createDataFrame(_rows(90_000, 900, 5000.0, 9), SCHEMA), t.path, mode="append"),
    # an update that moves rows to other cubes (re-indexed rows)
    "moved-rows": lambda spark: lambda t: t.update("id < 300", set={"x": "x + 50"}),
    # a new table from rows computed in three Spark partitions, larger than a cube (estimated)
    "first-write": lambda spark: lambda t: _first_write(t.path, _from_range(spark, 4000), "x,y"),
    # an overwrite indexed on a string column too (its hash in the weight)
    "overwrite": lambda spark: lambda t: qbeast.write(
        _from_range(spark, 1200), t.path, columns_to_index=["x", "s", "y"], cube_size=200,
        mode="overwrite"),
}


def _from_range(spark, n: int):
    return (spark.range(100_000, 100_000 + n, numPartitions=3)
            .selectExpr("id", "IF(id % 17 = 0, NULL, (abs(hash(id)) % 50000) / 100.0) AS x",
                        "CAST(abs(hash(id, 2)) % 1000 AS INT) AS y", "CONCAT('f', id % 9) AS s",
                        "DATE'2024-05-01' AS d"))


def _first_write(path: str, data, columns: str) -> None:
    """A new table at ``path`` (what was there removed first)."""
    shutil.rmtree(path)
    qbeast.write(data, path, columns_to_index=columns, cube_size=300)


@pytest.mark.parametrize("bands", ["rowGroups", "files", "false"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_local_write_leaves_the_table_the_spark_write_leaves(spark, base, tmp_path, name,
                                                                 bands, caplog):
    caplog.set_level(logging.INFO, logger="qbeast.spark.write.writer")
    confs = [(settings.WEIGHT_BANDS.key, bands)]
    in_spark, local = _both_paths(spark, base, tmp_path, CASES[name](spark), confs)
    assert len(_local_writes(caplog)) == 1  # the second run only
    _assert_same(spark, in_spark, local)


def test_the_local_append_keeps_v1_pages(spark, base, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="qbeast.spark.write.writer")
    confs = [(settings.PARQUET_VERSION.key, "v1")]
    in_spark, local = _both_paths(spark, base, tmp_path, CASES["inserts"](spark), confs)
    assert len(_local_writes(caplog)) == 1
    _assert_same(spark, in_spark, local)


def test_an_empty_input_writes_nothing(spark, base):
    snapshot = QbeastSnapshot.load(base)
    empty = spark.createDataFrame([], SCHEMA)
    for value in ("0", "100"):
        spark.conf.set(KEY, value)
        try:
            out = index_rows(FileAccess.decide(spark, base), empty, snapshot, base)
        finally:
            spark.conf.unset(KEY)
        assert (out.rows, out.written, out.new_revision) == (0, (), False)
        assert out.revision == snapshot.latest_revision


def test_larger_inputs_run_in_spark_and_a_bad_value_fails_naming_it(spark, base, tmp_path, caplog):
    path = str(tmp_path / "t")
    shutil.copytree(base, path)
    table = QbeastTable.for_path(spark, path)
    caplog.set_level(logging.INFO, logger="qbeast.spark.write.writer")
    source = spark.createDataFrame(_rows(50_000, 30, 100.0, 6), SCHEMA)
    try:
        spark.conf.set(KEY, "29")  # 30 appended rows: over the limit, in Spark
        before = QbeastSnapshot.load(path).delta.num_records
        qbeast.write(source, path, mode="append")
        assert QbeastSnapshot.load(path).delta.num_records == before + 30
        assert _local_writes(caplog) == []
        # a shipped merge's inserts are in the driver already: indexed there above the limit
        fresh = spark.createDataFrame(_rows(70_000, 30, 100.0, 8), SCHEMA)
        assert table.merge(fresh, on=["id"]).rows_inserted == 30
        assert len(_local_writes(caplog)) == 1
        version = QbeastSnapshot.load(path).version
        for bad in ("-1", "many"):
            spark.conf.set(KEY, bad)
            with pytest.raises(InvalidOptionError, match=KEY):
                table.merge(spark.createDataFrame(_rows(60_000, 3, 100.0, 7), SCHEMA), on=["id"])
        assert QbeastSnapshot.load(path).version == version
    finally:
        spark.conf.unset(KEY)


def test_an_empty_first_write_commits_the_same_first_revision_on_both_paths(spark, base, tmp_path):
    empty = lambda t: _first_write(t.path, _from_range(spark, 0), "x,y")  # noqa: E731
    in_spark, local = _both_paths(spark, base, tmp_path, empty)
    a, b = QbeastSnapshot.load(in_spark), QbeastSnapshot.load(local)
    assert a.delta.num_records == b.delta.num_records == 0
    first = [s.revision(s.latest_revision_id).to_json_obj() for s in (a, b)]
    for revision in first:
        revision.pop("timestamp")
        revision["tableID"] = None  # each copy's own path
    assert first[0] == first[1] and a.latest_revision_id == 0


def test_a_first_write_over_the_estimate_limit_runs_in_spark_and_a_bad_value_fails(spark, tmp_path,
                                                                                   caplog):
    caplog.set_level(logging.INFO, logger="qbeast.spark.write.writer")
    source = _from_range(spark, 50)
    limit = settings.LOCAL_FIRST_WRITE_BYTES.key
    qbeast.write(source, str(tmp_path / "small"), columns_to_index="x,y")
    assert len(_local_writes(caplog)) == 1  # estimated at a few hundred bytes: on the driver
    caplog.clear()
    # Python rows (an RDD underneath) have no estimate: Spark's jobs, as before
    qbeast.write(spark.createDataFrame(_rows(0, 50, 10.0, 11), SCHEMA), str(tmp_path / "rows"),
                 columns_to_index="x,y")
    assert _local_writes(caplog) == []
    try:
        spark.conf.set(limit, "100")  # below the estimate: Spark's jobs, as a large model's
        qbeast.write(source, str(tmp_path / "estimated"), columns_to_index="x,y")
        assert _local_writes(caplog) == []
        # a join's output estimate is the product of its sides (here 1 KB x 80 MB) and it reads
        # 80 MB: in Spark's jobs under the default too, though only 50 rows come out
        spark.conf.unset(limit)
        joined = source.join(spark.range(0, 10_000_000), "id")
        qbeast.write(joined, str(tmp_path / "joined"), columns_to_index="x,y", mode="overwrite")
        assert QbeastSnapshot.load(str(tmp_path / "joined")).delta.num_records == 50
        assert _local_writes(caplog) == []
        # a join of small inputs reads little (its output estimate is still a product): on the
        # driver, as is a query whose output is small whatever it reads (a scalar subquery
        # counting a range of 80 MB: the collect gets every row, so the query runs once)
        small_join = source.join(spark.range(100_000, 100_040).withColumnRenamed("id", "k"),
                                 F.col("id") == F.col("k")).drop("k")
        assert estimated_bytes(small_join) < 64 * 1024 < _plan_estimate(small_join)
        subquery = source.selectExpr("*", "(SELECT count(*) FROM range(10000000)) AS n")
        assert estimated_bytes(subquery) < 64 * 1024
        for name, data, rows in (("small-join", small_join, 40), ("subquery", subquery, 50)):
            caplog.clear()
            qbeast.write(data, str(tmp_path / name), columns_to_index="x,y")
            assert QbeastSnapshot.load(str(tmp_path / name)).delta.num_records == rows
            assert len(_local_writes(caplog)) == 1, name
        # ... and the bytes a subquery reads count: a cross join (a large output estimate) of
        # inputs of 800 KB, filtered by a subquery that reads 80 MB, is left to Spark's jobs
        caplog.clear()
        crossed = (source.crossJoin(spark.range(0, 100_000).withColumnRenamed("id", "k"))
                   .where("id > (SELECT max(id) FROM range(10000000))"))
        assert 80 * 10**6 < estimated_bytes(crossed) < _plan_estimate(crossed)
        qbeast.write(crossed, str(tmp_path / "crossed"), columns_to_index="x,y")
        assert _local_writes(caplog) == []
        spark.conf.set(limit, "-3")
        with pytest.raises(InvalidOptionError, match=limit):
            qbeast.write(source, str(tmp_path / "bad"), columns_to_index="x,y")
        assert not (tmp_path / "bad" / "_delta_log").exists()
    finally:
        spark.conf.unset(limit)


def test_a_first_write_whose_size_holds_more_rows_than_the_local_limit_is_not_collected(
        spark, tmp_path, caplog):
    """A parquet source of 300,000 rows is a few MB, far under the byte limit, but at Spark's row
    width (24 bytes here) its size holds more rows than spark.qbeast.write.localRows: the write
    goes to Spark's jobs without a collect that would give up (and read the source again), and
    writes every row. A filter of it may output few rows (Spark's estimate does not say): 50,000
    rows of it are collected and indexed on the driver."""
    from qbeast.spark.write.local import scan_row_width

    caplog.set_level(logging.INFO, logger="qbeast.spark.write.writer")
    source = str(tmp_path / "source")
    spark.range(300_000).selectExpr("id", "rand(1) as x", "rand(2) as y").write.parquet(source)
    large = spark.read.parquet(source)
    assert scan_row_width(large) == 24 and scan_row_width(large.where("id < 5")) is None
    estimate = estimated_bytes(large)
    assert estimate < settings.LOCAL_FIRST_WRITE_BYTES.read(spark)
    assert estimate > 24 * settings.LOCAL_ROWS.read(spark)
    qbeast.write(large, str(tmp_path / "large"), columns_to_index="x,y", cube_size=50_000)
    assert not [r for r in caplog.records if "local collect" in r.getMessage()]
    assert QbeastSnapshot.load(str(tmp_path / "large")).delta.num_records == 300_000
    caplog.clear()
    qbeast.write(large.where("id < 50000"), str(tmp_path / "small"), columns_to_index="x,y",
                 cube_size=50_000)
    assert len(_local_writes(caplog)) == 1
    assert QbeastSnapshot.load(str(tmp_path / "small")).delta.num_records == 50_000
