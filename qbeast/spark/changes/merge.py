"""The Spark jobs of the changes driven by a source DataFrame: merge and delete+insert.

Both cast the source to the table's columns, summarize its keys in one job (duplicates, and the
key range that prunes the target files), join it with the candidate files' rows to find the
matched target rows, and produce the fates of the affected files' rows and the rows to insert.
Merge keys compare with ``=``: a null key never matches (and its source row is inserted).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from qbeast.core import expressions as ex
from qbeast.core.sql import quote_identifier
from qbeast.delta.actions import AddFile
from qbeast.errors import InvalidOptionError
from qbeast.spark.changes.fates import with_fates
from qbeast.spark.changes.scan import ROW_COLUMN, URI_COLUMN, ChangeScan

logger = logging.getLogger("qbeast.spark.changes.merge")

#: Internal column marking the rows that met a source row.
MATCHED_COLUMN = "_qbeast_matched"


def _src(i: int) -> str:
    """Name of the ``i``-th source column in the join's output (avoids clashes with the target)."""
    return f"_qbeast_src_{i}"


def _not_null(keys: Sequence[str]) -> Any:
    from pyspark.sql import functions as F

    condition = F.lit(True)
    for k in keys:
        condition = condition & F.col(quote_identifier(k)).isNotNull()
    return condition


def table_rows(job: ChangeScan, rows: Any, source_columns: Sequence[str]) -> Any:
    """``rows`` (with the source's columns) as table rows: the columns it lacks are null."""
    from pyspark.sql import functions as F

    return rows.select(*[
        F.col(quote_identifier(c)) if c in source_columns
        else F.lit(None).cast(job.types[c]).alias(c) for c in job.columns])


def cast_to_table(job: ChangeScan, source: Any, names: Sequence[str]) -> Any:
    """``source`` with the table's column spelling (``names``, one per source column) and types."""
    from pyspark.sql import functions as F

    return source.select(*[F.col(quote_identifier(c)).cast(job.types[n]).alias(n)
                           for c, n in zip(source.columns, names)])


def source_key_range(job: ChangeScan, source: Any, keys: list[str], *,
                     unique: bool = True) -> ex.Expression:
    """Check that each non-null key occurs once in the source (when ``unique``: fail before
    anything is written) and return ``min <= key <= max`` over its keys: the target files the
    change can touch.

    One Spark job: the source grouped by key, then the largest group and the key ranges.
    """
    from pyspark.sql import functions as F

    path = job.snapshot.table_path
    grouped = source.where(_not_null(keys)).groupBy(*[quote_identifier(k) for k in keys]).count()
    aggregates = [F.max("count").alias("most"),
                  F.max_by(F.struct(*[quote_identifier(k) for k in keys]), "count").alias("key")]
    for i, k in enumerate(keys):
        aggregates += [F.min(quote_identifier(k)).alias(f"lo{i}"),
                       F.max(quote_identifier(k)).alias(f"hi{i}")]
    row = grouped.agg(*aggregates).collect()[0]
    if unique and row["most"] is not None and row["most"] > 1:
        raise duplicate_key_error(path, keys, row["most"],
                                  {k: row["key"][i] for i, k in enumerate(keys)})
    if row["most"] is None:  # every key null: nothing can match
        return ex.AlwaysFalse()
    return key_range_predicate(
        job, keys, lambda: [(row[f"lo{i}"], row[f"hi{i}"]) for i in range(len(keys))])


def duplicate_key_error(path: str, keys: Sequence[str], most: int,
                        key: dict[str, Any]) -> InvalidOptionError:
    """The error of a merge source with ``most`` rows for ``key`` (nothing is written yet)."""
    return InvalidOptionError(
        f"merge into {path}: the source has {most} rows for key {key}; each key "
        f"{list(keys)} may appear once in the source (deduplicate it first); nothing was written")


def key_range_predicate(job: ChangeScan, keys: Sequence[str],
                        bounds: Callable[[], Sequence[tuple[Any, Any]]]) -> ex.Expression:
    """``lo <= key <= hi`` for each key and its (lo, hi) from ``bounds()`` (asked only when the
    key types can prune), normalized for the planner; every file (``AlwaysTrue``) for key types
    whose collected values cannot prune."""
    from pyspark.sql import types as T

    from qbeast.spark.read.predicates import normalize_predicate

    prunable = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.StringType, T.DateType)
    if not all(isinstance(job.types[k], prunable) for k in keys):
        return ex.AlwaysTrue()  # e.g. timestamps: collected values lose their time zone
    terms: list[ex.Expression] = []
    for k, (lo, hi) in zip(keys, bounds()):
        terms += [ex.GreaterThanOrEqual(k, lo), ex.LessThanOrEqual(k, hi)]
    try:
        return normalize_predicate(ex.And(*terms), job.schema)
    except InvalidOptionError:  # a key type the planner cannot prune by: read every file
        logger.info("merge %s: keys %s cannot prune files; reading every file",
                    job.snapshot.table_path, list(keys))
        return ex.AlwaysTrue()


