"""dbt-qbeast's engine: Qbeast tables (OTree-indexed Delta Lake) written and read with PySpark.

The public entry points are imported lazily so that ``import qbeast`` stays cheap and the pure
Python layers (``qbeast.core``, ``qbeast.delta``) remain usable without starting Spark.
"""
from __future__ import annotations

from typing import Any

from qbeast.errors import FormatError, InvalidOptionError, QbeastError, UnsupportedTypeError

__version__ = "0.1.0"

_LAZY = {
    # writing, reading and table operations
    "write": ("qbeast.spark.write.writer", "write"),
    "WriteResult": ("qbeast.spark.write.writer", "WriteResult"),
    "CommitProperties": ("qbeast.commit", "CommitProperties"),
    "QbeastTable": ("qbeast.table", "QbeastTable"),
    "convert_to_qbeast": ("qbeast.operations.convert", "convert_to_qbeast"),
    # one write of a query's rows in any write mode (tools: dbt), and what a location holds
    "WriteRequest": ("qbeast.operations.table_write", "WriteRequest"),
    "WriteSummary": ("qbeast.operations.table_write", "WriteSummary"),
    "write_rows": ("qbeast.operations.table_write", "write_rows"),
    "describe_folder": ("qbeast.operations.folders", "describe_folder"),
    "table_schema": ("qbeast.operations.statistics", "table_schema"),
    "upgrade_format": ("qbeast.operations.upgrade", "upgrade_format"),
    # optimize(max_rewrite_ratio=...) of the default maintenance (dbt's optimize_after_run)
    "MAINTENANCE_REWRITE_RATIO": ("qbeast.core.defaults", "MAINTENANCE_REWRITE_RATIO"),
    # sessions and catalog tables
    "get_or_create_session": ("qbeast.spark.session", "get_or_create_session"),
    "is_connect_session": ("qbeast.spark.shipping", "is_connect_session"),
    "register": ("qbeast.spark.sql.sources", "register"),
    "enable_sql_procedures": ("qbeast.serve.procedures", "enable_sql_procedures"),
    "create_table": ("qbeast.spark.catalog", "create_table"),
    "stale_catalog_metadata": ("qbeast.spark.catalog", "stale_catalog_metadata"),
    "ensure_catalog_table": ("qbeast.spark.catalog", "ensure_catalog_table"),
    "EmbeddedCatalog": ("qbeast.spark.embedded_catalog", "EmbeddedCatalog"),
    # the rules integrations (the dbt adapter) build on
    "ColumnSpec": ("qbeast.core.transformers", "ColumnSpec"),
    "TRANSFORMER_TYPES": ("qbeast.core.transformers", "TRANSFORMER_TYPES"),
    "parse_columns_to_index": ("qbeast.core.transformers", "parse_columns_to_index"),
    "parse_skipping_indexes": ("qbeast.core.skipping", "parse_declaration"),
    "build_skipping_indexes": ("qbeast.operations.skipping", "build_skipping_indexes"),
    "quote_identifier": ("qbeast.core.sql", "quote_identifier"),
    "sql_string": ("qbeast.core.sql", "sql_string"),
    "local_path": ("qbeast.storage", "local_path"),
    "spark_writes_location": ("qbeast.spark.file_access", "spark_writes_location"),
    # catalog names readable without Spark (``qbeast describe schema.table``): qbeast/names.py
    "record_table_name": ("qbeast.names", "record"),
    "forget_table_name": ("qbeast.names", "forget"),
}

__all__ = [
    "FormatError",
    "InvalidOptionError",
    "QbeastError",
    "UnsupportedTypeError",
    "__version__",
]
__all__ += list(_LAZY)


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'qbeast' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value
    return value
