"""Row-level changes against a second process committing at the same time (Delta's rules).

A second Python process commits to the table just before the operation commits (the operation's
commit is wrapped to start it and wait): when that commit removed a file the operation read,
the operation fails with a conflict error, leaves no file behind and a retry applies it once;
when it blindly appended, the operation commits after it and both changes are kept.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import qbeast
import qbeast.operations.rowlevel as rowlevel
from qbeast.delta.errors import ConcurrentDeleteReadError
from qbeast.snapshot import QbeastSnapshot
from qbeast.table import QbeastTable

pytestmark = pytest.mark.spark

# The other process: an optimize-like rewrite of one file (remove + identical copy, dataChange
# false) or a blind append of a staging file, through the engine's Delta log layer.
OTHER_WRITER = textwrap.dedent("""
    import os, shutil, sys, uuid
    import pyarrow as pa, pyarrow.parquet as pq
    from qbeast.delta.log import DeltaLog
    from qbeast.delta.actions import AddFile
    path, mode, target = sys.argv[1], sys.argv[2], sys.argv[3]
    log = DeltaLog.for_path(path)
    snapshot = log.snapshot()
    tx = log.start_transaction(snapshot)
    if mode == "rewrite":
        old = snapshot.files[target]
        name = f"{uuid.uuid4()}.parquet"
        shutil.copy(os.path.join(path, old.path), os.path.join(path, name))
        tx.mark_files_read([old.path])
        tx.add_actions([old.remove(data_change=False),
                        AddFile(name, {}, old.size, old.modification_time, False, old.stats,
                                old.tags)])
        tx.commit("OPTIMIZE")
    else:
        name = f"{uuid.uuid4()}.parquet"
        ids = list(range(100000, 100010))
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()),
                                 "x": pa.array([1.0] * 10), "y": pa.array([1] * 10, pa.int32()),
                                 "s": pa.array(["appended"] * 10)}), os.path.join(path, name))
        size = os.path.getsize(os.path.join(path, name))
        tx.add_actions([AddFile(name, {}, size, 0, True, None, None)])
        tx.commit("WRITE", blind_append=True)
""")


def run_other_writer(path: str, mode: str, target: str = "-") -> None:
    subprocess.run([sys.executable, "-c", OTHER_WRITER, path, mode, target], check=True,
                   timeout=120)


@pytest.fixture
def table(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.range(3000).selectExpr("id", "cast(id % 101 as double) AS x",
                                      "cast(id * 7 % 1000 AS int) AS y", "'orig' AS s")
    qbeast.write(df, path, columns_to_index=["x", "y"], cube_size=500)
    return QbeastTable.for_path(spark, path)


def _racing(monkeypatch, mode: str) -> list[str]:
    """Make the next commit of a row-level operation lose the race to the other process."""
    real = rowlevel.commit_files
    raced: list[str] = []

    def commit_after_other_writer(transaction, new_files, **kwargs):
        if not raced:
            target = sorted(transaction._files_read)[0] if mode == "rewrite" else "-"
            run_other_writer(transaction.log.table_path, mode, target)
            raced.append(target)
        return real(transaction, new_files, **kwargs)

    monkeypatch.setattr(rowlevel, "commit_files", commit_after_other_writer)
    return raced


def test_a_concurrent_rewrite_of_a_read_file_is_a_clean_conflict_then_a_clean_retry(
        table, monkeypatch):
    path = table.path
    raced = _racing(monkeypatch, "rewrite")
    before_files = set(os.listdir(path))
    with pytest.raises(ConcurrentDeleteReadError, match="retry the operation"):
        table.delete("id % 3 = 0")
    # the other process's commit is the latest; the failed operation left no file behind
    snapshot = QbeastSnapshot.load(path)
    assert snapshot.version == 1
    leftovers = set(os.listdir(path)) - before_files
    assert len(leftovers) == 1 and leftovers == {a.path for a in snapshot.files()} - before_files
    assert table.to_df().count() == 3000
    assert raced
    # the retry reads the new snapshot and applies the delete exactly once
    result = table.delete("id % 3 = 0")
    assert result.version == 2 and result.rows_deleted == 1000
    assert table.to_df().count() == 2000 and table.to_df().where("id % 3 = 0").count() == 0


def test_a_concurrent_blind_append_does_not_conflict_and_nothing_is_lost(table, monkeypatch):
    _racing(monkeypatch, "append")
    result = table.merge(
        table.spark.createDataFrame([(5, 2.0, 3, "merged"), (7000, 1.0, 1, "new")],
                                    "id long, x double, y int, s string"),
        on=["id"])
    assert result.version == 2  # committed after the other process's version 1
    rows = table.to_df()
    assert rows.count() == 3000 + 1 + 10
    assert rows.where("s = 'appended'").count() == 10
    assert [r["id"] for r in rows.where("s = 'merged'").collect()] == [5]
    assert rows.where("id = 7000").count() == 1
    assert rows.groupBy("id").count().where("count > 1").count() == 0
