"""The one-job path of key merges and delete+insert against the join path, on the same input.

A source of at most ``spark.qbeast.merge.shippedSourceRows`` rows is shipped to the tasks, one
job reads and rewrites the candidate files (:mod:`qbeast.spark.changes.file_merge`); a larger
one (or the setting at 0) is joined in Spark. Both must leave the same table: the same rows,
the same files removed, the same blocks (elementCount, minWeight, maxWeight per cube), the same
result numbers, and an index that still holds (``write_checks.check_index``).
"""
from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import qbeast
from qbeast.errors import InvalidOptionError
from qbeast.snapshot import QbeastSnapshot
from qbeast.spark import settings
from qbeast.table import QbeastTable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index  # noqa: E402

pytestmark = pytest.mark.spark

SCHEMA = "id long, x double, y int, s string, d date"
KEY = settings.SHIPPED_SOURCE_ROWS.key


@pytest.fixture(scope="module")
def base(spark, tmp_path_factory) -> str:
    """A table of two revisions (an append grew x), nulls in an indexed column and the key."""
    import datetime

    path = str(tmp_path_factory.mktemp("one-job") / "base")
    rng = np.random.default_rng(11)

    def rows(start: int, n: int, scale: float) -> list[tuple]:
        return [(None if i % 97 == 5 else i, None if i % 41 == 0 else float(rng.uniform(0, scale)),
                 int(rng.integers(0, 1000)), f"s{i % 7}",
                 datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 60))
                for i in range(start, start + n)]

    qbeast.write(spark.createDataFrame(rows(0, 3000, 100.0), SCHEMA), path,
                 columns_to_index=["x", "y"], cube_size=300)
    qbeast.write(spark.createDataFrame(rows(3000, 1500, 400.0), SCHEMA), path,
                 columns_to_index=["x", "y"], mode="append")
    assert set(QbeastSnapshot.load(path).files_by_revision()) == {1, 2}
    return path


def _state(spark, path: str) -> tuple[list, list, set]:
    """(sorted rows, sorted blocks of every active file, names of the files of the base left)."""
    snapshot = QbeastSnapshot.load(path)
    rows = sorted((tuple(r) for r in QbeastTable.for_path(spark, path).to_df().collect()),
                  key=repr)
    blocks = sorted((rid, b.cube, b.min_weight, b.max_weight, b.element_count)
                    for rid, files in snapshot.files_by_revision().items()
                    for a in files for b in snapshot.blocks(a))
    return rows, blocks, {a.path for a in snapshot.files()}


def _both_paths(spark, base: str, tmp_path, change) -> tuple[object, object, str, str]:
    """Run ``change(table)`` on two copies of ``base``: joined in Spark, then in one job."""
    joined, one_job = str(tmp_path / "joined"), str(tmp_path / "one-job")
    shutil.copytree(base, joined)
    shutil.copytree(base, one_job)
    spark.conf.set(KEY, "0")
    try:
        a = change(QbeastTable.for_path(spark, joined))
    finally:
        spark.conf.unset(KEY)
    b = change(QbeastTable.for_path(spark, one_job))
    return a, b, joined, one_job


def _source(spark, rows: list[tuple]):
    return spark.createDataFrame(rows, SCHEMA)


