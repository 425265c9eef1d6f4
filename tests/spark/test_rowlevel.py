"""delete / update / merge on Qbeast tables: results against a Python oracle, index kept exact.

After every operation the writer's invariant checks (``write_checks.check_index``) recompute,
from the files on disk, every row's weight and cube, compare the blocks' elementCount /
minWeight with the tags and check that a sample of f reads exactly the rows with
``hash < Weight(f)``.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import qbeast
from qbeast.delta.log import DeltaLog
from qbeast.errors import InvalidOptionError
from qbeast.snapshot import QbeastSnapshot
from qbeast.table import QbeastTable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index  # noqa: E402

pytestmark = pytest.mark.spark

SCHEMA = "id long, x double, y int, s string"


def rows_of(spark, path) -> dict:
    """id -> (x, y, s) of the table's rows (ids are unique in these tests)."""
    out = {}
    for r in QbeastTable.for_path(spark, path).to_df().collect():
        assert r["id"] not in out, f"id {r['id']} twice"
        out[r["id"]] = (r["x"], r["y"], r["s"])
    return out


def last_commit(path) -> tuple[dict, list[dict], list[dict]]:
    log = DeltaLog.for_path(path)
    version = log.snapshot().version
    actions = [json.loads(line) for line in
               open(os.path.join(path, "_delta_log", f"{version:020d}.json"))]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    return (info, [a["add"] for a in actions if "add" in a],
            [a["remove"] for a in actions if "remove" in a])


def make_rows(n, skewed, seed, start=0):
    rng = np.random.default_rng(seed)
    xs = rng.exponential(3.0, n) ** 2 if skewed else rng.uniform(0, 100, n)
    ys = (rng.zipf(1.6, n) % 10_000) if skewed else rng.integers(0, 10_000, n)
    rows = []
    for i in range(n):
        x = None if i % 53 == 0 else float(xs[i])  # nulls in an indexed column
        rows.append((start + i, x, int(ys[i]), f"s{i % 17}"))
    return rows


@pytest.mark.parametrize("skewed", [False, True], ids=["uniform", "skewed"])
def test_delete_update_merge_keep_rows_and_index_exact(spark, tmp_path, skewed):
    path = str(tmp_path / "t")
    data = make_rows(4000, skewed, seed=7)
    qbeast.write(spark.createDataFrame(data, SCHEMA), path, columns_to_index=["x", "y"],
                 cube_size=400)
    table = QbeastTable.for_path(spark, path)
    expected = {r[0]: r[1:] for r in data}
    total_files = QbeastSnapshot.load(path).delta.num_files

    # delete by an indexed range: only files that can hold such rows are read and rewritten
    result = table.delete("x > 60")
    expected = {k: v for k, v in expected.items() if not (v[0] is not None and v[0] > 60)}
    assert result.rows_deleted == 4000 - len(expected) > 0
    info, adds, removes = last_commit(path)
    assert info["operation"] == "DELETE"
    assert int(info["operationMetrics"]["numCandidateFiles"]) < total_files
    assert int(info["operationMetrics"]["numRemovedBytes"]) == result.bytes_removed > 0
    assert all(a["dataChange"] for a in adds) and all(r["dataChange"] for r in removes)
    assert len(removes) == result.files_removed < total_files
    assert rows_of(spark, path) == expected
    check_index(spark, path)

    # update of a non-indexed column: rows stay in their files and cubes
    result = table.update("id % 10 = 3", set={"s": "concat(s, '!')"})
    expected = {k: (v[0], v[1], v[2] + "!" if k % 10 == 3 else v[2]) for k, v in expected.items()}
    assert result.rows_updated == sum(1 for k in expected if k % 10 == 3)
    assert result.rows_inserted == 0 and result.revision_id is None
    assert rows_of(spark, path) == expected
    check_index(spark, path)

    # update of an indexed column, growing its range: the rows move through the indexed append
    # into a new revision, in the same commit
    result = table.update("id < 300", set={"x": "x + 1000", "s": "'moved'"})
    expected = {k: ((None if v[0] is None else v[0] + 1000, v[1], "moved") if k < 300 else v)
                for k, v in expected.items()}
    assert result.revision_id == 2
    assert rows_of(spark, path) == expected
    assert set(check_index(spark, path)) == {1, 2}

    # merge across both revisions: updates, deletes nothing, inserts with a null key
    source_rows = [(5, 1.5, 7, "m"), (250, 2000.0, 1, "m"), (3999, None, 3, "m"),
                   (9000, 3.0, 5, "new"), (None, 4.0, 6, "nullkey")]
    source = spark.createDataFrame(source_rows, SCHEMA)
    result = table.merge(source, on=["id"])
    matched = [r for r in source_rows if r[0] in expected]
    for r in source_rows:
        if r[0] is not None:
            expected[r[0]] = r[1:]
    assert result.rows_updated == len(matched)
    assert result.rows_inserted == len(source_rows) - len(matched)
    got = QbeastTable.for_path(spark, path).to_df()
    assert got.where("id IS NULL").collect()[0]["s"] == "nullkey"
    assert {r["id"]: (r["x"], r["y"], r["s"]) for r in got.where("id IS NOT NULL").collect()} \
        == expected
    check_index(spark, path)
    info, _, _ = last_commit(path)
    assert info["operation"] == "MERGE"
    assert info["operationMetrics"]["numInsertedRows"] == str(result.rows_inserted)


