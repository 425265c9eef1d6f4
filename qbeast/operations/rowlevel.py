"""Row-level changes on a Qbeast table: ``delete``, ``update`` and ``merge`` (copy-on-write).

Each operation is one atomic Delta commit (``dataChange=true``) that removes the files holding
affected rows and adds their replacements, plus the indexed append of new rows:

1. **candidates** — the read planner prunes the files the condition (or, for a merge, the
   range of the source's keys and the optional ``target_predicate``) cannot touch: OTree walk on
   the indexed columns, Delta min/max stats on every column. The candidates are the files the
   operation *reads*; a concurrent commit that removes one of them makes this one fail with
   :class:`qbeast.delta.errors.ConcurrentDeleteReadError` (retry the operation). Concurrent blind
   appends do not conflict.
2. **affected files** — a Spark job finds which candidates actually hold matching rows; only
   those are rewritten.
3. **rewrite** — each affected file is replaced by one file holding its remaining rows (updated
   in place when the indexed columns keep their values), every row in the cube it was written
   to, the blocks recounted (:mod:`qbeast.spark.changes.rewrite`, :mod:`qbeast.index.file_blocks`).
   Staging files stay staging files.
4. **append** — inserted rows, and updated rows whose indexed columns changed (their weight and
   cube change), go through the indexed append (:func:`qbeast.spark.write.steps.index_rows`),
   which opens a new revision when they grow the indexed space.
5. **commit** — removes, adds and (for a new revision) metadata in one transaction
   (:func:`qbeast.commit.commit_files`: a failed commit deletes the new files), with the
   operation's metrics in ``commitInfo``.

Null semantics follow SQL: a row is deleted or updated only where the condition is true (not
null); merge keys compare with ``=``, so a null key never matches and its source row is inserted.
A merge whose source has two rows for one key (or that matches one target row twice) fails
before anything is written.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qbeast.commit import WrittenFile, add_file, commit_files
from qbeast.core import expressions as ex
from qbeast.core.columns import engine_metadata_columns, without_engine_metadata
from qbeast.core.revision import updated_configuration
from qbeast.core.sql import quote_identifier
from qbeast.delta.actions import AddFile
from qbeast.delta.storage import local_path
from qbeast.errors import InvalidOptionError, check_cancelled
from qbeast.index.file_blocks import settle_empty_blocks
from qbeast.operations.common import OperationResult, check_path
from qbeast.progress import Phase
from qbeast.snapshot import NotAQbeastTableError, QbeastSnapshot

logger = logging.getLogger("qbeast.operations.rowlevel")

#: Internal columns of the operations' Spark plans (user columns may not use them).
URI_COLUMN = "_qbeast_file_uri"
ROW_COLUMN = "_qbeast_row_index"
ACTION_COLUMN = "_qbeast_action"
MATCHED_COLUMN = "_qbeast_matched"

#: What happens to a row of an affected file.
KEEP, UPDATE_IN_PLACE, DELETE, MOVE = 0, 1, 2, 3

WHEN_MATCHED = ("update", "delete")
WHEN_NOT_MATCHED = ("insert",)


@dataclass(frozen=True)
class RowLevelResult(OperationResult):
    """What a delete, update or merge committed (``version`` is None when nothing changed)."""

    path: str
    operation: str
    version: int | None
    rows_deleted: int
    rows_updated: int
    rows_inserted: int
    rows_copied: int
    files_removed: int
    files_added: int
    bytes_removed: int
    bytes_added: int
    revision_id: int | None = None

    def summary_lines(self) -> list[str]:
        if self.version is None:
            return [f"{self.operation.lower()} of {self.path}: no row changed, nothing committed"]
        return [
            f"{self.operation.lower()} of {self.path}: version {self.version}",
            f"  rows: {self.rows_deleted} deleted, {self.rows_updated} updated, "
            f"{self.rows_inserted} inserted, {self.rows_copied} copied unchanged",
            f"  files: {self.files_removed} removed ({self.bytes_removed} bytes rewritten), "
            f"{self.files_added} added ({self.bytes_added} bytes)",
        ]


# -- public entry points ----------------------------------------------------------------------------


def delete_rows(spark: Any, path: str, condition: str | ex.Expression | None = None) -> RowLevelResult:
    """Delete the rows where ``condition`` (SQL text or a core expression) is true; all if None."""
    op = _Operation.start(spark, path, "DELETE")
    predicate, matches = op.condition(condition)
    candidates = op.candidates(predicate)
    scan = op.scan(candidates)
    affected = op.affected_uris(scan.where(matches))
    out = None
    if affected:
        rows = op.scan_affected(affected)
        out = rows.withColumn(ACTION_COLUMN, _when(matches, DELETE, KEEP))
    return op.finish(candidates, affected, out, None,
                     parameters={"predicate": _describe(condition)})


def update_rows(spark: Any, path: str, condition: str | ex.Expression | None,
                set: Mapping[str, Any]) -> RowLevelResult:  # noqa: A002 - Delta's name
    """Set columns (``{column: SQL expression text or Column}``) of the rows where ``condition``."""
    from pyspark.sql import functions as F

    op = _Operation.start(spark, path, "UPDATE")
    if not isinstance(set, Mapping) or not set:
        raise InvalidOptionError(
            f"update needs set={{column: expression}} with at least one column of "
            f"{op.columns}, got {set!r}")
    assignments = {op.column_name(name, "set"): _to_column(expr, name) for name, expr in set.items()}
    predicate, matches = op.condition(condition)
    candidates = op.candidates(predicate)
    affected = op.affected_uris(op.scan(candidates).where(matches))
    out = None
    if affected:
        rows = op.scan_affected(affected)
        new_values = {c: F.when(matches, e.cast(op.types[c])).otherwise(F.col(quote_identifier(c)))
                      for c, e in assignments.items()}
        out = op.apply_changes(rows, matches, new_values, deleted=F.lit(False))
    return op.finish(candidates, affected, out, None,
                     parameters={"predicate": _describe(condition),
                                 "set": {c: _describe(e) for c, e in set.items()}})


def merge_rows(
    spark: Any,
    path: str,
    source: Any,
    on: str | Sequence[str],
    *,
    when_matched: str | None = "update",
    when_not_matched: str | None = "insert",
    update_columns: Sequence[str] | None = None,
    exclude_columns: Sequence[str] | None = None,
    target_predicate: str | None = None,
    user_metadata: str | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> RowLevelResult:
    """Upsert ``source`` (a DataFrame) into the table (see ``QbeastTable.merge``)."""
    from pyspark.sql import functions as F

    op = _Operation.start(spark, path, "MERGE", user_metadata=user_metadata, cancelled=cancelled)
    if when_matched not in (*WHEN_MATCHED, None):
        raise InvalidOptionError(
            f"when_matched must be one of {list(WHEN_MATCHED)} or None, got {when_matched!r}")
    if when_not_matched not in (*WHEN_NOT_MATCHED, None):
        raise InvalidOptionError(
            f"when_not_matched must be one of {list(WHEN_NOT_MATCHED)} or None, "
            f"got {when_not_matched!r}")
    source_columns = [op.column_name(c, "the merge source") for c in source.columns]
    keys: list[str] | None = None
    if isinstance(on, str) and not _is_condition(on, op.columns):
        on = [on]
    if isinstance(on, str):
        condition = F.expr(on)
    elif isinstance(on, Sequence) and on and all(isinstance(k, str) for k in on):
        keys = _key_columns(op, on)
        _require_keys_in_source(keys, source_columns, "merge key(s)")
        condition = None
        for k in keys:
            term = F.col(f"target.{quote_identifier(k)}") == F.col(f"source.{quote_identifier(k)}")
            condition = term if condition is None else condition & term
    else:
        raise InvalidOptionError(
            "on must be a list of key columns (e.g. ['id']) or a SQL condition over the aliases "
            f"target and source (e.g. 'target.id = source.id'), got {on!r}")
    updated = _update_columns(op, source_columns, update_columns, exclude_columns)
    source = _cast_to_table(op, source, source_columns)
    predicate: ex.Expression = ex.AlwaysTrue()
    if target_predicate is not None:
        predicate = op.condition(target_predicate)[0]
    if keys is not None:
        predicate = ex.And(predicate, _source_keys(source, keys, op))
    candidates = op.candidates(predicate)
    target = op.scan(candidates, row_index=True)
    if target_predicate is not None:
        target = target.where(F.expr(target_predicate))
    t, s = target.alias("target"), source.alias("source")
    matched = t.join(s, condition, "inner").select(
        F.col(f"target.{URI_COLUMN}").alias(URI_COLUMN),
        F.col(f"target.{ROW_COLUMN}").alias(ROW_COLUMN),
        *[F.col(f"source.{quote_identifier(c)}").alias(_src(i)) for i, c in enumerate(source_columns)],
    )
    affected: list[str] = []
    out = None
    # the matches are small (a row per matched target row): computed once, used for the
    # affected files, the single-match check, the rewrite and the inserts
    matched = op.keep(matched)
    if keys is None:
        try:
            _check_single_match(op.path, matched)
        except InvalidOptionError:
            op.release()
            raise
    if when_matched is not None:
        affected = op.affected_uris(matched)
    if affected:
        rows = op.scan_affected(affected, row_index=True)
        joined = rows.join(
            matched.withColumn(MATCHED_COLUMN, F.lit(True)), [URI_COLUMN, ROW_COLUMN], "left")
        hit = F.coalesce(F.col(MATCHED_COLUMN), F.lit(False))
        position = {c: i for i, c in enumerate(source_columns)}
        new_values = {c: F.when(hit, F.col(_src(position[c]))).otherwise(F.col(quote_identifier(c)))
                      for c in updated} if when_matched == "update" else {}
        out = op.apply_changes(joined, hit, new_values, deleted=F.lit(when_matched == "delete"))
    inserts = None
    if when_not_matched == "insert":
        if keys is not None:  # the source rows whose key matched nothing
            matched_keys = matched.select(
                *[F.col(_src(source_columns.index(k))).alias(k) for k in keys]).distinct()
            anti = source.join(matched_keys, keys, "left_anti")
        else:
            anti = s.join(t, condition, "left_anti")
        inserts = anti.select(*[
            F.col(quote_identifier(c)) if c in source_columns
            else F.lit(None).cast(op.types[c]).alias(c) for c in op.columns])
    parameters = {"matchedPredicates": when_matched or "none",
                  "notMatchedPredicates": when_not_matched or "none",
                  "on": on if isinstance(on, str) else list(on)}
    if target_predicate is not None:
        parameters["targetPredicate"] = target_predicate
    return op.finish(candidates, affected, out, inserts, parameters=parameters)


def delete_insert_rows(
    spark: Any,
    path: str,
    source: Any,
    on: str | Sequence[str],
    *,
    target_predicate: str | None = None,
    user_metadata: str | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> RowLevelResult:
    """Delete the target rows whose key occurs in ``source``, append every source row: one commit.

    dbt's ``delete+insert``: unlike a merge, the source may hold several rows per key (all are
    inserted) and a target row whose key is in the source is removed even when the source row
    is identical. Keys compare with ``=`` (a null key deletes nothing); ``target_predicate``
    (SQL on the target's columns) limits the rows that can be deleted, and the files read.
    """
    from pyspark.sql import functions as F

    op = _Operation.start(spark, path, "DELETE_INSERT", user_metadata=user_metadata,
                          cancelled=cancelled)
    keys = _key_columns(op, on)
    source_columns = [op.column_name(c, "the source") for c in source.columns]
    _require_keys_in_source(keys, source_columns, "key column(s)")
    source = _cast_to_table(op, source, source_columns)
    predicate: ex.Expression = ex.AlwaysTrue()
    if target_predicate is not None:
        predicate = op.condition(target_predicate)[0]
    predicate = ex.And(predicate, _source_keys(source, keys, op, unique=False))
    candidates = op.candidates(predicate)
    # the distinct non-null keys of the source: small next to the target, used twice
    not_null = F.lit(True)
    for k in keys:
        not_null = not_null & F.col(quote_identifier(k)).isNotNull()
    source_keys = op.keep(source.where(not_null).select(*[quote_identifier(k) for k in keys])
                          .distinct().withColumn(MATCHED_COLUMN, F.lit(True)))
    target = op.scan(candidates)
    if target_predicate is not None:
        target = target.where(F.expr(target_predicate))
    affected = op.affected_uris(target.join(source_keys, keys, "left_semi"))
    out = None
    if affected:
        rows = op.scan_affected(affected).join(source_keys, keys, "left")
        hit = F.coalesce(F.col(MATCHED_COLUMN), F.lit(False))
        if target_predicate is not None:
            hit = hit & F.coalesce(F.expr(target_predicate), F.lit(False))
        out = op.apply_changes(rows, hit, {}, deleted=F.lit(True))
    inserts = source.select(*[
        F.col(quote_identifier(c)) if c in source.columns
        else F.lit(None).cast(op.types[c]).alias(c) for c in op.columns])
    parameters: dict[str, Any] = {"on": keys}
    if target_predicate is not None:
        parameters["targetPredicate"] = target_predicate
    return op.finish(candidates, affected, out, inserts, parameters=parameters)


def _key_columns(op: _Operation, on: str | Sequence[str]) -> list[str]:
    """Key column names of ``on`` (one name or a list) in the table's spelling."""
    names = [on] if isinstance(on, str) else on
    if not isinstance(names, Sequence) or not names or not all(isinstance(k, str) for k in names):
        raise InvalidOptionError(f"on must be a key column or a non-empty list of key columns "
                                 f"(e.g. ['id']), got {on!r}")
    keys: list[str] = []
    for k in names:
        name = op.column_name(k, "on")
        if name not in keys:
            keys.append(name)
    return keys


def _require_keys_in_source(keys: Sequence[str], source_columns: Sequence[str], label: str) -> None:
    """Fail, naming ``label`` (e.g. ``merge key(s)``), when a key is not a column of the source."""
    missing = [k for k in keys if k not in source_columns]
    if missing:
        raise InvalidOptionError(f"{label} {missing} are not columns of the source "
                                 f"(source columns: {list(source_columns)})")


def _cast_to_table(op: _Operation, source: Any, names: Sequence[str]) -> Any:
    """``source`` with the table's column spelling (``names``, one per source column) and types."""
    from pyspark.sql import functions as F

    return source.select(*[F.col(quote_identifier(c)).cast(op.types[n]).alias(n)
                           for c, n in zip(source.columns, names)])


# -- the shared machinery ----------------------------------------------------------------------------


@dataclass
class _Operation:
    """One row-level operation on one snapshot: its scans, its changes and its commit."""

    spark: Any
    snapshot: QbeastSnapshot
    name: str
    schema: Any  # StructType
    started: float
    #: origins (see scan_affected) of staging files: their rows never move to the index
    staging_origins: list[int] = dataclasses.field(default_factory=list)
    #: DataFrames persisted for the operation, unpersisted when it ends
    persisted: list[Any] = dataclasses.field(default_factory=list)
    #: stored as the commit's ``commitInfo.userMetadata`` (e.g. which dbt model wrote it)
    user_metadata: str | None = None
    #: checked right before the commit: when it returns True, nothing is committed
    cancelled: Callable[[], bool] | None = None

    def release(self) -> None:
        """Unpersist what :meth:`keep` persisted."""
        while self.persisted:
            self.persisted.pop().unpersist()

    def keep(self, df: Any) -> Any:
        """``df`` persisted (memory, then disk) until the operation ends."""
        from pyspark import StorageLevel

        kept = df.persist(StorageLevel.MEMORY_AND_DISK)
        self.persisted.append(kept)
        return kept

    @classmethod
    def start(cls, spark: Any, path: str, name: str, *, user_metadata: str | None = None,
              cancelled: Callable[[], bool] | None = None) -> _Operation:
        from pyspark.sql.types import StructType

        check_path(path)
        snapshot = QbeastSnapshot.load(path)
        if not snapshot.is_qbeast:
            raise NotAQbeastTableError(
                f"{name.lower()} needs a Qbeast table, but {snapshot.table_path} has no Qbeast "
                "metadata; convert it with qbeast.convert_to_qbeast first")
        snapshot.delta.check_writable()
        if snapshot.needs_upgrade:
            raise InvalidOptionError(
                f"{snapshot.table_path} still holds pre-0.6 Qbeast metadata; run "
                f"qbeast.upgrade_format on it before a {name.lower()}")
        schema = StructType.fromJson(snapshot.delta.schema)
        return cls(spark, snapshot, name, schema, time.perf_counter(),
                   user_metadata=user_metadata, cancelled=cancelled)

    @property
    def path(self) -> str:
        return self.snapshot.table_path

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.schema.fields]

    @property
    def types(self) -> dict[str, Any]:
        return {f.name: f.dataType for f in self.schema.fields}

    def phase(self, name: str) -> Phase:
        return Phase(logger, self.name.lower(), self.path, name)

    def column_name(self, name: Any, what: str) -> str:
        """The table's spelling of ``name`` (case-insensitive, as Spark SQL resolves)."""
        if isinstance(name, str):
            for column in self.columns:
                if column.lower() == name.lower():
                    return column
        raise InvalidOptionError(
            f"{name!r} in {what} is not a column of {self.path}; columns: {self.columns}")

    def condition(self, condition: Any) -> tuple[ex.Expression, Any]:
        """(pruning predicate, Spark condition that is true exactly for matching rows)."""
        from pyspark.sql import functions as F

        from qbeast.spark.read.predicates import user_predicate

        if condition is None:
            return ex.AlwaysTrue(), F.lit(True)
        predicate, row_filter = user_predicate(self.snapshot, condition)
        column = F.expr(row_filter) if isinstance(row_filter, str) else row_filter
        return predicate, F.coalesce(column, F.lit(False))

    def candidates(self, predicate: ex.Expression) -> list[AddFile]:
        """The files the read planner keeps for ``predicate`` (every revision, staging too)."""
        from qbeast.spark.read.planner import plan_read

        phase = self.phase("candidates")
        plan = plan_read(self.snapshot, predicate=predicate)
        wanted = {os.path.normpath(f.path) for f in plan.files}
        chosen = [a for a in self.snapshot.files()
                  if os.path.normpath(self.snapshot.delta.file_path(a)) in wanted]
        phase.done(files=len(chosen), of=self.snapshot.delta.num_files)
        return chosen

    def scan(self, files: Sequence[AddFile], row_index: bool = False) -> Any:
        """The rows of ``files`` with the file they come from (and their index in it)."""
        from pyspark.sql import functions as F

        if not files:
            extra = [F.lit(None).cast("string").alias(URI_COLUMN)]
            if row_index:
                extra.append(F.lit(None).cast("long").alias(ROW_COLUMN))
            return self.spark.createDataFrame([], self.schema).select("*", *extra)
        paths = [self.snapshot.delta.file_path(a) for a in files]
        df = self.spark.read.schema(self.schema).parquet(*paths)
        extra = [F.col("_metadata.file_path").alias(URI_COLUMN)]
        if row_index:
            extra.append(F.col("_metadata.row_index").alias(ROW_COLUMN))
        return df.select(*[F.col(quote_identifier(c)) for c in self.columns], *extra)

    def affected_uris(self, matching: Any) -> list[str]:
        """The files (as the scan names them) holding at least one matching row."""
        phase = self.phase("affected files")
        uris = sorted(r[0] for r in matching.select(URI_COLUMN).distinct().collect())
        phase.done(files=len(uris))
        return uris

    def add_of(self, uri: str) -> AddFile:
        by_path = getattr(self, "_by_path", None)
        if by_path is None:
            by_path = {os.path.normpath(self.snapshot.delta.file_path(a)): a
                       for a in self.snapshot.files()}
            self._by_path = by_path
        return by_path[os.path.normpath(local_path(uri))]

    def scan_affected(self, uris: Sequence[str], row_index: bool = False) -> Any:
        """The rows of the affected files, each with its origin (index into ``uris``)."""
        from pyspark.sql import functions as F

        from qbeast.spark.changes.rewrite import ORIGIN_COLUMN

        adds = [self.add_of(u) for u in uris]
        self.staging_origins = [i for i, a in enumerate(adds) if self.snapshot.revision_of(a) == 0]
        rows = self.scan(adds, row_index=True)
        origins = self.spark.createDataFrame(list(enumerate(uris)), f"{ORIGIN_COLUMN} int, {URI_COLUMN} string")
        rows = rows.join(F.broadcast(origins), URI_COLUMN)
        return rows if row_index else rows.drop(ROW_COLUMN)

    def apply_changes(self, rows: Any, hit: Any, new_values: Mapping[str, Any], *, deleted: Any) -> Any:
        """``rows`` with the new values and each row's action (keep, update, delete, move).

        A changed row moves to the indexed append when one of the indexed columns (of any
        revision of the affected files) changes its value; rows of staging files never move.
        """
        from pyspark.sql import functions as F

        from qbeast.spark.changes.rewrite import ORIGIN_COLUMN

        indexed: list[str] = []
        for rid in sorted(self.snapshot.revisions):
            for c in self.snapshot.revisions[rid].columns:
                if c in new_values and c not in indexed:
                    indexed.append(c)
        staging = self.staging_origins
        moved = F.lit(False)
        for c in indexed:
            moved = moved | ~new_values[c].eqNullSafe(F.col(quote_identifier(c)))
        if staging:
            moved = moved & ~F.col(ORIGIN_COLUMN).isin(staging)
        action = (F.when(~hit, F.lit(KEEP)).when(deleted, F.lit(DELETE))
                  .when(moved, F.lit(MOVE)).otherwise(F.lit(UPDATE_IN_PLACE)))
        return rows.select(
            *[new_values[c].alias(c) if c in new_values else F.col(quote_identifier(c))
              for c in self.columns],
            F.col(ORIGIN_COLUMN), action.alias(ACTION_COLUMN))

    def finish(self, candidates: list[AddFile], affected: list[str], out: Any, inserts: Any,
               *, parameters: dict[str, Any]) -> RowLevelResult:
        """Rewrite the affected files, append the new rows, commit; the operation's result."""
        from pyspark.sql import functions as F

        from qbeast.spark.changes.rewrite import ORIGIN_COLUMN, RewriteTarget, rewrite_files
        from qbeast.spark.write.steps import index_rows

        snapshot = self.snapshot
        table_dir = snapshot.delta.log.table_path
        removed = [self.add_of(u) for u in affected]
        targets = [RewriteTarget(i, a.path, snapshot.revision_of(a), tuple(snapshot.blocks(a)))
                   for i, a in enumerate(removed)]
        counts = {KEEP: 0, UPDATE_IN_PLACE: 0, DELETE: 0, MOVE: 0}
        rewritten: dict[int, WrittenFile] = {}
        appended = None
        try:
            if out is not None:
                # not persisted: caching every row of the affected files costs more than
                # scanning them again; the counts come from the changed rows only
                phase = self.phase("changes")
                changed = out.where(F.col(ACTION_COLUMN) != KEEP)
                for r in changed.groupBy(ACTION_COLUMN).count().collect():
                    counts[int(r[0])] = int(r[1])
                phase.done(updated=counts[UPDATE_IN_PLACE], deleted=counts[DELETE],
                           moved=counts[MOVE])
                phase = self.phase("rewrite")
                remaining = out.where(F.col(ACTION_COLUMN).isin(KEEP, UPDATE_IN_PLACE)).select(
                    *[F.col(quote_identifier(c)) for c in self.columns], F.col(ORIGIN_COLUMN))
                rewritten = rewrite_files(remaining, targets, snapshot.revisions, table_dir)
                counts[KEEP] = sum(w.num_records for w in rewritten.values()) - counts[UPDATE_IN_PLACE]
                phase.done(files=len(rewritten), removed=len(removed),
                           rows=counts[KEEP] + counts[UPDATE_IN_PLACE])
            new_rows = None
            if out is not None and counts[MOVE]:
                new_rows = out.where(F.col(ACTION_COLUMN) == MOVE).select(
                    *[F.col(quote_identifier(c)) for c in self.columns])
            if inserts is not None:
                new_rows = inserts if new_rows is None else new_rows.unionByName(inserts)
            if new_rows is not None:
                # the append reads its input three times (stats, estimation, write)
                new_rows = self.keep(new_rows)
                appended = index_rows(self.spark, new_rows, snapshot, table_dir)
            inserted = (appended.rows - counts[MOVE]) if appended is not None else 0
            return self._commit(candidates, targets, rewritten, appended, parameters,
                                counts, inserted)
        except BaseException:
            _delete_written(table_dir, list(rewritten.values()) +
                            (list(appended.written) if appended is not None else []))
            raise
        finally:
            self.release()

    def _commit(self, candidates: list[AddFile], targets: list[Any],
                rewritten: dict[int, WrittenFile], appended: Any, parameters: dict[str, Any],
                counts: dict[int, int], inserted: int) -> RowLevelResult:
        snapshot = self.snapshot
        table_dir = snapshot.delta.log.table_path
        removed = [snapshot.delta.files[t.path] for t in targets]
        adds: list[AddFile] = []
        for rid in sorted({t.revision_id for t in targets}):
            mine = [t for t in targets if t.revision_id == rid]
            if rid == 0:
                adds += [add_file(rewritten[t.origin], 0) for t in mine if t.origin in rewritten]
                continue
            gone = {t.path for t in mine}
            others = [b for a in snapshot.revision_files(rid) if a.path not in gone
                      for b in snapshot.blocks(a)]
            if appended is not None and appended.revision.revision_id == rid:
                others += [b for w in appended.written for b in w.blocks]
            recounted = {str(t.origin): (rewritten[t.origin].blocks if t.origin in rewritten
                                         else _all_empty(t.blocks)) for t in mine}
            settled = settle_empty_blocks(snapshot.revision(rid).dimension_count, recounted, others)
            for t in mine:
                blocks = settled[str(t.origin)]
                if t.origin in rewritten:
                    adds.append(add_file(dataclasses.replace(rewritten[t.origin], blocks=blocks), rid))
                elif blocks:  # every row gone, but a block must stay: an empty file carries it
                    adds.append(add_file(_empty_file(table_dir, self.schema, t.origin, blocks), rid))
        metadata = None
        if engine_metadata_columns(snapshot.delta.schema):  # left by an older version: dropped
            metadata = dataclasses.replace(
                snapshot.delta.metadata,
                schema_string=json.dumps(without_engine_metadata(snapshot.delta.schema)))
        if appended is not None:
            adds += [add_file(w, appended.revision.revision_id) for w in appended.written]
            if appended.new_revision:
                metadata = dataclasses.replace(
                    metadata or snapshot.delta.metadata,
                    configuration=updated_configuration(snapshot.configuration, appended.revision))
        result = RowLevelResult(
            path=self.path, operation=self.name, version=None, rows_deleted=counts[DELETE],
            rows_updated=counts[UPDATE_IN_PLACE] + counts[MOVE], rows_inserted=inserted,
            rows_copied=counts[KEEP], files_removed=len(removed), files_added=len(adds),
            bytes_removed=sum(int(a.size or 0) for a in removed),
            bytes_added=sum(int(a.size or 0) for a in adds),
            revision_id=appended.revision.revision_id if appended is not None else None,
        )
        if not removed and not adds:
            logger.info("%s %s: nothing to change, no commit", self.name.lower(), self.path)
            return result
        phase = self.phase("commit")
        transaction = snapshot.delta.log.start_transaction(snapshot.delta)
        if metadata is not None:
            transaction.update_metadata(metadata)
        transaction.mark_files_read(a.path for a in candidates)
        transaction.add_actions([a.remove(data_change=True) for a in removed])
        metrics = {
            "numDeletedRows": counts[DELETE], "numUpdatedRows": result.rows_updated,
            "numInsertedRows": inserted, "numCopiedRows": counts[KEEP],
            "numRemovedFiles": len(removed), "numAddedFiles": len(adds),
            "numRemovedBytes": result.bytes_removed, "numAddedBytes": result.bytes_added,
            "numCandidateFiles": len(candidates),
        }
        version = commit_files(
            transaction, adds, operation=self.name, parameters=parameters, metrics=metrics,
            info={"userMetadata": self.user_metadata} if self.user_metadata is not None else None,
            before_commit=lambda: check_cancelled(
                self.cancelled, f"{self.name.lower()} of {self.path}", "the commit"))
        phase.done(version=version, removed=len(removed), added=len(adds))
        logger.info("%s %s: finished version=%d elapsed=%.2fs", self.name.lower(), self.path,
                    version, time.perf_counter() - self.started)
        return dataclasses.replace(result, version=version)


