"""``QbeastTable.approx`` on small real tables: answers against the exact aggregate, exactness at
``tolerance=0``, what each step reads (counted from Spark's scan), and bad arguments."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

import qbeast
from qbeast.approx.sequential import band
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.errors import InvalidOptionError
from qbeast.operations.approx import approx_answer
from qbeast.spark.read.approx import (
    answer_dataframe,
    band_plan,
    fold_on_driver,
    read_band,
    read_small_bands,
)
from qbeast.spark import settings
from qbeast.spark.file_access import FileAccess
from qbeast.spark.read import local_band
from qbeast.spark.read.predicates import user_predicate
from qbeast.spark.read.scan_metrics import scan_io

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import spark_jobs  # noqa: E402

pytestmark = pytest.mark.spark

ROWS = 60_000


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    """60k rows indexed on (a, b): each (a, b) pair holds 6 rows (one weight, one cluster), which
    the 3-valued group ``g`` splits 2-2-2; ``v`` a value with nulls."""
    path = str(tmp_path_factory.mktemp("approx") / "t")
    df = spark.range(ROWS).selectExpr(
        "id", "cast(id % 2000 as int) as a", "cast(id % 5 as int) as b",
        "cast(id % 3 as string) as g",
        "case when id % 11 = 0 then null else cast(id % 1000 as double) * 1.5 + 10 end as v")
    qbeast.write(df, path, "a,b", cube_size=5_000)
    return path


def _exact(spark, path, group):
    return {row[group]: row for row in spark.read.parquet(path).groupBy(group).agg(
        {"*": "count", "v": "sum"}).withColumnRenamed("count(1)", "n").withColumnRenamed(
        "sum(v)", "s").collect()}


def test_estimates_cover_the_exact_aggregate_and_meet_the_tolerance(spark, table):
    t = qbeast.QbeastTable.for_path(spark, table)
    rows = t.approx(["count(*)", "sum(v)", "avg(v)"], group_by="g", tolerance=0.1,
                    confidence=0.999, max_fraction=0.5).collect()
    exact = {r["g"]: r for r in spark.sql(
        f"SELECT g, count(*) n, sum(v) s, avg(v) m FROM parquet.`{table}` GROUP BY g").collect()}
    assert len(rows) == 9 and {r["g"] for r in rows} == set(exact)
    fraction = rows[0]["fraction"]
    assert 0 < fraction < 1 and all(r["tolerance_met"] for r in rows)
    for r in rows:
        truth = {"count(*)": exact[r["g"]]["n"], "sum(v)": exact[r["g"]]["s"],
                 "avg(v)": exact[r["g"]]["m"]}[r["aggregate"]]
        assert r["low"] <= float(truth) <= r["high"], r
        assert (r["high"] - r["low"]) / 2 <= 0.1 * abs(r["estimate"])
        assert r["reason"] is None
    assert 0 < rows[0]["rows_read"] < ROWS and rows[0]["bytes_read"] > 0


def test_tolerance_zero_is_exact_in_one_read(spark, table):
    t = qbeast.QbeastTable.for_path(spark, table)
    answer, _, _ = approx_answer(spark, table, ["count(*)", "sum(v)", "avg(v)", "count(v)"],
                                 tolerance=0, filter="a < 1000")
    assert answer.steps == [(0.0, 1.0)]
    exact = spark.sql(f"SELECT count(*) n, sum(v) s, avg(v) m, count(v) c FROM parquet.`{table}` "
                      "WHERE a < 1000").first()
    got = {a.label: e for a, e in answer.estimates[()].items()}
    assert got["count(*)"].estimate == exact["n"] and got["count(v)"].estimate == exact["c"]
    assert got["sum(v)"].estimate == pytest.approx(float(exact["s"]), rel=1e-12)
    assert got["avg(v)"].estimate == pytest.approx(float(exact["m"]), rel=1e-12)
    assert all(e.tolerance_met and e.low == e.high == e.estimate for e in got.values())
    df = t.approx("count(*)", tolerance=0)
    assert [tuple(r) for r in df.select("estimate", "low", "high", "fraction").collect()] == [
        (ROWS, ROWS, ROWS, 1.0)]


def test_each_step_reads_only_its_band(spark, table):
    """What each step's scan reads, from Spark's metrics: the planned files and prefixes only,
    stopping at the band's upper edge (the first band reads exactly its rows; a later band
    re-reads the lighter row groups of the files it opens again, docs/approx.md), and the rows
    folded are exactly the band's."""
    snapshot = qbeast.QbeastTable.for_path(spark, table).snapshot()
    predicate, row_filter = user_predicate(snapshot, None)
    columns = tuple(snapshot.latest_revision.columns)
    seen = []
    for lower, upper in [(0.0, 0.05), (0.05, 0.2), (0.2, 1.0)]:
        lo, hi = band(lower, upper)
        read = read_band(FileAccess.decide(spark, table), snapshot, predicate, row_filter, None,
                         [], [None], lo, hi)
        top = MAX_WEIGHT + 1 if hi is None else hi
        in_band = spark.read.parquet(table).where(
            f"hash({', '.join(columns)}) >= {lo} and hash({', '.join(columns)}) < {top}").count()
        assert read.band_rows == in_band == int(read.groups[()][None].s_m)
        plan = band_plan(snapshot, predicate, lo, hi)
        assert read.bytes_read == plan.selected_bytes  # Spark's filesSize of the planned prefixes
        if hi is not None:  # the scan stops at the band's upper edge: rows lighter than it, and
            # the rest of the row group holding the edge (the writer's bands are 1-2-5 edges)
            below = spark.read.parquet(table).where(
                f"hash({', '.join(columns)}) < {hi}").count()
            assert in_band <= read.rows_scanned <= below * 1.05 + 100, (read.rows_scanned, below)
        seen.append((read.rows_scanned, plan))
    # a small band's scan returns far fewer rows than the table (files of other bands skipped)
    assert seen[0][0] < 0.25 * ROWS
    assert len(seen[0][1].files) < len(seen[2][1].files)


