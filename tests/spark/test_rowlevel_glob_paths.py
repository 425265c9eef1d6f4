"""Row-level changes on a table whose folder name holds Spark glob characters (``[``, ``]``, ``*``).

Spark expands glob patterns in the paths its file readers are given, so every scan of data files
goes through ``qbeast.spark.read.files`` (which escapes them). Writes and reads of such a table
always worked; the row-level scan once passed raw paths and a merge failed with
``PATH_NOT_FOUND``. The scan also reports each row's file as a URI (``_metadata.file_path``,
percent-encoded), which must still be matched back to the file in the log.
"""
from __future__ import annotations

import pytest

import qbeast
from qbeast.snapshot import QbeastSnapshot
from qbeast.table import QbeastTable

pytestmark = pytest.mark.spark

SCHEMA = "id long, x double, y int, s string"


def rows_of(table: QbeastTable) -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for r in table.to_df().collect():
        assert r["id"] not in out, f"id {r['id']} twice"
        out[r["id"]] = (r["x"], r["y"], r["s"])
    return out


def test_delete_update_merge_and_delete_insert_in_a_folder_named_with_glob_characters(
        spark, tmp_path):
    path = str(tmp_path / "we[ird]*x")
    data = [(i, float(i % 50), i % 7, "orig") for i in range(600)]
    qbeast.write(spark.createDataFrame(data, SCHEMA), path, columns_to_index=["x", "y"],
                 cube_size=100)
    table = QbeastTable.for_path(spark, path)
    expected = {r[0]: r[1:] for r in data}
    assert rows_of(table) == expected

    result = table.delete("x >= 40")
    expected = {k: v for k, v in expected.items() if not v[0] >= 40}
    assert result.version == 1 and result.rows_deleted == 600 - len(expected) == 120
    assert rows_of(table) == expected

    result = table.update("y = 3", set={"s": "'upd'", "x": "x + 1000"})  # x moves rows
    for k, v in list(expected.items()):
        if v[1] == 3:
            expected[k] = (v[0] + 1000, v[1], "upd")
    assert result.version == 2
    assert result.rows_updated == sum(1 for v in expected.values() if v[2] == "upd") > 0
    assert rows_of(table) == expected

    source = spark.createDataFrame(
        [(1, 1.5, 1, "merged"), (2, 2.5, 2, "merged"), (5000, 7.0, 0, "new")], SCHEMA)
    result = table.merge(source, on=["id"])
    expected.update({1: (1.5, 1, "merged"), 2: (2.5, 2, "merged"), 5000: (7.0, 0, "new")})
    assert (result.version, result.rows_updated, result.rows_inserted) == (3, 2, 1)
    assert rows_of(table) == expected

    source = spark.createDataFrame([(3, 3.5, 3, "di"), (6000, 8.0, 1, "di")], SCHEMA)
    result = table.delete_insert(source, on="id")
    expected.update({3: (3.5, 3, "di"), 6000: (8.0, 1, "di")})
    assert (result.version, result.rows_deleted, result.rows_inserted) == (4, 1, 2)
    assert rows_of(table) == expected
    assert table.to_df().count() == len(expected)
    assert QbeastSnapshot.load(path).version == 4


def test_a_write_described_by_a_scan_reads_its_staging_folder_named_with_glob_characters(
        spark, tmp_path, monkeypatch):
    """Without accumulators (a Spark Connect session has no SparkContext) the writer describes its
    staged files by scanning the staging folder, which sits inside the table folder: that scan must
    escape the folder's glob characters like every other one (it once read ``we[ird]*x`` as a
    pattern and failed). The Connect round trip in tests/cluster runs the same write for real."""
    import qbeast.spark.write.steps as steps

    monkeypatch.setattr(steps, "new_block_tally", lambda spark: None)
    monkeypatch.setattr(steps, "new_flag_tally", lambda spark: None)
    path = str(tmp_path / "we[ird]*x")
    data = [(i, float(i % 50), i % 7, "orig") for i in range(600)]
    qbeast.write(spark.createDataFrame(data, SCHEMA), path, columns_to_index=["x", "y"],
                 cube_size=100)
    qbeast.write(spark.createDataFrame([(600, 1.0, 1, "more")], SCHEMA), path, mode="append")
    table = QbeastTable.for_path(spark, path)
    expected = {r[0]: r[1:] for r in data} | {600: (1.0, 1, "more")}
    assert rows_of(table) == expected
    snapshot = QbeastSnapshot.load(path)
    assert sum(f.num_records for f in snapshot.files()) == 601
