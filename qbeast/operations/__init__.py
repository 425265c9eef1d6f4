"""Table operations on Qbeast tables: convert, format upgrade, optimize, vacuum, history, metrics,
read explanations and index pages, and the row-level changes delete, update, merge and delete+insert.

Each operation is a plain function taking a table path (and the Spark session when it runs Spark
jobs), validating its arguments and returning a small result object with ``to_dict()`` and a
readable ``str()``, so that Python users, the CLI and dbt run-operations can all call it directly.
``qbeast.table.QbeastTable`` exposes the same operations as methods.

Imports are lazy: ``import qbeast.operations`` does not load Spark or pyarrow.
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "convert_to_qbeast": "qbeast.operations.convert",
    "ConvertResult": "qbeast.operations.convert",
    "upgrade_format": "qbeast.operations.upgrade",
    "UpgradeResult": "qbeast.operations.upgrade",
    "optimize_table": "qbeast.operations.optimize",
    "OptimizeResult": "qbeast.operations.optimize",
    "build_skipping_indexes": "qbeast.operations.skipping",
    "SkippingIndexResult": "qbeast.operations.skipping",
    "vacuum_table": "qbeast.operations.maintenance",
    "VacuumReport": "qbeast.operations.maintenance",
    "table_history": "qbeast.operations.maintenance",
    "TableHistory": "qbeast.operations.maintenance",
    "index_metrics": "qbeast.operations.metrics",
    "IndexMetrics": "qbeast.operations.metrics",
    "explain_read": "qbeast.operations.explain",
    "ReadExplanation": "qbeast.operations.explain",
    "show_index": "qbeast.operations.index_page",
    "table_statistics": "qbeast.operations.statistics",
    "TableStatistics": "qbeast.operations.statistics",
    "delete_rows": "qbeast.operations.rowlevel",
    "update_rows": "qbeast.operations.rowlevel",
    "merge_rows": "qbeast.operations.rowlevel",
    "delete_insert_rows": "qbeast.operations.rowlevel",
    "RowLevelResult": "qbeast.operations.rowlevel",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'qbeast.operations' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
