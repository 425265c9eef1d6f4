"""``QbeastTable``: the Python handle on one Qbeast table: reads, samples and table operations.

A handle holds only the Spark session and the path: every call reads the Delta log again, so it
always sees the latest committed snapshot unless a ``version`` is given.

Reading (``to_df``, ``sample``) returns DataFrames from Spark's native parquet reader over only the
files the read needs, so ``df.inputFiles()`` shows exactly what it touches. Both accept
``filter=``: a SQL predicate string (``"user_id BETWEEN 10 AND 20 AND brand = 'x'"``) or a
``qbeast.core.expressions`` predicate. The filter prunes files (OTree on indexed columns, Delta
stats on any column) and is applied to the rows, so results equal a full scan plus the filter.

The maintenance methods (``optimize``, ``vacuum``, ``history``, ``index_metrics``) are thin
wrappers over :mod:`qbeast.operations`, where the work and the argument checks live.

This module orchestrates and never imports pyspark (``tests/unit/test_layering.py`` checks it):
the Spark work of a read is the read wing's (:mod:`qbeast.spark.read.planner` picks the files,
:mod:`qbeast.spark.read.dataframe` builds the DataFrame), the rest is in the operations.
"""
from __future__ import annotations

from typing import Any

from qbeast.commit import CommitProperties
from qbeast.commit import commit_properties as properties
from qbeast.core import expressions as ex
from qbeast.delta.outcome import reports_commit_outcome
from qbeast.errors import InvalidOptionError
from qbeast.snapshot import NotAQbeastTableError
from qbeast.spark.read.dataframe import user_filtered_dataframe
from qbeast.spark.read.planner import (
    ReadPlan,
    load_snapshot,
    plan_read,
    sample_weight_range,
    weight_filter_sql,
)
from qbeast.spark.read.predicates import user_predicate


#: a store failure leaving a writing method says whether it had committed (docs/object-stores.md)
_outcome = reports_commit_outcome(lambda table, *args, **kwargs: table.path)


