"""Writes that lose the commit race to another writer are re-planned, not failed.

Each test makes a real race deterministic: the write under test plans (reads the table, writes
its files), then — just before its commit — another complete write or operation commits first.
The index invariants and exact samples are then checked from the files (``check_index``).
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

import qbeast
import qbeast.spark.write.writer as writer_module
from qbeast.core.revision import revision_key
from qbeast.delta.errors import ConcurrentDeleteReadError
from qbeast.index.thresholds import is_laid_out
from qbeast.rebase import WriteConflictError
from qbeast.snapshot import QbeastSnapshot

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import active_paths, check_index  # noqa: E402

pytestmark = pytest.mark.spark


def _df(spark, n: int, offset: int = 0, scale: float = 1.0):
    return spark.range(offset, offset + n).selectExpr(
        "id", f"cast(id % 101 as double) * {scale} as x", "concat('s', id) as s")


def _ids(spark, path: str) -> list[int]:
    return sorted(r.id for r in spark.read.parquet(*active_paths(path)).select("id").collect())


@pytest.fixture
def race(monkeypatch):
    """``race(action)``: run ``action()`` once, right before the next write's first commit."""
    pending: list = []
    original = writer_module._commit

    def racing(*args, **kwargs):
        while pending:
            pending.pop()()  # the competitor commits first (its own write goes through here too)
        return original(*args, **kwargs)

    monkeypatch.setattr(writer_module, "_commit", racing)
    return pending.append


def test_append_into_a_revision_survives_a_concurrent_new_revision(spark, tmp_path, race, caplog):
    path = str(tmp_path / "t")
    qbeast.write(_df(spark, 400), path, "id,x", cube_size=80)
    # the competitor's data is outside revision 1's space: it opens revision 2
    race(lambda: qbeast.write(_df(spark, 100, 10_000, scale=50.0), path))
    with caplog.at_level(logging.WARNING, logger="qbeast.rebase"):
        result = qbeast.write(_df(spark, 150, 100), path)  # fits revision 1: planned into it
    assert result.revision_id == 1
    assert "lost a race (MetadataChangedError)" in caplog.text and "retry 1 of" in caplog.text
    snap = QbeastSnapshot.load(path)
    assert snap.version == 2 and snap.latest_revision_id == 2
    assert _ids(spark, path) == sorted(list(range(400)) + list(range(100, 250))
                                       + list(range(10_000, 10_100)))
    assert check_index(spark, path) == {1: 550, 2: 100}


def test_two_appends_opening_the_same_revision_id(spark, tmp_path, race):
    path = str(tmp_path / "t")
    qbeast.write(_df(spark, 300), path, "id,x", cube_size=80)
    race(lambda: qbeast.write(_df(spark, 100, 5_000, scale=20.0), path))  # opens revision 2
    result = qbeast.write(_df(spark, 120, 9_000, scale=90.0), path)       # also planned as 2
    assert result.revision_id == 3  # re-tagged: the files did not move, their tags did
    snap = QbeastSnapshot.load(path)
    assert snap.latest_revision_id == 3 and sorted(snap.revisions) == [0, 1, 2, 3]
    assert {snap.revision_of(f) for f in snap.files()} == {1, 2, 3}
    assert all(snap.revision_of(snap.delta.files[p]) == 3 for p in result.files)
    assert snap.revisions[3].columns == snap.revisions[2].columns
    assert revision_key(3) in snap.configuration
    assert check_index(spark, path) == {1: 300, 2: 100, 3: 120}
    assert len(_ids(spark, path)) == 520


def test_two_writers_creating_the_same_table(spark, tmp_path, race):
    path = str(tmp_path / "t")
    race(lambda: qbeast.write(_df(spark, 200), path, "id,x", cube_size=60))
    result = qbeast.write(_df(spark, 100, 1_000), path, "id,x", cube_size=60)
    assert result.revision_id == 2  # the table (revision 1) existed when it committed
    snap = QbeastSnapshot.load(path)
    assert snap.version == 1 and snap.delta.metadata.id  # one table identity
    assert check_index(spark, path) == {1: 200, 2: 100}


