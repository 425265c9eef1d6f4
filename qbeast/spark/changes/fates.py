"""What happens to each row of an affected file: kept, updated in place, deleted, or moved.

A row-level change turns the rows of the files it rewrites into one DataFrame holding every
column (with the new values) plus the row's fate (``ACTION_COLUMN``) and its old file
(``ORIGIN_COLUMN``). From it the kept and updated rows are written back into their cubes
(:mod:`qbeast.spark.changes.rewrite`), and the moved rows — changed rows whose indexed columns
changed value, so their weight and cube changed — go to the indexed append with the inserts.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from qbeast.core import expressions as ex
from qbeast.core.sql import quote_identifier
from qbeast.errors import InvalidOptionError
from qbeast.spark.changes.rewrite import ORIGIN_COLUMN
from qbeast.spark.changes.scan import ChangeScan

if TYPE_CHECKING:
    import pyarrow as pa

    from qbeast.spark.write.local import CollectedRows

#: Internal column holding each row's fate.
ACTION_COLUMN = "_qbeast_action"

#: The fates of a row of an affected file.
KEEP, UPDATE_IN_PLACE, DELETE, MOVE = 0, 1, 2, 3
FATES = (KEEP, UPDATE_IN_PLACE, DELETE, MOVE)


def row_condition(job: ChangeScan, condition: str | ex.Expression | None) -> tuple[ex.Expression, Any]:
    """(pruning predicate, Spark condition true exactly for the matching rows) of a user's
    condition; SQL's null is not a match."""
    from pyspark.sql import functions as F

    from qbeast.spark.read.predicates import user_predicate

    if condition is None:
        return ex.AlwaysTrue(), F.lit(True)
    predicate, row_filter = user_predicate(job.snapshot, condition)
    column = F.expr(row_filter) if isinstance(row_filter, str) else row_filter
    return predicate, F.coalesce(column, F.lit(False))


def assignments(job: ChangeScan, values: Mapping[str, Any]) -> dict[str, Any]:
    """The new value of each column (given as SQL text or a pyspark Column), cast to its type."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    columns: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, str):
            column = F.expr(value)
        elif isinstance(value, Column):
            column = value
        else:
            raise InvalidOptionError(
                f"set[{name!r}] must be a SQL expression string or a pyspark Column, got {value!r}")
        columns[name] = column.cast(job.types[name])
    return columns


def with_fates(job: ChangeScan, rows: Any, hit: Any, new_values: Mapping[str, Any], *,
               deleted: Any) -> Any:
    """``rows`` (of :meth:`ChangeScan.scan_affected`) with the new values and each row's fate.

    A changed row moves to the indexed append when one of the indexed columns (of any revision
    of the affected files) changes its value; rows of staging files never move.
    """
    from pyspark.sql import functions as F

    revisions = job.snapshot.revisions
    indexed: list[str] = []
    for rid in sorted(revisions):
        for c in revisions[rid].columns:
            if c in new_values and c not in indexed:
                indexed.append(c)
    moved = F.lit(False)
    for c in indexed:
        moved = moved | ~new_values[c].eqNullSafe(F.col(quote_identifier(c)))
    if job.staging_origins:
        moved = moved & ~F.col(ORIGIN_COLUMN).isin(job.staging_origins)
    action = (F.when(~hit, F.lit(KEEP)).when(deleted, F.lit(DELETE))
              .when(moved, F.lit(MOVE)).otherwise(F.lit(UPDATE_IN_PLACE)))
    return rows.select(
        *[new_values[c].alias(c) if c in new_values else F.col(quote_identifier(c))
          for c in job.columns],
        F.col(ORIGIN_COLUMN), action.alias(ACTION_COLUMN))


def deleted_rows(job: ChangeScan, affected: Sequence[str], matches: Any) -> Any:
    """The fates of a delete: the matching rows of the affected files go, the others stay."""
    from pyspark.sql import functions as F

    rows = job.scan_affected(affected)
    return rows.withColumn(ACTION_COLUMN,
                           F.when(matches, F.lit(DELETE)).otherwise(F.lit(KEEP)))


def updated_rows(job: ChangeScan, affected: Sequence[str], matches: Any,
                 values: Mapping[str, Any]) -> Any:
    """The fates of an update: the matching rows of the affected files take ``values``."""
    from pyspark.sql import functions as F

    rows = job.scan_affected(affected)
    new_values = {c: F.when(matches, e).otherwise(F.col(quote_identifier(c)))
                  for c, e in values.items()}
    return with_fates(job, rows, matches, new_values, deleted=F.lit(False))


def rows_with_fates(job: ChangeScan, out: Any) -> Any:
    """Every row of the affected files with its origin and fate, as the rewrite takes them: it
    writes back the kept and updated-in-place rows and counts every fate in the same job
    (counting apart would read every row of the affected files once more)."""
    from pyspark.sql import functions as F

    return out.select(*[F.col(quote_identifier(c)) for c in job.columns], F.col(ORIGIN_COLUMN),
                      F.col(ACTION_COLUMN))


#: The fates whose rows are written back into their files.
WRITTEN_BACK = (KEEP, UPDATE_IN_PLACE)


def appended_rows(job: ChangeScan, out: Any | None, moved: bool, inserts: Any | None) -> Any | None:
    """The rows the indexed append writes: the moved ones (when ``moved``) and the inserts,
    persisted, for the append reads them three times (stats, estimation, write)."""
    from pyspark.sql import functions as F

    new_rows = None
    if out is not None and moved:
        new_rows = out.where(F.col(ACTION_COLUMN) == MOVE).select(
            *[F.col(quote_identifier(c)) for c in job.columns])
    if inserts is not None:
        new_rows = inserts if new_rows is None else new_rows.unionByName(inserts)
    return job.keep(new_rows) if new_rows is not None else None


#: The column that carries, in the one collect of a small replace_where source, whether each
#: row meets the condition.
INSIDE_COLUMN = "_qbeast_inside"


def collect_with_matches(rows: Any, matches: Any,
                         limit: int) -> tuple[CollectedRows, pa.ChunkedArray] | None:
    """``rows`` collected to the driver in one job with whether each meets ``matches`` (the
    never-null condition of :func:`row_condition`), when they are at most ``limit``:
    ``((table, partitions), inside)``, the first as :func:`qbeast.spark.write.local.collect_rows`
    gives it and ``inside`` a boolean Arrow column; None above the limit (or when a column of
    ``rows`` has the flag's name)."""
    from qbeast.spark.write import local

    if limit <= 0 or INSIDE_COLUMN in rows.columns:
        return None
    flagged = rows.select("*", matches.alias(INSIDE_COLUMN))
    collected = local.collect_rows(flagged, limit)
    if collected is None:
        return None
    table, partitions = collected
    return (table.drop_columns([INSIDE_COLUMN]), partitions), table.column(INSIDE_COLUMN)
