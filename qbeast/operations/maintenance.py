"""Vacuum and history of a Qbeast table: thin, validated wrappers over the Delta log layer.

A Qbeast table is a Delta table, so both operations are the log's own (``qbeast.delta.vacuum``
and ``DeltaLog.history``); what this module adds is argument checking suited to callers such as
dbt run-operations, and small result objects that print well and convert to plain dicts.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from qbeast.delta.actions import now_ms
from qbeast.delta.log import DeltaLog
from qbeast.delta.vacuum import vacuum as delta_vacuum
from qbeast.progress import Phase
from qbeast.skipping_files import unneeded_index_files
from qbeast.errors import InvalidOptionError
from qbeast.spark.write.options import STAGING_PREFIX
from qbeast.operations.common import (
    OperationResult,
    check_bool,
    check_optional_int,
    check_path,
    format_table,
)

logger = logging.getLogger("qbeast.operations.maintenance")

#: Default retention of ``vacuum_table``: 7 days, Delta's default ``deletedFileRetentionDuration``.
DEFAULT_RETENTION_HOURS = 168


@dataclass(frozen=True)
class VacuumReport(OperationResult):
    """Files vacuum deleted (or would delete, in a dry run) and their total size."""

    path: str
    files: tuple[str, ...]
    bytes: int
    dry_run: bool
    retention_hours: float

    @property
    def file_count(self) -> int:
        return len(self.files)

    def summary_lines(self) -> list[str]:
        verb = "would delete" if self.dry_run else "deleted"
        lines = [
            f"vacuum of {self.path} (retention {self.retention_hours:g} hours): "
            f"{verb} {self.file_count} file(s), {self.bytes} bytes"
        ]
        lines.extend(f"  {name}" for name in self.files)
        return lines


def vacuum_table(
    path: str,
    retention_hours: float | None = DEFAULT_RETENTION_HOURS,
    dry_run: bool = False,
    allow_short_retention: bool = False,
) -> VacuumReport:
    """Delete the data files no version inside the retention window references.

    The retention rules are the log layer's: active files, files removed less than
    ``retention_hours`` ago and files modified less than that ago are kept. A retention shorter
    than the table's ``delta.deletedFileRetentionDuration`` (7 days by default) needs
    ``allow_short_retention=True`` because it breaks time travel and running readers;
    ``retention_hours=None`` uses that table property.

    Skipping-index files (``_qbeast_skipping/``) that no active file and no file removed inside
    the retention names are deleted too, once older than the retention
    (:func:`qbeast.skipping_files.unneeded_index_files`).

    Staging folders (``_qbeast_staging_*``) that a write abandoned (its process died before it
    moved the files out) are deleted too once every file in them is older than the retention:
    the log layer never looks into ``_`` folders, and nothing but a crashed write leaves one.
    """
    check_path(path)
    check_bool(dry_run, "dry_run")
    check_bool(allow_short_retention, "allow_short_retention")
    if retention_hours is not None and (
        isinstance(retention_hours, bool)
        or not isinstance(retention_hours, (int, float))
        or retention_hours != retention_hours  # NaN
        or retention_hours < 0
    ):
        raise InvalidOptionError(
            "retention_hours must be a non-negative number of hours (or None for the table's "
            f"delta.deletedFileRetentionDuration), got {retention_hours!r}"
        )
    log = DeltaLog.for_path(path)
    verb = "listed" if dry_run else "deleted"
    phase = Phase(logger, "vacuum", log.table_path, "data files")
    result = delta_vacuum(
        log, retention_hours=retention_hours, dry_run=dry_run,
        allow_short_retention=allow_short_retention,
    )
    phase.done(**{f"files_{verb}": len(result.files), "bytes": result.bytes})
    prefix = log.table_path.rstrip("/") + "/"
    phase = Phase(logger, "vacuum", log.table_path, "abandoned staging and index files")
    staged, staged_bytes = _abandoned_staging_files(log, result.retention_hours, dry_run)
    indexes, index_bytes = unneeded_index_files(log, result.retention_hours, dry_run)
    phase.done(**{f"files_{verb}": len(staged) + len(indexes), "bytes": staged_bytes + index_bytes})
    names = tuple(f[len(prefix):] if f.startswith(prefix) else f
                  for f in result.files + staged + indexes)
    return VacuumReport(log.table_path, names, result.bytes + staged_bytes + index_bytes, dry_run,
                        result.retention_hours)


def _abandoned_staging_files(log: DeltaLog, retention_hours: float, dry_run: bool) -> tuple[list[str], int]:
    """Files of staging folders whose newest file is older than the retention; deleted unless dry."""
    horizon = now_ms() - int(retention_hours * 3_600_000)
    table = log.table_path.rstrip("/")
    folders = [s for s in log.storage.list_dir(table) if s.is_dir and s.name.startswith(STAGING_PREFIX)]
    files: list[str] = []
    size = 0
    for folder in folders:
        inside = list(log.storage.walk(folder.path))
        if any(stat.mtime_ms > horizon for stat in inside):
            continue  # a write may still be producing these files
        files.extend(stat.path for stat in inside)
        size += sum(stat.size for stat in inside)
        if not dry_run:
            for stat in inside:
                log.storage.delete(stat.path)
            if os.path.isdir(folder.path):  # local tables: drop the emptied folder tree too
                shutil.rmtree(folder.path, ignore_errors=True)
            logger.info("vacuum %s: removed abandoned staging folder %s (%d files)",
                        table, folder.path, len(inside))
    return files, size


@dataclass(frozen=True)
class HistoryEntry:
    """One commit: version, time, operation and what it recorded about itself."""

    version: int
    timestamp: int
    operation: str | None
    parameters: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    engine: str | None = None
    user_metadata: str | None = None

    @property
    def time(self) -> str:
        """The commit time as ISO-8601 UTC text."""
        moment = datetime.fromtimestamp(self.timestamp / 1000, tz=timezone.utc)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class TableHistory(OperationResult):
    """The commits of a table, newest first."""

    path: str
    entries: tuple[HistoryEntry, ...]

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def __getitem__(self, index: int) -> HistoryEntry:
        return self.entries[index]

    def summary_lines(self) -> list[str]:
        rows = [
            (
                e.version, e.time, e.operation,
                _compact(e.parameters), _compact(e.metrics),
            )
            for e in self.entries
        ]
        return [f"history of {self.path} ({len(self.entries)} commit(s)):"] + format_table(
            ("version", "time", "operation", "parameters", "metrics"), rows
        )


def _compact(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) if values else ""


def table_history(path: str, limit: int | None = None) -> TableHistory:
    """The table's commits, newest first (at most ``limit`` of them).

    Each entry carries the commit's operation (``WRITE``, ``OPTIMIZE``, ``CONVERT``, ``SET
    TBLPROPERTIES``, ``UPGRADE QBEAST FORMAT``, ...), its parameters and its metrics.
    """
    check_path(path)
    check_optional_int(limit, "limit", 1)
    log = DeltaLog.for_path(path)
    entries = []
    for info in log.history(limit):
        user_metadata = info.extra.get("userMetadata")
        entries.append(
            HistoryEntry(
                version=int(info.version or 0),
                timestamp=int(info.timestamp or 0),
                operation=info.operation,
                parameters={k: _maybe_json(v) for k, v in info.operation_parameters.items()},
                metrics=dict(info.operation_metrics or {}),
                engine=info.engine_info,
                user_metadata=user_metadata if isinstance(user_metadata, str) else None,
            )
        )
    return TableHistory(log.table_path, tuple(entries))


def _maybe_json(value: Any) -> Any:
    """Delta stores non-string parameters as JSON text; give callers the values back."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
