"""One write of a query's rows to a Qbeast table, in any of the engine's write modes.

A tool that builds tables (dbt's qbeast materialization) asks the engine for one of five things
with the rows of a query: ``append`` or ``overwrite`` them (:func:`qbeast.write`), or change the
table's rows by them: ``merge``, ``delete_insert`` (by key columns) or ``replace_where`` (a
condition). :class:`WriteRequest` says which, with every option, as plain values; it travels as
JSON to ``CALL qbeast_system.write(...)`` when the engine runs behind SQL (``qbeast serve``), and
:func:`write_rows` is what runs it, in the caller's process or in the server's driver, so both
write alike. :class:`WriteSummary` is what it committed, the same fields for every mode.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qbeast.delta.outcome import commit_outcome, reports_commit_outcome
from qbeast.errors import InvalidOptionError
from qbeast.operations.common import OperationResult

if TYPE_CHECKING:
    from qbeast.commit import CommitProperties
    from qbeast.operations.rowlevel import RowLevelResult

WRITE_MODES = ("append", "overwrite", "merge", "delete_insert", "replace_where")
#: The modes that change the table's rows by the query's (one row-level commit).
CHANGE_MODES = ("merge", "delete_insert", "replace_where")


@dataclass(frozen=True)
class WriteRequest:
    """A write's mode and options (see :func:`qbeast.write` and :class:`qbeast.QbeastTable`).

    ``on`` are the key columns of ``merge`` / ``delete_insert``; ``condition`` the rows
    ``replace_where`` replaces; ``merge_schema`` lets the rows add columns (for a row change
    they are added first, by an append of no rows: a commit of its own); ``user_metadata`` is
    the commit's ``commitInfo.userMetadata``.
    """

    mode: str
    columns_to_index: tuple[str, ...] = ()
    cube_size: int | None = None
    column_stats: Any = None
    merge_schema: bool = False
    non_finite: str | None = None  # None: the engine's default
    skipping_indexes: Any = None
    on: tuple[str, ...] = ()
    update_columns: tuple[str, ...] | None = None
    exclude_columns: tuple[str, ...] | None = None
    target_predicate: str | None = None
    condition: str | None = None
    user_metadata: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in WRITE_MODES:
            raise InvalidOptionError(f"write mode {self.mode!r} is unknown; allowed values: "
                                     f"{', '.join(WRITE_MODES)}", option="mode", value=self.mode,
                                     allowed=list(WRITE_MODES))
        if self.mode in ("merge", "delete_insert") and not self.on:
            raise InvalidOptionError(f"a {self.mode} needs the key columns (on)", option="on")
        if self.mode == "replace_where" and not self.condition:
            raise InvalidOptionError("a replace_where needs the condition of the rows it replaces",
                                     option="condition")

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> WriteRequest:
        """The request ``to_json`` wrote; unknown keys are refused by name."""
        try:
            values = json.loads(text)
        except ValueError as exc:
            raise InvalidOptionError(f"write options must be a JSON object: {exc}") from None
        if not isinstance(values, dict):
            raise InvalidOptionError("write options must be a JSON object")
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise InvalidOptionError(f"unknown write option {unknown[0]!r}; allowed: {known}",
                                     option=unknown[0], allowed=known)
        for name in ("columns_to_index", "on", "update_columns", "exclude_columns"):
            if isinstance(values.get(name), list):
                values[name] = tuple(values[name])
        return cls(**values)


@dataclass(frozen=True)
class WriteSummary(OperationResult):
    """What a write committed (``version`` None: nothing; a row change that changed no row).

    ``rows`` are the rows appended or written for ``append`` / ``overwrite``, and the rows
    changed (updated, inserted and deleted) for the row changes.
    """

    path: str
    mode: str
    version: int | None
    rows: int
    revision_id: int | None
    files_added: int
    files_removed: int = 0
    rows_updated: int = 0
    rows_inserted: int = 0
    rows_deleted: int = 0

    def summary_lines(self) -> list[str]:
        if self.version is None:
            return [f"{self.mode} of {self.path}: no row changed, nothing committed"]
        if self.mode in CHANGE_MODES:
            return [f"{self.mode} of {self.path}: version {self.version}, {self.rows_updated} "
                    f"updated, {self.rows_inserted} inserted, {self.rows_deleted} deleted, "
                    f"{self.files_removed} files rewritten, {self.files_added} added"]
        return [f"{self.mode} of {self.path}: version {self.version}, {self.rows} rows, "
                f"{self.files_added} files, revision {self.revision_id}"]


def _engine_write(df: Any, path: str, request: WriteRequest, mode: str, merge_schema: bool,
                  properties: Any) -> Any:
    from qbeast.spark.write.writer import write

    options: dict[str, Any] = {} if request.non_finite is None else {"non_finite": request.non_finite}
    return write(df, path, list(request.columns_to_index) or None, cube_size=request.cube_size,
                 mode=mode, column_stats=request.column_stats, merge_schema=merge_schema,
                 skipping_indexes=request.skipping_indexes, commit_properties=properties, **options)


def _change_rows(spark: Any, df: Any, path: str, request: WriteRequest,
                 properties: CommitProperties) -> RowLevelResult:
    """The row change ``request`` asks for, run as ``QbeastTable.merge`` / ``delete_insert`` /
    ``replace_where`` run it (the same checks, the same commit outcome), without the table API:
    the operations sit below it (docs/ARCHITECTURE.md)."""
    from qbeast.operations.rowlevel import delete_insert_rows, merge_rows, replace_where_rows

    if not isinstance(path, str) or not path:  # QbeastTable's check of its path
        raise InvalidOptionError(f"table path must be a non-empty string, got {path!r}")
    with commit_outcome(path):  # what a QbeastTable method reports on a store failure
        if request.mode == "merge":
            return merge_rows(
                spark, path, df, list(request.on),
                update_columns=None if request.update_columns is None else list(request.update_columns),
                exclude_columns=list(request.exclude_columns or ()) or None,
                target_predicate=request.target_predicate, commit_properties=properties)
        if request.mode == "delete_insert":
            return delete_insert_rows(spark, path, df, list(request.on),
                                      target_predicate=request.target_predicate,
                                      commit_properties=properties)
        return replace_where_rows(spark, path, df, str(request.condition),
                                  commit_properties=properties)


@reports_commit_outcome(lambda spark, df, path, *args, **kwargs: path)
def write_rows(spark: Any, df: Any, path: str, request: WriteRequest,
               cancelled: Callable[[], bool] | None = None) -> WriteSummary:
    """Write the DataFrame ``df`` to the table at ``path`` as ``request`` says, in one commit
    (two when a row change adds columns). ``cancelled`` is checked as :func:`qbeast.write`
    does."""
    from qbeast.commit import CommitProperties

    properties = CommitProperties(user_metadata=request.user_metadata, cancelled=cancelled)
    if request.mode not in CHANGE_MODES:
        written = _engine_write(df, path, request, request.mode, request.merge_schema, properties)
        return WriteSummary(path=path, mode=request.mode, version=written.version, rows=written.rows,
                            revision_id=written.revision_id, files_added=written.file_count)
    if request.merge_schema:
        from qbeast.spark.write.writer import schema_extension

        _engine_write(schema_extension(df, path), path, request, "append", True, properties)
    changed = _change_rows(spark, df, path, request, properties)
    return WriteSummary(
        path=path, mode=request.mode, version=changed.version,
        rows=changed.rows_updated + changed.rows_inserted + changed.rows_deleted,
        revision_id=changed.revision_id, files_added=changed.files_added,
        files_removed=changed.files_removed, rows_updated=changed.rows_updated,
        rows_inserted=changed.rows_inserted, rows_deleted=changed.rows_deleted)


__all__ = ["CHANGE_MODES", "WRITE_MODES", "WriteRequest", "WriteSummary", "write_rows"]
