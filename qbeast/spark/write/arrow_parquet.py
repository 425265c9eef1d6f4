"""How the engine's pyarrow writes encode parquet: as its Spark writes do.

A few files are written with pyarrow rather than Spark's writer: the files a row-level change
rewrites (inside an Arrow task) and band pieces joined on a Spark Connect session. They take the
session's ``spark.qbeast.write.parquetVersion`` like every other file, so a table does not drift
to other encodings, and grow, as rows are updated.

parquet-mr picks the encodings by itself: a dictionary while one fits, and once it does not,
plain values (version 1 pages) or delta encodings (version 2: integers as DELTA_BINARY_PACKED,
strings and binaries as DELTA_BYTE_ARRAY). pyarrow falls back to plain values in both versions,
so the choice is made here, per column, from the rows to write: a dictionary for the columns
that repeat values, the version 2 delta encodings for the other integer-like and string columns.
Floats, booleans, decimals and nested columns keep pyarrow's defaults.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from qbeast.spark.settings import PARQUET_VERSION


def repeating_columns(data: pa.Table, like: Any = None) -> list[str]:
    """The top-level columns to dictionary-encode.

    A column of ``like`` (the ``pyarrow.parquet.FileMetaData`` of the file these rows replace)
    keeps its encoding there: a dictionary when every row group of that file has one. A
    rewrite thus encodes its columns as the old file did (the rows are mostly the same) without
    counting distinct values, which costs more than encoding the file.

    Otherwise, the columns with fewer than half as many distinct values as rows: those a
    dictionary encodes smaller (a dictionary of unique values only adds its own page, about 30%
    more bytes, which is why Spark's writer gives up on it too).
    """
    kept = dictionary_columns(like) if like is not None else {}

    def dictionary(name: str) -> bool:
        old = kept.get(name.lower())
        return old if old is not None else _repeats(data.column(name), data.num_rows)

    return [f.name for f in data.schema if not pa.types.is_nested(f.type) and dictionary(f.name)]


def _repeats(column: pa.ChunkedArray, rows: int) -> bool:
    """Fewer than ``rows / 2`` distinct non-null values (``unique``, which counts a null as a
    value, is several times faster than ``count_distinct`` on the same column)."""
    distinct = len(pc.unique(column)) - (1 if column.null_count else 0)
    return distinct * 2 < rows


def dictionary_columns(footer: Any) -> dict[str, bool]:
    """Per top-level flat column of a parquet footer (lower-case name): whether every row group
    holding rows stored it with a dictionary page; no entry for a file without rows."""
    found: dict[str, bool] = {}
    for i in range(footer.num_row_groups):
        group = footer.row_group(i)
        if group.num_rows == 0:
            continue
        for j in range(group.num_columns):
            chunk = group.column(j)
            name = chunk.path_in_schema
            if "." in name:
                continue  # a leaf of a nested column: those keep pyarrow's defaults
            key = name.lower()
            found[key] = found.get(key, True) and bool(chunk.has_dictionary_page)
    return found


def non_finite_columns(data: pa.Table) -> set[str]:
    """The float columns of ``data`` holding NaN or an infinity: values parquet footers cannot
    bound, so their Delta stats leave the column's min and max out."""
    found = set()
    for field in data.schema:
        if pa.types.is_floating(field.type):
            values = pc.fill_null(data.column(field.name), 0.0)
            if pc.any(pc.invert(pc.is_finite(values))).as_py():
                found.add(field.name)
    return found


def _delta_encoding(kind: pa.DataType) -> str | None:
    """The version 2 encoding parquet-mr falls back to for a column of this Arrow type."""
    if pa.types.is_integer(kind) or pa.types.is_date(kind) or pa.types.is_timestamp(kind) \
            or pa.types.is_time(kind):
        return "DELTA_BINARY_PACKED"
    if pa.types.is_string(kind) or pa.types.is_binary(kind) or pa.types.is_large_string(kind) \
            or pa.types.is_large_binary(kind):
        return "DELTA_BYTE_ARRAY"
    return None


def arrow_write_options(data: pa.Table, version: str, like: Any = None) -> dict[str, Any]:
    """``pyarrow.parquet.ParquetWriter`` options that write ``data`` with the encodings the
    engine's Spark writes would give it under page ``version`` (``v1`` or ``v2``); ``like``:
    the footer of the file ``data`` replaces, whose dictionary choices it keeps
    (:func:`repeating_columns`).

    Snappy as Spark; no Arrow schema in the footer (Spark's files have none).
    """
    allowed = PARQUET_VERSION.choices or ()
    if version not in allowed:
        raise ValueError(f"parquet page version must be one of {', '.join(sorted(allowed))}, "
                         f"got {version!r}")
    repeating = repeating_columns(data, like)
    options: dict[str, Any] = {"compression": "snappy", "use_dictionary": repeating,
                               "store_schema": False}
    if version == "v2":
        encodings = {f.name: enc for f in data.schema if f.name not in repeating
                     and (enc := _delta_encoding(f.type)) is not None}
        options.update(data_page_version="2.0", column_encoding=encodings)
    return options
