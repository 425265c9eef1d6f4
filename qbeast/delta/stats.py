"""Delta ``AddFile.stats`` (numRecords, minValues, maxValues, nullCount) from Arrow data or footers.

Delta readers (Spark's Delta, delta-rs, DuckDB) skip a file when its stats say no row can match a
filter, so a bound that is too tight silently drops rows. Every bound written here is therefore
*safe* rather than merely close, and a column is left out whenever a safe bound cannot be stated
(a missing statistic only costs pruning):

* strings: exact min/max when the max is at most 32 characters; otherwise the min is cut to a
  32-character prefix (still a lower bound) and the max is omitted;
* timestamps: Delta stores milliseconds, so the min is floored and the max is rounded *up* to the
  next millisecond;
* floats: NaN compares greater than every number in Spark, so columns holding NaN (or infinities,
  which JSON cannot carry) get no min/max;
* decimals are written with their exact digits; booleans, binary and nested columns get only a
  null count (nested ones not even that).

Like Delta's default ``dataSkippingNumIndexedCols``, only the first 32 columns are described.

Two sources feed these rules: the data itself (:class:`StatsAccumulator`) and the row-group
statistics of a parquet footer (:func:`footer_stats`), used both by the writer for the files Spark
wrote and by ``convert_to_qbeast`` for existing files. A footer cannot tell whether a float column
holds NaN (parquet writers leave NaN out of their statistics), so footer bounds of float columns
are used only when the caller knows which columns hold NaN or infinities.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Collection
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

STATS_COLUMN_LIMIT = 32
STRING_PREFIX_LENGTH = 32

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _has_min_max(kind: pa.DataType) -> bool:
    return (
        pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_decimal(kind)
        or pa.types.is_date32(kind)
        or pa.types.is_timestamp(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
    )


def _is_nested(kind: pa.DataType) -> bool:
    return pa.types.is_nested(kind)


class StatsAccumulator:
    """Running Delta statistics of one file, fed chunk by chunk as the file is written."""

    def __init__(self, schema: pa.Schema) -> None:
        self.fields = described_fields(schema)
        self.num_records = 0
        self.null_counts = {f.name: 0 for f in self.fields}
        self.mins: dict[str, Any] = {}
        self.maxs: dict[str, Any] = {}
        self.unsafe: set[str] = set()  # columns whose min/max cannot be stated safely

    def update(self, table: pa.Table | pa.RecordBatch) -> None:
        self.num_records += table.num_rows
        for field in self.fields:
            column = table.column(field.name)
            self.null_counts[field.name] += column.null_count
            if not _has_min_max(field.type) or field.name in self.unsafe:
                continue
            if column.null_count == len(column):
                continue
            if pa.types.is_floating(field.type):
                finite = pc.all(pc.is_finite(column)).as_py()
                if finite is False:
                    self.unsafe.add(field.name)
                    continue
            bounds = pc.min_max(column)
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            if field.name in self.mins:
                low = min(low, self.mins[field.name])
                high = max(high, self.maxs[field.name])
            self.mins[field.name] = low
            self.maxs[field.name] = high

    def to_json(self) -> str:
        """The stats JSON string of the ``AddFile`` action."""
        safe = {name: v for name, v in self.mins.items() if name not in self.unsafe}
        return stats_json(self.fields, self.num_records, self.null_counts, safe,
                          {name: self.maxs[name] for name in safe})


def stats_json(fields: list[pa.Field], num_records: int, null_counts: dict[str, int],
               mins: dict[str, Any], maxs: dict[str, Any]) -> str:
    """The ``AddFile.stats`` JSON of a file from its exact column bounds.

    ``fields`` are the described columns (the first 32, nested ones left out); ``mins``/``maxs``
    hold the exact bounds of the columns that have them (columns whose bounds are unknown or
    unsafe, e.g. floats holding NaN, are simply absent); so do unknown null counts. The safe-bound rules of the module
    docstring are applied here (string prefixes, timestamps rounded outwards).
    """
    low_values: dict[str, Any] = {}
    high_values: dict[str, Any] = {}
    for field in fields:
        name = field.name
        if not _has_min_max(field.type) or mins.get(name) is None or maxs.get(name) is None:
            continue
        low = _json_bound(field.type, mins[name], upper=False)
        high = _json_bound(field.type, maxs[name], upper=True)
        if low is not None:
            low_values[name] = low
        if high is not None:
            high_values[name] = high
    nulls = {f.name: int(null_counts[f.name]) for f in fields if f.name in null_counts}
    return (
        f'{{"numRecords":{num_records},"minValues":{_json_object(low_values)},'
        f'"maxValues":{_json_object(high_values)},'
        f'"nullCount":{json.dumps(nulls, separators=(",", ":"))}}}'
    )


def footer_stats(footer: pq.FileMetaData, *, non_finite: Collection[str] | None = None) -> str:
    """The ``AddFile.stats`` JSON of a parquet file from its footer alone (no data read).

    ``non_finite`` names the float columns known to hold NaN or infinities; ``None`` means that
    is unknown, and then no float column gets bounds (a footer maximum ignores NaN, which Spark
    orders above every number). A column gets a null count only when every row group states
    one, and bounds only when every row group holding values states them.
    """
    arrow = footer.schema.to_arrow_schema()
    positions = {footer.schema.column(i).path: i for i in range(footer.num_columns)}
    fields = described_fields(arrow)
    nulls: dict[str, int] = {}
    lows: dict[str, Any] = {}
    highs: dict[str, Any] = {}
    for field in fields:
        index = positions.get(field.name)
        if index is None:
            continue
        count: int | None = 0
        low = high = None
        bounded = _has_min_max(field.type) and not (
            pa.types.is_floating(field.type) and (non_finite is None or field.name in non_finite))
        for g in range(footer.num_row_groups):
            group = footer.row_group(g)
            chunk = group.column(index)
            st = chunk.statistics
            if st is None or not st.has_null_count:
                count = None
            elif count is not None:
                count += st.null_count
            if not bounded or group.num_rows == 0:
                continue
            if st is None:
                bounded = False
                continue
            if st.has_null_count and chunk.num_values - st.null_count <= 0:
                continue  # only nulls: nothing to bound
            if not st.has_min_max:
                bounded = False
                continue
            low = st.min if low is None else min(low, st.min)
            high = st.max if high is None else max(high, st.max)
        if count is not None:
            nulls[field.name] = count
        if bounded and low is not None:
            lows[field.name], highs[field.name] = low, high
    return stats_json(fields, footer.num_rows, nulls, lows, highs)


def described_fields(schema: pa.Schema) -> list[pa.Field]:
    """The columns Delta stats describe: the first 32, nested ones left out."""
    return [f for f in list(schema)[:STATS_COLUMN_LIMIT] if is_described(f.type)]


def is_described(kind: pa.DataType) -> bool:
    """Whether a column of this Arrow type (among the first 32) is in the stats: not nested."""
    return not _is_nested(kind)


def has_min_max(kind: pa.DataType) -> bool:
    """Whether a column of this Arrow type gets min/max bounds (numbers, dates, times, strings).

    The one rule of every writer: the Spark writer applies it to the Arrow type of each column
    (:func:`qbeast.spark.write.describe.stats_fields`), so a ``timestamp_ntz`` column is bounded
    however its file was described.
    """
    return _has_min_max(kind)


def _json_object(encoded: dict[str, str]) -> str:
    """A JSON object from already encoded values (decimals keep their exact digits)."""
    return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in encoded.items()) + "}"


def _json_bound(kind: pa.DataType, value: Any, *, upper: bool) -> str | None:
    """The JSON text of a min (``upper=False``) or max bound, or ``None`` to omit it."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if len(value) <= STRING_PREFIX_LENGTH:
            return json.dumps(value)
        return None if upper else json.dumps(value[:STRING_PREFIX_LENGTH])
    if pa.types.is_timestamp(kind):
        return json.dumps(_timestamp_text(value, upper))
    if pa.types.is_date32(kind):
        return json.dumps(value.isoformat())
    if pa.types.is_decimal(kind):
        return format(value, "f") if isinstance(value, decimal.Decimal) else None
    if pa.types.is_floating(kind):
        return json.dumps(float(value)) if math.isfinite(value) else None
    return str(int(value))


def _timestamp_text(value: dt.datetime, upper: bool) -> str:
    """``yyyy-MM-ddTHH:mm:ss.SSSZ`` in UTC, floored (min) or ceiled (max) to the millisecond."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    micros = (value - _EPOCH) // dt.timedelta(microseconds=1)
    millis = -((-micros) // 1000) if upper else micros // 1000
    moment = _EPOCH + dt.timedelta(milliseconds=millis)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
