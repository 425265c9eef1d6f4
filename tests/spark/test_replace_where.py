"""``QbeastTable.replace_where``: the rows of a condition replaced in one commit (dbt microbatch).

The table is indexed on the event time, as a microbatch model's table would be, so replacing a
few days must read and rewrite only the files that hold rows of those days; every other file
keeps its name.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path

import pytest

import qbeast
from qbeast.delta.log import DeltaLog
from qbeast.errors import InvalidOptionError
from qbeast.snapshot import QbeastSnapshot
from qbeast.table import QbeastTable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index, spark_jobs  # noqa: E402

pytestmark = pytest.mark.spark

SCHEMA = "id long, event_time timestamp, user_id int, amount double"
START = dt.datetime(2026, 1, 1)


def events(days: range, per_day: int, first_id: int = 0, amount: float = 1.0) -> list[tuple]:
    rows = []
    for d in days:
        for i in range(per_day):
            moment = START + dt.timedelta(days=d, seconds=(i * 86_399) // per_day)
            rows.append((first_id + d * per_day + i, moment, (i * 37) % 500, amount))
    return rows


def window(first_day: int, last_day: int) -> str:
    """The SQL condition of days [first_day, last_day] (the form the dbt adapter builds)."""
    lo = START + dt.timedelta(days=first_day)
    hi = START + dt.timedelta(days=last_day + 1)
    return f"event_time >= timestamp'{lo:%Y-%m-%d %H:%M:%S}' and event_time < timestamp'{hi:%Y-%m-%d %H:%M:%S}'"


def table_rows(spark, path) -> list[tuple]:
    return sorted(tuple(r) for r in QbeastTable.for_path(spark, path).to_df()
                  .select("id", "event_time", "user_id", "amount").collect())


def day_of(moment: dt.datetime) -> int:
    return (moment - START).days


@pytest.fixture()
def thirty_days(spark, tmp_path):
    path = str(tmp_path / "events")
    data = events(range(30), 200)
    qbeast.write(spark.createDataFrame(data, SCHEMA), path,
                 columns_to_index=["event_time", "user_id"], cube_size=500)
    return path, data


def files_with_days(spark, path) -> dict[str, set[int]]:
    """Active file name -> the days its rows belong to."""
    from pyspark.sql import functions as F

    snapshot = QbeastSnapshot.load(path)
    out: dict[str, set[int]] = {}
    for add in snapshot.files():
        df = spark.read.parquet(snapshot.delta.file_path(add))
        days = {day_of(r[0]) for r in df.select(F.col("event_time")).distinct().collect()}
        out[add.path] = days
    return out


def test_replace_where_replaces_exactly_the_window_and_keeps_other_files(spark, thirty_days):
    path, data = thirty_days
    before = files_with_days(spark, path)
    version = QbeastSnapshot.load(path).version
    new = events(range(10, 13), 150, first_id=1_000_000, amount=2.0)

    result = QbeastTable.for_path(spark, path).replace_where(
        spark.createDataFrame(new, SCHEMA), window(10, 12))

    assert QbeastSnapshot.load(path).version == version + 1
    expected = sorted([r for r in data if not 10 <= day_of(r[1]) <= 12] + new)
    assert table_rows(spark, path) == expected
    assert result.rows_deleted == 3 * 200 and result.rows_inserted == 3 * 150
    # only files holding rows of days 10-12 were rewritten; the others keep their names
    untouched = {name for name, days in before.items() if not days & {10, 11, 12}}
    touched = set(before) - untouched
    after = set(files_with_days(spark, path))
    assert untouched and untouched <= after
    assert not touched & after
    assert result.files_removed == len(touched) < len(before)
    log = DeltaLog.for_path(path)
    info = next(json.loads(line)["commitInfo"] for line in open(
        os.path.join(path, "_delta_log", f"{log.snapshot().version:020d}.json"))
        if "commitInfo" in line)
    assert info["operation"] == "REPLACE_WHERE"
    assert int(info["operationMetrics"]["numCandidateFiles"]) < len(before)
    check_index(spark, path)


def test_a_source_row_outside_the_condition_fails_before_writing(spark, thirty_days):
    path, data = thirty_days
    version = QbeastSnapshot.load(path).version
    table = QbeastTable.for_path(spark, path)
    stray = events(range(10, 11), 5) + events(range(20, 21), 1, first_id=9_000_000)
    with pytest.raises(InvalidOptionError, match=r"1 source row\(s\) do not meet the condition"):
        table.replace_where(spark.createDataFrame(stray, SCHEMA), window(10, 10))
    # a null event time belongs to no window either
    nulls = spark.createDataFrame([(1, None, 1, 1.0)], SCHEMA)
    with pytest.raises(InvalidOptionError, match="nothing was written"):
        table.replace_where(nulls, window(10, 10))
    assert QbeastSnapshot.load(path).version == version
    assert table_rows(spark, path) == sorted(data)


def test_a_small_source_is_checked_in_the_job_that_collects_it(spark, thirty_days):
    """A source of at most spark.qbeast.write.localRows rows (a microbatch batch) is checked
    against the condition in the one job that collects it for the append on the driver: a day no
    file holds is replaced in one Spark job. Above the limit the check runs in Spark, and a stray
    row still fails the change before anything is written."""
    from qbeast.spark.runtime import restored_confs

    path, data = thirty_days
    table = QbeastTable.for_path(spark, path)
    day_40 = events(range(40, 41), 5, first_id=8_000_000)
    _, jobs = spark_jobs(spark, lambda: table.replace_where(spark.createDataFrame(day_40, SCHEMA),
                                                            window(40, 40)))
    assert jobs == 1
    assert table_rows(spark, path) == sorted(data + day_40)

    day_41 = events(range(41, 42), 5, first_id=8_100_000)
    stray = day_41 + events(range(43, 44), 1, first_id=8_200_000)
    version = QbeastSnapshot.load(path).version
    with restored_confs(spark, ["spark.qbeast.write.localRows"]):
        spark.conf.set("spark.qbeast.write.localRows", "2")
        with pytest.raises(InvalidOptionError, match=r"1 source row\(s\) do not meet the condition"):
            table.replace_where(spark.createDataFrame(stray, SCHEMA), window(41, 41))
        assert QbeastSnapshot.load(path).version == version
        table.replace_where(spark.createDataFrame(day_41, SCHEMA), window(41, 41))
    assert table_rows(spark, path) == sorted(data + day_40 + day_41)
    check_index(spark, path)


def test_an_empty_source_deletes_the_window(spark, thirty_days):
    path, data = thirty_days
    result = QbeastTable.for_path(spark, path).replace_where(
        spark.createDataFrame([], SCHEMA), window(0, 1))
    assert result.rows_deleted == 400 and result.rows_inserted == 0
    assert table_rows(spark, path) == sorted(r for r in data if day_of(r[1]) >= 2)
    check_index(spark, path)
    # nothing left to replace and nothing to insert: no commit
    again = QbeastTable.for_path(spark, path).replace_where(
        spark.createDataFrame([], SCHEMA), window(0, 1))
    assert again.version is None


def test_bad_arguments_name_the_problem(spark, thirty_days):
    path, _ = thirty_days
    table = QbeastTable.for_path(spark, path)
    source = spark.createDataFrame(events(range(3, 4), 2), SCHEMA)
    with pytest.raises(InvalidOptionError, match="needs a condition"):
        table.replace_where(source, "  ")
    with pytest.raises(InvalidOptionError, match="needs a condition"):
        table.replace_where(source, None)
    with pytest.raises(InvalidOptionError, match="'extra' in the source is not a column"):
        table.replace_where(source.selectExpr("*", "1 AS extra"), window(3, 3))
    assert QbeastSnapshot.load(path).version == 0
