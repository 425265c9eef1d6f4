"""SQL over Qbeast tables through the JVM read bridge: native scans planned by the engine.

The checks of ``sql_bridge_checks.py`` (plan shape, files against ``read_plan``, rows against the
Python source, plain parquet and the engine) on the shared local session, plus what only a
local session shows: per-reference options and versions, the relation cache, schema changes,
errors, and the fallback to the Python data source when the jar is absent.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import qbeast
from qbeast import QbeastTable
from qbeast.spark.bridge import bridge_active, jar_path
from qbeast.spark.catalog import create_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sql_bridge_checks import events, files_read, problems  # noqa: E402

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(jar_path() is None, reason="the bridge jar is not built (no javac when `make` ran)"),
]


@pytest.fixture(scope="module")
def table_path(spark, sql_bridge_report) -> str:
    assert bridge_active(spark)
    return sql_bridge_report[0]


def test_sql_over_a_catalog_table_is_native_pruned_and_exact(sql_bridge_report):
    report = sql_bridge_report[1]
    assert not problems(report), "\n".join(problems(report))


def _count(spark, sql: str) -> list[int]:
    return [int(v) for row in spark.sql(sql).collect() for v in row]


def test_each_reference_keeps_its_own_version_and_sample(spark, table_path, tmp_path):
    """Options of one reference never reach another, also through Spark's cached relation."""
    path = str(tmp_path / "versions")
    qbeast.write(events(spark, 3000), path, "zone,day", cube_size=500, mode="overwrite")
    qbeast.write(events(spark, 5000).where("id >= 3000"), path)  # version 1: 5000 rows
    create_table(spark, "bridge_versions", path, replace=True)
    t = "bridge_versions"
    table = QbeastTable.for_path(spark, path)
    sample = table.sample(0.1).count()
    v0 = f"{t} WITH ('qbeastVersionAsOf' = '0')"
    shapes = [  # in this order: each query after the ones before it
        (f"select (select count(*) from {v0}), (select count(*) from {t})", [3000, 5000]),
        (f"select (select count(*) from {t}), (select count(*) from {v0})", [5000, 3000]),
        (f"select count(*) from {v0} union all select count(*) from {t}", [3000, 5000]),
        (f"select count(*) from {v0} a join {t} b on a.id = b.id", [3000]),
        (f"select count(*) from {t} WITH ('sampleFraction' = '0.1') "
         f"union all select count(*) from {t}", [sample, 5000]),
        (f"select count(*) from {t}", [5000]),  # after every option above: still the whole table
        (f"select count(*) from {t} TABLESAMPLE (10 PERCENT)", [sample]),
        (f"select count(*) from {v0}", [3000]),
        (f"select count(*) from {t}", [5000]),
    ]
    for sql, expected in shapes:
        assert _count(spark, sql) == expected, sql
    # the same through DataFrames: time travel and the sampleFraction option of a path read
    assert spark.read.format("qbeast").option("versionAsOf", "0").load(path).count() == 3000
    assert spark.read.format("qbeast").option("sampleFraction", "0.1").load(path).count() == sample
    ids = {r.id for r in spark.table(t).sample(0.1).select("id").collect()}
    assert ids == {r.id for r in table.sample(0.1).select("id").collect()}


def test_path_queries_read_and_write_the_table_in_the_folder(spark, tmp_path):
    """``qbeast.`/folder` `` is the table in that folder, with no catalog entry: read as
    ``spark.read.format("qbeast").load`` reads it (native scan pruned by the engine, the Qbeast
    sample, per-reference options), written by INSERT through the engine; a database named
    ``qbeast`` keeps resolving its own tables."""
    path = str(tmp_path / "by_path")
    qbeast.write(events(spark, 3000), path, "zone,day", cube_size=300)
    qbeast.write(events(spark, 4000).where("id >= 3000"), path)
    table = QbeastTable.for_path(spark, path)
    ref = f"qbeast.`{path}`"
    assert _count(spark, f"select count(*), sum(id) from {ref}") == [4000, sum(range(4000))]
    assert _count(spark, f"select count(*) from qbeast.`file:{path}`") == [4000]
    assert _count(spark, f"select count(*) from {ref} WITH ('qbeastVersionAsOf' = '0')") == [3000]
    assert _count(spark, f"select count(*) from {ref} TABLESAMPLE (10 PERCENT)") == \
        [table.sample(0.1).count()]
    pruned = spark.sql(f"select id from {ref} where zone = 7")
    expected = table.to_df(filter="zone = 7")
    assert sorted(r.id for r in pruned.collect()) == sorted(r.id for r in expected.select("id").collect())
    assert files_read(pruned) == [len(table.read_plan(filter="zone = 7").files)]
    assert files_read(pruned)[0] < len(table.read_plan().files)
    plan = "\n".join(r[0] for r in spark.sql(f"explain select id from {ref} where zone = 7").collect())
    assert "FileScan parquet" in plan and "QbeastFileIndex" in plan

    spark.sql(f"insert into {ref} select * from {ref} where id < 10")
    events(spark, 500).createOrReplaceTempView("path_rows")
    spark.sql(f"insert overwrite qbeast.`{path}` select * from path_rows")
    after = QbeastTable.for_path(spark, path)
    assert after.to_df().count() == 500 and after.indexed_columns() == ["zone", "day"]
    assert [e.operation for e in after.history().entries][:2] == ["WRITE", "WRITE"]

    with pytest.raises(Exception, match="is not a Delta table"):
        spark.sql(f"select * from qbeast.`{tmp_path / 'missing'}`").collect()
    spark.sql("create database if not exists qbeast")
    spark.sql("drop table if exists qbeast.plain_rows")
    spark.sql("create table qbeast.plain_rows using parquet as select 1 as x")
    assert _count(spark, "select x from qbeast.plain_rows") == [1]
    spark.sql("drop table qbeast.plain_rows")


