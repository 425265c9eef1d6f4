"""The table operations as SQL procedures (``CALL qbeast_system.<name>(...)``) in a session of
the engine: each answers as the engine's own operation does, by catalog name and by location."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import qbeast
from qbeast import QbeastTable
from qbeast.spark.bridge import jar_path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index  # noqa: E402

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


def test_row_level_procedures_change_exactly_the_rows_they_name(spark, tmp_path):
    """delete / update / merge / delete_insert / replace_where in SQL (what MERGE INTO, UPDATE
    and DELETE do on V2 tables): each one commit, each leaving exactly the expected rows."""
    qbeast.enable_sql_procedures(spark)
    path = str(tmp_path / "rows")
    qbeast.write(spark.range(1000).selectExpr("id", "id % 10 as k"), path, columns_to_index="id",
                 cube_size=200)
    call = "CALL qbeast_system.{}"
    rows = {i: i % 10 for i in range(1000)}

    def table_rows() -> dict[int, int]:
        return {r.id: r.k for r in QbeastTable.for_path(spark, path).to_df().collect()}

    spark.sql(call.format(f"delete(table => '{path}', condition => 'k = 0')")).collect()
    rows = {i: k for i, k in rows.items() if k != 0}
    assert table_rows() == rows

    spark.sql(call.format(f"update(table => '{path}', set => map('k', 'k + 100'), "
                          "condition => 'id < 50')")).collect()
    rows = {i: k + 100 if i < 50 else k for i, k in rows.items()}
    assert table_rows() == rows

    spark.sql(call.format(f"merge(table => '{path}', source => 'select id, -1 as k from range(990, 1010)', "
                          "on => 'id')")).collect()
    rows.update({i: -1 for i in range(990, 1010)})
    assert table_rows() == rows

    spark.sql(call.format(f"delete_insert(table => '{path}', source => "
                          "'select 1 as id, 7 as k union all select 1, 8', on => 'id')")).collect()
    ones = QbeastTable.for_path(spark, path).to_df().where("id = 1").collect()
    assert sorted(r.k for r in ones) == [7, 8]  # both source rows of key 1 replaced its row
    rows.pop(1)
    spark.sql(call.format(f"replace_where(table => '{path}', source => 'select 1 as id, 5 as k', "
                          "condition => 'id = 1')")).collect()
    rows[1] = 5
    assert table_rows() == rows
    assert QbeastTable.for_path(spark, path).to_df().count() == len(rows)
    assert [e.operation for e in QbeastTable.for_path(spark, path).history(limit=5).entries] == [
        "REPLACE_WHERE", "DELETE_INSERT", "MERGE", "UPDATE", "DELETE"]

    with pytest.raises(Exception, match="procedure argument source must be a query"):
        spark.sql(call.format(f"merge(table => '{path}', source => ' ', on => 'id')")).collect()


def _json(spark, sql: str) -> dict:
    return json.loads(spark.sql(sql).first().result)


def test_the_procedures_a_sql_client_builds_tables_with_answer_as_the_engine(spark, tmp_path):
    """What dbt's `method: thrift` sends: `write` (a WriteRequest as JSON) writes and merges as
    `qbeast.write_rows` does, marked with the request's user metadata; `describe_location`,
    `schema`, `register_table`, `sample_predicate` and `approx` answer as the engine's own
    functions; `output => 'json'` gives the result's `to_dict()`."""
    from qbeast import WriteRequest, sql_string

    qbeast.enable_sql_procedures(spark)
    path = str(tmp_path / "built")
    assert _json(spark, f"CALL qbeast_system.describe_location({sql_string(path)}, output => 'json')")[
        "kind"] == "missing"
    create = WriteRequest(mode="overwrite", columns_to_index=("id", "k"), cube_size=200,
                          user_metadata='{"dbt_relation": "s.built"}')
    written = _json(spark, "CALL qbeast_system.write(table => {}, source => {}, options => {}, "
                    "output => 'json')".format(sql_string(path), sql_string(
                        "select id, id % 7 as k from range(1000)"), sql_string(create.to_json())))
    assert (written["mode"], written["version"], written["rows"]) == ("overwrite", 0, 1000)
    merge = WriteRequest(mode="merge", on=("id",), user_metadata='{"dbt_relation": "s.built"}')
    merged = _json(spark, "CALL qbeast_system.write({}, {}, {}, output => 'json')".format(
        sql_string(path), sql_string("select id, 100 as k from range(995, 1005)"),
        sql_string(merge.to_json())))
    assert (merged["rows_updated"], merged["rows_inserted"], merged["version"]) == (5, 5, 1)
    table = QbeastTable.for_path(spark, path)
    assert table.to_df().count() == 1005 and table.to_df().where("k = 100").count() == 10
    described = _json(spark, f"CALL qbeast_system.describe_location({sql_string(path)}, output => 'json')")
    assert described["kind"] == "qbeast" and described["version"] == 1
    assert described["user_metadata"][0] == '{"dbt_relation": "s.built"}'
    schema = _json(spark, f"CALL qbeast_system.schema({sql_string(path)}, output => 'json')")
    assert [f["name"] for f in schema["schema"]["fields"]] == ["id", "k"]
    assert schema["indexed_columns"] == ["id", "k"] and schema["is_qbeast"]

    spark.sql("DROP TABLE IF EXISTS procedures_built")
    spark.sql(f"CALL qbeast_system.register_table('procedures_built', {sql_string(path)}, "
              "comment => 'built over SQL')")
    assert _count(spark, "select count(*) from procedures_built") == 1005
    unchanged = spark.sql(f"CALL qbeast_system.register_table('procedures_built', {sql_string(path)})")
    assert "unchanged" in unchanged.first().line
    sampled = spark.sql(f"CALL qbeast_system.sample_predicate({sql_string(path)}, 0.3)").first()
    assert (sampled.predicate, sampled.prunes) == (table.sample_predicate(0.3), True)
    # on one key column's hash (a join-consistent sample): a row filter where the index is on
    # more columns than the key, as this one (id, k) is
    keyed = spark.sql(f"CALL qbeast_system.sample_predicate({sql_string(path)}, 0.3, key => 'K')").first()
    assert keyed.predicate == table.sample_predicate(0.3, key="k") and keyed.predicate.startswith("hash(`k`)")
    assert keyed.prunes is False
    with pytest.raises(Exception, match=r"sample key 'nope' is not a column of .*allowed values: \['id', 'k'\]"):
        spark.sql(f"CALL qbeast_system.sample_predicate({sql_string(path)}, 0.3, key => 'nope')").collect()
    answer = _json(spark, f"CALL qbeast_system.approx({sql_string(path)}, '[\"count(*)\"]', "
                   "tolerance => 0.0, output => 'json')")
    columns = [name for name, _ in answer["columns"]]
    assert answer["rows"][0][columns.index("estimate")] == 1005
    spark.sql("DROP TABLE IF EXISTS procedures_built")
    with pytest.raises(Exception, match="procedure argument files must be a JSON list of strings"):
        spark.sql(f"CALL qbeast_system.optimize({sql_string(path)}, files => 'part-0.parquet')").collect()
    with pytest.raises(Exception, match="unknown write option 'mdoe'"):
        spark.sql(f"CALL qbeast_system.write({sql_string(path)}, 'select 1 as id', '{{\"mdoe\": 1}}')").collect()


