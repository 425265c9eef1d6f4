"""A small weight band of an approximate answer, read in this process with pyarrow: no Spark job.

Why: every Spark job pays a fixed cost (about 0.1-0.2 s on a small machine) whatever it reads,
while the first band of a growing sample is often a few thousand rows in a few file prefixes,
which pyarrow reads in milliseconds. On a 20M-row table that fixed cost was most of an answer at
1% tolerance (benchmarks/results/approx.md). So a band whose planned bytes are few (the session
setting ``spark.qbeast.approx.localReadBytes``, 32 MB by default: beyond that a Spark scan on
every core costs less than one pyarrow reader here), with no row filter of the user's to
evaluate (Spark SQL), in plain local files, is read here; anything else keeps the Spark scan.

What it returns is what the Spark scan of the same band returns (:mod:`qbeast.spark.read.approx`):
the columns ``_met, _w, _g0.., _v0..`` of the band's rows, weights computed by the bit-exact
port of Spark's ``hash()`` (:mod:`qbeast.index.row_weights`), values cast to double as Spark
casts them. What it read is counted by Spark's own rules, so both paths report the same figures:
the rows of the row groups a Spark reader of each planned prefix decodes (a row group is read by
the split holding its midpoint; a whole file: all of them), and the planned prefix lengths
(what Spark's ``filesSize`` metric sums).
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from qbeast.core.band_row_groups import row_group_spans
from qbeast.core.weight import MIN_WEIGHT
from qbeast.spark.arrow_columns import conform_column, spark_arrow_types
from qbeast.spark.read.planner import ReadPlan

#: Spark types whose ``cast(... as double)`` a numpy/Arrow cast reproduces exactly (integers
#: round to nearest, as Java's long-to-double does; floats widen exactly); decimals too up to
#: :data:`_EXACT_DECIMAL_DIGITS` (:func:`_as_double`).
_VALUE_TYPES = frozenset({"byte", "short", "integer", "long", "float", "double"})
#: Decimal precision up to which an unscaled value is an exact double (< 2^53), so that one
#: division by the exact power of ten is correctly rounded, as Spark's cast is (Arrow's own
#: decimal cast is not: it differs from Spark's in the last bit for many decimal(7,2) values).
_EXACT_DECIMAL_DIGITS = 15
#: Spark types of group columns that Arrow gives back as Spark's own Arrow conversion does
#: (instants differ by session time zone and keep the Spark scan).
_KEY_TYPES = frozenset({"string", "boolean", "byte", "short", "integer", "long", "float", "double",
                        "date", "binary"})
#: Spark types whose ``hash()`` :func:`qbeast.index.row_weights.spark_hash` computes.
_HASH_TYPES = _KEY_TYPES | {"timestamp", "timestamp_ntz"}


def _is_decimal(kind: Any) -> bool:
    return isinstance(kind, str) and kind.startswith("decimal")


def _castable(kind: Any) -> bool:
    """Whether values of Spark type ``kind`` (Delta's JSON form) are cast to double here."""
    if _is_decimal(kind):
        return int(kind[len("decimal("):].split(",")[0]) <= _EXACT_DECIMAL_DIGITS
    return kind in _VALUE_TYPES


def _as_double(column: Any) -> Any:
    """``cast(column as double)`` as Spark computes it, for the types of :func:`_castable`."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_decimal(column.type):
        return pc.cast(column, pa.float64(), safe=False)
    if pa.types.is_decimal256(column.type):
        column = column.cast(pa.decimal128(column.type.precision, column.type.scale))
    # decimal128 values are 16-byte little-endian two's complement: the unscaled value of a
    # precision up to 18 is the low 8 bytes
    raw = np.frombuffer(column.buffers()[1], dtype=np.int64)
    unscaled = raw[2 * column.offset: 2 * (column.offset + len(column)): 2]
    values = unscaled.astype(np.float64) / float(10 ** column.type.scale)
    return pa.array(values, pa.float64(), mask=column.is_null().to_numpy(zero_copy_only=False))


def readable_here(plan: ReadPlan, row_filter: Any, hash_columns: Sequence[str],
                  group_by: Sequence[str], columns: Sequence[str], max_bytes: int) -> bool:
    """Whether the band of ``plan`` is read in this process (see the module text): no user row
    filter, plain local files (no partition values or column mapping) of at most ``max_bytes``
    (the planned prefixes), and columns whose types this reader gives exactly as Spark does."""
    if row_filter is not None or plan.layout is not None:
        return False
    # local files are absolute paths; an object store's are URIs (their local copies are
    # Spark's business: :meth:`qbeast.spark.file_access.FileAccess.readable`)
    if plan.selected_bytes > max_bytes or not all(os.path.isabs(f.path) for f in plan.files):
        return False
    types = {f["name"]: f["type"] for f in json.loads(plan.schema_json)["fields"]}
    return (all(types.get(c) in _HASH_TYPES or _is_decimal(types.get(c)) for c in hash_columns)
            and all(types.get(g) in _KEY_TYPES for g in group_by)
            and all(_castable(types.get(c)) for c in columns))


def _nulls_may_match(group: Any, columns: dict[str, int], hash_columns: Sequence[str],
                     nulls: bool) -> bool:
    """Whether a row group may hold rows whose indexed columns are all null (``nulls``) or not
    all null, by its null counts: the row groups Spark's parquet reader keeps for the band's
    null condition (pushed down as ``IsNull`` / ``IsNotNull``). A column the file lacks is null."""
    counts = []
    for name in hash_columns:
        index = columns.get(name.lower())
        if index is None:
            counts.append(group.num_rows)
            continue
        stats = group.column(index).statistics
        if stats is None or not stats.has_null_count:
            return True
        counts.append(stats.null_count)
    if nulls:
        return all(count > 0 for count in counts)
    return any(count < group.num_rows for count in counts)


def _read_file(path: str, length: int, names: Sequence[str], hash_columns: Sequence[str],
               nulls: bool | None) -> tuple[Any, int]:
    """The columns ``names`` of the row groups Spark reads from the first ``length`` bytes of
    ``path`` (those whose midpoint is inside them and, with ``nulls`` set, whose null counts
    may meet the null condition), and their row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    footer = parquet.metadata
    groups = [i for i, (start, end, _) in enumerate(row_group_spans(footer))
              if start + (end - start) // 2 < length]
    if nulls is not None:
        top = {footer.schema.column(j).path.lower(): j for j in range(footer.num_columns)}
        groups = [i for i in groups
                  if _nulls_may_match(footer.row_group(i), top, hash_columns, nulls)]
    by_lower = {name.lower(): name for name in parquet.schema_arrow.names}
    present = [by_lower[n.lower()] for n in names if n.lower() in by_lower]
    table = parquet.read_row_groups(groups, columns=list(dict.fromkeys(present)), use_threads=False)
    rows = table.num_rows
    arrays = []
    for name in names:  # a column the file lacks (added later to the table) reads as null
        source = by_lower.get(name.lower())
        arrays.append(table.column(source) if source is not None else pa.nulls(rows))
    return arrays, rows


def _chunks(column: Any) -> list[Any]:
    """The arrays of a ``pyarrow`` chunked array, or ``[column]`` for an array."""
    return list(column.chunks) if hasattr(column, "chunks") else [column]


def band_table(plan: ReadPlan, hash_columns: Sequence[str], group_by: Sequence[str],
               columns: Sequence[str], lo: int, hi: int | None,
               nulls: bool | None) -> tuple[Any, int]:
    """The rows of weight ``[lo, hi)`` of the plan's files as ``_met, _w, _g0.., _v0..`` (a
    ``pyarrow.Table``, as the Spark scan of :mod:`qbeast.spark.read.approx` gives them), and the
    rows of the row groups read; ``nulls`` as in :func:`qbeast.spark.read.approx.read_band`."""
    import numpy as np
    import pyarrow as pa

    from qbeast.index.row_weights import spark_hash

    names = list(dict.fromkeys([*hash_columns, *group_by, *columns]))
    types = dict(zip(names, spark_arrow_types(plan.schema_json, names)))
    files = [(f.path, f.bytes_to_read) for f in plan.files]
    if len(files) > 1:
        with ThreadPoolExecutor(max_workers=min(4, len(files))) as pool:
            parts = list(pool.map(lambda f: _read_file(f[0], f[1], names, hash_columns, nulls),
                                  files))
    else:
        parts = [_read_file(path, length, names, hash_columns, nulls) for path, length in files]
    read_rows = sum(rows for _, rows in parts)
    merged = {}
    for i, name in enumerate(names):
        chunks = [chunk for arrays, _ in parts
                  for chunk in _chunks(conform_column(arrays[i], types[name]))]
        merged[name] = pa.chunked_array(chunks, types[name]).combine_chunks()
    weights = spark_hash([merged[c] for c in hash_columns]) if read_rows else \
        np.zeros(0, dtype=np.int32)
    keep = np.ones(len(weights), dtype=bool)
    if lo != MIN_WEIGHT:
        keep &= weights >= lo
    if hi is not None:
        keep &= weights < hi
    if nulls is not None:
        all_null = np.ones(len(weights), dtype=bool)
        for c in hash_columns:
            all_null &= merged[c].is_null().to_numpy(zero_copy_only=False)
        keep &= all_null if nulls else ~all_null
    mask = pa.array(keep)
    out = {"_met": pa.array(np.ones(int(keep.sum()), dtype=bool)),
           "_w": pa.array(weights[keep], pa.int32())}
    for i, g in enumerate(group_by):
        out[f"_g{i}"] = merged[g].filter(mask)
    for i, c in enumerate(columns):
        out[f"_v{i}"] = _as_double(merged[c].filter(mask))
    return pa.table(out), read_rows
