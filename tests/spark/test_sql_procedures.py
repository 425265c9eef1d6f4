"""The table operations as SQL procedures (``CALL qbeast_system.<name>(...)``) in a session of
the engine: each answers as the engine's own operation does, by catalog name and by location."""
from __future__ import annotations

import json

import pytest

import qbeast
from qbeast import QbeastTable
from qbeast.spark.bridge import jar_path

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(jar_path() is None, reason="the bridge jar is not built (no javac when `make` ran)"),
]


@pytest.fixture(scope="module")
def procedures_table(spark, tmp_path_factory):
    qbeast.enable_sql_procedures(spark)
    path = str(tmp_path_factory.mktemp("procedures") / "t")
    qbeast.write(spark.range(3000).selectExpr("id", "id % 7 as k"), path, columns_to_index="id,k",
                 cube_size=300)
    qbeast.write(spark.range(200).selectExpr("id", "id % 7 as k"), path)  # into existing cubes
    spark.sql("DROP TABLE IF EXISTS procedures_t")
    spark.sql(f"CREATE TABLE procedures_t USING qbeast LOCATION '{path}'")
    yield path
    spark.sql("DROP TABLE IF EXISTS procedures_t")


def test_history_and_metrics_answer_as_the_engine(spark, procedures_table):
    table = QbeastTable.for_path(spark, procedures_table)
    rows = spark.sql("CALL qbeast_system.history(table => 'procedures_t')").collect()
    assert [(r.version, r.operation) for r in rows] == [(e.version, e.operation)
                                                         for e in table.history().entries]
    assert json.loads(rows[0].metrics)["numOutputRows"] == "200"
    assert len(spark.sql("CALL qbeast_system.system.history('procedures_t', 1)").collect()) == 1
    lines = [r.line for r in spark.sql(f"CALL qbeast_system.index_metrics('{procedures_table}')").collect()]
    assert lines == str(table.index_metrics()).splitlines()


def test_optimize_and_vacuum_run_the_engines_operations(spark, procedures_table):
    table = QbeastTable.for_path(spark, procedures_table)
    before = table.snapshot().version
    rows = sorted(table.to_df().collect())
    lines = [r.line for r in spark.sql("CALL qbeast_system.optimize(table => 'procedures_t')").collect()]
    assert lines[0].startswith(f"optimize of {procedures_table}: 1 commit(s)")
    assert table.snapshot().version == before + 1
    assert table.history(limit=1).entries[0].operation == "OPTIMIZE"
    assert sorted(table.to_df().collect()) == rows  # same rows, laid out again
    assert _count(spark, "select count(*) from procedures_t") == 3200
    dry = [r.line for r in spark.sql(
        "CALL qbeast_system.vacuum(table => 'procedures_t', retention_hours => 0.0, dry_run => true, "
        "allow_short_retention => true)").collect()]
    assert "would delete" in dry[0] and table.snapshot().version == before + 1


def _count(spark, sql: str) -> int:
    return int(spark.sql(sql).first()[0])


def test_bad_calls_fail_with_the_engines_message(spark, procedures_table):
    with pytest.raises(Exception, match="table 'no_such_table' is not in the catalog"):
        spark.sql("CALL qbeast_system.optimize(table => 'no_such_table')").collect()
    with pytest.raises(Exception, match=r"fraction must be a number in \(0, 1\], got 7.0"):
        spark.sql("CALL qbeast_system.optimize(table => 'procedures_t', fraction => 7.0)").collect()
    with pytest.raises(Exception, match="FAILED_TO_LOAD_ROUTINE"):
        spark.sql("CALL qbeast_system.compact('procedures_t')").collect()
