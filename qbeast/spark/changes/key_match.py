"""One data file's rows against a shipped source, in Arrow: which rows a key matches and what
becomes of them (the per-file half of :mod:`qbeast.spark.changes.file_merge`).

The rules are Spark's, so that this path and the join path (:mod:`qbeast.spark.changes.merge`,
:mod:`qbeast.spark.changes.fates`) change the same rows the same way: keys compare with ``=``
(a null key never matches); a matched row is deleted, or takes the source's values of the
updated columns; an updated row *moves* (to the indexed append) when one of the columns some
revision indexes changes value under Spark's null-safe equality (``<=>``: null equals null,
NaN equals NaN, ``-0.0`` equals ``0.0``), except in staging files, whose rows never move.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from qbeast.spark.arrow_columns import conform_column

#: Column of a file's key table holding each row's index in the file.
TARGET_ROW = "_qbeast_target_row"


def read_columns(parquet: pq.ParquetFile, schema: pa.Schema,
                 columns: Sequence[str] | None = None) -> pa.Table:
    """``columns`` (default: all) of an open data file, with the Arrow types of ``schema`` (the
    table's, as Spark reads them): names matched case-insensitively as Spark's parquet reader
    does, a column the file lacks read as nulls."""
    wanted = [schema.field(c) for c in columns] if columns is not None else list(schema)
    by_lower = {name.lower(): name for name in parquet.schema_arrow.names}
    present = [by_lower[f.name.lower()] for f in wanted if f.name.lower() in by_lower]
    read = parquet.read(columns=list(dict.fromkeys(present)), use_threads=False)
    arrays = []
    for f in wanted:
        name = by_lower.get(f.name.lower())
        arrays.append(pa.nulls(read.num_rows, f.type) if name is None
                      else conform_column(read.column(name), f.type))
    return pa.table(arrays, schema=pa.schema(wanted))


def match_rows(target_keys: pa.Table, source_keys: pa.Table, keys: Sequence[str],
               source_row: str) -> tuple[np.ndarray, np.ndarray]:
    """(row indexes in the file, ``source_row`` values) of the matched pairs, by file row.

    ``source_keys`` holds unique non-null keys (a merge's source after its duplicate check, or
    a delete+insert's distinct keys); Arrow's hash join never matches null keys, as ``=``.
    """
    if target_keys.num_rows == 0 or source_keys.num_rows == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    left = target_keys.select(list(keys)).append_column(
        TARGET_ROW, pa.array(np.arange(target_keys.num_rows, dtype=np.int64)))
    right = source_keys.select([*keys, source_row])
    pairs = left.join(right, list(keys), join_type="inner", use_threads=False)
    rows = pairs.column(TARGET_ROW).to_numpy()
    order = np.argsort(rows, kind="stable")
    return rows[order], pairs.column(source_row).to_numpy()[order]


def same_values(old: pa.Array | pa.ChunkedArray, new: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Spark's ``old <=> new`` per row (null-safe; NaN equals NaN; ``-0.0`` equals ``0.0``)."""
    equal = pc.fill_null(pc.equal(old, new), False)
    if pa.types.is_floating(old.type):
        both_nan = pc.fill_null(pc.and_(pc.is_nan(old), pc.is_nan(new)), False)
        equal = pc.or_(equal, both_nan)
    both_null = pc.and_(pc.is_null(old), pc.is_null(new))
    return np.asarray(pc.or_(equal, both_null).to_numpy(zero_copy_only=False), dtype=bool)


@dataclass(frozen=True)
class FileChange:
    """What a change makes of one file's rows: the rows written back into it (kept and updated
    in place, in the file's order), the rows moving to the indexed append, the counts of each
    fate, and where the rows that leave the file (deleted or moved) were in it."""

    remaining: pa.Table
    moved: pa.Table
    deleted: int
    updated: int
    removed: np.ndarray


def apply_matches(data: pa.Table, rows: np.ndarray, values: pa.Table, *, delete: bool,
                  moving: Sequence[str], staging: bool) -> FileChange:
    """The fates of ``data`` (a file's rows) whose ``rows`` matched: deleted (``delete``), or
    updated with ``values`` (one row per matched row, in ``rows`` order; its columns are the
    updated ones). ``moving``: the updated columns some revision indexes."""
    n = data.num_rows
    hit = np.zeros(n, dtype=bool)
    hit[rows] = True
    if delete:
        return FileChange(data.filter(pa.array(~hit)), data.schema.empty_table(), len(rows), 0,
                          rows)
    # each updated column: the file's values, with the source's at the matched rows
    pick = np.arange(n, dtype=np.int64)
    pick[rows] = n + np.arange(len(rows), dtype=np.int64)
    picker = pa.array(pick)
    columns = []
    moved_hit = np.zeros(len(rows), dtype=bool)
    for field in data.schema:
        column = data.column(field.name)
        if field.name not in values.column_names:
            columns.append(column)
            continue
        new = values.column(field.name).cast(field.type)
        if field.name in moving and not staging:
            moved_hit |= ~same_values(column.take(pa.array(rows)), new)
        joined = pa.chunked_array(column.chunks + new.chunks, type=field.type)
        columns.append(joined.take(picker))
    updated = pa.table(columns, schema=data.schema)
    moved = np.zeros(n, dtype=bool)
    moved[rows[moved_hit]] = True
    return FileChange(updated.filter(pa.array(~moved)), updated.filter(pa.array(moved)), 0,
                      int(len(rows) - moved_hit.sum()), rows[moved_hit])