@pytest.mark.parametrize("group_by, user_filter", [([], None), (["g"], None), (["g"], "a < 1000")])
def test_a_small_band_read_here_or_by_spark_gives_the_statistics_of_spark_fold(
        spark, table, group_by, user_filter):
    """A band expected to be small is read in this process without a Spark job (no user
    filter), or comes back from one scan-only job (``local=False``, or a filter Spark must
    evaluate), and is folded on the driver; the same band folded in Spark (rows not expected to
    be few) gives the same statistics, and all three report what Spark's scan read."""
    snapshot = qbeast.QbeastTable.for_path(spark, table).snapshot()
    predicate, row_filter = user_predicate(snapshot, user_filter)
    lo, hi = band(0.05, 0.2)
    args = (FileAccess.decide(spark, table), snapshot, predicate, row_filter, user_filter,
            group_by, [None, "v"], lo, hi)
    here, here_jobs = spark_jobs(spark, lambda: read_band(*args, expected_rows=0.15 * ROWS))
    scanned, scan_jobs = spark_jobs(spark, lambda: read_band(*args, expected_rows=0.15 * ROWS,
                                                        local=False))
    spark_fold = read_band(*args, expected_rows=None)
    assert fold_on_driver(0.15 * ROWS, snapshot.delta.schema, group_by)
    assert here_jobs == (0 if user_filter is None else 1) and scan_jobs == 1
    for driver in (here, scanned):
        assert set(driver.groups) == set(spark_fold.groups)
        assert len(driver.groups) == max(1, 3 * len(group_by))
        for key, inputs in spark_fold.groups.items():
            for column, stats in inputs.items():
                mine = driver.groups[key][column]
                assert mine.clusters == stats.clusters and mine.max_m == stats.max_m
                assert dataclasses.astuple(mine) == pytest.approx(dataclasses.astuple(stats),
                                                                  rel=1e-12)
        assert driver.band_rows == spark_fold.band_rows
        assert driver.sum_sq_weight_rows == pytest.approx(spark_fold.sum_sq_weight_rows, rel=1e-12)
        assert (driver.rows_scanned, driver.bytes_read) == (spark_fold.rows_scanned,
                                                            spark_fold.bytes_read)