def test_merge_delete_and_column_lists(spark, tmp_path):
    path = str(tmp_path / "t")
    data = make_rows(2000, False, seed=3)
    qbeast.write(spark.createDataFrame(data, SCHEMA), path, columns_to_index=["x", "y"],
                 cube_size=400)
    table = QbeastTable.for_path(spark, path)
    expected = {r[0]: r[1:] for r in data}

    # merge_exclude_columns: s is not updated; inserts still get every column
    source = spark.createDataFrame([(10, 1.0, 1, "a"), (5000, 2.0, 2, "b")], SCHEMA)
    table.merge(source, on="id", exclude_columns=["s"])
    expected[10] = (1.0, 1, expected[10][2])
    expected[5000] = (2.0, 2, "b")
    assert rows_of(spark, path) == expected

    # merge_update_columns: only y; no inserts
    source = spark.createDataFrame([(11, 9.0, 99, "z"), (6000, 1.0, 1, "c")], SCHEMA)
    result = table.merge(source, on=["id"], update_columns=["y"], when_not_matched=None)
    expected[11] = (expected[11][0], 99, expected[11][2])
    assert result.rows_inserted == 0 and rows_of(spark, path) == expected

    # when matched delete, with a condition instead of keys and a target predicate
    source = spark.createDataFrame([(12, 0.0, 0, ""), (13, 0.0, 0, ""), (700, 0.0, 0, "")],
                                   SCHEMA)
    result = table.merge(source, on="target.id = source.id", when_matched="delete",
                         when_not_matched=None, target_predicate="id < 500")
    del expected[12], expected[13]
    assert result.rows_deleted == 2 and rows_of(spark, path) == expected
    check_index(spark, path)

    # a source without matches and without inserts changes nothing: no commit
    version = QbeastSnapshot.load(path).version
    result = table.merge(spark.createDataFrame([(99999, 1.0, 1, "q")], SCHEMA), on=["id"],
                         when_not_matched=None)
    assert result.version is None and QbeastSnapshot.load(path).version == version


def test_delete_insert_replaces_the_rows_of_the_source_keys_in_one_commit(spark, tmp_path):
    """dbt's delete+insert: every target row of a source key goes, every source row comes (two
    rows per key allowed), a null key deletes nothing, the target predicate limits the delete."""
    path = str(tmp_path / "t")
    data = make_rows(2000, True, seed=5)
    qbeast.write(spark.createDataFrame(data, SCHEMA), path, columns_to_index=["x", "y"],
                 cube_size=300)
    table = QbeastTable.for_path(spark, path)
    version = QbeastSnapshot.load(path).version
    # key 7 twice in the source; key 8 excluded by the predicate (kept, and inserted again);
    # key 9000 new (its x grows the space: a new revision in the same commit); a null key
    source_rows = [(7, 1.0, 1, "a"), (7, 2.0, 2, "b"), (8, 3.0, 3, "c"),
                   (9000, 5000.0, 4, "new"), (None, 4.0, 5, "nullkey")]
    result = table.delete_insert(spark.createDataFrame(source_rows, SCHEMA), on="id",
                                 target_predicate="id != 8")
    assert QbeastSnapshot.load(path).version == version + 1
    info, _, _ = last_commit(path)
    assert info["operation"] == "DELETE_INSERT"
    assert result.rows_deleted == 1 and result.rows_inserted == len(source_rows)
    expected = sorted([(r[0], r[1:]) for r in data if r[0] != 7] +
                      [(r[0], r[1:]) for r in source_rows], key=repr)
    got = sorted([(r["id"], (r["x"], r["y"], r["s"]))
                  for r in QbeastTable.for_path(spark, path).to_df().collect()], key=repr)
    assert got == expected
    assert set(check_index(spark, path)) == {1, 2}
    # a key column the source lacks: refused before anything is written
    with pytest.raises(InvalidOptionError, match="not columns of the source"):
        table.delete_insert(spark.createDataFrame([(1.0,)], "x double"), on=["id"])
    assert QbeastSnapshot.load(path).version == version + 1


