"""Parquet columns read with pyarrow, as the Arrow types Spark gives the table's columns.

Why: the engine reads data files with pyarrow in two places, the ``qbeast`` Python data source
and the per-file tasks of a key merge (:mod:`qbeast.spark.changes.file_merge`), and both must see
the values Spark's own parquet reader would give (weights are hashed by type, rows are compared
and written back). Files written by older writers differ in physical types: INT96 or
millisecond timestamps, time zones in the Arrow type. This module is imported by every Spark
worker of a SQL read: pyarrow is imported inside the function, never at module level.
"""
from __future__ import annotations

from typing import Any


def conform_column(column: Any, target: Any) -> Any:
    """Cast one parquet column to the Arrow type Spark expects for the table column."""
    import pyarrow as pa

    if column.type.equals(target):
        return column
    if pa.types.is_timestamp(column.type) and pa.types.is_timestamp(target):
        # Spark truncates sub-microsecond parts by flooring (INT96 nanoseconds); do the same.
        raw = column.cast(pa.int64())
        factor = {"s": None, "ms": None, "us": 1, "ns": 1000}[column.type.unit]
        if factor == 1000:
            import numpy as np

            values = np.floor_divide(raw.fill_null(0).to_numpy(), 1000)
            raw = pa.array(values, pa.int64(), mask=column.is_null().to_numpy(zero_copy_only=False))
            return raw.cast(pa.timestamp("us", tz=target.tz))
        return column.cast(pa.timestamp("us", tz=column.type.tz)).cast(target)
    return column.cast(target)