def test_an_answer_read_here_is_the_answer_read_by_spark(spark, table):
    """The same answer, DataFrame and all, whether its small bands are read in this process or
    by Spark (``spark.qbeast.approx.localReadBytes`` 0 sends every band to Spark), with fewer
    Spark jobs."""
    t = qbeast.QbeastTable.for_path(spark, table)

    def answer():
        df = t.approx(["count(*)", "sum(v)", "avg(v)"], group_by="g", tolerance=0.05,
                      max_fraction=0.5)
        return df.schema, df.collect()

    (schema, here), here_jobs = spark_jobs(spark, answer)
    spark.conf.set(settings.APPROX_LOCAL_READ_BYTES.key, "0")
    try:
        (spark_schema, by_spark), by_spark_jobs = spark_jobs(spark, answer)
    finally:
        spark.conf.unset(settings.APPROX_LOCAL_READ_BYTES.key)
    assert schema == spark_schema and len(here) == len(by_spark) == 9
    numbers = ("estimate", "low", "high")  # sums in another order: equal to the last bits
    for mine, theirs in zip(here, by_spark):
        rest = [{k: v for k, v in r.asDict().items() if k not in numbers} for r in (mine, theirs)]
        assert rest[0] == rest[1]
        assert [mine[k] for k in numbers] == pytest.approx([theirs[k] for k in numbers], rel=1e-12)
    assert 0 < here[0]["fraction"] < 1 and here[0]["rows_read"] > 0
    assert by_spark_jobs > here_jobs


def test_the_all_null_stratum_and_the_first_band_read_together_give_the_separate_reads(
        spark, tmp_path):
    """Rows whose indexed columns are all null (one weight) are read in full as a stratum; with
    the first band in one scan-only job, each gets the statistics its own read gives, and the
    job's scan reads what the two reads do together. Read in this process instead, without a
    job, each band reports what its own Spark scan reads."""
    path = str(tmp_path / "nulls")
    df = spark.range(20_000).selectExpr(
        "case when id % 10 = 0 then null else cast(id % 3000 as int) end as a",
        "case when id % 10 = 0 then null else cast(id % 7 as int) end as b",
        "cast(id % 4 as string) as g", "cast(id % 100 as double) as v")
    qbeast.write(df, path, "a,b", cube_size=2_000)
    snapshot = qbeast.QbeastTable.for_path(spark, path).snapshot()
    predicate, row_filter = user_predicate(snapshot, None)
    lo, hi = band(0.0, 0.1)
    args = (FileAccess.decide(spark, path), snapshot, predicate, row_filter, None, ["g"],
            [None, "v"])
    bands = [(MIN_WEIGHT, None, True), (lo, hi, False)]
    together, jobs = spark_jobs(spark, lambda: read_small_bands(*args, bands, local=False))
    here, here_jobs = spark_jobs(spark, lambda: read_small_bands(*args, bands))
    apart = [read_band(*args, MIN_WEIGHT, None, nulls=True, expected_rows=0, local=False),
             read_band(*args, lo, hi, nulls=False, expected_rows=0, local=False)]
    assert (jobs, here_jobs) == (1, 0)
    assert together[0].band_rows == 2_000 and together[1].band_rows > 0
    for mine, local, theirs in zip(together, here, apart):
        assert mine.groups == theirs.groups
        assert (mine.band_rows, mine.sum_sq_weight_rows) == (theirs.band_rows, theirs.sum_sq_weight_rows)
        assert local.groups.keys() == theirs.groups.keys()
        for key, inputs in theirs.groups.items():
            for column, stats in inputs.items():
                assert dataclasses.astuple(local.groups[key][column]) == pytest.approx(
                    dataclasses.astuple(stats), rel=1e-12)
        assert (local.band_rows, local.sum_sq_weight_rows) == (theirs.band_rows,
                                                              theirs.sum_sq_weight_rows)
        assert (local.rows_scanned, local.bytes_read) == (theirs.rows_scanned, theirs.bytes_read)
    assert together[0].rows_scanned == apart[0].rows_scanned + apart[1].rows_scanned
    assert together[0].bytes_read == apart[0].bytes_read + apart[1].bytes_read
    assert together[1].rows_scanned == together[1].bytes_read == 0
    answer, _, _ = approx_answer(spark, path, ["count(*)", "sum(v)"], group_by="g", tolerance=0.2,
                                 max_fraction=0.5)
    exact = {(r["g"],): r for r in spark.sql(
        f"SELECT g, count(*) n, sum(v) s FROM parquet.`{path}` GROUP BY g").collect()}
    assert set(answer.estimates) == set(exact)
    for key, results in answer.estimates.items():
        for aggregate, result in results.items():
            truth = exact[key]["n" if aggregate.column is None else "s"]
            assert result.low <= truth <= result.high or not result.tolerance_met, (key, result)