# -- helpers --------------------------------------------------------------------------------------


def _when(condition: Any, yes: int, no: int) -> Any:
    from pyspark.sql import functions as F

    return F.when(condition, F.lit(yes)).otherwise(F.lit(no))


def _src(i: int) -> str:
    return f"_qbeast_src_{i}"


def _describe(value: Any) -> str:
    return "true" if value is None else str(value)


def _to_column(value: Any, name: str) -> Any:
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(value, str):
        return F.expr(value)
    if isinstance(value, Column):
        return value
    raise InvalidOptionError(
        f"set[{name!r}] must be a SQL expression string or a pyspark Column, got {value!r}")


def _is_condition(text: str, columns: Sequence[str]) -> bool:
    """A string ``on`` is one key column when it names a column, else a SQL condition."""
    return text.lower() not in {c.lower() for c in columns}


def _update_columns(op: _Operation, source_columns: list[str], include: Sequence[str] | None,
                    exclude: Sequence[str] | None) -> list[str]:
    if include is not None and exclude is not None:
        raise InvalidOptionError("give update_columns or exclude_columns, not both")
    if include is not None:
        chosen = [op.column_name(c, "update_columns") for c in include]
        missing = [c for c in chosen if c not in source_columns]
        if missing:
            raise InvalidOptionError(f"update_columns {missing} are not columns of the merge "
                                     f"source (source columns: {source_columns})")
        return chosen
    excluded = {op.column_name(c, "exclude_columns") for c in (exclude or [])}
    return [c for c in source_columns if c not in excluded]