CHANGES = {
    # updates of a non-indexed column and of an indexed one (the row moves), inserts, a null key
    "merge-update": lambda spark: lambda t: t.merge(_source(spark, [
        (10, 1.0, 5, "u", None), (2500, 9999.0, 7, "moved", None),
        (3100, 50.0, 3, "u2", None), (10_000, 3.0, 1, "new", None),
        (None, 2.0, 2, "nullkey", None)]), on=["id"]),
    # only columns outside the index change: every rewritten file keeps its rows in place
    "merge-update-in-place": lambda spark: lambda t: t.merge(_source(spark, [
        (i, -1.0, -1, f"v{i}", None) for i in range(0, 4500, 13)] + [
        (50_000, 1.0, 1, "new", None)]), on="id", update_columns=["s", "d"]),
    "merge-update-columns": lambda spark: lambda t: t.merge(_source(spark, [
        (11, 5.0, 5, "no", None), (12, None, 6, "no", None), (20_000, 1.0, 1, "new", None)]),
        on="id", update_columns=["y", "x"]),
    "merge-delete": lambda spark: lambda t: t.merge(_source(spark, [
        (i, 0.0, 0, "", None) for i in range(0, 4500, 9)]), on=["id"],
        when_matched="delete", when_not_matched=None),
    "merge-insert-only": lambda spark: lambda t: t.merge(_source(spark, [
        (1, 0.0, 0, "x", None), (30_000, 7.0, 7, "new", None)]), on=["id"],
        when_matched=None),
    "merge-two-keys": lambda spark: lambda t: t.merge(_source(spark, [
        (13, 0.0, 0, "s6", None), (14, 0.0, 0, "wrong", None)]), on=["id", "s"],
        when_not_matched=None),
    # a target predicate of null tests (a snapshot's current rows): ids 41 and 82 have a null
    # x, so their source rows match nothing and are inserted beside them
    "merge-null-test-predicate": lambda spark: lambda t: t.merge(_source(spark, [
        (i, 1.0, 1, "closed", None) for i in (10, 41, 82, 2500, 3100)]), on="id",
        update_columns=["s"], target_predicate="(x is not null) and (d IS NOT NULL)"),
    "delete-insert-null-test-predicate": lambda spark: lambda t: t.delete_insert(_source(spark, [
        (i, 2.0, 2, "again", None) for i in (41, 82, 123, 124)]), on="id",
        target_predicate="x is null"),
    "delete-insert": lambda spark: lambda t: t.delete_insert(_source(spark, [
        (7, 1.0, 1, "a", None), (7, 2.0, 2, "b", None), (3200, 3.0, 3, "c", None),
        (None, 4.0, 4, "nullkey", None), (40_000, 5.0, 5, "new", None)]), on="id"),
}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_the_one_job_path_leaves_the_table_the_join_path_leaves(spark, base, tmp_path, name,
                                                                caplog):
    caplog.set_level(logging.INFO, logger="qbeast.operations.rowlevel")
    joined, one_job, joined_path, one_job_path = _both_paths(spark, base, tmp_path,
                                                             CHANGES[name](spark))
    paths = [r.getMessage() for r in caplog.records if "source done" in r.getMessage()]
    assert len(paths) == 2 and "path=join" in paths[0] and "path=one job" in paths[1]
    for field in ("rows_deleted", "rows_updated", "rows_inserted", "rows_copied",
                  "files_removed", "files_added", "revision_id"):
        assert getattr(joined, field) == getattr(one_job, field), field
    rows_a, blocks_a, files_a = _state(spark, joined_path)
    rows_b, blocks_b, files_b = _state(spark, one_job_path)
    assert rows_a == rows_b
    assert blocks_a == blocks_b
    base_files = {a.path for a in QbeastSnapshot.load(base).files()}
    assert files_a & base_files == files_b & base_files  # the same files were rewritten
    assert set(check_index(spark, one_job_path)) == set(
        QbeastSnapshot.load(joined_path).files_by_revision())


def test_the_setting_chooses_the_path_and_a_bad_value_fails_naming_it(spark, base, tmp_path,
                                                                    caplog):
    path = str(tmp_path / "t")
    shutil.copytree(base, path)
    table = QbeastTable.for_path(spark, path)
    caplog.set_level(logging.INFO, logger="qbeast.operations.rowlevel")
    source = _source(spark, [(1, 1.0, 1, "a", None), (2, 2.0, 2, "b", None),
                             (3, 3.0, 3, "c", None)])
    try:
        spark.conf.set(KEY, "2")  # a source of 3 rows is over the limit: joined
        assert table.merge(source, on=["id"]).rows_updated == 3
        spark.conf.set(KEY, "3")
        assert table.merge(source, on=["id"]).rows_updated == 3
        done = [r.getMessage() for r in caplog.records if "source done" in r.getMessage()]
        assert ["path=join" in m for m in done] == [True, False]
        version = QbeastSnapshot.load(path).version
        for bad in ("-1", "many"):
            spark.conf.set(KEY, bad)
            with pytest.raises(InvalidOptionError, match=KEY):
                table.merge(source, on=["id"])
        assert QbeastSnapshot.load(path).version == version
    finally:
        spark.conf.unset(KEY)