def test_merge_with_duplicate_source_keys_fails_before_writing(spark, tmp_path):
    path = str(tmp_path / "t")
    qbeast.write(spark.createDataFrame(make_rows(500, False, seed=1), SCHEMA), path,
                 columns_to_index=["x"], cube_size=200)
    table = QbeastTable.for_path(spark, path)
    before = sorted(os.listdir(path))
    version = QbeastSnapshot.load(path).version
    source = spark.createDataFrame([(1, 1.0, 1, "a"), (1, 2.0, 2, "b")], SCHEMA)
    with pytest.raises(InvalidOptionError, match=r"2 rows for key \{'id': 1\}"):
        table.merge(source, on=["id"])
    # two source rows matching one target row through a condition
    with pytest.raises(InvalidOptionError, match="match one target row"):
        table.merge(source, on="target.id = source.id")
    # duplicated null keys never match: they are allowed (both inserted)
    nulls = spark.createDataFrame([(None, 1.0, 1, "a"), (None, 2.0, 2, "b")], SCHEMA)
    assert table.merge(nulls, on=["id"]).rows_inserted == 2
    assert QbeastSnapshot.load(path).version == version + 1
    assert set(before) <= set(os.listdir(path))


def test_bad_arguments_name_the_option_and_the_allowed_values(spark, tmp_path):
    path = str(tmp_path / "t")
    qbeast.write(spark.createDataFrame(make_rows(100, False, seed=1), SCHEMA), path,
                 columns_to_index=["x"], cube_size=200)
    table = QbeastTable.for_path(spark, path)
    source = spark.createDataFrame([(1, 1.0, 1, "a")], SCHEMA)
    with pytest.raises(InvalidOptionError, match=r"when_matched must be one of \['update', 'delete'\]"):
        table.merge(source, on=["id"], when_matched="upsert")
    with pytest.raises(InvalidOptionError, match="when_not_matched must be one of"):
        table.merge(source, on=["id"], when_not_matched="update")
    with pytest.raises(InvalidOptionError, match="'nope' in set is not a column"):
        table.update("id = 1", set={"nope": "1"})
    with pytest.raises(InvalidOptionError, match="merge key"):
        table.merge(source.drop("id"), on=["id"])
    with pytest.raises(InvalidOptionError, match="update_columns or exclude_columns, not both"):
        table.merge(source, on=["id"], update_columns=["x"], exclude_columns=["s"])
    extra = source.selectExpr("*", "1 AS extra")
    with pytest.raises(InvalidOptionError, match="'extra' in the merge source is not a column"):
        table.merge(extra, on=["id"])
    assert QbeastSnapshot.load(path).version == 0


def test_staging_files_of_a_converted_table_are_rewritten_as_staging(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "pq"
    root.mkdir()
    for p in range(3):
        ids = list(range(p * 400, (p + 1) * 400))
        pq.write_table(pa.table({
            "id": pa.array(ids, pa.int64()), "x": pa.array([i * 0.5 for i in ids]),
            "y": pa.array([i % 50 for i in ids], pa.int32()),
            "s": pa.array([f"v{i}" for i in ids])}), root / f"part-{p}.parquet")
    path = str(root)
    qbeast.convert_to_qbeast(spark, path, ["x", "y"], cube_size=300)
    table = QbeastTable.for_path(spark, path)

    result = table.delete("id < 100")
    assert result.files_removed == 1
    snapshot = QbeastSnapshot.load(path)
    assert all(a.tags is None for a in snapshot.files())  # still staging files
    assert snapshot.latest_revision_id == 0

    # updates inside staging files stay there (even of indexed columns); inserts are indexed
    result = table.merge(spark.createDataFrame([(500, 9999.0, 1, "u"), (5000, 1.0, 2, "i")],
                                               SCHEMA), on=["id"])
    assert result.rows_updated == 1 and result.rows_inserted == 1 and result.revision_id == 1
    snapshot = QbeastSnapshot.load(path)
    assert sorted(snapshot.files_by_revision()) == [0, 1]
    assert [r["id"] for r in table.sample(1.0, filter="x = 9999.0").collect()] == [500]
    assert table.to_df().count() == 1200 - 100 + 1
    check_index(spark, path)