class QbeastTable:
    """A Qbeast (or plain Delta) table at a path, bound to a Spark session."""

    def __init__(self, spark: Any, path: str) -> None:
        if not isinstance(path, str) or not path:
            raise InvalidOptionError(f"table path must be a non-empty string, got {path!r}")
        self.spark = spark
        self.path = path

    @classmethod
    def for_path(cls, spark: Any, path: str) -> QbeastTable:
        """The table stored at ``path`` (a local path or ``file:`` URI)."""
        return cls(spark, path)

    def __repr__(self) -> str:
        return f"QbeastTable({self.path!r})"

    # -- metadata -----------------------------------------------------------------------------

    def snapshot(self, version: int | None = None):
        """The :class:`qbeast.snapshot.QbeastSnapshot` at ``version`` (latest by default)."""
        return load_snapshot(self.path, version)

    def _qbeast_snapshot(self, what: str, version: int | None = None):
        snapshot = self.snapshot(version)
        if not snapshot.is_qbeast:
            raise NotAQbeastTableError(
                f"{what} needs Qbeast metadata, but {self.path} is a plain Delta table "
                "(no qbeast.lastRevisionID in its configuration)"
            )
        return snapshot

    def revision_ids(self) -> list[int]:
        """Ids of every revision in the metadata, ascending (0 is the staging revision)."""
        snapshot = self.snapshot()
        return sorted(snapshot.revisions) if snapshot.is_qbeast else []

    def latest_revision_id(self) -> int:
        """Id of the revision new writes index into."""
        return self._qbeast_snapshot("latest_revision_id").latest_revision_id

    def indexed_columns(self) -> list[str]:
        """Indexed column names of the latest revision, in index (and hash) order."""
        return list(self._qbeast_snapshot("indexed_columns").latest_revision.columns)

    def cube_size(self) -> int:
        """Desired cube size of the latest revision."""
        return int(self._qbeast_snapshot("cube_size").latest_revision.desired_cube_size)

    # -- reading ------------------------------------------------------------------------------

    def read_plan(
        self,
        fraction: float | None = None,
        filter: str | ex.Expression | None = None,  # noqa: A002 - mirrors DataFrame.filter
        version: int | None = None,
    ) -> ReadPlan:
        """The files a read would open (and its row filters), without reading anything."""
        snapshot = self.snapshot(version)
        predicate, _ = user_predicate(snapshot, filter)
        return plan_read(snapshot, fraction=fraction, predicate=predicate)

    def sample_predicate(self, fraction: float, version: int | None = None,
                         key: str | None = None) -> str:
        """The SQL row filter that selects ``sample(fraction)``: ``hash(indexed columns) < w``.

        ``SELECT ... FROM t WHERE <this>`` returns exactly the rows of :meth:`sample` (``true``
        for a fraction of 1). SQL samples use it instead of per-query table options, which Spark
        may share between the references to one table in a query. Raises for a plain Delta table,
        whose rows have no weight.

        ``key``: the filter on that one column's hash instead, ``hash(key) < w``: the same keys
        survive in every table that has the column (in the same type), so a sample of several
        tables keeps joins on the key whole. It prunes files only where the table is indexed on
        exactly that column (:meth:`sample_key_prunes`); elsewhere it is a row filter.
        """
        if fraction is None:
            raise InvalidOptionError("sample fraction must be a number in [0, 1], got None")
        weight_range = sample_weight_range(fraction)
        snapshot = self._qbeast_snapshot("sample_predicate", version)
        columns = (snapshot.latest_revision.columns if key is None
                   else [self._column(snapshot, key, "sample key")])
        return "true" if weight_range is None else weight_filter_sql(columns, weight_range)

    def sample_key_prunes(self, key: str, version: int | None = None) -> bool:
        """Whether a sample on ``key``'s hash reads only part of the table: its latest revision
        is indexed on exactly that column, so the key's hash is the rows' weight."""
        snapshot = self._qbeast_snapshot("sample_key_prunes", version)
        column = self._column(snapshot, key, "sample key")
        return [c.lower() for c in snapshot.latest_revision.columns] == [column.lower()]

    @staticmethod
    def _column(snapshot: Any, name: str, what: str) -> str:
        """The table's spelling of column ``name`` (case-insensitive, as Spark SQL resolves)."""
        names = snapshot.delta.metadata.column_names
        for column in names:
            if column.lower() == str(name).lower():
                return column
        raise InvalidOptionError(f"{what} {name!r} is not a column of {snapshot.table_path}; "
                                 f"allowed values: {names}")

    def to_df(
        self,
        version: int | None = None,
        filter: str | ex.Expression | None = None,  # noqa: A002
    ):
        """The table (at ``version``, latest by default) as a DataFrame, pruned by ``filter``."""
        return self._read(None, filter, version)

    def sample(
        self,
        fraction: float,
        filter: str | ex.Expression | None = None,  # noqa: A002
        version: int | None = None,
    ):
        """The rows with ``hash(indexed columns) < Weight(fraction)``: about ``fraction`` of them.

        The sample is deterministic (the same rows every time) and reads only the files whose
        blocks can hold such rows, so small fractions read little data.
        """
        if fraction is None:
            raise InvalidOptionError("sample fraction must be a number in [0, 1], got None")
        return self._read(fraction, filter, version)

    def _read(self, fraction: float | None, filter: Any, version: int | None):  # noqa: A002
        snapshot = self.snapshot(version)
        predicate, row_filter = user_predicate(snapshot, filter)
        plan = plan_read(snapshot, fraction=fraction, predicate=predicate)
        return user_filtered_dataframe(self.spark, plan, filter, row_filter)

    def approx(
        self,
        aggregates: str | list[str],
        *,
        group_by: str | list[str] | None = None,
        filter: str | ex.Expression | None = None,  # noqa: A002
        tolerance: float = 0.01,
        confidence: float = 0.95,
        max_fraction: float = 1.0,
        version: int | None = None,
    ):
        """``count(*)``, ``count(col)``, ``sum(col)`` and ``avg(col)`` within ``tolerance``.

        Reads a small sample first and grows it band by band (each step reads only the rows of
        the new weight band) until every estimate's interval at ``confidence`` is within
        ``tolerance`` of it (relative half-width), or ``max_fraction`` of the weights is read
        (1.0: exact). ``tolerance=0`` reads everything once and returns the exact answer.
        Returns a DataFrame with one row per group and aggregate: the ``group_by`` columns,
        ``aggregate``, ``estimate``, ``low``, ``high``, ``fraction``, ``rows_read``,
        ``bytes_read``, ``tolerance_met`` and ``reason`` (why not, when it is not met).
        Rows sharing indexed values share one weight, so the intervals are those of a cluster
        sample; docs/approx.md states the method and its assumptions. Other aggregates are
        refused by name.
        """
        from qbeast.operations.approx import approx_table

        return approx_table(self.spark, self.path, aggregates, group_by=group_by, filter=filter,
                            tolerance=tolerance, confidence=confidence,
                            max_fraction=max_fraction, version=version)

    # -- row-level changes (see qbeast.operations.rowlevel) ---------------------------------------

    @_outcome
    def delete(self, condition: str | ex.Expression | None = None, *,
               commit_properties: CommitProperties | None = None):
        """Delete the rows where ``condition`` is true (SQL text or a core expression; all rows
        when None), rewriting only the files that hold such rows. One commit; returns a
        :class:`qbeast.operations.rowlevel.RowLevelResult` (``version`` None if no row matched).
        ``commit_properties`` (a :class:`qbeast.CommitProperties`) sets how it commits.
        """
        from qbeast.operations.rowlevel import delete_rows

        return delete_rows(self.spark, self.path, condition,
                           commit_properties=properties(commit_properties))

    @_outcome
    def update(self, condition: str | ex.Expression | None = None, *,
               set: dict[str, Any],  # noqa: A002 - Delta Lake's name for it
               commit_properties: CommitProperties | None = None):
        """Set columns of the rows where ``condition`` is true: ``set={"col": "SQL expression"}``
        (or pyspark Columns). Rows whose indexed columns change are re-indexed by an append in
        the same commit; the others stay in their cubes. ``commit_properties`` as for
        :meth:`delete`.
        """
        from qbeast.operations.rowlevel import update_rows

        return update_rows(self.spark, self.path, condition, set,
                           commit_properties=properties(commit_properties))

    @_outcome
    def merge(
        self,
        source: Any,
        on: str | list[str],
        *,
        when_matched: str | None = "update",
        when_not_matched: str | None = "insert",
        update_columns: list[str] | None = None,
        exclude_columns: list[str] | None = None,
        target_predicate: str | None = None,
        user_metadata: str | None = None,
        cancelled: Any = None,
        commit_properties: CommitProperties | None = None,
    ):
        """Upsert the DataFrame ``source`` into the table in one commit.

        ``on`` is a key column, a list of key columns (compared with ``=``: null keys never
        match) or a SQL condition over the aliases ``target`` and ``source``. Matched target rows
        are updated from the source (``when_matched="update"``, only ``update_columns`` or all
        source columns but ``exclude_columns``) or deleted (``"delete"``); source rows without a
        match are inserted (``when_not_matched="insert"``) through the indexed append. Either can
        be None. ``target_predicate`` (SQL on the target's columns) limits the target rows that
        can match, and the files read. A source with two rows for one key fails before anything
        is written. ``commit_properties`` (a :class:`qbeast.CommitProperties`) sets how it
        commits; ``user_metadata`` (the commit's ``commitInfo.userMetadata``) and ``cancelled``
        (a callable checked between the phases and right before the commit, as ``qbeast.write``
        does) are shorthands for two of its fields.
        """
        from qbeast.operations.rowlevel import merge_rows

        return merge_rows(
            self.spark, self.path, source, on, when_matched=when_matched,
            when_not_matched=when_not_matched, update_columns=update_columns,
            exclude_columns=exclude_columns, target_predicate=target_predicate,
            commit_properties=properties(commit_properties, user_metadata=user_metadata,
                                         cancelled=cancelled),
        )

    @_outcome
    def delete_insert(self, source: Any, on: str | list[str], *,
                      target_predicate: str | None = None, user_metadata: str | None = None,
                      cancelled: Any = None, commit_properties: CommitProperties | None = None):
        """Replace the rows of the keys in ``source``: delete every target row whose key (``on``:
        a column or a list of columns, compared with ``=``) occurs in the DataFrame ``source``,
        then insert all source rows through the indexed append, in one commit.

        This is dbt's ``delete+insert`` strategy: the source may hold several rows per key (all
        are inserted). ``target_predicate`` (SQL on the target's columns) limits the rows that
        can be deleted; ``commit_properties``, ``user_metadata`` and ``cancelled`` as for
        :meth:`merge`. Returns a :class:`qbeast.operations.rowlevel.RowLevelResult`.
        """
        from qbeast.operations.rowlevel import delete_insert_rows

        return delete_insert_rows(
            self.spark, self.path, source, on, target_predicate=target_predicate,
            commit_properties=properties(commit_properties, user_metadata=user_metadata,
                                         cancelled=cancelled))

    @_outcome
    def replace_where(self, source: Any, condition: str | ex.Expression, *,
                      user_metadata: str | None = None, cancelled: Any = None,
                      commit_properties: CommitProperties | None = None):
        """Replace the rows where ``condition`` is true (SQL text or a core expression on the
        table's columns) by the rows of the DataFrame ``source``, in one commit.

        Delta's ``replaceWhere``; dbt's ``microbatch`` strategy runs one per batch, over the
        batch's time window. Only the files holding rows of the condition are read and
        rewritten (the OTree and the min/max statistics prune the others); the new rows go
        through the indexed append. Every source row must meet the condition, else nothing is
        written. ``commit_properties``, ``user_metadata`` and ``cancelled`` as for
        :meth:`merge`. Returns a :class:`qbeast.operations.rowlevel.RowLevelResult`.
        """
        from qbeast.operations.rowlevel import replace_where_rows

        return replace_where_rows(
            self.spark, self.path, source, condition,
            commit_properties=properties(commit_properties, user_metadata=user_metadata,
                                         cancelled=cancelled))

    # -- table operations (see qbeast.operations) -------------------------------------------------

    @_outcome
    def optimize(
        self,
        revision_id: int | None = None,
        fraction: float = 1.0,
        files: list[str] | None = None,
        max_rewrite_ratio: float | None = None,
        merge_revisions: bool = False,
        commit_properties: CommitProperties | None = None,
    ):
        """Rewrite files so every cube of the revision has one block (latest revision by default).

        ``revision_id=0`` indexes the staging files into the latest revision; ``fraction`` limits
        the rewrite to the files a sample of that fraction starts in; ``files`` names files as they
        appear in the Delta log; ``max_rewrite_ratio`` defers the layout until it rewrites at most
        that many bytes per byte appended since the last one (tiered maintenance, as dbt's
        ``optimize_after_run`` runs it; it also merges older revisions into the latest one
        within that budget); ``merge_revisions=True`` re-indexes every older revision inside the
        latest one's space into it, then lays it out. ``commit_properties`` (a
        :class:`qbeast.CommitProperties`) sets how its commits are made. Returns a
        :class:`qbeast.operations.OptimizeResult`.
        """
        from qbeast.operations.optimize import optimize_table

        return optimize_table(self.spark, self.path, revision_id=revision_id, fraction=fraction, files=files,
                              max_rewrite_ratio=max_rewrite_ratio, merge_revisions=merge_revisions,
                              commit_properties=commit_properties)

    @_outcome
    def build_skipping_indexes(self, skipping_indexes: Any = None, *,
                               commit_properties: CommitProperties | None = None):
        """Build the declared skipping indexes (docs/skipping.md) for every file that lacks them;
        ``skipping_indexes`` (``{"order_id": "bloom", "status": "values"}``) first replaces the
        declaration, in the same commit. Returns a
        :class:`qbeast.operations.skipping.SkippingIndexResult`."""
        from qbeast.operations.skipping import build_skipping_indexes

        return build_skipping_indexes(self.path, skipping_indexes,
                                      commit_properties=commit_properties)

    @_outcome
    def vacuum(
        self,
        retention_hours: float | None = 168,
        dry_run: bool = False,
        allow_short_retention: bool = False,
    ):
        """Delete data files no version inside the retention window uses (7 days by default)."""
        from qbeast.operations.maintenance import vacuum_table

        return vacuum_table(
            self.path,
            retention_hours=retention_hours,
            dry_run=dry_run,
            allow_short_retention=allow_short_retention,
        )

    def history(self, limit: int | None = None):
        """The table's commits, newest first, with operation, parameters and metrics."""
        from qbeast.operations.maintenance import table_history

        return table_history(self.path, limit=limit)

    def statistics(self):
        """Rows, bytes and files of the latest version, live revisions, indexed columns, cube
        size and the time of the last optimize, from the Delta log (what ``dbt docs`` shows).
        Returns a :class:`qbeast.operations.statistics.TableStatistics`."""
        from qbeast.operations.statistics import table_statistics

        return table_statistics(self.path)

    def explain_read(
        self,
        filter: str | ex.Expression | None = None,  # noqa: A002
        fraction: float | None = None,
        version: int | None = None,
    ):
        """What a read with ``filter`` sampled to ``fraction`` will open, and why: one line per
        reason (index boxes, weight bands, min/max statistics, prefixes) and the totals of files,
        rows and bytes against the table. Nothing is read but the log. Returns a
        :class:`qbeast.operations.explain.ReadExplanation` (print it, or ``to_dict()``)."""
        from qbeast.operations.explain import explain_read

        return explain_read(self.path, fraction=fraction, filter=filter, version=version)

    def show_index(
        self,
        output: str,
        fraction: float | None = None,
        filter: str | ex.Expression | None = None,  # noqa: A002
        version: int | None = None,
        png: str | None = None,
    ):
        """Write a self-contained HTML page of the index to ``output``: every live revision's
        tree, its files with their weight bands, per-depth totals and, with ``fraction`` and/or
        ``filter``, what that read opens; ``png`` also saves a screenshot (needs a headless
        Chromium). Returns the page's path."""
        from qbeast.operations.index_page import show_index

        return show_index(self.path, output, fraction=fraction, filter=filter, version=version,
                          png=png)

    def index_metrics(self, revision_id: int | None = None):
        """Cube, block, file and element-count statistics of a revision (latest by default)."""
        from qbeast.operations.metrics import index_metrics

        return index_metrics(self.path, revision_id=revision_id)
