"""How row-level changes commit: ``commit_properties=`` (a ``qbeast.CommitProperties``).

User metadata lands in ``commitInfo``; an application transaction is recorded as a Delta ``txn``
action and a change whose transaction is already committed is skipped; a ``cancelled`` callable
stops the change before its commit, with nothing committed and no file left behind; the
``user_metadata=`` / ``cancelled=`` shorthands fold into the same object and may not contradict it.
"""
from __future__ import annotations

import json
import os

import pytest

import qbeast
from qbeast import CommitProperties
from qbeast.errors import InvalidOptionError, WriteCancelled
from qbeast.snapshot import QbeastSnapshot
from qbeast.table import QbeastTable

pytestmark = pytest.mark.spark

SCHEMA = "id long, x double, y int, s string"


@pytest.fixture
def table(spark, tmp_path) -> QbeastTable:
    path = str(tmp_path / "t")
    df = spark.range(1000).selectExpr("id", "cast(id % 50 as double) AS x",
                                      "cast(id % 13 AS int) AS y", "'orig' AS s")
    qbeast.write(df, path, columns_to_index=["x", "y"], cube_size=200)
    return QbeastTable.for_path(spark, path)


def _actions(path: str, version: int) -> list[dict]:
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        return [json.loads(line) for line in f]


def _commit_info(path: str, version: int) -> dict:
    return next(a["commitInfo"] for a in _actions(path, version) if "commitInfo" in a)


def test_user_metadata_lands_in_commit_info(table):
    result = table.delete("id < 10", commit_properties=CommitProperties(user_metadata="run 1"))
    assert result.version == 1 and result.rows_deleted == 10
    assert _commit_info(table.path, 1)["userMetadata"] == "run 1"
    result = table.update("id = 20", set={"s": "'u'"},
                          commit_properties=CommitProperties(user_metadata="run 2"))
    assert _commit_info(table.path, result.version)["userMetadata"] == "run 2"
    source = table.spark.createDataFrame([(30, 1.0, 1, "m")], SCHEMA)
    result = table.merge(source, on="id", user_metadata="model a")  # the shorthand
    assert _commit_info(table.path, result.version)["userMetadata"] == "model a"
    assert table.to_df().count() == 990
    assert [r["s"] for r in table.to_df().where("id in (20, 30)").orderBy("id").collect()] == \
        ["u", "m"]


def test_an_application_transaction_is_recorded_and_not_applied_twice(table):
    source = table.spark.createDataFrame([(1, 1.0, 1, "a"), (5000, 2.0, 2, "b")], SCHEMA)
    properties = CommitProperties(app_id="loader", app_version=7)
    result = table.delete_insert(source, on="id", commit_properties=properties,
                                 user_metadata="with txn")
    assert result.version == 1 and (result.rows_deleted, result.rows_inserted) == (1, 2)
    txns = [a["txn"] for a in _actions(table.path, 1) if "txn" in a]
    assert [(t["appId"], t["version"]) for t in txns] == [("loader", 7)]
    assert _commit_info(table.path, 1)["userMetadata"] == "with txn"
    # the same transaction again (e.g. a retried job): skipped, nothing committed
    again = table.delete_insert(source, on="id", commit_properties=properties)
    assert again.version is None and again.rows_inserted == 0
    older = table.delete("id < 100", commit_properties=CommitProperties(app_id="loader",
                                                                         app_version=3))
    assert older.version is None
    assert QbeastSnapshot.load(table.path).version == 1
    assert table.to_df().count() == 1001
    # a newer one applies
    newer = table.delete("id < 100", commit_properties=CommitProperties(app_id="loader",
                                                                         app_version=8))
    assert newer.version == 2 and newer.rows_deleted == 100  # id 1 was inserted again
    assert table.to_df().count() == 901


def test_cancelled_stops_before_the_commit_with_nothing_committed_and_no_file_left(table):
    before = set(os.listdir(table.path))
    calls: list[int] = []

    def cancelled() -> bool:  # false between the phases, true right before the commit
        calls.append(1)
        return len(calls) >= 3

    source = table.spark.createDataFrame([(5, 40.0, 4, "moved"), (6000, 1.0, 1, "new")], SCHEMA)
    with pytest.raises(WriteCancelled, match="before the commit"):
        table.merge(source, on=["id"], commit_properties=CommitProperties(cancelled=cancelled))
    assert len(calls) == 3  # before the rewrite, before the append, before the commit
    assert QbeastSnapshot.load(table.path).version == 0
    assert set(os.listdir(table.path)) == before
    with pytest.raises(WriteCancelled):
        table.delete("id < 500", commit_properties=CommitProperties(cancelled=lambda: True))
    with pytest.raises(WriteCancelled):
        table.delete_insert(source, on="id", cancelled=lambda: True)  # the shorthand
    assert QbeastSnapshot.load(table.path).version == 0
    assert set(os.listdir(table.path)) == before
    assert table.to_df().count() == 1000


def test_a_shorthand_contradicting_commit_properties_is_refused(table):
    source = table.spark.createDataFrame([(1, 1.0, 1, "a")], SCHEMA)
    with pytest.raises(InvalidOptionError, match="user_metadata"):
        table.merge(source, on="id", user_metadata="a",
                    commit_properties=CommitProperties(user_metadata="b"))
    with pytest.raises(InvalidOptionError, match="commit_properties must be"):
        table.delete("id = 1", commit_properties={"user_metadata": "x"})
    assert QbeastSnapshot.load(table.path).version == 0