def test_the_inserts_of_a_shipped_source_are_indexed_on_the_driver_above_local_rows(
        spark, base, tmp_path, caplog):
    """The inserts (and moved rows) of the one-job path are rows the driver holds: indexed there
    even above ``spark.qbeast.write.localRows``, where the join path's append runs in Spark;
    the two leave the same table."""
    caplog.set_level(logging.INFO, logger="qbeast.spark.write.writer")
    local_rows = settings.LOCAL_ROWS.key
    spark.conf.set(local_rows, "2")
    try:
        joined, one_job, joined_path, one_job_path = _both_paths(
            spark, base, tmp_path, CHANGES["merge-update"](spark))
    finally:
        spark.conf.unset(local_rows)
    collects = [r.getMessage() for r in caplog.records if "local collect done" in r.getMessage()]
    assert len(collects) == 2, collects
    assert "local=False" in collects[0] and "local=True" in collects[1]
    assert (joined.rows_inserted, joined.rows_updated) == (one_job.rows_inserted,
                                                           one_job.rows_updated) == (2, 3)
    assert _state(spark, joined_path)[:2] == _state(spark, one_job_path)[:2]


def test_a_skipping_index_on_the_key_narrows_the_files_a_merge_reads(spark, tmp_path, caplog):
    """Ids spread over every file (the table is indexed on ``x``): the key range keeps them
    all, a Bloom filter on ``id`` keeps the files that hold the source's ids (and its rare false
    positives); the merge leaves what the join path, which reads every file, leaves."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    ids = rng.permutation(4000)
    rows = [(int(i), float(rng.uniform(0, 100)), int(i % 9), f"s{i}", None) for i in ids]
    path = str(tmp_path / "base")
    qbeast.write(spark.createDataFrame(rows, SCHEMA), path, columns_to_index=["x"],
                 cube_size=200, skipping_indexes={"id": "bloom"})
    files = {a.path: set(pq.read_table(os.path.join(path, a.path), columns=["id"])
                         .column("id").to_pylist())
             for a in QbeastSnapshot.load(path).files()}
    assert len(files) >= 10
    wanted = [17, 1999, 3998]
    holding = {f for f, held in files.items() if held & set(wanted)}
    source = [(i, 1.0, 1, "merged", None) for i in wanted] + [(9000, 2.0, 2, "new", None)]
    caplog.set_level(logging.INFO, logger="qbeast.operations.rowlevel")
    joined, one_job, joined_path, one_job_path = _both_paths(
        spark, path, tmp_path, lambda t: t.merge(_source(spark, source), on="id",
                                                 update_columns=["s"]))
    chosen = [r.getMessage() for r in caplog.records if "candidates done" in r.getMessage()]
    assert len(chosen) == 2 and f"files={len(files)} " in chosen[0]  # the range: every file
    narrowed = int(chosen[1].split("files=")[1].split()[0])
    assert len(holding) <= narrowed <= len(holding) + 2  # at 1% false positives per file
    assert (one_job.rows_updated, one_job.rows_inserted, one_job.files_removed) == (
        joined.rows_updated, joined.rows_inserted, joined.files_removed) == (3, 1, len(holding))
    assert _state(spark, joined_path)[:2] == _state(spark, one_job_path)[:2]


def test_floating_point_keys_and_target_predicates_are_joined(spark, base, tmp_path, caplog):
    """Spark's join treats -0.0 as 0.0 and NaN as NaN, an Arrow join does not: a floating-point
    key is joined in Spark; so is a target predicate other than null tests (SQL the tasks
    cannot evaluate)."""
    path = str(tmp_path / "t")
    shutil.copytree(base, path)
    table = QbeastTable.for_path(spark, path)
    caplog.set_level(logging.INFO, logger="qbeast.operations.rowlevel")
    table.merge(_source(spark, [(1, -0.0, 1, "zero", None)]), on=["x"], when_not_matched=None)
    done = [r.getMessage() for r in caplog.records if "source done" in r.getMessage()]
    assert len(done) == 1 and "path=join" in done[0]
    caplog.clear()
    result = table.merge(_source(spark, [(1, 1.0, 1, "a", None)]), on=["id"],
                         target_predicate="id < 10")
    assert result.rows_updated == 1
    assert not any("path=one job" in r.getMessage() for r in caplog.records)