def test_appends_are_seen_at_once_and_a_new_column_after_refresh(spark, tmp_path):
    path = str(tmp_path / "growing")
    qbeast.write(events(spark, 2000), path, "zone", cube_size=500, mode="overwrite")
    create_table(spark, "bridge_growing", path, replace=True)
    assert _count(spark, "select count(*) from bridge_growing") == [2000]
    more = events(spark, 3000).where("id >= 2000").selectExpr("*", "id * 2 as doubled")
    qbeast.write(more, path, merge_schema=True)
    # the cached relation lists the new files at once; its columns are the ones it was built with
    assert _count(spark, "select count(*) from bridge_growing") == [3000]
    assert "doubled" not in spark.table("bridge_growing").columns
    spark.sql("REFRESH TABLE bridge_growing")  # the documented refresh after a schema change
    assert "doubled" in spark.table("bridge_growing").columns
    assert _count(spark, "select count(doubled), sum(doubled) from bridge_growing") == [
        1000, sum(2 * i for i in range(2000, 3000))
    ]


def test_bad_reads_fail_with_the_cause(spark, table_path, tmp_path):
    import deltalake
    from pyspark.errors import IllegalArgumentException

    with pytest.raises(Exception, match="not a Delta table|no Delta table|_delta_log"):
        spark.read.format("qbeast").load(str(tmp_path / "missing")).count()
    with pytest.raises(IllegalArgumentException, match="sampleFraction must be a number between 0 and 1"):
        spark.read.format("qbeast").option("sampleFraction", "2").load(table_path).count()
    create_table(spark, "bridge_bad", table_path, replace=True)
    with pytest.raises(IllegalArgumentException, match="qbeastVersionAsOf must be a non-negative integer"):
        spark.sql("select * from bridge_bad WITH ('qbeastVersionAsOf' = 'v1')").collect()
    with pytest.raises(Exception, match="version 7 of .* does not exist"):
        spark.sql("select * from bridge_bad WITH ('qbeastVersionAsOf' = '7')").collect()
    plain = str(tmp_path / "plain")
    deltalake.write_deltalake(plain, events(spark, 100).toArrow())
    assert spark.read.format("qbeast").load(plain).count() == 100
    # a plain Delta table has no row weights: TABLESAMPLE stays Spark's random sample ...
    assert 0 <= spark.read.format("qbeast").load(plain).sample(0.5).count() <= 100
    # ... and the engine's sample option is refused, naming the cause
    with pytest.raises(IllegalArgumentException, match="plain Delta table"):
        spark.read.format("qbeast").option("sampleFraction", "0.5").load(plain).count()


