"""Arrow columns -> the canonical numpy values the format core's transformations expect.

The transformations of ``qbeast.core`` are written against the values qbeast-spark sees in a Spark
``Row`` (FORMAT §3): integers, doubles, ``BigDecimal`` turned into doubles, dates and timestamps as
epoch milliseconds, strings. Spark hands the writer's Python tasks Arrow batches instead, so this
module converts one Arrow array at a time, without per-row Python:

* int8..int64 -> int64; float32/float64 -> float64 (a float32 widens exactly, as in Java);
* decimal -> float64 through the decimal's exact text, which Arrow parses with correct rounding,
  like ``BigDecimal.doubleValue`` (a direct decimal->double cast may be off by one ulp); except for
  columns indexed with ``hashing``: Scala hashes ``BigDecimal.toString`` ("1.50", "1E-10"), which
  a double no longer knows, so those get ``decimal.Decimal`` objects keeping digits and scale;
* date32 -> epoch millis of the UTC midnight (the engine pins the JVM zone to UTC);
* timestamp -> epoch millis, floored (``java.sql.Timestamp.getTime`` drops sub-millis downward);
* string -> object array of ``str``.

Each result comes with a boolean null mask (``None`` when the array has no nulls); null slots of
numeric results hold 0 and must be ignored by the caller.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qbeast.core.revision import Revision

from qbeast.core.transformations import HashTransformation, Transformation
from qbeast.errors import UnsupportedTypeError

_MILLIS_PER_DAY = 86_400_000
_TIMESTAMP_UNITS_PER_MILLI = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}


def null_mask(array: pa.Array) -> np.ndarray | None:
    """Boolean mask of the null slots, or ``None`` when there are none."""
    if array.null_count == 0:
        return None
    return np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def canonical_values(
    array: pa.Array | pa.ChunkedArray, exact_decimals: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """The canonical values of ``array`` and its null mask (see the module docstring).

    ``exact_decimals`` turns a decimal array into ``decimal.Decimal`` objects (for hashing)
    instead of doubles.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    kind = array.type
    nulls = null_mask(array)
    if exact_decimals and pa.types.is_decimal(kind):
        values = _decimal_objects(array)
    elif pa.types.is_integer(kind):
        values = array.fill_null(0).to_numpy().astype(np.int64, copy=False)
    elif pa.types.is_floating(kind):
        values = array.fill_null(0).to_numpy().astype(np.float64, copy=False)
    elif pa.types.is_decimal(kind):
        text = pc.cast(array.fill_null(0), pa.string())
        values = pc.cast(text, pa.float64()).to_numpy()
    elif pa.types.is_date32(kind):
        days = array.cast(pa.int32()).fill_null(0).to_numpy().astype(np.int64)
        values = days * _MILLIS_PER_DAY
    elif pa.types.is_date64(kind):
        values = array.cast(pa.int64()).fill_null(0).to_numpy()
    elif pa.types.is_timestamp(kind):
        raw = array.cast(pa.int64()).fill_null(0).to_numpy()
        per_milli = _TIMESTAMP_UNITS_PER_MILLI[kind.unit]
        values = raw * 1000 if per_milli is None else np.floor_divide(raw, per_milli)
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        values = np.asarray(array.to_numpy(zero_copy_only=False), dtype=object)
    else:
        raise UnsupportedTypeError(
            f"Arrow type {kind} cannot be indexed; indexable Spark types are int, bigint, float, "
            "double, decimal, string, date and timestamp"
        )
    return values, nulls


def _decimal_objects(array: pa.Array) -> np.ndarray:
    """``decimal.Decimal`` per slot (``None`` for nulls), converting each distinct value once."""
    encoded = array.dictionary_encode()
    distinct = np.empty(len(encoded.dictionary), dtype=object)
    distinct[:] = encoded.dictionary.to_pylist()
    indices = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    values = distinct[indices] if len(distinct) else np.full(len(array), None, dtype=object)
    if array.null_count:
        values[np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)] = None
    return values


def table_points(revision: Revision, table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Normalized ``(n, d)`` coordinates of the rows of ``table`` under ``revision``.

    ``columns`` are the revision's indexed columns in revision order.
    """
    values: list[np.ndarray] = []
    nulls: list[np.ndarray | None] = []
    transformations: list[Transformation | None] = (
        list(revision.transformations) or [None] * len(columns))
    for name, transformation in zip(columns, transformations):
        hashed = isinstance(transformation, HashTransformation)
        column_values, column_nulls = canonical_values(table.column(name), exact_decimals=hashed)
        values.append(column_values)
        nulls.append(column_nulls)
    return revision.transform_points(values, nulls)
