"""Row-level changes on a Qbeast table: ``delete``, ``update``, ``merge`` and ``delete+insert``
(copy-on-write).

Each operation is one atomic Delta commit (``dataChange=true``) that removes the files holding
affected rows and adds their replacements, plus the indexed append of new rows. This module
checks the arguments, runs the phases and commits; the Spark jobs live in the row-level wing,
:mod:`qbeast.spark.changes`:

1. **candidates** — the read planner prunes the files the condition (or, for a merge, the
   range of the source's keys and the optional ``target_predicate``) cannot touch: OTree walk on
   the indexed columns, Delta min/max stats on every column. The candidates are the files the
   operation *reads*; a concurrent commit that removes one of them makes this one fail with
   :class:`qbeast.delta.errors.ConcurrentDeleteReadError` (retry the operation). Concurrent blind
   appends do not conflict.
2. **affected files** — a Spark job finds which candidates actually hold matching rows; only
   those are rewritten (:mod:`qbeast.spark.changes.scan`, :mod:`qbeast.spark.changes.merge`).
3. **rewrite** — each affected file is replaced by one file holding its remaining rows (updated
   in place when the indexed columns keep their values), every row in the cube it was written
   to, the blocks recounted (:mod:`qbeast.spark.changes.fates`, :mod:`qbeast.spark.changes.rewrite`,
   :mod:`qbeast.index.file_blocks`). Staging files stay staging files.
4. **append** — inserted rows, and updated rows whose indexed columns changed (their weight and
   cube change), go through the indexed append (:func:`qbeast.spark.write.steps.index_rows`),
   which opens a new revision when they grow the indexed space.
5. **commit** — removes, adds and (for a new revision) metadata in one transaction, with the
   operation's metrics in ``commitInfo``, through :func:`qbeast.rebase.commit_with_retries` as
   writes and optimize do: losing the race to a metadata change (e.g. an append that opened a
   revision) re-plans the commit on the new snapshot instead of failing, while a concurrent
   removal of a file the operation read is still a conflict. When nothing is committed, every
   file the operation wrote is deleted.

How it commits (``commitInfo.userMetadata``, an idempotent application transaction, retries,
cancellation) comes from a :class:`qbeast.commit.CommitProperties`.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow.compute as pc

from qbeast.commit import CommitProperties, WrittenFile, add_file, commit_properties
from qbeast.core import expressions as ex
from qbeast.core.blocks import Block
from qbeast.core.columns import engine_metadata_columns, without_engine_metadata
from qbeast.delta.actions import AddFile, resolve_file_path
from qbeast.delta.errors import ConcurrentDeleteReadError
from qbeast.delta.log import DeltaLog
from qbeast.delta.transaction import Transaction
from qbeast.errors import InvalidOptionError
from qbeast.index.file_blocks import settle_empty_blocks
from qbeast.operations.common import OperationResult, check_path
from qbeast.progress import Phase
from qbeast.spark.task_progress import task_monitor
from qbeast.rebase import PlannedCommit, WriteConflictError, commit_with_retries, metadata_for
from qbeast.snapshot import NotAQbeastTableError, QbeastSnapshot
from qbeast.spark import settings
from qbeast.spark.changes import fates, file_merge, merge, null_tests, shipped_source
from qbeast.spark.changes.fates import DELETE, FATES, KEEP, MOVE, UPDATE_IN_PLACE
from qbeast.spark.changes.rewrite import RewriteTarget, empty_file, rewrite_files
from qbeast.spark.changes.scan import ChangeScan
from qbeast.spark.file_access import FileAccess
from qbeast.spark.write import local
from qbeast.spark.write.steps import IndexedRows, index_rows

logger = logging.getLogger("qbeast.operations.rowlevel")

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


def delete_rows(spark: Any, path: str, condition: str | ex.Expression | None = None, *,
                commit_properties: CommitProperties | None = None) -> RowLevelResult:
    """Delete the rows where ``condition`` (SQL text or a core expression) is true; all if None."""
    op = _Operation.start(spark, path, "DELETE", commit_properties)
    if op.skipped is not None:
        return op.skipped
    job = op.job
    try:
        predicate, matches = fates.row_condition(job, condition)
        candidates = op.candidates(predicate)
        affected = op.affected(job.scan(candidates).where(matches))
        out = fates.deleted_rows(job, affected, matches) if affected else None
        return op.finish(candidates, affected, out, None,
                         parameters={"predicate": _describe(condition)})
    finally:
        job.release()


def update_rows(spark: Any, path: str, condition: str | ex.Expression | None,
                set: Mapping[str, Any], *,  # noqa: A002 - Delta's name
                commit_properties: CommitProperties | None = None) -> RowLevelResult:
    """Set columns (``{column: SQL expression text or Column}``) of the rows where ``condition``."""
    op = _Operation.start(spark, path, "UPDATE", commit_properties)
    if not isinstance(set, Mapping) or not set:
        raise InvalidOptionError(
            f"update needs set={{column: expression}} with at least one column of "
            f"{op.columns}, got {set!r}")
    job = op.job
    values = fates.assignments(job, {op.column_name(name, "set"): e for name, e in set.items()})
    if op.skipped is not None:
        return op.skipped
    try:
        predicate, matches = fates.row_condition(job, condition)
        candidates = op.candidates(predicate)
        affected = op.affected(job.scan(candidates).where(matches))
        out = fates.updated_rows(job, affected, matches, values) if affected else None
        return op.finish(candidates, affected, out, None,
                         parameters={"predicate": _describe(condition),
                                     "set": {c: _describe(e) for c, e in set.items()}})
    finally:
        job.release()


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
    commit_properties: CommitProperties | None = None,
) -> RowLevelResult:
    """Upsert ``source`` (a DataFrame) into the table (see ``QbeastTable.merge``)."""
    op = _Operation.start(spark, path, "MERGE", commit_properties)
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
        condition = on
    elif isinstance(on, Sequence) and on and all(isinstance(k, str) for k in on):
        keys = _key_columns(op, on)
        _require_keys_in_source(keys, source_columns, "merge key(s)")
        condition = ""
    else:
        raise InvalidOptionError(
            "on must be a list of key columns (e.g. ['id']) or a SQL condition over the aliases "
            f"target and source (e.g. 'target.id = source.id'), got {on!r}")
    updated = _update_columns(op, source_columns, update_columns, exclude_columns)
    if op.skipped is not None:
        return op.skipped
    job = op.job
    try:
        shipped = _shipped(op, source, source_columns, keys, target_predicate)
        if shipped is not None:
            return _in_one_job(
                op, shipped, action=when_matched or "match", updated=updated,
                inserts="unmatched" if when_not_matched == "insert" else None,
                parameters=_merge_parameters(on, when_matched, when_not_matched, target_predicate))
        source, predicate = _source_and_reach(job, source, source_columns, keys, target_predicate,
                                              unique=True)
        candidates = op.candidates(predicate)
        join = merge.MergeJoin(job, source, source_columns, keys, condition, candidates,
                               target_predicate)
        if keys is None:
            join.check_single_match()
        affected: list[str] = []
        out = None
        if when_matched is not None:
            affected = op.affected(join.matched)
        if affected:
            assert when_matched is not None
            out = join.fates(affected, updated, when_matched)
        inserts = join.inserts() if when_not_matched == "insert" else None
        return op.finish(candidates, affected, out, inserts,
                         parameters=_merge_parameters(on, when_matched, when_not_matched,
                                                      target_predicate))
    finally:
        job.release()


def delete_insert_rows(
    spark: Any,
    path: str,
    source: Any,
    on: str | Sequence[str],
    *,
    target_predicate: str | None = None,
    commit_properties: CommitProperties | None = None,
) -> RowLevelResult:
    """Delete the target rows whose key occurs in ``source``, append every source row: one commit.

    dbt's ``delete+insert``: unlike a merge, the source may hold several rows per key (all are
    inserted) and a target row whose key is in the source is removed even when the source row
    is identical. Keys compare with ``=`` (a null key deletes nothing); ``target_predicate``
    (SQL on the target's columns) limits the rows that can be deleted, and the files read.
    """
    op = _Operation.start(spark, path, "DELETE_INSERT", commit_properties)
    keys = _key_columns(op, on)
    source_columns = [op.column_name(c, "the source") for c in source.columns]
    _require_keys_in_source(keys, source_columns, "key column(s)")
    if op.skipped is not None:
        return op.skipped
    job = op.job
    parameters: dict[str, Any] = {"on": keys}
    if target_predicate is not None:
        parameters["targetPredicate"] = target_predicate
    try:
        shipped = _shipped(op, source, source_columns, keys, target_predicate)
        if shipped is not None:
            return _in_one_job(op, shipped, action="delete", inserts="all", parameters=parameters)
        source, predicate = _source_and_reach(job, source, source_columns, keys, target_predicate,
                                              unique=False)
        candidates = op.candidates(predicate)
        keyed = merge.KeyReplace(job, source, keys, target_predicate)
        affected = op.affected(keyed.matching(candidates))
        out = keyed.fates(affected) if affected else None
        return op.finish(candidates, affected, out, keyed.inserts(), parameters=parameters)
    finally:
        job.release()


def replace_where_rows(
    spark: Any,
    path: str,
    source: Any,
    condition: str | ex.Expression,
    *,
    commit_properties: CommitProperties | None = None,
) -> RowLevelResult:
    """Replace the rows where ``condition`` is true by the rows of ``source``: one commit.

    Delta's ``replaceWhere``, and what one batch of dbt's ``microbatch`` strategy does to its
    time window. The condition prunes the files read (OTree on the indexed columns, min/max
    statistics on the others), so only the files holding rows of the window are rewritten.
    Every source row must meet the condition (a null is not a match): a row outside it would
    not be replaced by the run that owns its window and could be counted twice later, so such
    a source fails before anything is written.
    """
    op = _Operation.start(spark, path, "REPLACE_WHERE", commit_properties)
    if not isinstance(condition, (str, ex.Expression)) or (
            isinstance(condition, str) and not condition.strip()):
        raise InvalidOptionError(
            f"replace_where on {op.path} needs a condition (SQL text or a "
            f"qbeast.core.expressions predicate) on the columns {op.columns}, got {condition!r}")
    source_columns = [op.column_name(c, "the source") for c in source.columns]
    if op.skipped is not None:
        return op.skipped
    job = op.job
    try:
        predicate, matches = fates.row_condition(job, condition)
        rows = job.keep(merge.table_rows(job, merge.cast_to_table(job, source, source_columns),
                                         source_columns))
        collected = _collected_inside(op, rows, matches, condition)
        candidates = op.candidates(predicate)
        # a window no file can hold (a new day) is a plain indexed append: no scan
        affected = op.affected(job.scan(candidates).where(matches)) if candidates else []
        out = fates.deleted_rows(job, affected, matches) if affected else None
        return op.finish(candidates, affected, out, rows, collected=collected,
                         parameters={"predicate": _describe(condition)})
    finally:
        job.release()


def _collected_inside(op: _Operation, rows: Any, matches: Any,
                      condition: Any) -> local.CollectedRows | None:
    """Fail (nothing written) when a row of ``rows`` does not meet the replace condition.

    A source of at most ``spark.qbeast.write.localRows`` rows (a microbatch batch, usually) is
    checked in the job that collects it for the indexed append on the driver, and returned
    collected, so that the append does not collect it again: one Spark job where the check and
    the collect took two or more. A larger source is checked in Spark (None is returned; the
    rows are kept, so the check computes them once for the append too).
    """
    found = fates.collect_with_matches(rows, matches, settings.LOCAL_ROWS.read(op.job.spark))
    if found is not None:
        (table, partitions), inside = found
        outside = table.filter(pc.invert(inside))
        if outside.num_rows:
            _refuse_outside(op, outside.num_rows, outside.slice(0, 3).to_pylist(), condition)
        return table, partitions
    outside_rows = rows.where(~matches)
    examples = outside_rows.limit(3).collect()
    if examples:
        total = outside_rows.count() if len(examples) == 3 else len(examples)
        _refuse_outside(op, total, [r.asDict() for r in examples], condition)
    return None


def _refuse_outside(op: _Operation, total: int, examples: list[dict[str, Any]],
                    condition: Any) -> None:
    shown = "; ".join(str(e) for e in examples)
    raise InvalidOptionError(
        f"replace_where on {op.path}: {total} source row(s) do not meet the condition "
        f"{_describe(condition)!r} (e.g. {shown}); every row written must fall inside the "
        "rows it replaces; nothing was written")


def _merge_parameters(on: str | Sequence[str], when_matched: str | None,
                      when_not_matched: str | None, target_predicate: str | None) -> dict[str, Any]:
    """A merge's ``operationParameters`` in ``commitInfo``."""
    parameters: dict[str, Any] = {"matchedPredicates": when_matched or "none",
                                  "notMatchedPredicates": when_not_matched or "none",
                                  "on": on if isinstance(on, str) else list(on)}
    if target_predicate is not None:
        parameters["targetPredicate"] = target_predicate
    return parameters


def _shipped(op: _Operation, source: Any, source_columns: Sequence[str], keys: list[str] | None,
             target_predicate: str | None) -> shipped_source.ShippedSource | None:
    """The source collected for the one-job path, or None: the join path runs (a SQL
    condition, a target predicate other than null tests
    (:func:`qbeast.spark.changes.null_tests.null_tests`), or see
    :func:`qbeast.spark.changes.shipped_source.ship_source`)."""
    if keys is None:
        return None
    tests: tuple[null_tests.NullTest, ...] = ()
    if target_predicate is not None:
        found = null_tests.null_tests(target_predicate, op.columns)
        if found is None:
            logger.info("%s: the target predicate %r is joined in Spark (the tasks evaluate "
                        "only column IS [NOT] NULL tests joined by AND)", op.path, target_predicate)
            return None
        tests = found
    phase = op.phase("source")
    shipped = shipped_source.ship_source(
        op.job, merge.cast_to_table(op.job, source, source_columns), keys, tests)
    phase.done(rows=shipped.rows.num_rows if shipped is not None else "over the limit or joined",
               path="one job" if shipped is not None else "join")
    return shipped


def _in_one_job(op: _Operation, shipped: shipped_source.ShippedSource, *, action: str,
                updated: Sequence[str] = (), inserts: str | None,
                parameters: dict[str, Any]) -> RowLevelResult:
    """A key merge (``action`` update, delete or match) or delete+insert (``inserts="all"``)
    whose source was shipped: the candidates' one job
    (:func:`qbeast.spark.changes.file_merge.merge_files`), then the append of the moved rows
    and of the inserts (the source rows that matched nothing, or ``all``), one commit."""
    job, snapshot = op.job, op.snapshot
    predicate = shipped.key_range(job, unique=inserts != "all")  # duplicates fail here
    if shipped.target_tests:  # only rows meeting them can match: files without such rows go
        predicate = ex.And(predicate, *null_tests.as_expressions(shipped.target_tests))
    candidates = op.candidates(predicate)
    written: list[WrittenFile] = []  # deleted when nothing is committed
    try:
        outcome = file_merge.FileMergeOutcome()
        if candidates and (action != "match" or inserts == "unmatched"):
            op.check_cancelled("the rewrite")
            phase = op.phase("rewrite")
            outcome = file_merge.merge_files(job, candidates, shipped, action=action,
                                             updated=updated, distinct_keys=inserts == "all")
            written += outcome.rewritten.values()
            counts = outcome.counts
            phase.done(candidates=len(candidates), removed=len(outcome.removed),
                       files=len(outcome.rewritten), updated=counts[UPDATE_IN_PLACE],
                       deleted=counts[DELETE], moved=counts[MOVE],
                       rows=counts[KEEP] + counts[UPDATE_IN_PLACE])
        targets = [RewriteTarget.of(i, a, snapshot) for i, a in enumerate(outcome.removed)]
        appended = file_merge.appended_rows(job, shipped, outcome, inserts)
        new_rows: Any = appended[0] if appended is not None else None
        if new_rows is None and inserts is not None and snapshot.latest_revision is not None:
            # what the join path's append of no row gives, without a Spark job for it
            new_rows = IndexedRows(snapshot.latest_revision, False, (), 0)
        # the moved rows and inserts are in the driver already: indexed there (no Spark job)
        return op.append_and_commit(candidates, targets, outcome.rewritten, outcome.counts,
                                    new_rows, parameters, written,
                                    driver_rows=appended[1] if appended is not None else 0)
    except BaseException:
        _delete_written(snapshot.delta.log, written)
        raise


def _source_and_reach(job: ChangeScan, source: Any, source_columns: Sequence[str],
                      keys: list[str] | None, target_predicate: str | None, *,
                      unique: bool) -> tuple[Any, ex.Expression]:
    """The source cast to the table's columns, and the predicate of the target rows it can
    reach (``target_predicate`` and the range of its keys), which prunes the files read.
    With ``unique``, a key occurring twice in the source fails here, before anything is written."""
    source = merge.cast_to_table(job, source, source_columns)
    predicate: ex.Expression = ex.AlwaysTrue()
    if target_predicate is not None:
        predicate = fates.row_condition(job, target_predicate)[0]
    if keys is not None:
        predicate = ex.And(predicate, merge.source_key_range(job, source, keys, unique=unique))
    return source, predicate


# -- argument checks ---------------------------------------------------------------------------------


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


def _describe(value: Any) -> str:
    return "true" if value is None else str(value)


# -- the shared orchestration -------------------------------------------------------------------------


@dataclass
class _Operation:
    """One row-level operation on one snapshot: its phases and its commit (its Spark jobs run
    in ``job``)."""

    job: ChangeScan
    snapshot: QbeastSnapshot
    name: str
    started: float
    properties: CommitProperties
    #: the result to return at once when the application transaction is already committed
    skipped: RowLevelResult | None = None

    @classmethod
    def start(cls, spark: Any, path: str, name: str,
              properties: CommitProperties | None) -> _Operation:
        properties = commit_properties(properties)
        check_path(path)
        # how the change's jobs reach the table's files: decided once, before a store is built
        # (the session's store settings), and handed to every scan, rewrite and append
        access = FileAccess.decide(spark, path)
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
        op = cls(ChangeScan(access, snapshot), snapshot, name, time.perf_counter(), properties)
        skipped = properties.done_before(snapshot.delta)
        if skipped is not None:
            logger.info("%s %s: %s", name.lower(), op.path, skipped)
            op.skipped = op.result(dict.fromkeys(FATES, 0), 0, [], [])
        return op

    @property
    def path(self) -> str:
        return self.snapshot.table_path

    @property
    def columns(self) -> list[str]:
        return self.job.columns

    def phase(self, name: str) -> Phase:
        """A phase of the operation; its Spark tasks' progress is logged while it runs."""
        return Phase(logger, self.name.lower(), self.path, name, monitor=task_monitor(self.job.spark))

    def check_cancelled(self, before: str) -> None:
        self.properties.check_cancelled(f"{self.name.lower()} of {self.path}", before)

    def column_name(self, name: Any, what: str) -> str:
        """The table's spelling of ``name`` (case-insensitive, as Spark SQL resolves)."""
        if isinstance(name, str):
            for column in self.columns:
                if column.lower() == name.lower():
                    return column
        raise InvalidOptionError(
            f"{name!r} in {what} is not a column of {self.path}; columns: {self.columns}")

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

    def affected(self, matching: Any) -> list[str]:
        """The files (as the scan names them) holding at least one row of ``matching``."""
        phase = self.phase("affected files")
        uris = self.job.file_uris(matching)
        phase.done(files=len(uris))
        return uris

    def result(self, counts: Mapping[int, int], inserted: int, removed: Sequence[AddFile],
               adds: Sequence[AddFile], revision_id: int | None = None) -> RowLevelResult:
        """The result of the operation before its commit (``version`` None)."""
        return RowLevelResult(
            path=self.path, operation=self.name, version=None, rows_deleted=counts[DELETE],
            rows_updated=counts[UPDATE_IN_PLACE] + counts[MOVE], rows_inserted=inserted,
            rows_copied=counts[KEEP], files_removed=len(removed), files_added=len(adds),
            bytes_removed=sum(int(a.size or 0) for a in removed),
            bytes_added=sum(int(a.size or 0) for a in adds), revision_id=revision_id,
        )

    def finish(self, candidates: list[AddFile], affected: list[str], out: Any, inserts: Any,
               *, parameters: dict[str, Any],
               collected: local.CollectedRows | None = None) -> RowLevelResult:
        """Rewrite the affected files, append the new rows, commit; the operation's result.

        ``out`` holds the fates of the affected files' rows (None when no file is affected),
        ``inserts`` the rows to append (None when there are none); ``collected``: the inserts
        as the driver already holds them (:func:`qbeast.spark.write.local.collect_rows`), used
        when no row moves (the append then indexes them without another collect).
        """
        job = self.job
        snapshot = self.snapshot
        table_dir = snapshot.delta.log.table_path
        removed = [job.add_of(u) for u in affected]
        targets = [RewriteTarget.of(i, a, snapshot) for i, a in enumerate(removed)]
        counts = dict.fromkeys(FATES, 0)
        written: list[WrittenFile] = []  # deleted when nothing is committed
        rewritten: dict[int, WrittenFile] = {}
        try:
            if out is not None:
                # not persisted: caching every row of the affected files costs more than
                # scanning them again; the rewrite's tasks count the fates as they write
                self.check_cancelled("the rewrite")
                phase = self.phase("rewrite")
                outcome = rewrite_files(fates.rows_with_fates(job, out), targets,
                                        snapshot.revisions, table_dir, job.access,
                                        action_column=fates.ACTION_COLUMN, kept=fates.WRITTEN_BACK)
                rewritten = outcome.files
                written += rewritten.values()
                counts.update(outcome.counts)
                phase.done(files=len(rewritten), removed=len(removed),
                           rows=counts[KEEP] + counts[UPDATE_IN_PLACE],
                           updated=counts[UPDATE_IN_PLACE], deleted=counts[DELETE],
                           moved=counts[MOVE])
            moved = counts[MOVE] > 0
            new_rows = fates.appended_rows(job, out, moved, inserts)
            return self.append_and_commit(candidates, targets, rewritten, counts, new_rows,
                                          parameters, written,
                                          collected=None if moved else collected)
        except BaseException:
            _delete_written(snapshot.delta.log, written)
            raise

    def append_and_commit(self, candidates: list[AddFile], targets: list[RewriteTarget],
                          rewritten: dict[int, WrittenFile], counts: dict[int, int],
                          new_rows: Any, parameters: dict[str, Any],
                          written: list[WrittenFile], driver_rows: int = 0,
                          collected: local.CollectedRows | None = None) -> RowLevelResult:
        """Append ``new_rows`` (the moved rows and the inserts, a DataFrame; None: none; an
        :class:`IndexedRows`: what an append without rows gives), commit the replacements of
        ``targets`` with them; the operation's result. The files written are added to
        ``written`` (the caller deletes them when this fails). ``driver_rows``: ``new_rows``
        holds that many rows the driver already has; ``collected``: ``new_rows`` as the driver
        already holds them (:func:`index_rows`)."""
        appended = new_rows if isinstance(new_rows, IndexedRows) else None
        if new_rows is not None:
            self.check_cancelled("the append")
        if new_rows is not None and appended is None:
            appended = index_rows(self.job.access, new_rows, self.snapshot,
                                  self.snapshot.delta.log.table_path, driver_rows=driver_rows,
                                  collected=collected)
            written += appended.written
        inserted = (appended.rows - counts[MOVE]) if appended is not None else 0
        return self._commit(candidates, targets, rewritten, appended, parameters,
                            counts, inserted, written)

    def _settled_adds(self, targets: list[RewriteTarget], rewritten: dict[int, WrittenFile],
                      appended: IndexedRows | None, written: list[WrittenFile]) -> list[AddFile]:
        """The replacements of the removed files, in their own revisions, with the blocks left
        without rows settled (kept as zero-element blocks only where a cube needs them; an
        empty file carries them when no row of its file is left)."""
        snapshot = self.snapshot
        table_dir = snapshot.delta.log.table_path
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
                    empty = empty_file(self.job.access, table_dir, self.job.schema, t.origin, blocks)
                    written.append(empty)
                    adds.append(add_file(empty, rid))
        return adds

    def _commit(self, candidates: list[AddFile], targets: list[RewriteTarget],
                rewritten: dict[int, WrittenFile], appended: IndexedRows | None,
                parameters: dict[str, Any], counts: dict[int, int], inserted: int,
                written: list[WrittenFile]) -> RowLevelResult:
        """Commit the removes and the adds through :func:`qbeast.rebase.commit_with_retries`.

        Only the appended files go into the plan's ``adds``: they are the ones a re-plan may
        re-tag (when another writer took the id of the revision they open). The replacements
        of the removed files stay in the revisions their old files were in, which are valid
        as long as the removed files are still active (what the re-plan checks: a revision is
        only replaced by an overwrite, which removes them).
        """
        snapshot = self.snapshot
        removed = [snapshot.delta.files[t.path] for t in targets]
        replacements = self._settled_adds(targets, rewritten, appended, written)
        new: list[AddFile] = []
        if appended is not None:
            new = [add_file(w, appended.revision.revision_id) for w in appended.written]
        result = self.result(counts, inserted, removed, replacements + new,
                             appended.revision.revision_id if appended is not None else None)
        if not removed and not replacements and not new:
            logger.info("%s %s: nothing to change, no commit", self.name.lower(), self.path)
            return result
        phase = self.phase("commit")
        planned = PlannedCommit(
            revision=appended.revision if appended is not None else None,
            opens_revision=appended is not None and appended.new_revision,
            adds=new, removes=removed, data_schema=snapshot.delta.schema,
            read_version=snapshot.version)
        metrics = {
            "numDeletedRows": counts[DELETE], "numUpdatedRows": result.rows_updated,
            "numInsertedRows": inserted, "numCopiedRows": counts[KEEP],
            "numRemovedFiles": len(removed), "numAddedFiles": result.files_added,
            "numRemovedBytes": result.bytes_removed, "numAddedBytes": result.bytes_added,
            "numCandidateFiles": len(candidates),
        }
        version, planned = commit_with_retries(
            self.path, planned, snapshot,
            lambda plan, fresh: self._transaction(plan, fresh, candidates, replacements),
            what=self.name.lower(), operation=self.name, parameters=parameters, metrics=metrics,
            info=self.properties.info(), max_retries=self.properties.max_retries,
            before_commit=lambda: self.check_cancelled("the commit"))
        phase.done(version=version, removed=len(removed), added=result.files_added)
        logger.info("%s %s: finished version=%d elapsed=%.2fs", self.name.lower(), self.path,
                    version, time.perf_counter() - self.started)
        revision_id = planned.revision.revision_id if planned.revision is not None else None
        return dataclasses.replace(result, version=version, revision_id=revision_id)

    def _transaction(self, planned: PlannedCommit, fresh: QbeastSnapshot | None,
                     candidates: list[AddFile], replacements: list[AddFile]) -> Transaction:
        """The transaction of ``planned`` on top of ``fresh`` (the snapshot the operation read,
        or a newer one after a lost race), the appended files aside."""
        if fresh is None:
            raise WriteConflictError(f"{self.path} disappeared while the {self.name.lower()} "
                                     "was being committed")
        if fresh.version != self.snapshot.version:
            # re-planned: the files read must still be active, as the Delta layer checks for
            # the commits it rebases over by itself
            gone = [a.path for a in candidates if a.path not in fresh.delta.files]
            if gone:
                raise ConcurrentDeleteReadError(
                    f"file {gone[0]} of {self.path} that this {self.name.lower()} read was "
                    f"removed by another commit after version {self.snapshot.version}; nothing "
                    "was committed — retry the operation")
        transaction = fresh.delta.log.start_transaction(fresh.delta)
        metadata = metadata_for(planned, fresh)
        if engine_metadata_columns(fresh.delta.schema):  # left by an older version: dropped
            metadata = dataclasses.replace(
                metadata or fresh.delta.metadata,
                schema_string=json.dumps(without_engine_metadata(fresh.delta.schema)))
        if metadata is not None:
            transaction.update_metadata(metadata)
        transaction.mark_files_read(a.path for a in candidates)
        transaction.add_actions([a.remove(data_change=True) for a in planned.removes])
        transaction.add_actions(replacements)
        return self.properties.stamp(transaction)


# -- helpers --------------------------------------------------------------------------------------


def _all_empty(blocks: Sequence[Block]) -> tuple[Block, ...]:
    return tuple(Block(b.cube, b.max_weight, b.max_weight, 0) for b in blocks)


def _delete_written(log: DeltaLog, written: Sequence[WrittenFile]) -> None:
    """Delete the files of a change that committed nothing (through the table's storage)."""
    for w in written:
        try:
            log.storage.delete(resolve_file_path(log.table_path, w.path))
        except OSError:
            pass
