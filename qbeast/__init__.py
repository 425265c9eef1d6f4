"""dbt-qbeast's engine: Qbeast tables (OTree-indexed Delta Lake) written and read with PySpark.

The public entry points are imported lazily so that ``import qbeast`` stays cheap and the pure
Python layers (``qbeast.core``, ``qbeast.delta``) remain usable without starting Spark.
"""
from __future__ import annotations

from typing import Any

from qbeast.errors import FormatError, InvalidOptionError, QbeastError, UnsupportedTypeError

__version__ = "0.1.0"

_LAZY = {
    "write": ("qbeast.spark.writer", "write"),
    "WriteResult": ("qbeast.spark.writer", "WriteResult"),
    "QbeastTable": ("qbeast.table", "QbeastTable"),
    "register": ("qbeast.spark.datasource", "register"),
    "convert_to_qbeast": ("qbeast.operations.convert", "convert_to_qbeast"),
    "upgrade_format": ("qbeast.operations.upgrade", "upgrade_format"),
}

__all__ = [
    "FormatError",
    "InvalidOptionError",
    "QbeastError",
    "UnsupportedTypeError",
    "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'qbeast' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value
    return value
