"""After delete / update / merge, delta-rs and DuckDB read exactly the rows the engine reads.

The rewritten files are written by pyarrow (``qbeast.spark.changes.rewrite``), the appended ones by
Spark: both must carry every type of the table (decimals, dates, timestamps, shorts, arrays,
structs, nulls) so that every reader sees the same rows, and their Delta stats must bound the
data (readers skip files with them).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import qbeast
from qbeast.table import QbeastTable

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark"))
from test_write_interop import COLUMNS, _normalize, _sorted_rows, _typed_df  # noqa: E402
from write_checks import check_index  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.interop]


def _check_readers(spark, path, duckdb_delta) -> None:
    from deltalake import DeltaTable

    engine = QbeastTable.for_path(spark, path).to_df().toArrow()
    names = engine.column_names
    want = _sorted_rows(_normalize(engine))
    assert _sorted_rows(_normalize(DeltaTable(path).to_pyarrow_table().select(names))) == want
    via_duckdb = duckdb_delta.execute(f"SELECT * FROM delta_scan('{path}')").fetch_arrow_table()
    assert _sorted_rows(_normalize(via_duckdb.select(names))) == want
    # stats bound the data: filtered counts agree between readers
    for sql in ("i > 300", "dec <= 50.5", "s >= 'name-900'", "id >= 2000"):
        got = duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{path}') WHERE {sql}").fetchone()[0]
        assert got == QbeastTable.for_path(spark, path).to_df().where(sql).count(), sql


def test_readers_agree_after_row_level_changes(spark, tmp_path, duckdb_delta):
    path = str(tmp_path / "t")
    qbeast.write(_typed_df(spark, 3000), path, COLUMNS[:4], cube_size=300)
    table = QbeastTable.for_path(spark, path)

    table.delete("i < -300 OR dec > 400")
    _check_readers(spark, path, duckdb_delta)

    table.update("id % 7 = 0", set={"txt": "'changed'", "small": "cast(-1 as short)",
                                    "i": "coalesce(i, 0) + 1"})
    _check_readers(spark, path, duckdb_delta)

    source = _typed_df(spark, 3400).where("id % 5 = 0 AND (id >= 2800 OR id < 200)")
    present = table.to_df().join(source.select("id"), "id").count()
    result = table.merge(source, on=["id"])
    assert result.rows_updated == present > 0
    assert result.rows_inserted == source.count() - present > 0
    _check_readers(spark, path, duckdb_delta)
    check_index(spark, path, fractions=(0.1, 0.5))
