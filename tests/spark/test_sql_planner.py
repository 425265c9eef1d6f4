"""The planner the JVM read bridge calls (``qbeast.spark.sql.sql_planner``), without the JVM side.

What each call answers for the options, catalog schemas and filter texts Spark hands over; the
bridge end to end is ``test_sql_bridge.py``.
"""
from __future__ import annotations

import pytest

import qbeast
from qbeast import QbeastTable
from qbeast.core.weight import MAX_WEIGHT, weight_from_fraction
from qbeast.errors import InvalidOptionError
from qbeast.spark.sql import sql_planner
from qbeast.spark.catalog import catalog_schema
from qbeast.spark.read.datasource import CatalogMarker
from qbeast.spark.sql.sql_planner import TableRef
from qbeast.storage import file_uri

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory) -> QbeastTable:
    path = str(tmp_path_factory.mktemp("sql_planner") / "t")
    data = spark.range(0, 4000).selectExpr("id", "cast(pmod(hash(id), 100) as int) as a",
                                          "cast(pmod(hash(id, 'b'), 1000) as double) as b")
    qbeast.write(data, path, "a,b", cube_size=200, mode="overwrite")
    qbeast.write(data.where("id < 500"), path)  # version 1
    return QbeastTable.for_path(spark, path)


def test_describe_reads_location_version_and_sample_from_options_and_catalog(spark, table):
    described = sql_planner.describe({"path": f"file:{table.path}", "serialization.format": "1"}, None)
    assert described.table == TableRef(table.path, None) and described.sample_filter is None
    assert [f["name"] for f in described.schema["fields"]] == ["id", "a", "b"]

    old = sql_planner.describe({"path": table.path, "QBEASTVERSIONASOF": "0", "sampleFraction": "0.1"}, None)
    assert old.table == TableRef(table.path, 0)
    assert old.sample_filter == table.sample_predicate(0.1)

    # the path (the catalog's LOCATION) names the table, whatever the column metadata says: a
    # projection copies it from another table (the legacy key and a Python-source marker alike)
    other = "/warehouse/somewhere/else"
    catalog = catalog_schema(table.to_df().schema, {"id": "the id"},
                             CatalogMarker(other, "another-table-id")).jsonValue()
    catalog["fields"][1]["metadata"]["qbeast.location"] = other
    described = sql_planner.describe({"path": table.path}, catalog)
    assert described.table.location == table.path
    assert described.schema["fields"][0]["metadata"] == {"comment": "the id"}  # persist_docs kept
    assert all(not k.startswith("qbeast.") for f in described.schema["fields"] for k in f["metadata"])
    with pytest.raises(InvalidOptionError, match="needs the table's location"):
        sql_planner.describe({}, catalog)

    with pytest.raises(InvalidOptionError, match="sampleFraction must be a number between 0 and 1"):
        sql_planner.describe({"path": table.path, "sampleFraction": "1.5"}, None)
    with pytest.raises(InvalidOptionError, match="needs the table's location"):
        sql_planner.describe({}, None)


def test_sample_filters_select_weight_ranges(spark, table):
    ref = TableRef(table.path, None)
    assert sql_planner.sample_filter(ref, 0.0, 0.2) == table.sample_predicate(0.2)
    assert sql_planner.sample_filter(ref, 0.0, 1.0) == "true"
    lo, hi = weight_from_fraction(0.2), weight_from_fraction(0.5)
    assert sql_planner.sample_filter(ref, 0.2, 0.5) == f"hash(`a`, `b`) >= {lo} AND hash(`a`, `b`) < {hi}"
    assert sql_planner.sample_filter(ref, 0.2, 1.0) == f"hash(`a`, `b`) >= {lo}"
    # [0.2, 0.5) is exactly sample(0.5) without sample(0.2)
    band = {r.id for r in table.to_df().where(sql_planner.sample_filter(ref, 0.2, 0.5)).collect()}
    assert band == ({r.id for r in table.sample(0.5).collect()} - {r.id for r in table.sample(0.2).collect()})


def test_pushed_filters_combine_weight_bounds_and_predicates(table):
    schema = table.to_df().schema
    pushed = sql_planner.pushed_filters(
        ["(hash(a, b) >= -5)", "(hash(a, b) < 100)", "(a < 10)", "(upper(CAST(b AS STRING)) = 'X')"],
        schema, ("a", "b"), "UTC")
    assert pushed.weight_range == (-5, 100)
    assert repr(pushed.predicate) == "LessThan(column='a', value=10)"
    assert pushed.unused == ("(upper(CAST(b AS STRING)) = 'X')",)
    only_lower = sql_planner.pushed_filters(["(hash(a, b) >= 7)"], schema, ("a", "b"), "UTC")
    assert only_lower.weight_range == (7, MAX_WEIGHT + 1)
    other_columns = sql_planner.pushed_filters(["(hash(b, a) < 7)"], schema, ("a", "b"), "UTC")
    assert other_columns.weight_range is None and other_columns.unused == ("(hash(b, a) < 7)",)


def test_a_table_rebuilt_in_the_same_folder_is_not_served_from_the_cache(spark, tmp_path):
    """A folder deleted and written again starts over at version 0: the planner must list the new
    table's files, not the cached ones of the table that was there before (they are gone)."""
    import shutil

    path = str(tmp_path / "rebuilt")
    qbeast.write(spark.range(0, 300).selectExpr("id", "id % 7 as a"), path, "a", mode="overwrite")
    ref = TableRef(path, None)
    before = [f.path for f in sql_planner.list_files(ref, [])]
    shutil.rmtree(path)
    qbeast.write(spark.range(0, 500).selectExpr("id", "id % 5 as a"), path, "a", mode="overwrite")
    after = [f.path for f in sql_planner.list_files(ref, [])]
    assert after == QbeastTable.for_path(spark, path).read_plan().paths
    assert not set(before) & set(after)
    assert sql_planner.snapshot(ref).delta.version == 0


def test_list_files_matches_read_plan_and_is_recorded(table):
    ref = TableRef(table.path, None)
    files = sql_planner.list_files(ref, ["(a < 10)", f"(hash(a, b) < {weight_from_fraction(0.1)})"])
    expected = table.read_plan(fraction=0.1, filter="a < 10")
    assert [f.path for f in files] == expected.paths
    assert all(f.modification_time > 0 and f.size > 0 for f in files)
    record = sql_planner.recent_scans()[-1]
    assert record.table == ref and list(record.paths) == expected.paths and record.version == 1
    assert file_uri(files[0].path).startswith("file:///")
    old = sql_planner.list_files(TableRef(table.path, 0), [])
    assert len(old) == len(table.read_plan(version=0).files) < len(table.read_plan().files)


def test_scans_since_a_count_are_found_when_the_recent_list_is_full(table):
    ref = TableRef(table.path, None)
    for _ in range(sql_planner.RECENT_SCANS + 1):
        sql_planner.list_files(ref, [])
    start = sql_planner.scan_count()
    assert len(sql_planner.recent_scans()) == sql_planner.RECENT_SCANS  # full: its length stays
    sql_planner.list_files(ref, ["(a < 10)"])
    (record,) = sql_planner.recent_scans(since=start)
    assert record.filters == ("(a < 10)",) and record.sequence == start + 1