def test_a_band_read_here_holds_the_rows_and_values_spark_scan_gives(spark, tmp_path):
    """Row for row, a band read in this process is Spark's scan of it: weights (hash of a
    bigint, a date and a string, with nulls), group values (date, boolean, tinyint) and values
    cast to double (a bigint beyond 2^53, a float, a decimal(7,2), whose Arrow cast rounds
    differently), for a first band, a later band to the top weight and the all-null stratum;
    columns this reader cannot give as Spark does keep the Spark scan."""
    from qbeast.spark.read.approx import band_dataframe, band_scope

    path = str(tmp_path / "typed")
    df = spark.range(12_000).selectExpr(
        "case when id % 9 = 0 then null else id % 1500 end as k",
        "case when id % 9 = 0 or id % 7 = 0 then null else date_add(date'2024-01-01', "
        "cast(id % 40 as int)) end as d",
        "case when id % 9 = 0 then null else concat('s', id % 3) end as s",
        "date_add(date'2020-01-01', cast(id % 3 as int)) as day", "id % 2 = 0 as flag",
        "cast(id % 5 as tinyint) as small", "case when id % 13 = 0 then null else "
        "(id * 7919 + 9007199254740993) end as big", "cast(id / 7.0 as float) as f",
        "cast(id / 3.0 as decimal(7,2)) as price", "timestamp'2024-01-01 00:00:00' as ts",
        "cast(id as string) as text", "cast(id as decimal(20,2)) as wide")
    qbeast.write(df, path, "k,d,s", cube_size=1_500)
    snapshot = qbeast.QbeastTable.for_path(spark, path).snapshot()
    predicate, _ = user_predicate(snapshot, None)
    hash_columns = tuple(snapshot.latest_revision.columns)
    group_by, columns = ["day", "flag", "small"], ["big", "f", "price"]
    limit = settings.APPROX_LOCAL_READ_BYTES.default
    for lo, hi, nulls in [(*band(0.0, 0.1), False), (*band(0.2, 1.0), False),
                          (MIN_WEIGHT, None, True)]:
        plan, lo, hi = band_scope(snapshot, predicate, lo, hi, nulls)
        assert local_band.readable_here(plan, None, hash_columns, group_by, columns, limit)
        mine, read_rows = local_band.band_table(plan, hash_columns, group_by, columns, lo, hi, nulls)
        rows = band_dataframe(FileAccess.decide(spark, path), snapshot, plan, None, None,
                              group_by, columns, lo, hi, nulls)
        theirs = rows.toArrow()
        order = [(name, "ascending") for name in theirs.column_names]
        assert mine.num_rows > 0 and mine.schema.names == theirs.column_names
        assert mine.sort_by(order).to_pylist() == theirs.sort_by(order).to_pylist()
        assert read_rows == scan_io(rows).rows_scanned
    for refused in ([["ts"], columns], [group_by, ["text"]], [group_by, ["wide"]]):
        assert not local_band.readable_here(plan, None, hash_columns, *refused, limit)
    assert not local_band.readable_here(plan, "flag", hash_columns, group_by, columns, limit)
    assert not local_band.readable_here(plan, None, hash_columns, group_by, columns,
                                        plan.selected_bytes - 1)


