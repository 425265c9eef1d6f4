"""Describing the data files a write produced: row counts, Delta stats and index blocks per file.

Describing files from what was written — not from a re-evaluation of the input — keeps blocks and
stats exact even for a non-deterministic input. Two ways, cheapest first:

* **from the footers** (:func:`describe_from_footers`): the assignment UDF counted each file's
  blocks while it ran (a ``BlockTally`` accumulator) and, with a ``FlagTally``, which float
  columns hold NaN or infinities; the Delta stats then come from the parquet footers alone.
* **by a scan** (:func:`describe_by_scan`): where no tally exists (Spark Connect) or it disagrees
  with the footers (a re-executed task counted twice), the staged files are read back, the UDF
  gives each row its cube again, and one grouped aggregate per (file, cube) yields the blocks and
  the per-column null counts and bounds.

Both apply the bound rules of :mod:`qbeast.delta.stats`. Nothing here writes or moves files
(:mod:`qbeast.spark.write.staging` does).
"""
from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from qbeast.core.blocks import Block
from qbeast.core.revision import Revision
from qbeast.core.sql import quote_identifier
from qbeast.delta.stats import STATS_COLUMN_LIMIT, footer_stats, has_min_max, is_described, stats_json
from qbeast.index.assignment import WritePlan
from qbeast.index.tally import BlockTally, FlagTally
from qbeast.spark.paths import spark_path
from qbeast.spark.write.assignment_udf import assignment_udf, weight_column
from qbeast.spark.write.options import CUBE_COLUMN, FILE_COLUMN, WEIGHT_COLUMN

#: Partition column of the staging write (a reserved column name, see ``write.options``).
STAGING_FILE_COLUMN = FILE_COLUMN

#: What describing a file yields: its row count, Delta stats JSON, blocks, and the float columns
#: holding NaN or infinities (their bounds are left out of the stats).
Described = tuple[int, str, tuple[Block, ...], frozenset[str]]


class StagedRows:
    """The rows of the staging write as a DataFrame with the file id as a column, either layout.

    ``partitionBy`` layouts carry the file id in their folder names; one-file-per-task layouts in
    the task number of their part file names (``part-<n>-...``), read from ``_metadata``.
    """

    def __init__(self, spark, schema, staging: str, plain: bool) -> None:
        self.spark, self.schema, self.staging, self.plain = spark, schema, staging, plain

    def has_files(self) -> bool:
        pattern = "part-*.parquet" if self.plain else f"{STAGING_FILE_COLUMN}=*"
        return os.path.isdir(self.staging) and bool(
            glob.glob(os.path.join(glob.escape(self.staging), pattern)))

    def frame(self, columns: Sequence[str] | None = None):
        from pyspark.sql import functions as F
        from pyspark.sql.types import IntegerType, StructField, StructType

        if self.plain:
            written = self.spark.read.schema(self.schema).parquet(spark_path(self.staging))
            task = F.regexp_extract(F.col("_metadata.file_name"), r"^part-(\d+)-", 1)
            written = written.withColumn(STAGING_FILE_COLUMN, task.cast("int"))
        else:
            read_schema = StructType(
                list(self.schema.fields) + [StructField(STAGING_FILE_COLUMN, IntegerType())])
            written = self.spark.read.schema(read_schema).parquet(spark_path(self.staging))
        if columns is not None:
            written = written.select(*[F.col(quote_identifier(c)) for c in columns],
                                     F.col(STAGING_FILE_COLUMN))
        return written


def stats_fields(schema: Any) -> list[tuple[str, bool, bool]]:
    """(name, has min/max, is floating) of the columns the Delta stats describe.

    The rule is :mod:`qbeast.delta.stats`'s, applied to the Arrow type of each Spark column, so a
    file described by this scan gets the same bounds as one described from its footer (e.g.
    ``timestamp_ntz`` columns are bounded by both). A type Arrow cannot hold gets no bounds.
    """
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    for field in schema.fields[:STATS_COLUMN_LIMIT]:
        try:
            kind = to_arrow_type(field.dataType, timezone="UTC")
        except Exception:  # noqa: BLE001 - a type without an Arrow form: counted, never bounded
            kind = pa.null()
        if not is_described(kind):
            continue
        fields.append((field.name, has_min_max(kind), pa.types.is_floating(kind)))
    return fields


