"""A table's headline statistics from its Delta log: what catalogs and docs show about it.

``dbt docs generate`` shows a table's rows and bytes when the adapter reports them (dbt-spark
reads them from Spark's catalog statistics, which nobody computes for a qbeast table). The
Delta log knows them exactly, and the Qbeast metadata adds what a reader of the docs wants to
judge the layout: how many live revisions, on which columns, with which cube size, and when
the table was last optimized. Only the log is read.
"""
from __future__ import annotations

from dataclasses import dataclass

from qbeast.operations.common import OperationResult, check_path
from qbeast.operations.maintenance import HistoryEntry, table_history
from qbeast.operations.tiering import OPTIMIZE_OPERATION
from qbeast.snapshot import QbeastSnapshot


@dataclass(frozen=True)
class TableStatistics(OperationResult):
    """Rows, bytes and files of the latest version; revisions and index settings for Qbeast."""

    path: str
    version: int
    rows: int | None  # None when a file has no row count in its statistics
    bytes: int
    files: int
    revisions: int  # live revisions: those with files (staging included)
    indexed_columns: tuple[str, ...]  # of the latest revision; empty for plain Delta
    cube_size: int | None
    last_optimize: str | None  # ISO-8601 UTC time of the newest OPTIMIZE commit

    def summary_lines(self) -> list[str]:
        return [
            f"statistics of {self.path} at version {self.version}",
            f"rows:            {'unknown' if self.rows is None else self.rows}",
            f"bytes:           {self.bytes}",
            f"files:           {self.files}",
            f"revisions:       {self.revisions}",
            f"indexed columns: {', '.join(self.indexed_columns) or '(none)'}",
            f"cube size:       {self.cube_size if self.cube_size is not None else '-'}",
            f"last optimize:   {self.last_optimize or 'never'}",
        ]


def table_statistics(path: str) -> TableStatistics:
    """The statistics of the latest version of the table at ``path``."""
    check_path(path)
    snapshot = QbeastSnapshot.load(path)
    delta = snapshot.delta
    qbeast = snapshot.is_qbeast
    latest = snapshot.latest_revision if qbeast else None
    optimized = _newest_optimize(path)
    return TableStatistics(
        path=snapshot.table_path, version=snapshot.version, rows=delta.num_records,
        bytes=delta.size_bytes, files=delta.num_files,
        revisions=len([r for r, files in snapshot.files_by_revision().items() if files]) if qbeast else 0,
        indexed_columns=tuple(latest.columns) if latest is not None else (),
        cube_size=latest.desired_cube_size if latest is not None else None,
        last_optimize=optimized.time if optimized is not None else None,
    )


def _newest_optimize(path: str) -> HistoryEntry | None:
    return next((e for e in table_history(path) if e.operation == OPTIMIZE_OPERATION), None)


@dataclass(frozen=True)
class TableSchema(OperationResult):
    """The latest version's schema (Delta's JSON form) and, for a Qbeast table, its index."""

    path: str
    version: int
    is_qbeast: bool
    schema: dict
    indexed_columns: tuple[str, ...]
    cube_size: int | None

    def summary_lines(self) -> list[str]:
        names = ", ".join(f["name"] for f in self.schema.get("fields", []))
        return [f"schema of {self.path} at version {self.version}: {names}",
                f"indexed columns: {', '.join(self.indexed_columns) or '(none)'}"]


def table_schema(path: str) -> TableSchema:
    """The schema and index of the latest version of the table at ``path`` (from its log)."""
    check_path(path)
    snapshot = QbeastSnapshot.load(path)
    latest = snapshot.latest_revision if snapshot.is_qbeast else None
    return TableSchema(
        path=snapshot.table_path, version=snapshot.version, is_qbeast=snapshot.is_qbeast,
        schema=snapshot.delta.schema, indexed_columns=tuple(latest.columns) if latest else (),
        cube_size=latest.desired_cube_size if latest is not None else None)