def test_append_after_a_concurrent_overwrite_is_a_true_conflict(spark, tmp_path, race):
    path = str(tmp_path / "t")
    qbeast.write(_df(spark, 300), path, "id,x", cube_size=80)
    race(lambda: qbeast.write(_df(spark, 50, 7_000, scale=3.0), path, "id,x", mode="overwrite"))
    files_before = {p.name for p in Path(path).glob("*.parquet")}
    with pytest.raises(WriteConflictError, match="revision 1 .* was replaced"):
        qbeast.write(_df(spark, 100, 100), path)  # fits revision 1: planned into it
    snap = QbeastSnapshot.load(path)
    assert snap.version == 1 and _ids(spark, path) == list(range(7_000, 7_050))
    # the failed append's files were deleted: only files of committed versions remain
    committed = files_before | {a.path for a in snap.files()}
    assert {p.name for p in Path(path).glob("*.parquet")} == committed


def _two_appends_racing_optimize(spark, path: str, monkeypatch, competitor) -> list:
    """A table of two appends into revision 1, whose next optimize commit ``competitor()`` precedes."""
    import qbeast.operations.optimize as optimize_module

    qbeast.write(_df(spark, 300), path, "id,x", cube_size=60)
    qbeast.write(_df(spark, 300), path)  # a second append into revision 1
    original = optimize_module._transaction
    raced: list = []

    def racing(*args, **kwargs):
        if not raced:
            raced.append(None)
            raced[0] = competitor()
        return original(*args, **kwargs)

    monkeypatch.setattr(optimize_module, "_transaction", racing)
    return raced


def test_optimize_racing_an_append_that_opens_a_revision(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    raced = _two_appends_racing_optimize(
        spark, path, monkeypatch, lambda: qbeast.write(_df(spark, 80, 50_000, scale=40.0), path))
    result = qbeast.QbeastTable.for_path(spark, path).optimize(revision_id=1)
    assert raced[0].revision_id == 2 and len(result.commits) == 1
    snap = QbeastSnapshot.load(path)
    assert check_index(spark, path) == {1: 600, 2: 80}
    status = snap.index_status(1)
    assert is_laid_out(status)  # optimized: one block per cube (and weight band)


def test_optimize_whose_files_were_removed_is_a_true_conflict(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    # another optimize rewrites the same files first
    _two_appends_racing_optimize(
        spark, path, monkeypatch,
        lambda: qbeast.QbeastTable.for_path(spark, path).optimize(revision_id=1))
    with pytest.raises(ConcurrentDeleteReadError):
        qbeast.QbeastTable.for_path(spark, path).optimize(revision_id=1)
    assert check_index(spark, path) == {1: 600}
    assert len(_ids(spark, path)) == 600


def test_writes_in_threads_of_one_session_keep_each_others_and_the_users_settings(spark, tmp_path):
    """dbt runs models in threads that share one session. The settings a write needs for its
    jobs (one file per task, microsecond timestamps) hold until the last overlapping write ends,
    and the user's own values come back after."""
    import datetime as dt
    import threading

    import pyarrow.parquet as pq

    from qbeast import QbeastTable
    from qbeast.spark.runtime import restored_confs

    keys = {"spark.sql.files.maxRecordsPerFile": "777",
            "spark.sql.parquet.outputTimestampType": "INT96",
            # raised by each write for all its jobs: the two writes surely overlap there
            "spark.sql.execution.arrow.maxRecordsPerBatch": "5000"}
    start = threading.Barrier(2)
    errors: list = []

    def write(name: str, rows: int) -> None:
        data = spark.range(0, rows).selectExpr(
            "id", "cast(id % 50 as int) as k",
            "timestamp_seconds(1700000000 + id) as ts")
        try:
            start.wait(timeout=60)
            qbeast.write(data, str(tmp_path / name), "id,k", cube_size=2000, mode="overwrite")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    with restored_confs(spark, list(keys)):
        for key, value in keys.items():
            spark.conf.set(key, value)
        threads = [threading.Thread(target=write, args=(f"t{i}", 6000 + 1000 * i)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
        assert not errors, errors
        assert {key: spark.conf.get(key) for key in keys} == keys
    for i in range(2):
        table = QbeastTable.for_path(spark, str(tmp_path / f"t{i}"))
        assert table.to_df().count() == 6000 + 1000 * i
        assert table.to_df().agg({"ts": "max"}).first()[0] == dt.datetime.fromtimestamp(
            1700000000 + 5999 + 1000 * i)
        for add in table.snapshot().delta.files.values():
            column = pq.ParquetFile(str(tmp_path / f"t{i}" / add.path)).schema.column(2)
            assert column.physical_type == "INT64", (add.path, column)  # micros, not INT96