def float_stats_columns(schema) -> list[str]:
    """The float columns the Delta stats describe, in the order of :func:`non_finite_mask`'s bits."""
    return [name for name, _, floating in stats_fields(schema) if floating]


def non_finite_mask(schema):
    """Per row, bit ``i`` set when the ``i``-th float column of the Delta stats is NaN or infinite.

    Computed by Spark next to the weight, it crosses to Python with the indexed columns (one
    long per row) so the assignment UDF can tell which files need their float bounds dropped.
    """
    from pyspark.sql import functions as F

    mask = F.lit(0).cast("long")
    for i, name in enumerate(float_stats_columns(schema)):
        bad = F.coalesce(_non_finite(F.col(quote_identifier(name))), F.lit(False))
        mask = mask.bitwiseOR(F.when(bad, F.lit(1 << i).cast("long")).otherwise(F.lit(0).cast("long")))
    return mask


def _non_finite(col):
    """NaN or an infinity (null for null): values parquet statistics cannot bound."""
    from pyspark.sql import functions as F

    return F.isnan(col) | (F.abs(col) == float("inf"))


def _blocks(found: list[tuple[int, Block]]) -> tuple[Block, ...]:
    """A file's blocks in a stable order: by the cube ids of :meth:`WritePlan.assign`."""
    return tuple(block for _, block in sorted(found, key=lambda item: item[0]))


def describe_from_footers(staged: StagedRows, parts: dict[int, str], plan: WritePlan,
                  tally: Any, flags: Any = None, *,
                  owners: np.ndarray | None = None) -> dict[int, Described] | None:
    """Per file id (rows, stats, blocks) from the tally and the footers; ``None`` if unusable.

    The tally and the flags count per plan file; with ``owners`` (plan file -> staging file, for
    band pieces written as runs of one file) a cube's counts over its pieces make one block.
    """
    if tally is None:
        return None
    counts = tally.value
    masks = flags.value if flags is not None else None
    if owners is not None:
        counts = BlockTally().rekeyed(counts, lambda key: (int(owners[key[0]]), key[1]))
        if masks is not None:
            masks = FlagTally().rekeyed(masks, lambda piece: int(owners[piece]))
    per_file: dict[int, list[tuple[int, Block]]] = {}
    for (file_id, cube_id), (count, low) in counts.items():
        per_file.setdefault(file_id, []).append((cube_id, plan.block(cube_id, count, low)))
    floats = float_stats_columns(staged.schema)  # the bit order of the flags
    if masks is not None:
        unsafe = {file_id: {n for i, n in enumerate(floats) if mask >> i & 1}
                  for file_id, mask in masks.items()}
    else:
        unsafe = _non_finite_columns(staged, floats)
    out: dict[int, Described] = {}
    for file_id, part in parts.items():
        meta = pq.ParquetFile(part).metadata
        blocks = per_file.get(file_id, [])
        if sum(b.element_count for _, b in blocks) != meta.num_rows:
            return None
        bad = frozenset(unsafe.get(file_id, set()))
        stats = footer_stats(meta, non_finite=bad)
        out[file_id] = (meta.num_rows, stats, _blocks(blocks), bad)
    return out


def _non_finite_columns(staged: StagedRows, names: list[str]) -> dict[int, set[str]]:
    """Per file id, the float columns holding NaN or infinities (parquet footers cannot tell)."""
    from pyspark.sql import functions as F

    if not names or not staged.has_files():
        return {}
    rows = (
        staged.frame(names)
        .groupBy(STAGING_FILE_COLUMN)
        .agg(*[F.max(_non_finite(F.col(quote_identifier(n))).cast("int")).alias(f"b{i}")
               for i, n in enumerate(names)])
        .collect()
    )
    return {r[STAGING_FILE_COLUMN]: {n for i, n in enumerate(names) if r[f"b{i}"]} for r in rows}


