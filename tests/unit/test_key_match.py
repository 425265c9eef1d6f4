"""The per-file half of the one-job key merge, in Arrow (no Spark): Spark's matching and fate
rules (:mod:`qbeast.spark.changes.key_match`) and how files are spread over tasks."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from qbeast.spark.changes.file_merge import task_groups
from qbeast.spark.changes.key_match import apply_matches, match_rows, read_columns, same_values

SRC = "_src"


def test_null_keys_never_match_and_every_key_column_must_be_equal():
    target = pa.table({"a": [1, 1, None, 2, 3], "b": ["x", None, "y", "z", "z"]})
    source = pa.table({"a": [1, 1, None, 3], "b": ["x", None, "y", "z"], SRC: [10, 11, 12, 13]})
    rows, src = match_rows(target, source, ["a", "b"], SRC)
    assert rows.tolist() == [0, 4] and src.tolist() == [10, 13]
    rows, src = match_rows(target.select(["a"]),
                           pa.table({"a": [3, None, 1], SRC: [0, 1, 2]}), ["a"], SRC)
    assert rows.tolist() == [0, 1, 4] and src.tolist() == [2, 2, 0]


def test_same_values_is_sparks_null_safe_equality():
    old = pa.array([1.0, None, float("nan"), -0.0, 2.0, None])
    new = pa.array([1.0, None, float("nan"), 0.0, 3.0, 4.0])
    assert same_values(old, new).tolist() == [True, True, True, True, False, False]
    assert same_values(pa.array(["a", None]), pa.array(["a", "b"])).tolist() == [True, False]


def test_updated_rows_stay_unless_an_indexed_column_changes_outside_staging_files():
    data = pa.table({"id": [1, 2, 3, 4], "x": [1.0, 2.0, None, 4.0], "s": ["a", "b", "c", "d"]})
    rows = np.array([0, 2, 3])
    values = pa.table({"x": [1.0, None, 40.0], "s": ["A", "C", "D"]})
    change = apply_matches(data, rows, values, delete=False, moving=["x"], staging=False)
    assert change.remaining.to_pydict() == {"id": [1, 2, 3], "x": [1.0, 2.0, None],
                                            "s": ["A", "b", "C"]}
    assert change.moved.to_pydict() == {"id": [4], "x": [40.0], "s": ["D"]}
    assert (change.updated, change.deleted) == (2, 0)
    staged = apply_matches(data, rows, values, delete=False, moving=["x"], staging=True)
    assert staged.moved.num_rows == 0 and staged.updated == 3
    assert staged.remaining.column("x").to_pylist() == [1.0, 2.0, None, 40.0]
    deleted = apply_matches(data, rows, values, delete=True, moving=["x"], staging=False)
    assert deleted.remaining.column("id").to_pylist() == [2] and deleted.deleted == 3


def test_files_are_read_as_the_table_types_with_missing_columns_null(tmp_path):
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"ID": pa.array([1, 2], pa.int32()),
                             "t": pa.array([1_000, 2_000], pa.timestamp("ms"))}), path)
    schema = pa.schema([("id", pa.int64()), ("t", pa.timestamp("us", tz="UTC")),
                        ("extra", pa.string())])
    table = read_columns(pq.ParquetFile(path), schema)
    assert table.schema == schema
    assert table.column("id").to_pylist() == [1, 2]
    assert table.column("t").cast(pa.int64()).to_pylist() == [1_000_000, 2_000_000]
    assert table.column("extra").null_count == 2
    assert read_columns(pq.ParquetFile(path), schema, ["id"]).column_names == ["id"]


def test_files_are_spread_over_at_most_the_tasks_asked_with_about_equal_bytes():
    sizes = [100, 90, 10, 10, 10, 80, None]
    groups = task_groups(sizes, 3)
    assert len(groups) == 3 and sorted(i for g in groups for i in g) == list(range(7))
    loads = sorted(sum(sizes[i] or 1 for i in g) for g in groups)
    assert loads[-1] - loads[0] <= 100
    assert task_groups([5, 5], 8) == ((0,), (1,))
