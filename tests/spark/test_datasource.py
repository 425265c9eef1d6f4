"""The ``qbeast`` Python data source (the fallback of the JVM bridge): reads by path, options,
catalog tables.

The test session has the bridge, which holds the name ``qbeast``; the Python source is read here
under its second name ``qbeast_python`` (same class, same code). ``test_sql_bridge.py`` checks
that a session without the jar falls back to it under ``qbeast``.

What a Python source reads is not visible through ``inputFiles()``; the scan node's
``numOutputRows`` metric is: the source returns every row of the files it opens (Spark applies
the filters afterwards), so that metric equals the row count of the planned files. The source
never prunes by filters (Spark shares its planned read between scans of one table, see
``test_sql_scan_safety.py``), so that count is the whole table unless the read is a sample.
"""
from __future__ import annotations

import datetime as dt
import decimal
import random

import pytest

import qbeast
from qbeast import QbeastTable
from qbeast.errors import InvalidOptionError
from qbeast.spark.catalog import create_table, create_table_sql, describe_location
from qbeast.spark.read.datasource import (
    PYTHON_SOURCE_NAME,
    parse_read_options,
    register_python_source,
)
from qbeast.spark.sql.sources import register

pytestmark = pytest.mark.spark

PY = PYTHON_SOURCE_NAME

SCHEMA = "id BIGINT, x INT, ts TIMESTAMP, dec DECIMAL(10,2), s STRING, day DATE"


def _rows(seed: int, start: int, n: int) -> list[tuple]:
    rng = random.Random(seed)
    base = dt.datetime(2023, 1, 1, tzinfo=dt.timezone.utc)
    return [
        (
            i,
            None if rng.random() < 0.02 else rng.randint(0, 5000),
            base + dt.timedelta(seconds=rng.randint(0, 86400 * 90), microseconds=rng.randint(0, 999999)),
            decimal.Decimal(rng.randint(-100000, 100000)) / 100,
            rng.choice(["alpha", "beta", "gamma", None, "δέλτα"]),
            dt.date(2023, 1, 1) + dt.timedelta(days=rng.randint(0, 90)),
        )
        for i in range(start, start + n)
    ]


@pytest.fixture(scope="module")
def table_path(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("datasource") / "orders")
    qbeast.write(spark.createDataFrame(_rows(1, 0, 5000), SCHEMA), path, "x,ts", cube_size=300)
    register(spark)
    register_python_source(spark, PY)
    return path


def _ids(df) -> list[int]:
    return sorted(r["id"] for r in df.select("id").collect())


def _scan_rows(df) -> int:
    """Rows the Python scan produced for the last collect of ``df`` (its numOutputRows)."""
    df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    found = []

    def walk(node):
        if node.nodeName().startswith("BatchScan"):
            metrics = node.metrics()
            found.append(metrics.apply("numOutputRows").value())
        children = node.children().iterator()
        while children.hasNext():
            walk(children.next())

    walk(plan)
    assert len(found) == 1, plan.toString()
    return int(found[0])


def _planned_rows(table: QbeastTable, **kwargs) -> int:
    plan = table.read_plan(**kwargs)
    snapshot = table.snapshot()
    by_path = {snapshot.delta.file_path(a): a.num_records for a in snapshot.delta.files.values()}
    return sum(by_path[p] for p in plan.paths)


# -- options ------------------------------------------------------------------------------------


def test_options_are_validated_with_clear_messages():
    assert parse_read_options({"path": "/t", "SAMPLEFRACTION": "0.25", "versionasof": "3"}) == (
        parse_read_options({"path": "/t", "sampleFraction": "0.25", "versionAsOf": "3"})
    )
    options = parse_read_options({"path": "/t", "samplefraction": "0.25"})
    assert (options.path, options.sample_fraction, options.version) == ("/t", 0.25, None)
    with pytest.raises(InvalidOptionError, match="sampleFraction.*between 0 and 1.*'1.5'"):
        parse_read_options({"path": "/t", "sampleFraction": "1.5"})
    with pytest.raises(InvalidOptionError, match="sampleFraction"):
        parse_read_options({"path": "/t", "sampleFraction": "ten percent"})
    with pytest.raises(InvalidOptionError, match="versionAsOf.*'v2'"):
        parse_read_options({"path": "/t", "versionAsOf": "v2"})
    assert parse_read_options({"path": "/t", "qbeastVersionAsOf": "2"}).version == 2
    with pytest.raises(InvalidOptionError, match="disagree"):
        parse_read_options({"path": "/t", "qbeastVersionAsOf": "2", "versionAsOf": "1"})
    with pytest.raises(InvalidOptionError, match="location"):
        parse_read_options({})


# -- reads by path ------------------------------------------------------------------------------


def test_load_by_path_equals_the_dataframe_api(spark, table_path):
    source = spark.read.format(PY).load(table_path)
    table = QbeastTable.for_path(spark, table_path)
    native = table.to_df()
    assert source.schema.simpleString() == native.schema.simpleString()
    assert source.exceptAll(native).count() == 0 and native.exceptAll(source).count() == 0


@pytest.mark.parametrize("fraction", [0.05, 0.3])
def test_sample_fraction_option(spark, table_path, fraction):
    table = QbeastTable.for_path(spark, table_path)
    source = spark.read.format(PY).option("sampleFraction", str(fraction)).load(table_path)
    expected = _ids(table.sample(fraction))
    assert _ids(source) == expected
    # the sample's row filter runs inside the source (Spark knows nothing of weights)
    assert _scan_rows(source) == len(expected)
    # a user schema without the indexed columns still samples by them
    narrow = (
        spark.read.format(PY).schema("id BIGINT").option("sampleFraction", str(fraction))
        .load(table_path)
    )
    assert _ids(narrow) == expected


