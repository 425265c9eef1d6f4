"""Parquet columns read with pyarrow, as the Arrow types Spark gives the table's columns.

Why: the engine reads data files with pyarrow in two places, the ``qbeast`` Python data source
and the per-file tasks of a key merge (:mod:`qbeast.spark.changes.file_merge`), and both must see
the values Spark's own parquet reader would give (weights are hashed by type, rows are compared
and written back). Files written by older writers differ in physical types: INT96 or
millisecond timestamps, time zones in the Arrow type. This module is imported by every Spark
worker of a SQL read: pyarrow is imported inside the function, never at module level.
"""
from __future__ import annotations

import functools
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


def spark_arrow_types(schema_json: str, names: Any) -> list[Any]:
    """The Arrow types Spark gives the columns ``names`` (case-insensitive) of a table schema
    in Delta's JSON form; instants in UTC. The hash of a row's weight depends on these types."""
    return list(_spark_arrow_types(schema_json, tuple(names)))


@functools.lru_cache(maxsize=64)
def _spark_arrow_types(schema_json: str, names: tuple[str, ...]) -> tuple[Any, ...]:
    """:func:`spark_arrow_types`, kept per schema: parsing a schema into Spark's types costs
    more than reading a small band's rows."""
    import json

    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import StructType

    from qbeast.errors import InvalidOptionError

    schema = StructType.fromJson(json.loads(schema_json))
    by_lower = {f.name.lower(): f for f in schema.fields}
    types = []
    for name in names:
        field = by_lower.get(name.lower())
        if field is None:
            raise InvalidOptionError(f"column {name!r} is missing from the table schema")
        types.append(to_arrow_type(field.dataType, timezone="UTC"))
    return tuple(types)


def spark_arrow_schema(schema: Any) -> Any:
    """The Arrow schema Spark gives rows of the Spark ``schema`` (a ``StructType``), instants in
    UTC as files store them. The one place the engine converts a Spark schema to Arrow: pyspark's
    converter needs a time zone for every ``timestamp`` column (nested ones too) and fails with
    an empty ``AssertionError`` without one."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")
