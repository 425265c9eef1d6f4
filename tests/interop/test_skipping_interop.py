"""A table with skipping indexes stays an ordinary Delta table for delta-rs and DuckDB.

The index files sit in a ``_`` folder no Delta reader lists, and the AddFile tags that name them
are opaque to Delta readers: both read every row, with and without a filter, as Spark does.
"""
from __future__ import annotations

import pytest

import qbeast
from qbeast import QbeastTable

pytestmark = [pytest.mark.spark, pytest.mark.interop]


def test_deltalake_and_duckdb_read_an_indexed_table_unchanged(spark, tmp_path, duckdb_delta):
    from deltalake import DeltaTable

    path = str(tmp_path / "t")
    df = spark.range(0, 3000).selectExpr(
        "id", "cast(id * 7919 % 100003 as bigint) AS order_id",
        "case when id % 11 = 0 then null else concat('s', id % 5) end AS status")
    qbeast.write(df, path, "id", cube_size=400,
                 skipping_indexes={"order_id": "fuse", "status": "values", "upper(status)": "values"})
    QbeastTable.for_path(spark, path).delete("id % 10 = 3")  # rewritten files: new index file
    expected = sorted(tuple(r) for r in spark.read.parquet(
        *QbeastTable.for_path(spark, path).to_df().inputFiles()).collect())
    assert len(expected) == 2700
    via_deltalake = DeltaTable(path).to_pyarrow_table().select(["id", "order_id", "status"])
    assert sorted(tuple(r.values()) for r in via_deltalake.to_pylist()) == expected
    via_duckdb = duckdb_delta.execute(
        f"SELECT id, order_id, status FROM delta_scan('{path}')").fetchall()
    assert sorted(via_duckdb) == expected
    want = sum(1 for r in expected if r[2] == "s3")
    assert duckdb_delta.execute(
        f"SELECT count(*) FROM delta_scan('{path}') WHERE status = 's3'").fetchone()[0] == want
    assert QbeastTable.for_path(spark, path).to_df(filter="status = 's3'").count() == want
    assert DeltaTable(path).to_pyarrow_table(filters=[("status", "=", "s3")]).num_rows == want
    # an index on an expression is as invisible; the engine prunes by it, DuckDB reads all
    assert duckdb_delta.execute(
        f"SELECT count(*) FROM delta_scan('{path}') WHERE upper(status) = 'S3'").fetchone()[0] == want
    assert QbeastTable.for_path(spark, path).to_df(filter="upper(status) = 'S3'").count() == want
    plan = QbeastTable.for_path(spark, path).read_plan(filter="upper(status) IN ('S9', 's3')")
    assert plan.files == () and dict(plan.index_pruned)["upper(status):values"] == plan.total_files