def test_filters_are_applied_by_spark_and_never_prune_the_shared_read(spark, table_path):
    table = QbeastTable.for_path(spark, table_path)
    condition = "x BETWEEN 100 AND 400 AND ts < TIMESTAMP '2023-01-20 00:00:00'"
    source = spark.read.format(PY).load(table_path).filter(condition)
    assert _ids(source) == _ids(table.to_df().filter(condition))
    # the index could prune this filter, but the Python source must not: its read is shared
    assert _planned_rows(table, filter=condition) < 5000 / 2
    assert _scan_rows(source) == 5000


def test_version_as_of_and_plain_delta_tables(spark, table_path, tmp_path):
    path = str(tmp_path / "copy")
    qbeast.write(spark.createDataFrame(_rows(2, 0, 300), SCHEMA), path, "x", cube_size=100)
    qbeast.write(spark.createDataFrame(_rows(3, 300, 200), SCHEMA), path)
    assert spark.read.format(PY).option("versionAsOf", "0").load(path).count() == 300
    assert spark.read.format(PY).load(path).count() == 500

    import deltalake

    plain = str(tmp_path / "plain")
    deltalake.write_deltalake(plain, spark.createDataFrame(_rows(4, 0, 50), SCHEMA).toArrow())
    assert spark.read.format(PY).load(plain).count() == 50
    plain_table = QbeastTable.for_path(spark, plain)
    assert plain_table.to_df().count() == 50 and plain_table.revision_ids() == []
    with pytest.raises(InvalidOptionError, match="plain Delta table"):
        plain_table.sample(0.5)
    with pytest.raises(InvalidOptionError, match="Qbeast metadata"):
        plain_table.indexed_columns()
    with pytest.raises(Exception, match="plain Delta table"):
        spark.read.format(PY).option("sampleFraction", "0.5").load(plain).count()


# -- catalog tables -----------------------------------------------------------------------------


def test_catalog_table_in_a_new_session_follows_appends_and_prunes(spark, tmp_path):
    path = str(tmp_path / "catalog_events")
    qbeast.write(spark.createDataFrame(_rows(5, 0, 2000), SCHEMA), path, "x,ts", cube_size=200)
    create_table(spark, "qb_events", path, replace=True, source=PY)
    assert describe_location(spark, "qb_events") == path

    other = spark.newSession()
    register(other)
    register_python_source(other, PY)
    assert other.sql("SELECT count(*) AS n FROM qb_events").first()["n"] == 2000

    # an append after the table was created is visible: the catalog only keeps the location
    qbeast.write(spark.createDataFrame(_rows(6, 2000, 700), SCHEMA), path)
    assert other.sql("SELECT count(*) AS n FROM qb_events").first()["n"] == 2700

    table = QbeastTable.for_path(spark, path)
    condition = "x BETWEEN 10 AND 300"
    filtered = other.sql(f"SELECT * FROM qb_events WHERE {condition}")
    assert _ids(filtered) == _ids(table.to_df().filter(condition))
    assert _scan_rows(filtered) == 2700

    # the form qbeast_sample() gives a dbt model: the sample's row filter, not a table option
    predicate = table.sample_predicate(0.1)
    assert predicate.startswith("hash(`x`, `ts`) < ")
    sampled = other.sql(f"SELECT * FROM `default`.`qb_events` WHERE {predicate}")
    assert _ids(sampled) == _ids(table.sample(0.1))
    assert table.sample_predicate(1.0) == "true"
    # per-query options could reach another reference of the table: refused, naming the option
    for option in ("sampleFraction", "qbeastVersionAsOf"):  # Spark refuses versionAsOf itself
        with pytest.raises(Exception, match=f"option {option} is not supported on catalog table"):
            other.sql(f"SELECT * FROM default.qb_events WITH ('{option}' = '0')").collect()

    other.sql("DROP TABLE qb_events")
    assert table.to_df().count() == 2700, "dropping the catalog table must keep the data"


def test_catalog_table_from_plain_sql(spark, table_path):
    """The DDL form names the table by its LOCATION (what Spark hands the JVM bridge)."""
    schema = QbeastTable.for_path(spark, table_path).to_df().schema
    ddl = create_table_sql("qb_orders_sql", table_path, schema)
    assert "USING qbeast" in ddl and f"LOCATION '{table_path}'" in ddl and "qbeast." not in ddl
    spark.sql("DROP TABLE IF EXISTS qb_orders_sql")
    spark.sql(ddl)
    try:
        assert spark.sql("SELECT count(*) AS n FROM qb_orders_sql").first()["n"] == 5000
        assert describe_location(spark, "qb_orders_sql") == table_path
    finally:
        spark.sql("DROP TABLE IF EXISTS qb_orders_sql")


def test_files_are_spread_over_tasks_without_splitting_any():
    from types import SimpleNamespace

    from qbeast.spark.read.datasource import group_files

    files = [SimpleNamespace(path=f"f{i}", size=size) for i, size in enumerate([50, 10, 10, 10, 5, 5, 5, 5, 200])]
    groups = group_files(files)
    assert sorted(p for g in groups for p in g) == sorted(f.path for f in files)
    assert len(groups) >= 4
    assert group_files(files, target_bytes=10**9) == [[f.path for f in sorted(files, key=lambda f: -f.size)]]
    assert group_files([]) == []


def test_create_table_rejects_bad_names(spark, table_path):
    with pytest.raises(InvalidOptionError, match="table name"):
        create_table(spark, " ", table_path)