def test_delete_and_update_statements_run_as_the_engines_changes(spark, tmp_path):
    """DELETE FROM and UPDATE on a qbeast table, by catalog name (with and without an alias) or
    path, run as the engine's row-level changes: exactly the rows the condition names change,
    one commit each, quotes and backslashes in the texts kept, and the index still valid."""
    from qbeast import sql_string
    from qbeast.delta.log import DeltaLog

    qbeast.enable_sql_procedures(spark)
    path = str(tmp_path / "dml")
    qbeast.write(spark.range(1000).selectExpr("id", "id % 10 as k", "cast(id as string) as s"), path,
                 columns_to_index="id,k", cube_size=200)
    spark.sql("DROP TABLE IF EXISTS dml_t")
    spark.sql(f"CREATE TABLE dml_t USING qbeast LOCATION {sql_string(path)}")
    expected = {i: (i % 10, str(i)) for i in range(1000)}

    def table_rows() -> dict:
        return {r.id: (r.k, r.s) for r in spark.table("dml_t").collect()}

    answer = [r.line for r in spark.sql(
        "UPDATE dml_t SET k = k + 100, s = concat(s, 'it\\'s') WHERE id BETWEEN 10 AND 19").collect()]
    assert any("10 updated" in line for line in answer), answer
    for i in range(10, 20):
        expected[i] = (i % 10 + 100, f"{i}it's")
    assert table_rows() == expected
    spark.sql("UPDATE dml_t AS t SET t.s = 'a\\\\b' WHERE t.id = 0")  # alias-qualified; a backslash
    expected[0] = (0, "a\\b")
    assert table_rows() == expected
    spark.sql(f"DELETE FROM qbeast.`{path}` WHERE k >= 100 OR s LIKE '%\\\\\\\\%'")  # by path
    for i in [0, *range(10, 20)]:
        del expected[i]
    spark.sql("DELETE FROM dml_t WHERE id >= 900")
    expected = {i: v for i, v in expected.items() if i < 900}
    assert table_rows() == expected
    assert [e.operation for e in QbeastTable.for_path(spark, path).history().entries] == [
        "DELETE", "DELETE", "UPDATE", "UPDATE", "WRITE"]
    check_index(spark, path)
    assert DeltaLog.for_path(path).snapshot().num_records == len(expected)
    spark.sql("DELETE FROM dml_t")  # every row
    assert spark.table("dml_t").count() == 0