def test_a_filter_on_an_indexed_column_still_prunes(spark, table):
    t = qbeast.QbeastTable.for_path(spark, table)
    full = t.approx("count(*)", tolerance=0.1).first()
    narrow = t.approx("count(*)", filter="a < 200", tolerance=0.1).first()
    exact = spark.read.parquet(table).where("a < 200").count()
    assert narrow["low"] <= exact <= narrow["high"] or not narrow["tolerance_met"]
    assert narrow["bytes_read"] < full["bytes_read"] or narrow["fraction"] > full["fraction"]


@pytest.mark.parametrize("kwargs, message", [
    ({"aggregates": ["min(v)"]}, "cannot be approximated"),
    ({"aggregates": ["sum(nope)"]}, "not a column of the table"),
    ({"aggregates": ["count(*)"], "group_by": ["nope"]}, "group_by column 'nope'"),
    ({"aggregates": ["count(*)"], "tolerance": 1.5}, "tolerance must be"),
    ({"aggregates": ["count(*)"], "confidence": 0}, "confidence must be"),
    ({"aggregates": ["count(*)"], "max_fraction": 0}, "max_fraction must be"),
    ({"aggregates": ["count(*)"], "filter": "nope > 1"}, "nope"),
])
def test_bad_arguments_are_refused_with_the_allowed_values(spark, table, kwargs, message):
    t = qbeast.QbeastTable.for_path(spark, table)
    aggregates = kwargs.pop("aggregates")
    with pytest.raises(InvalidOptionError, match=message):
        t.approx(aggregates, **kwargs).collect()


def test_the_documented_sql_form_gives_the_estimate_of_one_fixed_fraction(spark, table):
    """docs/approx.md's SQL over TABLESAMPLE (the bridge's pushed weight filter) equals
    ``approx`` at that fraction: same estimates, same half-widths."""
    qbeast.create_table(spark, "approx_events", table, replace=True)
    rows = spark.sql("""
        WITH clusters AS (
          SELECT g, hash(a, b) AS w, sum(v) AS y
          FROM approx_events TABLESAMPLE (10 PERCENT)
          GROUP BY g, hash(a, b)
        )
        SELECT g, sum(y) / 0.1 AS estimate,
               1.96 * sqrt((1 - 0.1) / (0.1 * 0.1) * sum(y * y)) AS half_width
        FROM clusters GROUP BY g""").collect()
    answer, _, _ = approx_answer(spark, table, ["sum(v)"], group_by="g", tolerance=0,
                                 max_fraction=0.1, confidence=0.95)
    assert answer.steps == [(0.0, 0.1)]
    assert len(rows) == 3
    for row in rows:
        (result,) = answer.estimates[(row["g"],)].values()
        assert result.estimate == pytest.approx(row["estimate"], rel=1e-6)
        assert (result.high - result.low) / 2 == pytest.approx(row["half_width"], rel=1e-4)


def test_the_answer_keeps_its_group_values_and_types(spark):
    """The answer DataFrame (built from Arrow for atomic group columns, from Python rows for
    instants and nested types) gives back the group values and the table's types."""
    import datetime as dt
    from decimal import Decimal

    from pyspark.sql.types import StructType

    schema = StructType.fromDDL("d date, p decimal(10,2), t timestamp, s struct<x: int>, n int")
    table_schema = schema.jsonValue()
    answer = ("sum(n)", 1.5, 1.0, 2.0, 0.01, 10, 100, True, None)
    cases = [(["d", "p"], (dt.date(2024, 2, 29), Decimal("12.34"))), (["d", "p"], (None, None)),
             (["t"], (dt.datetime(2024, 1, 2, 3, 4, 5),)), (["s"], ((7,),))]
    for group_by, key in cases:
        df = answer_dataframe(spark, table_schema, group_by, [(*key, *answer)])
        assert [f.dataType for f in df.schema.fields[:len(group_by)]] == [
            schema[g].dataType for g in group_by]
        (row,) = df.collect()
        assert tuple(row)[len(group_by):] == answer
        assert tuple(row)[:len(group_by)] == key or tuple(row[0]) == key[0]
    assert answer_dataframe(spark, table_schema, ["d"], []).collect() == []