class MergeJoin:
    """A merge's join of the candidate files' rows (``target``) with the source (``source``).

    ``matched`` holds one row per matched pair: the target row's file and index, and every
    source column. It is small (a row per matched target row) and used for the affected files,
    the single-match check, the rewrite and the inserts, so it is computed once and persisted.
    """

    def __init__(self, job: ChangeScan, source: Any, source_columns: Sequence[str],
                 keys: list[str] | None, on: str, candidates: Sequence[AddFile],
                 target_predicate: str | None) -> None:
        from pyspark.sql import functions as F

        self.job, self.source, self.keys = job, source, keys
        self.source_columns = list(source_columns)
        if keys is None:
            condition = F.expr(on)
        else:
            condition = None
            for k in keys:
                term = (F.col(f"target.{quote_identifier(k)}")
                        == F.col(f"source.{quote_identifier(k)}"))
                condition = term if condition is None else condition & term
        self.condition = condition
        target = job.scan(candidates, row_index=True)
        if target_predicate is not None:
            target = target.where(F.expr(target_predicate))
        self.target = target.alias("target")
        self.aliased_source = source.alias("source")
        matched = self.target.join(self.aliased_source, condition, "inner").select(
            F.col(f"target.{URI_COLUMN}").alias(URI_COLUMN),
            F.col(f"target.{ROW_COLUMN}").alias(ROW_COLUMN),
            *[F.col(f"source.{quote_identifier(c)}").alias(_src(i))
              for i, c in enumerate(self.source_columns)],
        )
        self.matched = job.keep(matched)

    def check_single_match(self) -> None:
        """Fail when one target row matches two source rows (nothing is written yet)."""
        from pyspark.sql import functions as F

        dup = (self.matched.groupBy(URI_COLUMN, ROW_COLUMN).count().where(F.col("count") > 1)
               .limit(1).collect())
        if dup:
            raise InvalidOptionError(
                f"merge into {self.job.snapshot.table_path}: {dup[0]['count']} source rows "
                f"match one target row (file {dup[0][URI_COLUMN]}); each target row may match "
                "at most one source row; nothing was written")

    def fates(self, affected: Sequence[str], updated: Sequence[str], when_matched: str) -> Any:
        """The fates of the affected files' rows: matched rows take the source's ``updated``
        columns (``when_matched="update"``) or go (``"delete"``)."""
        from pyspark.sql import functions as F

        rows = self.job.scan_affected(affected, row_index=True)
        joined = rows.join(self.matched.withColumn(MATCHED_COLUMN, F.lit(True)),
                           [URI_COLUMN, ROW_COLUMN], "left")
        hit = F.coalesce(F.col(MATCHED_COLUMN), F.lit(False))
        position = {c: i for i, c in enumerate(self.source_columns)}
        new_values = ({c: F.when(hit, F.col(_src(position[c]))).otherwise(F.col(quote_identifier(c)))
                       for c in updated} if when_matched == "update" else {})
        return with_fates(self.job, joined, hit, new_values,
                          deleted=F.lit(when_matched == "delete"))

    def inserts(self) -> Any:
        """The source rows that matched no target row, as table rows."""
        from pyspark.sql import functions as F

        if self.keys is not None:  # the source rows whose key matched nothing
            matched_keys = self.matched.select(
                *[F.col(_src(self.source_columns.index(k))).alias(k) for k in self.keys]).distinct()
            anti = self.source.join(matched_keys, self.keys, "left_anti")
        else:
            anti = self.aliased_source.join(self.target, self.condition, "left_anti")
        return table_rows(self.job, anti, self.source_columns)


class KeyReplace:
    """A delete+insert: the target rows whose key occurs in the source go, every source row is
    inserted. The source's distinct non-null keys (small next to the target, used twice) are
    persisted."""

    def __init__(self, job: ChangeScan, source: Any, keys: list[str],
                 target_predicate: str | None) -> None:
        from pyspark.sql import functions as F

        self.job, self.source, self.keys = job, source, keys
        self.target_predicate = target_predicate
        self.source_keys = job.keep(
            source.where(_not_null(keys)).select(*[quote_identifier(k) for k in keys])
            .distinct().withColumn(MATCHED_COLUMN, F.lit(True)))

    def matching(self, candidates: Sequence[AddFile]) -> Any:
        """The candidate files' rows whose key occurs in the source (and meet the predicate)."""
        from pyspark.sql import functions as F

        target = self.job.scan(candidates)
        if self.target_predicate is not None:
            target = target.where(F.expr(self.target_predicate))
        return target.join(self.source_keys, self.keys, "left_semi")

    def fates(self, affected: Sequence[str]) -> Any:
        """The fates of the affected files' rows: those of a source key (and the predicate) go."""
        from pyspark.sql import functions as F

        rows = self.job.scan_affected(affected).join(self.source_keys, self.keys, "left")
        hit = F.coalesce(F.col(MATCHED_COLUMN), F.lit(False))
        if self.target_predicate is not None:
            hit = hit & F.coalesce(F.expr(self.target_predicate), F.lit(False))
        return with_fates(self.job, rows, hit, {}, deleted=F.lit(True))

    def inserts(self) -> Any:
        """Every source row, as table rows."""
        return table_rows(self.job, self.source, self.source.columns)
