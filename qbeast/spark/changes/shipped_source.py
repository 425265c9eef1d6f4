"""A key merge's source collected once to the driver as Arrow, to be shipped to every task.

Why: the common incremental model merges a small source (the last hour's or day's rows) into a
large table by key. Joining them in Spark costs a chain of jobs (a key summary, the join, the
affected files, the fates, a shuffle of the affected files' rows by file), each paying Spark's
start-up. With the source in every task, one task per candidate file finds its own matched rows
and rewrites its file (:mod:`qbeast.spark.changes.file_merge`): one job.

The source is shipped when it has at most ``spark.qbeast.merge.shippedSourceRows`` rows (it is
collected with a ``limit`` one row above that, so a large source costs at most that many rows
before the join path takes over) and when the tasks can treat the table exactly as Spark does:
a plain layout (no partition columns, no column mapping), flat column types, and keys that are
not floating point (Spark's join normalizes ``-0.0`` and NaN, an Arrow hash join does not).
The duplicate-key check and the key range that prunes the target files are computed here from
the collected rows, with Spark's results and error messages.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qbeast.core import expressions as ex
from qbeast.delta.scan import scan_schema
from qbeast.errors import InvalidOptionError
from qbeast.spark import settings
from qbeast.spark.changes.null_tests import NullTest
from qbeast.spark.changes.scan import ChangeScan

logger = logging.getLogger("qbeast.spark.changes.shipped_source")

#: Column of the shipped key table holding each source row's index in the collected source.
SOURCE_ROW = "_qbeast_source_row"
#: Largest collected source (Arrow bytes) that is shipped: a source of few but wide rows (long
#: strings, many columns) would otherwise weigh on the driver and every executor.
MAX_SHIPPED_BYTES = 256 * 1024 * 1024
#: Most distinct keys a merge lists for the skipping indexes of its key column (the planner
#: probes each file's index once per listed key).
MAX_LISTED_KEYS = 1_000


def _flat_types() -> tuple[type, ...]:
    from pyspark.sql import types as T

    return (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType,
            T.DecimalType, T.BooleanType, T.StringType, T.BinaryType, T.DateType,
            T.TimestampType, T.TimestampNTZType)


def refusal(job: ChangeScan, keys: Sequence[str]) -> str | None:
    """Why the per-file tasks cannot run this change exactly as Spark would (None: they can)."""
    from pyspark.sql import types as T

    layout = scan_schema(job.snapshot.delta)
    if not layout.is_plain:
        return "the table has partition columns or column mapping"
    flat = _flat_types()
    for name, kind in job.types.items():
        if not isinstance(kind, flat):
            return f"column {name!r} has type {kind.simpleString()}"
        if isinstance(kind, T.StringType) and getattr(kind, "collation", "UTF8_BINARY") not in (
                None, "UTF8_BINARY"):
            return f"column {name!r} has a collation"
    for k in keys:
        if isinstance(job.types[k], (T.FloatType, T.DoubleType)):
            return f"key {k!r} is floating point"
    return None


@dataclass(frozen=True)
class ShippedSource:
    """The collected source: the table's column spelling, the Arrow types of the table's Spark
    types (as the tasks read the files), in the source's row order."""

    rows: pa.Table
    keys: tuple[str, ...]
    #: the target predicate: only target rows meeting every test can match (empty: all can)
    target_tests: tuple[NullTest, ...] = ()

    def key_range(self, job: ChangeScan, *, unique: bool) -> ex.Expression:
        """What :func:`qbeast.spark.changes.merge.source_key_range` computes in a Spark job:
        fail on a key occurring twice (when ``unique``), else ``min <= key <= max``."""
        from qbeast.spark.changes.merge import duplicate_key_error, key_range_predicate

        keys = list(self.keys)
        path = job.snapshot.table_path
        present = self.rows.select(keys).filter(_not_null(self.rows, keys))
        if present.num_rows == 0:  # every key null: nothing can match
            return ex.AlwaysFalse()
        if unique:
            counts = present.group_by(keys, use_threads=False).aggregate([([], "count_all")])
            tally = counts.column("count_all").to_numpy()
            most = int(tally.max())
            if most > 1:
                at = int(tally.argmax())
                raise duplicate_key_error(path, keys, most,
                                          {k: counts.column(k)[at].as_py() for k in keys})
        def bounds() -> list[tuple[Any, Any]]:
            extremes = [pc.min_max(present.column(k)) for k in keys]
            return [(b["min"].as_py(), b["max"].as_py()) for b in extremes]

        predicate = key_range_predicate(job, keys, bounds)
        listed = _listed_keys(job, keys, present)
        if listed is None or isinstance(predicate, ex.AlwaysTrue):
            return predicate
        return ex.And(predicate, listed)

    def key_table(self, values: Sequence[str] = (), *, distinct: bool = False) -> pa.Table:
        """The rows with a non-null key, as the tasks get them: the keys, the row's index in the
        source (:data:`SOURCE_ROW`, ascending) and the ``values`` columns. ``distinct``: one row
        per key, its first source row (a delete+insert only asks whether a key occurs; its
        source may repeat a key)."""
        keys = list(self.keys)
        indexed = self.rows.select(keys).append_column(
            SOURCE_ROW, pa.array(np.arange(self.rows.num_rows, dtype=np.int64)))
        for c in values:
            if c not in keys:
                indexed = indexed.append_column(c, self.rows.column(c))
        present = indexed.filter(_not_null(self.rows, keys))
        if distinct:
            first = present.group_by(keys, use_threads=False).aggregate([(SOURCE_ROW, "min")])
            present = pa.table([*[first.column(k) for k in keys],
                                first.column(f"{SOURCE_ROW}_min")],
                               names=[*keys, SOURCE_ROW]).sort_by(SOURCE_ROW)
        return present.combine_chunks()

    def table_rows(self, job: ChangeScan, rows: pa.Table) -> pa.Table:
        """``rows`` (source columns) as table rows: every table column, null where the source
        has none, in the table's order."""
        schema = table_arrow_schema(job)
        return pa.table([rows.column(f.name) if f.name in rows.column_names
                         else pa.nulls(rows.num_rows, f.type) for f in schema], schema=schema)