def test_merge_statements_run_as_the_engines_merge(spark, tmp_path):
    """MERGE INTO a qbeast table, by name or path, from a table or a query: upserts by key
    columns or by another condition, an update of named columns, a delete; exactly the rows the
    statement names change, one commit each. Shapes the engine's merge has no way to express are
    refused naming what runs, nothing committed; a table of another format keeps Spark's answer."""
    from qbeast import sql_string

    qbeast.enable_sql_procedures(spark)
    path = str(tmp_path / "merged")
    qbeast.write(spark.range(10).selectExpr("id", "id % 3 as k", "'a' as v"), path, columns_to_index="id",
                 cube_size=200)
    spark.sql("DROP TABLE IF EXISTS merge_t")
    spark.sql(f"CREATE TABLE merge_t USING qbeast LOCATION {sql_string(path)}")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW merge_src AS SELECT id, id % 3 AS k, 'b' AS v FROM range(8, 12)")
    expected = {i: (i % 3, "a") for i in range(10)}

    def table_rows() -> dict:
        return {r.id: (r.k, r.v) for r in spark.table("merge_t").collect()}

    spark.sql("MERGE INTO merge_t USING merge_src ON merge_t.id = merge_src.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    expected.update({i: (i % 3, "b") for i in range(8, 12)})
    assert table_rows() == expected
    spark.sql(f"MERGE INTO qbeast.`{path}` AS t USING (SELECT id, id % 3 AS k, 'c' AS v FROM range(0, 2)) AS s "
              "ON s.id = t.id WHEN MATCHED THEN UPDATE SET t.v = s.v")  # by path, named columns
    expected.update({0: (0, "c"), 1: (1, "c")})
    spark.sql("MERGE INTO merge_t t USING (SELECT 5 AS id, 2 AS k) s ON t.id = s.id AND t.k = s.k + 0 "
              "WHEN MATCHED THEN DELETE")  # a condition, not keys
    del expected[5]
    assert table_rows() == expected
    table = QbeastTable.for_path(spark, path)
    assert [e.operation for e in table.history().entries] == ["MERGE", "MERGE", "MERGE", "WRITE"]
    check_index(spark, path)
    version = table.snapshot().version
    for clause, why in (("WHEN MATCHED AND s.k > 1 THEN DELETE", "a WHEN MATCHED clause with a condition"),
                        ("WHEN MATCHED THEN UPDATE SET v = 'z'", "gives v another value than the source's"),
                        ("WHEN NOT MATCHED BY SOURCE THEN DELETE", "a WHEN NOT MATCHED BY SOURCE clause"),
                        ("WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)", "is not one INSERT *")):
        with pytest.raises(Exception) as refused:  # noqa: PT011 - Spark wraps the JVM's error
            spark.sql(f"MERGE INTO merge_t t USING merge_src s ON t.id = s.id {clause}").collect()
        first = next(line for line in str(refused.value).splitlines() if "qbeast table" in line)
        assert "MERGE INTO on the qbeast table merge_t does not run: " in first and why in first, first
        assert "CALL qbeast_system.merge(table => 'merge_t', source => " in first
    assert QbeastTable.for_path(spark, path).snapshot().version == version
    spark.sql("CREATE TABLE IF NOT EXISTS plain_parquet_t (id long, k long) USING parquet")
    with pytest.raises(Exception) as spark_own:  # noqa: PT011
        spark.sql("MERGE INTO plain_parquet_t t USING merge_src s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET *").collect()
    assert "qbeast" not in str(spark_own.value).splitlines()[0]


def test_add_columns_statements_add_nullable_columns_at_the_end(spark, tmp_path):
    """ALTER TABLE ... ADD COLUMN(S) on a qbeast catalog table or path: the columns at the end of
    the log's schema and the catalog's (its comments and properties kept), null in the old rows,
    settable at once; what a qbeast table cannot add is refused by name, nothing committed."""
    from qbeast import sql_string

    qbeast.enable_sql_procedures(spark)
    path = str(tmp_path / "add")
    qbeast.write(spark.range(20).selectExpr("id", "cast(id as string) as s"), path, columns_to_index="id",
                 cube_size=200)
    spark.sql("DROP TABLE IF EXISTS add_t")
    spark.sql(f"CREATE TABLE add_t USING qbeast COMMENT 'kept' TBLPROPERTIES ('team' = 'a') "
              f"LOCATION {sql_string(path)}")
    spark.sql("ALTER TABLE add_t ALTER COLUMN id COMMENT 'the key'")
    answer = [r.line for r in spark.sql("ALTER TABLE add_t ADD COLUMN full_name varchar(200) DEFAULT NULL").collect()]
    assert answer == ["add columns to add_t: version 1",
                      "  columns: full_name string (null in every existing row)"], answer
    spark.sql(f"ALTER TABLE qbeast.`{path}` ADD COLUMNS (score double COMMENT 'a `score`', n int)")
    assert [(f.name, f.dataType.simpleString()) for f in QbeastTable.for_path(spark, path).to_df().schema] == [
        ("id", "bigint"), ("s", "string"), ("full_name", "string"), ("score", "double"), ("n", "int")]
    spark.sql("REFRESH TABLE add_t")
    described = {r.col_name: (r.data_type, r.comment) for r in spark.sql("DESCRIBE TABLE EXTENDED add_t").collect()}
    assert described["id"] == ("bigint", "the key") and described["full_name"] == ("string", None)
    assert described["Comment"][0] == "kept" and described["Table Properties"][0] == "[team=a]"
    spark.sql("UPDATE add_t SET full_name = concat('n', s) WHERE id >= 15")
    rows = {r.id: (r.full_name, r.score, r.n) for r in spark.table("add_t").collect()}
    assert rows == {i: (f"n{i}" if i >= 15 else None, None, None) for i in range(20)}
    version = QbeastTable.for_path(spark, path).snapshot().version
    for column, reason in (("x int NOT NULL", "NOT NULL"), ("y int DEFAULT 1", "a DEFAULT other than NULL"),
                           ("z int FIRST", "a position"), ("s string", r"already has column\(s\) s; its columns: id, s, full_name")):
        with pytest.raises(Exception, match=reason):
            spark.sql(f"ALTER TABLE add_t ADD COLUMN {column}").collect()
    assert QbeastTable.for_path(spark, path).snapshot().version == version



def test_delete_without_the_procedures_names_how_to_offer_them(spark, procedures_table):
    """In a driver that has not offered the procedures, DELETE names the call that does."""
    from qbeast.spark.bridge import bridge_class

    version = QbeastTable.for_path(spark, procedures_table).snapshot().version
    bridge_class(spark).setProcedures(None)
    try:
        with pytest.raises(Exception, match=r"call qbeast\.enable_sql_procedures\(spark\)"):
            spark.sql("DELETE FROM procedures_t WHERE id < 10").collect()
    finally:
        qbeast.enable_sql_procedures(spark)
    assert QbeastTable.for_path(spark, procedures_table).snapshot().version == version
