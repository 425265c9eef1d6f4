"""Catalog tables over Qbeast tables: ``USING qbeast`` entries, and what the catalog keeps of them.

A catalog table is an external table whose ``LOCATION`` is the Qbeast table's folder: the JVM
read bridge reads it from there. Where the Python data source reads it instead, Spark does not
pass it the location, so :func:`create_table` also puts a marker on every column naming the
location and the table's Delta id, which the reader checks on every read
(:mod:`qbeast.spark.read.datasource`, which owns the marker's format). Here are the ways in and
out of the catalog: creating the entry (:func:`create_table`, :func:`create_table_sql`), the
schema it records (:func:`catalog_schema`), and reading back where an entry points and whether an
older version left engine metadata in it (:func:`describe_location`,
:func:`stale_catalog_metadata`, :func:`stored_catalog_schema_json`).

It sits beside the wings, above the read and SQL wings: registering a table first makes ``qbeast``
readable in the session (:func:`qbeast.spark.sql.sources.register`).
"""
from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from qbeast.core.columns import engine_metadata_columns, without_engine_metadata
from qbeast.core.sql import check_table_name, quote_identifier, sql_string
from qbeast.errors import InvalidOptionError
from qbeast.spark.read.datasource import (
    CATALOG_MARKER_KEY,
    PYTHON_SOURCE_NAME,
    SOURCE_NAME,
    CatalogMarker,
    catalog_marker,
    register_python_source,
)
from qbeast.spark.read.planner import load_snapshot
from qbeast.spark.sql.sources import register
from qbeast.storage import local_path

logger = logging.getLogger("qbeast.spark.catalog")


def _location_of(path: str) -> str:
    """The location a catalog table records: an absolute local path, or another storage's URI."""
    from qbeast.storage import local_path

    local = local_path(path)
    return local if "://" in local else os.path.abspath(local)


def catalog_schema(schema: Any, column_comments: Mapping[str, str] | None = None,
                   marker: CatalogMarker | None = None) -> Any:
    """The schema a catalog table records: the table's columns, no ``qbeast.*`` keys but the
    ``marker`` (on every column) when the table is read by this Python source.

    ``column_comments`` (column name, any case -> text) become the columns' ``comment``
    metadata, which Spark shows as the column comments.
    """
    from pyspark.sql.types import StructField, StructType

    clean = StructType.fromJson(without_engine_metadata(schema.jsonValue()))
    comments = {k.lower(): v for k, v in (column_comments or {}).items()}
    fields = []
    for f in clean.fields:
        metadata = dict(f.metadata or {})
        if marker is not None:
            metadata[CATALOG_MARKER_KEY] = marker.to_json()
        if comments.get(f.name.lower()):
            metadata["comment"] = comments[f.name.lower()]
        fields.append(StructField(f.name, f.dataType, f.nullable, metadata))
    return StructType(fields)


def create_table(
    spark: Any,
    name: str,
    path: str,
    *,
    replace: bool = False,
    column_comments: Mapping[str, str] | None = None,
    properties: Mapping[str, str] | None = None,
    comment: str | None = None,
    source: str = SOURCE_NAME,
) -> None:
    """Create catalog table ``name`` (``USING qbeast``) over the Qbeast table at ``path``.

    The catalog keeps it as an external table with ``LOCATION path``, which Spark hands to the
    JVM bridge. Where this Python source reads it instead (``source="qbeast_python"``, or a
    session without the bridge) every column also carries a marker naming the location and the
    table's Delta id, checked on every read (module doc). Queries always read the latest
    committed snapshot of ``path``. With ``replace`` an existing table of that name is dropped
    first (dropping it never deletes the data). ``column_comments`` travel in the schema;
    ``properties`` (table properties) and the table ``comment`` are set after the table
    exists, with quoted literals.
    """
    from pyspark.sql.types import StructType

    check_table_name(name)
    if source not in (SOURCE_NAME, PYTHON_SOURCE_NAME):
        raise InvalidOptionError(
            f"source {source!r} is unknown; allowed: {SOURCE_NAME}, {PYTHON_SOURCE_NAME}"
        )
    python_read = register(spark) == "python" or source == PYTHON_SOURCE_NAME
    if source == PYTHON_SOURCE_NAME:
        register_python_source(spark, PYTHON_SOURCE_NAME)
    snapshot = load_snapshot(path)
    location = _location_of(path)
    marker = CatalogMarker(location, snapshot.delta.metadata.id) if python_read else None
    schema = catalog_schema(StructType.fromJson(snapshot.delta.schema), column_comments, marker)
    if replace:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    # ``path`` makes the table external (DESCRIBE shows the location; DROP never touches data)
    spark.catalog.createTable(name, path=location, source=source, schema=schema)
    if properties:
        pairs = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in properties.items())
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({pairs})")
    if comment:  # after the properties: their ALTER would drop a comment set before it
        spark.sql(f"COMMENT ON TABLE {name} IS {sql_string(comment)}")
    logger.info("created catalog table %s over %s (version %d)", name, path, snapshot.version)