def _check_single_match(path: str, matched: Any) -> None:
    from pyspark.sql import functions as F

    dup = (matched.groupBy(URI_COLUMN, ROW_COLUMN).count().where(F.col("count") > 1)
           .limit(1).collect())
    if dup:
        raise InvalidOptionError(
            f"merge into {path}: {dup[0]['count']} source rows match one target row (file "
            f"{dup[0][URI_COLUMN]}); each target row may match at most one source row; "
            "nothing was written")


def _source_keys(source: Any, keys: list[str], op: _Operation, unique: bool = True) -> ex.Expression:
    """Check that each non-null key occurs once in the source (when ``unique``: fail before
    anything is written) and return ``min <= key <= max`` over its keys: the target files the
    operation can touch.

    One Spark job: the source grouped by key, then the largest group and the key ranges.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from qbeast.spark.read.predicates import normalize_predicate

    not_null = F.lit(True)
    for k in keys:
        not_null = not_null & F.col(quote_identifier(k)).isNotNull()
    grouped = source.where(not_null).groupBy(*[quote_identifier(k) for k in keys]).count()
    aggregates = [F.max("count").alias("most"),
                  F.max_by(F.struct(*[quote_identifier(k) for k in keys]), "count").alias("key")]
    for i, k in enumerate(keys):
        aggregates += [F.min(quote_identifier(k)).alias(f"lo{i}"),
                       F.max(quote_identifier(k)).alias(f"hi{i}")]
    row = grouped.agg(*aggregates).collect()[0]
    if unique and row["most"] is not None and row["most"] > 1:
        key = {k: row["key"][i] for i, k in enumerate(keys)}
        raise InvalidOptionError(
            f"merge into {op.path}: the source has {row['most']} rows for key {key}; each key "
            f"{keys} may appear once in the source (deduplicate it first); nothing was written")
    if row["most"] is None:  # every key null: nothing can match
        return ex.AlwaysFalse()
    prunable = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.StringType, T.DateType)
    if not all(isinstance(op.types[k], prunable) for k in keys):
        return ex.AlwaysTrue()  # e.g. timestamps: collected values lose their time zone
    terms: list[ex.Expression] = []
    for i, k in enumerate(keys):
        terms += [ex.GreaterThanOrEqual(k, row[f"lo{i}"]), ex.LessThanOrEqual(k, row[f"hi{i}"])]
    try:
        return normalize_predicate(ex.And(*terms), op.schema)
    except InvalidOptionError:  # a key type the planner cannot prune by: read every file
        logger.info("merge %s: keys %s cannot prune files; reading every file", op.path, keys)
        return ex.AlwaysTrue()


def _all_empty(blocks: Sequence[Any]) -> tuple[Any, ...]:
    from qbeast.core.blocks import Block

    return tuple(Block(b.cube, b.max_weight, b.max_weight, 0) for b in blocks)


def _empty_file(table_dir: str, schema: Any, origin: int, blocks: tuple[Any, ...]) -> WrittenFile:
    """A parquet file without rows whose tags carry ``blocks`` (zero-element blocks only)."""
    import uuid

    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    from qbeast.delta.stats import footer_stats

    arrow = to_arrow_schema(schema)
    name = f"{uuid.uuid4()}.parquet"
    target = os.path.join(table_dir, name)
    pq.write_table(pa.Table.from_batches([], arrow), target, compression="snappy")
    info = os.stat(target)
    return WrittenFile(origin, name, info.st_size, int(info.st_mtime * 1000), 0,
                       footer_stats(pq.ParquetFile(target).metadata, non_finite=set()), blocks)


def _delete_written(table_dir: str, written: Sequence[WrittenFile]) -> None:
    for w in written:
        try:
            os.remove(os.path.join(table_dir, w.path))
        except OSError:
            pass
