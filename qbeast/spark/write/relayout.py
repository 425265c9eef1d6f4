"""The Spark jobs of an optimize of an indexed revision: count every cube exactly, then rewrite.

An optimize keeps a revision's thresholds (so samples return the same rows) and only regroups
the rows into one block per cube. Unlike an append, it therefore needs no estimation: every row's
cube is known from its weight and the thresholds, so a first job counts the rows of each cube
exactly (:func:`exact_cube_sizes`) and the rollup groups cubes into files with those true sizes;
a second job writes the files with the writer's own assignment and staging
(:func:`rewrite_with_sizes`). Both live in the write wing because they are the writer's
internals (assignment UDF, weight column, plan); :mod:`qbeast.operations.optimize` only chooses
the files and commits.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qbeast.commit import WrittenFile
from qbeast.core.cube_id import CubeId
from qbeast.core.revision import Revision
from qbeast.core.sql import quote_identifier
from qbeast.index.assignment import build_write_plan
from qbeast.spark.file_access import FileAccess
from qbeast.spark.write.assignment_udf import assignment_udf, weight_column
from qbeast.spark.write.options import ASSIGNMENT_COLUMN, WEIGHT_COLUMN
from qbeast.spark.write.steps import weight_bands, write_files


def exact_cube_sizes(data: Any, revision: Revision, thresholds: Mapping[CubeId, int]) -> dict[CubeId, int]:
    """Rows per cube of ``data`` when assigned with ``thresholds`` (one grouped count job).

    Only the indexed columns and the weight cross to Python (the assignment UDF); the counts
    are summed by Spark, so only one row per cube reaches the driver. Cubes no row reaches are
    absent.
    """
    from pyspark.sql import functions as F

    dims = revision.dimension_count
    columns = list(revision.columns)
    indexed = [F.col(quote_identifier(c)) for c in columns]
    counting = build_write_plan(dims, dict(thresholds), {}, revision.desired_cube_size)
    weighted = data.select(*indexed, weight_column(columns).alias(WEIGHT_COLUMN))
    udf = assignment_udf(revision, counting)
    counted = (
        weighted.select(udf(*indexed, F.col(WEIGHT_COLUMN)).alias(ASSIGNMENT_COLUMN))
        .groupBy(F.col(f"{ASSIGNMENT_COLUMN}.cube").alias("cube"))
        .count()
        .collect()
    )
    return {CubeId.from_string(dims, counting.cube_and_threshold(int(r["cube"]))[0]): int(r["count"])
            for r in counted}


def rewrite_with_sizes(data: Any, revision: Revision, thresholds: Mapping[CubeId, int],
                       sizes: Mapping[CubeId, int], table_dir: str, access: FileAccess, *,
                       table_rows: int | None) -> list[WrittenFile]:
    """Write ``data`` into ``revision``'s cubes with the existing ``thresholds`` and the exact
    ``sizes`` of :func:`exact_cube_sizes`; nothing is committed.

    The files are grouped by the rollup over the true sizes and laid out in the session's weight
    bands; ``table_rows`` (the whole table's rows, not only the rewritten ones) decides which
    light bands share files, as for an append. No rows (empty ``sizes``): no files.
    ``access``: how the optimize reaches the table's files (decided once, when it started).
    """
    if not sizes:
        return []
    plan = build_write_plan(revision.dimension_count, dict(thresholds), dict(sizes),
                            revision.desired_cube_size,
                            weight_bands=weight_bands(data.sparkSession), table_rows=table_rows)
    return write_files(data, revision, plan, table_dir, access)


__all__ = ["exact_cube_sizes", "rewrite_with_sizes"]
