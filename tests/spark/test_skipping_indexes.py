"""Skipping indexes (value lists, fuse and Bloom filters) prune exactly, through every write path.

"Exactly": a file that holds the looked-up value is always planned, and for a value list a file
that does not hold it never is (a fuse or Bloom filter may keep a few such files: its false positives,
bounded here). Which files hold a value is read from the files themselves with pyarrow.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import random
import sys

import pyarrow.compute as pc
import pytest

import qbeast
from qbeast import QbeastTable
from qbeast.core.skipping import CONFIG_KEY, DEFAULT_FPP, DEFAULT_FUSE_FPP, INDEX_DIR, TAG
from qbeast.delta.log import DeltaLog

sys.path.insert(0, os.path.dirname(__file__))
from skipping_checks import active_files, indexed_table, plan_files  # noqa: E402

pytestmark = pytest.mark.spark

SCHEMA = ("k BIGINT, i INT, l BIGINT, s STRING, d DATE, dec DECIMAL(10,2), status STRING, "
          "note STRING")
INDEXES = {"i": "bloom", "l": "values", "s": "fuse", "d": "values", "dec": "values",
           "status": "values"}


def _rows(seed: int, count: int, start: int = 0) -> list[tuple]:
    rng = random.Random(seed)
    statuses = ["open", "Open", "OPEN", "closed", None]
    return [
        (start + n, rng.randint(0, 3000), rng.randint(0, 150) * 10**9,
         None if rng.random() < 0.01 else f"sku-{rng.randint(0, 3000)}",
         dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 300)),
         decimal.Decimal(rng.randint(0, 150)) / 4,
         statuses[rng.randint(0, 4)] if n % 50 == 0 else "open",
         "x")
        for n in range(count)
    ]


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    return indexed_table(spark, tmp_path_factory, "skipping", _rows(1, 3000), SCHEMA, 300, INDEXES)


def _holding(files: dict, column: str, value: object) -> set[str]:
    found = set()
    for name, data in files.items():
        values = data.column(column)
        hit = pc.is_null(values) if value is None else pc.equal(values, value)
        if pc.any(hit).as_py():
            found.add(name)
    return found


def _literal(value: object) -> str:
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return str(value)


def _check_exact(path: str, column: str, values: list, *, exact: bool) -> int:
    """Every file holding a value is planned; returns the false positives (0 when ``exact``)."""
    files = active_files(path)
    false_hits = 0
    for value in values:
        condition = f"{column} IS NULL" if value is None else f"{column} = {_literal(value)}"
        planned, _ = plan_files(path, condition)
        holding = _holding(files, column, value)
        assert holding <= planned, (condition, holding - planned)
        extra = planned - holding
        if exact:
            assert not extra, (condition, extra)
        false_hits += len(extra)
    return false_hits


def test_the_declaration_is_kept_and_every_file_is_indexed(table):
    snapshot = DeltaLog.for_path(table).snapshot()
    assert json.loads(snapshot.metadata.configuration[CONFIG_KEY]) == {
        c: ({"kind": k, "fpp": DEFAULT_FPP} if k == "bloom"
            else {"kind": k, "fpp": DEFAULT_FUSE_FPP} if k == "fuse"
            else {"kind": k, "max_values": 256})
        for c, k in INDEXES.items()}
    assert len(snapshot.files) >= 5
    names = {add.tags[TAG] for add in snapshot.files.values()}
    assert len(names) == 1 and next(iter(names)).startswith(INDEX_DIR + "/")


@pytest.mark.parametrize("column, values, exact", [
    ("l", [0, 17 * 10**9, 150 * 10**9, 5], True),
    ("d", [dt.date(2024, 1, 1), dt.date(2024, 5, 5), dt.date(2023, 1, 1)], True),
    ("dec", [decimal.Decimal("0.25"), decimal.Decimal("37.5"), decimal.Decimal("7.25")], True),
    ("status", ["Open", "OPEN", "open", "oPEN", None], True),
    ("i", [0, 1, 1500, 2999, 3001], False),
    ("s", ["sku-1", "sku-2999", "SKU-1", "sku-", None], False),
])
def test_equality_and_nulls_prune_exactly(table, column, values, exact):
    false_hits = _check_exact(table, column, values, exact=exact)
    assert false_hits <= len(values)  # filters at 0.2-0.7%: well under one false file per lookup here


def test_in_lists_prune_and_the_plan_reports_each_index(table, spark):
    files = active_files(table)
    planned, removed = plan_files(table, "status IN ('OPEN', 'closed') AND l IN (5, 7)")
    assert planned == set() and removed == {"status:values": removed["status:values"],
                                            "l:values": len(files)}
    planned, removed = plan_files(table, "status IN ('OPEN', 'closed') OR dec <=> 7.25")
    holding = (_holding(files, "status", "OPEN") | _holding(files, "status", "closed")
               | _holding(files, "dec", decimal.Decimal("7.25")))
    assert planned == holding
    rows = QbeastTable.for_path(spark, table).to_df(filter="status = 'OPEN'").count()
    assert rows == sum(r[6] == "OPEN" for r in _rows(1, 3000))
    # no index on this column: nothing reported, nothing removed by an index
    assert plan_files(table, "note = 'y'")[1] == {}


def test_appends_optimize_delete_merge_and_update_index_the_files_they_add(spark, table, tmp_path):
    import shutil

    path = str(tmp_path / "t")
    shutil.copytree(table, path)
    qbeast.write(spark.createDataFrame(_rows(2, 400, start=10_000), SCHEMA), path)  # local append
    qbeast.write(spark.createDataFrame(_rows(3, 2500, start=20_000), SCHEMA), path)
    QbeastTable.for_path(spark, path).optimize()
    QbeastTable.for_path(spark, path).delete("l = 17000000000 OR k % 7 = 0")
    source = spark.createDataFrame(_rows(4, 200, start=5), SCHEMA)
    QbeastTable.for_path(spark, path).merge(source, on="k")
    QbeastTable.for_path(spark, path).update("k % 11 = 0", set={"status": "'Closed'"})
    snapshot = DeltaLog.for_path(path).snapshot()
    assert [add.tags for add in snapshot.files.values() if TAG not in (add.tags or {})] == []
    # one index file per commit that added files: write, two appends, optimize, delete, merge,
    # update (vacuum has not run, so none is gone yet)
    assert len(os.listdir(os.path.join(path, INDEX_DIR))) == 7
    _check_exact(path, "l", [0, 17 * 10**9, 149 * 10**9], exact=True)
    _check_exact(path, "status", ["Open", None, "closed", "Closed"], exact=True)
    _check_exact(path, "s", ["sku-5", "sku-2000"], exact=False)
    expected = spark.read.parquet(*[os.path.join(path, f) for f in snapshot.files]).where(
        "status = 'Open'").count()
    assert QbeastTable.for_path(spark, path).to_df(filter="status = 'Open'").count() == expected


def test_missing_or_unknown_index_files_mean_may_match(table, tmp_path):
    import shutil

    path = str(tmp_path / "t")
    shutil.copytree(table, path)
    everything = set(active_files(path))
    index_dir = os.path.join(path, INDEX_DIR)
    (name,) = os.listdir(index_dir)
    with open(os.path.join(index_dir, name), "r+b") as f:
        f.seek(6)
        f.write(b"99")  # a version this engine does not know
    # l = 5 lies inside every file's min/max and in no file: only an index could prune it
    assert plan_files(table, "l = 5")[0] == set()
    assert plan_files(path, "l = 5")[0] == everything
    os.remove(os.path.join(index_dir, name))
    assert plan_files(path, "l = 5")[0] == everything


def test_bad_declarations_are_refused_before_writing(spark, tmp_path):
    df = spark.createDataFrame(_rows(5, 10), SCHEMA)
    path = str(tmp_path / "t")
    with pytest.raises(qbeast.InvalidOptionError, match="'nope' is not in the table"):
        qbeast.write(df, path, "k", skipping_indexes={"nope": "bloom"})
    with pytest.raises(qbeast.InvalidOptionError, match="unknown index kind 'set'"):
        qbeast.write(df, path, "k", skipping_indexes={"s": "set"})
    with pytest.raises(qbeast.InvalidOptionError, match="type double, which cannot carry"):
        qbeast.write(df.selectExpr("*", "1.5d AS x"), path, "k", skipping_indexes={"x": "values"})
    assert not os.path.exists(path)


def test_a_table_written_before_skipping_indexes_is_planned_as_before(qbeast_fixtures, monkeypatch):
    from qbeast.spark.read import planner

    path = str(qbeast_fixtures / "v07-ecommerce-300k")
    table = QbeastTable.for_path(None, path)
    conditions = ["user_id = 512452127", "brand IN ('apple', 'acme')", "price IS NULL",
                  "product_id = 1004767 OR brand = 'samsung'"]
    now = [table.read_plan(filter=c) for c in conditions]
    monkeypatch.setattr(planner, "skipping_prune",
                        lambda *args, **kwargs: ([True] * len(args[3]), ()))
    before = [table.read_plan(filter=c) for c in conditions]
    assert [p.paths for p in now] == [p.paths for p in before]
    assert all(p.index_pruned == () for p in now)


def test_existing_files_get_indexes_and_vacuum_drops_unneeded_index_files(spark, tmp_path):
    path = str(tmp_path / "t")
    qbeast.write(spark.createDataFrame(_rows(6, 1500), SCHEMA), path, "k", cube_size=300)
    table = QbeastTable.for_path(spark, path)
    assert plan_files(path, "l = 5")[0] == set(active_files(path))  # no index yet
    result = table.build_skipping_indexes({"l": "values"})
    assert result.files_indexed == len(active_files(path)) and result.version == 1
    assert table.build_skipping_indexes().version is None  # nothing left to index
    assert plan_files(path, "l = 5")[0] == set()
    _check_exact(path, "l", [0, 3 * 10**9], exact=True)
    # a new column in the declaration: every file gets a new index file naming both
    table.build_skipping_indexes({"l": "values", "status": "values"})
    _check_exact(path, "status", ["OPEN", None], exact=True)
    index_dir = os.path.join(path, INDEX_DIR)
    assert len(os.listdir(index_dir)) == 2
    report = table.vacuum(retention_hours=0, allow_short_retention=True)
    assert [n for n in report.files if n.startswith(INDEX_DIR)] != []
    assert len(os.listdir(index_dir)) == 1
    _check_exact(path, "l", [0, 5], exact=True)


def test_sql_reads_prune_through_the_bridge(spark, table):
    from sql_bridge_checks import files_read

    assert qbeast.register(spark) == "jvm"
    spark.read.format("qbeast").load(table).createOrReplaceTempView("skipping_t")
    files = active_files(table)
    for condition, holding in [
        ("status = 'OPEN' AND l IN (0, 5)", _holding(files, "status", "OPEN") & _holding(files, "l", 0)),
        ("l <=> 5", set()),
        ("dec <=> NULL", _holding(files, "dec", None)),
    ]:
        df = spark.sql(f"SELECT count(*) AS n FROM skipping_t WHERE {condition}")
        expected = spark.read.parquet(*[os.path.join(table, f) for f in files]).where(condition).count()
        assert df.collect()[0]["n"] == expected
        assert files_read(df) == [len(holding)], condition


def test_explain_read_names_the_files_the_skipping_indexes_removed(table, spark):
    """explain_read (and the index page, which shares it) counts the files the skipping indexes
    drop apart from the min/max statistics, and totals the files the plan reads."""
    files = active_files(table)
    condition = "s = 'sku-17'"
    planned, removed = plan_files(table, condition)
    assert planned >= _holding(files, "s", "sku-17") and removed["s:fuse"] > 0
    explained = QbeastTable.for_path(spark, table).explain_read(filter=condition)
    lines = str(explained).splitlines()
    skipped = [line for line in lines if line.startswith("skipping idx:")]
    assert skipped == [f"skipping idx:  revision 1: {removed['s:fuse']} of {len(files)} files "
                       "hold none of the filter's values"]
    assert explained.files_read == len(planned)
    stats_line = next(line for line in lines if line.startswith("min/max stats:"))
    assert f"of {len(files) - removed['s:fuse']} files dropped, {len(planned)} read" in stats_line