def ensure_catalog_table(
    spark: Any,
    name: str,
    path: str,
    *,
    refresh: bool,
    column_comments: Mapping[str, str] | None = None,
    properties: Mapping[str, str] | None = None,
    comment: str | None = None,
) -> bool:
    """Make catalog table ``name`` the Qbeast table at ``path``: re-created by
    :func:`create_table` when ``refresh`` (its schema, comments or properties changed), when it
    is missing, or when its stored schema holds stale engine metadata; else left alone. True
    when it was (re-)created."""
    if not refresh and spark.catalog.tableExists(name) and not stale_catalog_metadata(spark, name):
        return False
    create_table(spark, name, path, replace=True, column_comments=column_comments,
                 properties=properties, comment=comment)
    return True


def create_table_sql(name: str, path: str, schema: Any) -> str:
    """The ``CREATE TABLE ... USING qbeast LOCATION ...`` statement for the table at ``path``.

    The JVM bridge reads such a table from its ``LOCATION``. The Python data source cannot
    (Spark does not pass it the location): use :func:`create_table` where it reads.
    """
    columns = ", ".join(f"{quote_identifier(f.name)} {f.dataType.simpleString()}"
                        for f in schema.fields)
    return (f"CREATE TABLE {name} ({columns}) USING {SOURCE_NAME} "
            f"LOCATION {sql_string(_location_of(path))}")


def describe_location(spark: Any, name: str) -> str | None:
    """The Qbeast table path behind catalog table ``name`` (None if it has none).

    The catalog's ``LOCATION``; for a table only the Python source can read, the location its
    marker names.
    """
    for row in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect():
        if row[0] == "Location" and row[1]:
            return local_path(str(row[1]))
    marker = catalog_marker(spark.table(name).schema)
    return marker.location if marker is not None else None


def stale_catalog_metadata(spark: Any, name: str) -> list[str]:
    """Columns of catalog table ``name`` whose stored schema holds ``qbeast.*`` metadata that
    does not belong there: anything in a table the bridge reads, anything but the marker in a
    table the Python source reads. Such an entry (made by an older version) is re-created by
    :func:`create_table`; reading it is correct either way."""
    schema = json.loads(stored_catalog_schema_json(spark, name))
    fields = schema.get("fields", [])
    if all(CATALOG_MARKER_KEY in (f.get("metadata") or {}) for f in fields) and fields:
        fields = [{**f, "metadata": {k: v for k, v in f["metadata"].items() if k != CATALOG_MARKER_KEY}}
                  for f in fields]
    return engine_metadata_columns({"fields": fields})


def stored_catalog_schema_json(spark: Any, name: str) -> str:
    """The schema catalog table ``name`` stores (as Spark's JSON), metadata included.

    Read from the session catalog itself: ``spark.table(name).schema`` is the schema the
    relation reports, which the bridge cleans.
    """
    jvm_session = getattr(spark, "_jsparkSession", None)
    if jvm_session is None:  # Spark Connect: the relation's schema is all a client can see
        return str(spark.table(name).schema.json())
    parser = jvm_session.sessionState().sqlParser()
    identifier = parser.parseTableIdentifier(name)
    return str(jvm_session.sessionState().catalog().getTableMetadata(identifier).schema().json())


def add_catalog_columns(spark: Any, name: str, columns: Any) -> None:
    """Append ``columns`` (a ``StructType``) to the schema catalog table ``name`` stores, keeping
    its comments and properties (Spark's ``alterTableDataSchema``, what ``ALTER TABLE ... ADD
    COLUMNS`` does for the file sources). A classic session's catalog only: through Spark
    Connect the server's driver runs this."""
    jvm_session = spark._jsparkSession  # noqa: SLF001 - classic sessions only
    state = jvm_session.sessionState()
    identifier = state.sqlParser().parseTableIdentifier(name)
    stored = json.loads(str(state.catalog().getTableMetadata(identifier).dataSchema().json()))
    stored["fields"] += json.loads(columns.json())["fields"]
    data_type = spark.sparkContext._jvm.org.apache.spark.sql.types.DataType  # noqa: SLF001
    state.catalog().alterTableDataSchema(identifier, data_type.fromJson(json.dumps(stored)))
    state.catalog().refreshTable(identifier)


__all__ = [
    "add_catalog_columns",
    "catalog_schema",
    "create_table",
    "create_table_sql",
    "describe_location",
    "stale_catalog_metadata",
    "stored_catalog_schema_json",
]
