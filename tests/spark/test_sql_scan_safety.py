"""SQL that reads one Qbeast table several times returns the rows of each reference, exactly.

Spark (4.1-4.3) keeps the planned read of a Python data source on the table provider that every
reference to the table in one query shares. When the source pruned by pushed filters, the files
chosen for the filtered reference were read by the unfiltered one too: ``select count(*) from t
union all select count(*) from t where zone < 20`` counted a third of the table without an error.
These tests run the query shapes that hit it (union branches, scalar subqueries, CTEs used twice,
ratio models, self-joins, samples beside full reads) on every way of naming a Qbeast table in SQL,
on both implementations of ``qbeast`` (the JVM read bridge, which prunes every scan by its own
filters, and the Python data source it falls back to, here under its second name
``qbeast_python``), and compare each result with the same query over a plain parquet view of the
same files.
"""
from __future__ import annotations

import pytest

import qbeast
from qbeast import QbeastTable
from qbeast.spark.bridge import bridge_active, jar_path
from qbeast.spark.catalog import create_table
from qbeast.spark.read.datasource import PYTHON_SOURCE_NAME, register_python_source
from qbeast.spark.sql.sources import register

pytestmark = pytest.mark.spark

#: The implementation under test -> the data source name it answers to in the test session.
SOURCES = {"jvm": "qbeast", "python": PYTHON_SOURCE_NAME}
NO_JAR = pytest.mark.skipif(jar_path() is None, reason="the bridge jar is not built (no javac when `make` ran)")
PATHS = [pytest.param("jvm", marks=NO_JAR), "python"]

ROWS = 20_000

SHAPES = {
    "union_all_plain_and_filtered": (
        "select count(*) from {t} union all select count(*) from {t} where zone < 20"
    ),
    "union_all_filtered_and_plain": (
        "select count(*) from {t} where zone < 20 union all select count(*) from {t}"
    ),
    "scalar_subqueries": (
        "select (select count(*) from {t}) as a, (select count(*) from {t} where zone < 20) as b"
    ),
    "two_filtered_branches": (
        "select count(*) from {t} where zone >= 50 and price < 300 "
        "union all select count(*) from {t} where zone < 20"
    ),
    "or_and_in_branches": (
        "select count(*) from {t} where zone < 5 or price > 990 "
        "union all select count(*) from {t} where zone in (1, 2, 3)"
    ),
    "cte_used_twice": (
        "with z as (select * from {t} where zone < 30) "
        "select (select count(*) from z where price < 500), (select count(*) from {t})"
    ),
    "share_of_total": (
        "select cast(sum(case when zone < 20 then 1 else 0 end) as double) / count(*) as share "
        "from {t}"
    ),
    "ratio_of_two_scans": (
        "select f.n / a.n as ratio from (select count(*) as n from {t} where zone < 20) f "
        "cross join (select count(*) as n from {t}) a"
    ),
    "self_join": (
        "select count(*) from {t} a join {t} b on a.id = b.id where a.zone < 20 and b.price < 500"
    ),
    "sample_beside_full_read": (
        "select count(*) from {t} where {sample} union all select count(*) from {t} "
        "union all select count(*) from {t} where zone < 20 and {sample}"
    ),
}


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("scan_safety") / "trips")
    data = spark.range(0, ROWS).selectExpr(
        "id", "cast(rand(11) * 100 as int) as zone", "rand(12) * 1000 as price"
    )
    qbeast.write(data, path, "zone,price", cube_size=200, mode="overwrite")
    handle = QbeastTable.for_path(spark, path)
    total = len(handle.to_df().inputFiles())
    assert len(handle.read_plan(filter="zone < 20").files) < total / 2, "pruning must matter here"
    handle.to_df().createOrReplaceTempView("scan_safety_truth")
    assert register(spark) == ("jvm" if jar_path() else "python")
    assert bridge_active(spark) == (jar_path() is not None)
    register_python_source(spark, PYTHON_SOURCE_NAME)
    return handle


@pytest.fixture(scope="module")
def truth(spark, table) -> dict[str, list[tuple]]:
    """Each shape's result over a plain parquet read of the same files (computed once)."""
    sample = table.sample_predicate(0.1)
    return {
        shape: [tuple(r) for r in spark.sql(sql.format(t="scan_safety_truth", sample=sample)).collect()]
        for shape, sql in SHAPES.items()
    }


def _name(spark, table: QbeastTable, way: str, path: str) -> str:
    """The SQL name of the table read ``way``: a catalog table, a temp view, or a loaded path."""
    source = SOURCES[path]
    if way == "catalog":
        create_table(spark, f"scan_safety_{path}", table.path, replace=True, source=source)
        return f"scan_safety_{path}"
    if way == "view":
        spark.read.format(source).load(table.path).createOrReplaceTempView("scan_safety_view")
        return "scan_safety_view"
    assert way == "load"
    loaded = spark.read.format(source).load(table.path)
    loaded.createOrReplaceTempView("scan_safety_loaded")  # the same DataFrame in every reference
    return "scan_safety_loaded"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("way", ["catalog", "view", "load"])
def test_every_reference_reads_its_own_rows(spark, table, truth, way, path):
    name = _name(spark, table, way, path)
    sample = table.sample_predicate(0.1)
    failures = {}
    for shape, sql in SHAPES.items():
        got = [tuple(r) for r in spark.sql(sql.format(t=name, sample=sample)).collect()]
        want = truth[shape]
        if sorted(got) != sorted(want):
            failures[shape] = (got, want)
    assert not failures, f"wrong results reading {way} through {path}: {failures}"


@pytest.mark.parametrize("path", PATHS)
def test_the_sample_filter_in_sql_returns_the_engine_sample(spark, table, path):
    name = _name(spark, table, "catalog", path)
    for fraction in (0.01, 0.1, 0.5):
        predicate = table.sample_predicate(fraction)
        ids = {r.id for r in spark.sql(f"select id from {name} where {predicate}").collect()}
        assert ids == {r.id for r in table.sample(fraction).select("id").collect()}
    # a plain query after a sampled one reads every row again
    assert spark.sql(f"select count(*) from {name}").first()[0] == ROWS
