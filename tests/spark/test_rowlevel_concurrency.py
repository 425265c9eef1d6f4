"""Row-level changes against another writer committing at the same time (Delta's rules).

Another writer commits to the table just before the operation commits (the operation's commit
is wrapped to run it and wait): when that commit removed a file the operation read, the
operation fails with a conflict error, leaves no file behind and a retry applies it once; when
it blindly appended, the operation commits after it and both changes are kept; when it opened a
new revision (a metadata change), the operation is re-planned on the new snapshot and commits
(``qbeast.rebase.commit_with_retries``, as writes and optimize do), its own new revision
re-tagged when the other writer took its id.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import qbeast
import qbeast.rebase as rebase
from qbeast.delta.errors import ConcurrentDeleteReadError
from qbeast.snapshot import QbeastSnapshot
from qbeast.table import QbeastTable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index  # noqa: E402

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


def _racing(monkeypatch, mode: str,
            competitor: Callable[[str], None] | None = None) -> list[str]:
    """Make the next commit of a row-level operation lose the race to the other writer: the
    other process (``mode``), or ``competitor(path)`` run in this process first (a write)."""
    real = rebase.commit_files
    raced: list[str] = []

    def commit_after_other_writer(transaction, new_files, **kwargs):
        if not raced:
            target = sorted(transaction._files_read)[0] if mode == "rewrite" else "-"
            raced.append(target)  # before the competitor: its own commit comes through here
            if competitor is not None:
                competitor(transaction.log.table_path)
            if mode != "none":
                run_other_writer(transaction.log.table_path, mode, target)
        return real(transaction, new_files, **kwargs)

    monkeypatch.setattr(rebase, "commit_files", commit_after_other_writer)
    return raced


def _open_revision(spark, first_id: int) -> Callable[[str], None]:
    """A competitor appending 50 rows far outside revision 1's space: it opens revision 2."""
    def append(path: str) -> None:
        qbeast.write(spark.range(first_id, first_id + 50).selectExpr(
            "id", "cast(id as double) * 1000 AS x", "cast(id % 7 AS int) * 100000 AS y",
            "'raced' AS s"), path)
    return append


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


def test_a_merge_racing_an_append_that_opens_a_revision_is_replanned(table, monkeypatch, caplog):
    spark, path = table.spark, table.path
    _racing(monkeypatch, "none", _open_revision(spark, 200_000))
    source = spark.createDataFrame([(5, 2.0, 3, "merged"), (6, 3.0, 4, "merged"),
                                    (7000, 1.0, 1, "new")], "id long, x double, y int, s string")
    with caplog.at_level(logging.WARNING, logger="qbeast.rebase"):
        result = table.merge(source, on=["id"])
    assert "lost a race (MetadataChangedError)" in caplog.text
    assert (result.version, result.rows_updated, result.rows_inserted) == (2, 2, 1)
    assert result.revision_id == 1  # the inserted row fits revision 1: appended into it
    snap = QbeastSnapshot.load(path)
    assert snap.version == 2 and snap.latest_revision_id == 2  # the race's revision is kept
    rows = {r["id"]: (r["x"], r["y"], r["s"]) for r in table.to_df().collect()}
    expected = {i: (float(i % 101), i * 7 % 1000, "orig") for i in range(3000)}
    expected.update({5: (2.0, 3, "merged"), 6: (3.0, 4, "merged"), 7000: (1.0, 1, "new")})
    expected.update({i: (i * 1000.0, i % 7 * 100000, "raced") for i in range(200_000, 200_050)})
    assert table.to_df().count() == len(rows) == len(expected) and rows == expected
    assert check_index(spark, path) == {1: 3001, 2: 50}


def test_a_delete_racing_an_append_that_opens_a_revision_is_replanned(table, monkeypatch):
    spark, path = table.spark, table.path
    _racing(monkeypatch, "none", _open_revision(spark, 300_000))
    result = table.delete("id % 3 = 0")
    assert result.version == 2 and result.rows_deleted == 1000
    ids = sorted(r["id"] for r in table.to_df().select("id").collect())
    assert ids == [i for i in range(3000) if i % 3] + list(range(300_000, 300_050))
    assert QbeastSnapshot.load(path).latest_revision_id == 2
    assert check_index(spark, path) == {1: 2000, 2: 50}


def test_a_merge_opening_a_revision_whose_id_another_writer_took_is_retagged(table, monkeypatch):
    spark, path = table.spark, table.path
    _racing(monkeypatch, "none", _open_revision(spark, 400_000))
    # the inserted rows are far outside revision 1 (the other way): the merge opens revision 2
    source = spark.createDataFrame([(9, 1.0, 2, "merged"), (8000, -5e6, -3_000_000, "new"),
                                    (8001, -4e6, -2_000_000, "new")],
                                   "id long, x double, y int, s string")
    result = table.merge(source, on=["id"])
    assert result.version == 2 and result.revision_id == 3  # re-tagged from 2
    snap = QbeastSnapshot.load(path)
    assert snap.latest_revision_id == 3 and sorted(snap.revisions) == [0, 1, 2, 3]
    assert {snap.revision_of(a) for a in snap.files()} == {1, 2, 3}
    rows = {r["id"]: r["s"] for r in table.to_df().collect()}
    assert len(rows) == table.to_df().count() == 3000 + 2 + 50
    assert rows[9] == "merged" and rows[8000] == rows[8001] == "new"
    assert check_index(spark, path) == {1: 2999, 2: 50, 3: 3}  # row 9 moved with the inserts


def test_a_replanned_commit_still_fails_when_a_file_it_read_was_removed(table, monkeypatch):
    path = table.path
    before_files = set(os.listdir(path))
    # one other commit opens a revision (re-plan), then the other process rewrites a read file
    raced = _racing(monkeypatch, "rewrite", _open_revision(table.spark, 500_000))
    with pytest.raises(ConcurrentDeleteReadError, match="removed by another commit"):
        table.merge(table.spark.createDataFrame([(5, 2.0, 3, "m"), (9000, 1.0, 1, "n")],
                                                "id long, x double, y int, s string"),
                    on=["id"])
    assert raced
    snapshot = QbeastSnapshot.load(path)
    assert snapshot.version == 2  # the two other commits only
    committed = before_files | {a.path for a in snapshot.files()}
    assert set(os.listdir(path)) - {"_delta_log"} == committed - {"_delta_log"}
    assert table.to_df().count() == 3050 and table.to_df().where("s = 'm'").count() == 0