@pytest.mark.slow
def test_fallback_without_the_jar_and_loading_it_into_a_running_session(tmp_path):
    """In a fresh process: no jar -> the Python source (said once); a foreign session -> the jar."""
    import json
    import subprocess

    driver = Path(__file__).resolve().parent / "bridge_fallback_driver.py"
    done = subprocess.run([sys.executable, str(driver), str(tmp_path)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    no_jar = seen["no_jar"]
    assert no_jar["register"] == "python" and "qbeast-bridge" not in no_jar["conf_jars"]
    assert no_jar["count"] == no_jar["expected"] > 0
    assert "BatchScan" in no_jar["plan"] and "FileScan" not in no_jar["plan"]
    fallback_lines = [line for line in no_jar["log"] if "python" in line]
    assert len(fallback_lines) == 1 and "no bridge jar in this installation" in fallback_lines[0]
    running = seen["running"]
    assert running["register"] == "jvm" and running["count"] == no_jar["count"]
    assert "FileScan parquet" in running["plan"] and "QbeastFileIndex" in running["plan"]
    assert running["sample_equal"]


def test_a_table_created_in_plain_sql_with_location(spark, table_path):
    """`CREATE TABLE ... USING qbeast LOCATION` takes its schema from the table (bridge only)."""
    from qbeast.spark.catalog import describe_location

    spark.sql("DROP TABLE IF EXISTS bridge_plain_sql")
    spark.sql(f"CREATE TABLE bridge_plain_sql USING qbeast LOCATION '{table_path}'")
    try:
        table = QbeastTable.for_path(spark, table_path)
        assert spark.table("bridge_plain_sql").schema.simpleString() == table.to_df().schema.simpleString()
        assert _count(spark, "select count(*) from bridge_plain_sql where zone < 30") == [
            table.to_df(filter="zone < 30").count()
        ]
        assert describe_location(spark, "bridge_plain_sql") == table_path
    finally:
        spark.sql("DROP TABLE IF EXISTS bridge_plain_sql")
    assert table.to_df().count() > 0, "dropping an external table keeps the data"


def test_session_settings_add_the_jar_and_the_rule_once():
    from qbeast.errors import InvalidOptionError
    from qbeast.spark.bridge import EXTENSIONS_CLASS, SQL_BRIDGE_KEY, session_conf

    jar = str(jar_path())
    conf = session_conf({"spark.jars": "/opt/other.jar", "spark.sql.extensions": "x.Ext"})
    assert conf["spark.jars"] == f"/opt/other.jar,{jar}"
    assert conf["spark.sql.extensions"] == f"x.Ext,{EXTENSIONS_CLASS}"
    assert session_conf(conf) == conf  # idempotent
    assert "spark.jars" not in session_conf({SQL_BRIDGE_KEY: "false"})
    assert "spark.jars" not in session_conf({"spark.remote": "sc://localhost:15002"})
    with pytest.raises(InvalidOptionError, match="spark.qbeast.sqlBridge is 'maybe'; allowed values: auto, false"):
        session_conf({SQL_BRIDGE_KEY: "maybe"})


def test_a_new_session_of_the_driver_reads_natively_without_registering(spark, table_path):
    """The sessions a Thrift or Connect server opens for its clients never call qbeast.register:
    in a driver whose engine registered its planner, such a session gets the bridge's rule on
    its first qbeast relation, so its TABLESAMPLE is the Qbeast sample and its scans native."""
    other = spark.newSession()
    assert not bridge_active(other)
    other.sql(f"CREATE TABLE IF NOT EXISTS bridge_new_session USING qbeast LOCATION '{table_path}'")
    try:
        table = QbeastTable.for_path(spark, table_path)
        sampled = other.sql("select count(*) from bridge_new_session tablesample (10 percent)")
        assert sampled.first()[0] == table.sample(0.1).count()
        assert bridge_active(other)
        plan = other.sql("select * from bridge_new_session where zone < 30")._jdf.queryExecution().toString()
        assert "QbeastFileIndex" in plan and "FileScan parquet" in plan
    finally:
        other.sql("DROP TABLE IF EXISTS bridge_new_session")


def _log_names_every_data_file(path: str) -> bool:
    """True when every parquet file in the folder is one the Delta log added (live or removed):
    a write that went around the engine would leave files no version names."""
    import os

    from qbeast.delta.log import DeltaLog

    log = DeltaLog.for_path(path)
    named: set[str] = set()
    for version in range(log.snapshot().version + 1):
        named |= {os.path.basename(p) for p in log.snapshot(version).files}
    on_disk = {f for f in os.listdir(path) if f.endswith(".parquet")}
    return on_disk <= named


def test_sql_creates_and_inserts_write_through_the_engine(spark, tmp_path):
    """CTAS ``USING qbeast OPTIONS (...)``, ``INSERT INTO`` / ``INSERT OVERWRITE`` (also from the
    table itself and from another session) and ``df.write.format("qbeast")`` are indexed writes
    of the engine: one commit each, the options' index, every file named by the log."""
    path = str(tmp_path / "sql_made")
    spark.sql("DROP TABLE IF EXISTS bridge_sql_made")
    spark.sql(f"CREATE TABLE bridge_sql_made USING qbeast OPTIONS ('columnsToIndex'='id,k', "
              f"'cubeSize'='200') LOCATION '{path}' AS SELECT id, id % 7 AS k FROM range(1000)")
    table = QbeastTable.for_path(spark, path)
    try:
        assert table.indexed_columns() == ["id", "k"]
        assert table.snapshot().latest_revision.desired_cube_size == 200
        assert len(list(table.snapshot().files())) > 1  # laid out in cubes, not one file
        assert _count(spark, "select count(*), sum(id) from bridge_sql_made") == [1000, 499500]

        spark.sql("INSERT INTO bridge_sql_made SELECT id + 1000, 1 FROM range(10)")
        other = spark.newSession()  # a session of the same driver (as a Thrift client's)
        other.sql("INSERT INTO bridge_sql_made SELECT id, k FROM bridge_sql_made WHERE id < 5")
        assert table.snapshot().version == 2
        assert _count(spark, "select count(*), sum(id) from bridge_sql_made") == [1015, 509555]
        assert table.to_df().count() == 1015  # the engine reads what SQL wrote

        spark.sql("INSERT OVERWRITE bridge_sql_made SELECT id, 3 FROM range(20)")
        assert _count(spark, "select count(*), sum(id), min(k) from bridge_sql_made") == [20, 190, 3]
        assert table.snapshot().version == 3 and table.indexed_columns() == ["id", "k"]
        assert _log_names_every_data_file(path)
    finally:
        spark.sql("DROP TABLE IF EXISTS bridge_sql_made")

    saved = str(tmp_path / "saved")
    writer = spark.range(300).selectExpr("id", "id % 3 as k").write.format("qbeast")
    writer.option("columnsToIndex", "k").option("cubeSize", "100").save(saved)
    with pytest.raises(Exception, match="a table already exists at .*saved; write with mode"):
        writer.save(saved)  # Spark's default mode: ErrorIfExists
    writer.mode("ignore").save(saved)
    writer.mode("append").save(saved)
    assert QbeastTable.for_path(spark, saved).to_df().count() == 600
    assert QbeastTable.for_path(spark, saved).indexed_columns() == ["k"]
    with pytest.raises(Exception, match="unknown option 'cubes' for a write to the qbeast source; "
                                        "allowed options: \\['path', 'columnsToIndex', 'cubeSize'\\]"):
        spark.range(3).write.format("qbeast").option("cubes", "9").save(str(tmp_path / "bad"))
    with pytest.raises(Exception, match="cubeSize must be a positive integer"):
        spark.range(3).write.format("qbeast").option("cubeSize", "many").save(str(tmp_path / "bad"))
    with pytest.raises(Exception, match="a new Qbeast table at .*bad needs the option columnsToIndex"):
        spark.range(3).write.format("qbeast").save(str(tmp_path / "bad"))
    assert not (tmp_path / "bad").exists()

    # a table registered by its location has no options: INSERT OVERWRITE keeps its index
    spark.sql("DROP TABLE IF EXISTS bridge_registered")
    spark.sql(f"CREATE TABLE bridge_registered USING qbeast LOCATION '{saved}'")
    try:
        spark.sql("INSERT OVERWRITE bridge_registered SELECT id, 2 FROM range(40)")
        again = QbeastTable.for_path(spark, saved)
        assert again.indexed_columns() == ["k"] and again.cube_size() == 100
        assert _count(spark, "select count(*), max(k) from bridge_registered") == [40, 2]
    finally:
        spark.sql("DROP TABLE IF EXISTS bridge_registered")


def test_without_the_engine_sql_inserts_are_refused_and_nothing_changes(spark, tmp_path):
    """A driver whose Python engine registered no writer (another process's jar on the class
    path): Spark would plan INSERT as a parquet write into the folder, files the log never
    names, and for an overwrite the deletion of the folder, log included. Refused."""
    import os

    from qbeast.spark.bridge import bridge_class
    from qbeast.spark.sql.sql_writer import python_writer

    path = str(tmp_path / "no_sql_inserts")
    qbeast.write(spark.range(100).selectExpr("id", "id % 5 as k"), path, columns_to_index=["id"],
                 cube_size=50)
    before = sorted(os.listdir(path))
    spark.sql("DROP TABLE IF EXISTS bridge_no_inserts")
    spark.sql(f"CREATE TABLE bridge_no_inserts USING qbeast LOCATION '{path}'")
    bridge = bridge_class(spark)
    bridge.setWriter(None)
    try:
        for statement in ("INSERT INTO bridge_no_inserts SELECT 1000, 1",
                          "INSERT OVERWRITE bridge_no_inserts SELECT 1, 1"):
            with pytest.raises(Exception, match="INSERT OVERWRITE on the Qbeast table at .* is "
                                                "not supported in a driver without the Python engine"):
                spark.sql(statement).collect()
        with pytest.raises(Exception, match="no Python engine to write with"):
            spark.range(3).write.format("qbeast").save(str(tmp_path / "nowhere"))
        assert sorted(os.listdir(path)) == before
        assert _count(spark, "select count(*), sum(id) from bridge_no_inserts") == [100, 4950]
    finally:
        bridge.setWriter(python_writer())
        spark.sql("DROP TABLE IF EXISTS bridge_no_inserts")