def describe_by_scan(staged: StagedRows, plan: WritePlan, revision: Revision) -> dict[int, Described]:
    """Per file id: (row count, Delta stats JSON, blocks), from one aggregate over the files."""
    from pyspark.sql import functions as F

    if not staged.has_files():
        return {}
    written = staged.frame()
    fields = stats_fields(staged.schema)
    indexed_columns = list(revision.columns)
    indexed = [F.col(quote_identifier(c)) for c in indexed_columns]
    assignment = assignment_udf(revision, plan)
    aggregates = [F.count(F.lit(1)).alias("n"), F.min(WEIGHT_COLUMN).alias("w_min")]
    for i, (field, bounded, floating) in enumerate(fields):
        col = F.col(quote_identifier(field))
        aggregates.append(F.count_if(col.isNull()).alias(f"n{i}"))
        if bounded:
            aggregates += [F.min(col).alias(f"lo{i}"), F.max(col).alias(f"hi{i}")]
        if floating:
            aggregates.append(F.max(_non_finite(col).cast("int"))
                              .alias(f"bad{i}"))
    grouped = (
        written.select("*", weight_column(indexed_columns).alias(WEIGHT_COLUMN))
        .select("*", assignment(*indexed, F.col(WEIGHT_COLUMN)).getField("cube").alias(CUBE_COLUMN))
        .groupBy(STAGING_FILE_COLUMN, CUBE_COLUMN).agg(*aggregates)
        .toArrow()
    )
    return _per_file(grouped, plan, [f for f, _, _ in fields])


def _per_file(grouped: pa.Table, plan: WritePlan, names: list[str]) -> dict[int, Described]:
    """Fold the (file, cube) aggregate rows into per-file counts, stats and blocks."""
    columns = {name: grouped.column(name).to_pylist() for name in grouped.column_names}
    files: dict[int, dict[str, Any]] = {}
    for r in range(grouped.num_rows):
        file_id = columns[STAGING_FILE_COLUMN][r]
        acc = files.setdefault(file_id, {"n": 0, "nulls": {}, "lo": {}, "hi": {}, "bad": set(),
                                         "blocks": []})
        count = columns["n"][r]
        acc["n"] += count
        cube_id = int(columns[CUBE_COLUMN][r])
        acc["blocks"].append((cube_id, plan.block(cube_id, count, int(columns["w_min"][r]))))
        for i, name in enumerate(names):
            acc["nulls"][name] = acc["nulls"].get(name, 0) + columns[f"n{i}"][r]
            bad = columns.get(f"bad{i}")
            if bad is not None and bad[r]:
                acc["bad"].add(name)
            low, high = columns.get(f"lo{i}"), columns.get(f"hi{i}")
            if low is None or high is None or low[r] is None:
                continue
            acc["lo"][name] = low[r] if name not in acc["lo"] else min(acc["lo"][name], low[r])
            acc["hi"][name] = high[r] if name not in acc["hi"] else max(acc["hi"][name], high[r])
    fields = [grouped.schema.field(f"lo{i}").with_name(name) if f"lo{i}" in columns
              else pa.field(name, pa.null()) for i, name in enumerate(names)]
    out: dict[int, Described] = {}
    for file_id, acc in files.items():
        lows = {k: v for k, v in acc["lo"].items() if k not in acc["bad"]}
        highs = {k: v for k, v in acc["hi"].items() if k not in acc["bad"]}
        stats = stats_json(fields, acc["n"], acc["nulls"], lows, highs)
        out[file_id] = (acc["n"], stats, _blocks(acc["blocks"]), frozenset(acc["bad"]))
    return out
