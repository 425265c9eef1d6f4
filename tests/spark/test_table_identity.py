"""Tables written before column metadata stopped naming a table still read as themselves.

Older versions stored ``qbeast.location`` in the column metadata of a table's Delta log schema
and catalog schema; a table built from another inherited the other's. Such a key is ignored by
every reader, dropped at the table's next write, and removed by ``upgrade_format``.
"""
from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

import qbeast
from qbeast import QbeastTable
from qbeast.delta.log import DeltaLog
from qbeast.errors import InvalidOptionError
from qbeast.spark.catalog import create_table, stale_catalog_metadata
from qbeast.spark.read.datasource import PYTHON_SOURCE_NAME, register_python_source

pytestmark = pytest.mark.spark

LEGACY_KEY = "qbeast.location"


def _inherit_location(path: str, other: str) -> None:
    """Make the log schema of ``path`` carry ``other``'s location in its first column, as a
    table written by an older version from a projection of ``other`` did."""
    log = DeltaLog.for_path(path)
    snapshot = log.snapshot()
    schema = json.loads(snapshot.metadata.schema_string)
    schema["fields"][0]["metadata"] = {LEGACY_KEY: other, "comment": "kept"}
    log.start_transaction(snapshot).update_metadata(
        dataclasses.replace(snapshot.metadata, schema_string=json.dumps(schema))
    ).commit("SET TBLPROPERTIES", {})


def _legacy_catalog_schema(spark, path: str, other: str):
    from pyspark.sql.types import StructField, StructType

    fields = QbeastTable.for_path(spark, path).to_df().schema.fields
    return StructType([StructField(f.name, f.dataType, f.nullable, {LEGACY_KEY: other})
                       for f in fields])


def _no_engine_keys(schema) -> bool:
    return all(not key.startswith("qbeast.") for f in schema.fields for key in (f.metadata or {}))


@pytest.fixture()
def tables(spark, tmp_path):
    upstream, own = str(tmp_path / "raw_orders"), str(tmp_path / "orders_merge")
    qbeast.write(spark.range(0, 1500).selectExpr("id as order_id", "id % 7 as k"), upstream,
                 "order_id,k", cube_size=400)
    qbeast.write(spark.range(0, 1000).selectExpr("id as order_id", "id % 7 as k"), own,
                 "order_id,k", cube_size=400)
    _inherit_location(own, upstream)
    return upstream, own


def test_a_table_with_an_inherited_location_reads_its_own_rows(spark, tables):
    upstream, own = tables
    spark.sql("DROP TABLE IF EXISTS legacy_orders")
    create_table(spark, "legacy_orders", own)
    # the entry an older version registered: the stored schema holds the inherited key (Spark
    # stores the schema the bridge reports, clean now, so it is written to the catalog directly)
    legacy = _legacy_catalog_schema(spark, own, upstream)
    spark._jsparkSession.sharedState().externalCatalog().alterTableDataSchema(
        "default", "legacy_orders", spark._jvm.org.apache.spark.sql.types.DataType.fromJson(legacy.json()))
    spark.catalog.refreshTable("legacy_orders")
    try:
        assert stale_catalog_metadata(spark, "legacy_orders") == ["order_id", "k"]
        reads = {
            "catalog": spark.table("legacy_orders"),
            "sql": spark.sql("select * from legacy_orders"),
            "path": spark.read.format("qbeast").load(own),
            "engine": QbeastTable.for_path(spark, own).to_df(),
        }
        for how, df in reads.items():
            assert (df.count(), df.agg({"order_id": "max"}).first()[0]) == (1000, 999), how
            assert _no_engine_keys(df.schema), f"{how} read hands on {df.schema.fields[0].metadata}"
        assert reads["path"].schema.fields[0].metadata == {"comment": "kept"}

        # the next write drops the stale key from the log (and keeps the comment)
        qbeast.write(spark.range(1000, 1100).selectExpr("id as order_id", "id % 7 as k"), own)
        schema = QbeastTable.for_path(spark, own).snapshot().delta.schema
        assert schema["fields"][0]["metadata"] == {"comment": "kept"}
        # re-registering cleans the catalog entry
        create_table(spark, "legacy_orders", own, replace=True)
        assert stale_catalog_metadata(spark, "legacy_orders") == []
        assert spark.table("legacy_orders").count() == 1100
    finally:
        spark.sql("DROP TABLE IF EXISTS legacy_orders")


def test_upgrade_format_removes_the_inherited_location(spark, tables):
    _, own = tables
    dry = qbeast.upgrade_format(own, dry_run=True)
    assert dry.needed and dry.cleaned_columns == ("order_id",)
    assert "remove qbeast.* column metadata from order_id" in "\n".join(dry.summary_lines())
    done = qbeast.upgrade_format(own)
    assert done.version is not None
    table = QbeastTable.for_path(spark, own)
    assert table.snapshot().delta.schema["fields"][0]["metadata"] == {"comment": "kept"}
    assert table.to_df().count() == 1000
    assert not qbeast.upgrade_format(own).needed  # idempotent


def test_python_source_refuses_a_catalog_table_without_a_marker_it_can_believe(spark, tables):
    upstream, own = tables
    register_python_source(spark, PYTHON_SOURCE_NAME)
    spark.sql("DROP TABLE IF EXISTS legacy_py")
    spark.catalog.createTable("legacy_py", source=PYTHON_SOURCE_NAME,
                              schema=_legacy_catalog_schema(spark, own, upstream))
    try:
        with pytest.raises(Exception, match="needs the table location"):
            spark.table("legacy_py").count()
        # re-created by create_table: a marker with the table id, read back as itself
        create_table(spark, "legacy_py", own, replace=True, source=PYTHON_SOURCE_NAME)
        assert spark.table("legacy_py").count() == 1000
        # an overwrite is the same table (same Delta id): its new rows are read
        qbeast.write(spark.range(0, 10).selectExpr("id as order_id", "id % 7 as k"), own,
                     "order_id,k", mode="overwrite")
        assert spark.table("legacy_py").count() == 10
        # the folder deleted and written again is another table (a new id): refused
        shutil.rmtree(own)
        qbeast.write(spark.range(0, 20).selectExpr("id as order_id", "id % 7 as k"), own, "order_id,k")
        with pytest.raises(Exception, match="location marker is not believed"):
            spark.table("legacy_py").count()
    finally:
        spark.sql("DROP TABLE IF EXISTS legacy_py")


def test_marker_copied_onto_other_columns_is_not_believed(spark, tables):
    _, own = tables
    register_python_source(spark, PYTHON_SOURCE_NAME)
    create_table(spark, "marked_py", own, replace=True, source=PYTHON_SOURCE_NAME)
    try:
        projected = spark.table("marked_py").select("order_id")  # the marker travels with it
        spark.sql("DROP TABLE IF EXISTS copied_py")
        spark.catalog.createTable("copied_py", source=PYTHON_SOURCE_NAME, schema=projected.schema)
        with pytest.raises(Exception, match="location marker is not believed"):
            spark.table("copied_py").count()
        # and a write of that projection keeps none of it
        target = own + "_copy"
        qbeast.write(projected, target, "order_id")
        assert "qbeast." not in json.dumps(QbeastTable.for_path(spark, target).snapshot().delta.schema)
    finally:
        spark.sql("DROP TABLE IF EXISTS copied_py")
        spark.sql("DROP TABLE IF EXISTS marked_py")


def test_read_options_name_no_table_without_a_path():
    from qbeast.spark.read.datasource import parse_read_options

    with pytest.raises(InvalidOptionError, match="needs the table location"):
        parse_read_options({}, None)