def table_arrow_schema(job: ChangeScan) -> pa.Schema:
    """The Arrow schema Spark gives the table's rows (time zone: UTC, as files store times)."""
    from qbeast.spark.arrow_columns import spark_arrow_schema

    return spark_arrow_schema(job.schema)


def _not_null(rows: pa.Table, keys: Sequence[str]) -> pa.Array:
    mask = pc.is_valid(rows.column(keys[0]))
    for k in keys[1:]:
        mask = pc.and_(mask, pc.is_valid(rows.column(k)))
    return mask


def ship_source(job: ChangeScan, source: Any, keys: Sequence[str],
                target_tests: Sequence[NullTest] = ()) -> ShippedSource | None:
    """``source`` (already cast to the table's columns, see
    :func:`qbeast.spark.changes.merge.cast_to_table`) collected to the driver, or None when the
    change takes the join path (too many rows, or a reason of :func:`refusal`; logged).
    ``target_tests``: the change's target predicate, which the tasks apply."""
    path = job.snapshot.table_path
    limit = settings.SHIPPED_SOURCE_ROWS.read(job.spark)
    if limit == 0:
        return None
    why = refusal(job, keys)
    if why is not None:
        logger.info("%s: the source is joined in Spark: %s", path, why)
        return None
    collected = source.limit(limit + 1).toArrow()
    if collected.num_rows > limit:
        logger.info("%s: the source has more than %s=%d rows: joined in Spark", path,
                    settings.SHIPPED_SOURCE_ROWS.key, limit)
        return None
    if collected.nbytes > MAX_SHIPPED_BYTES:
        logger.info("%s: the source's %d rows take %d bytes (more than %d): joined in Spark",
                    path, collected.num_rows, collected.nbytes, MAX_SHIPPED_BYTES)
        return None
    schema = table_arrow_schema(job)
    columns = [collected.column(f.name).cast(f.type) if f.name in collected.column_names
               else None for f in schema]
    kept = [(f, c) for f, c in zip(schema, columns) if c is not None]
    rows = pa.table([c for _, c in kept], schema=pa.schema([f for f, _ in kept]))
    return ShippedSource(rows, tuple(keys), tuple(target_tests))


def _listed_keys(job: ChangeScan, keys: Sequence[str], present: pa.Table) -> ex.Expression | None:
    """``key IN (the source's keys)`` when the table keeps a skipping index (value list or Bloom
    filter) on the single key column and the source has at most :data:`MAX_LISTED_KEYS`
    distinct keys: the planner then drops the files whose index says they hold none of them,
    where the key range alone keeps every file whose keys span it (ids drawn across the table).
    None otherwise."""
    from qbeast.skipping_files import table_indexes
    from qbeast.spark.read.predicates import normalize_predicate

    if len(keys) != 1:
        return None
    key = keys[0]
    indexed = {spec.column.lower() for spec, _ in table_indexes(job.snapshot.delta.metadata)}
    if key.lower() not in indexed:
        return None
    values = pc.unique(present.column(key))
    if len(values) > MAX_LISTED_KEYS:
        return None
    try:
        return normalize_predicate(ex.In(key, tuple(values.to_pylist())), job.schema)
    except InvalidOptionError:  # a key type the planner cannot compare: the range decides
        return None
