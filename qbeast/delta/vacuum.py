"""Vacuum: delete data files that no version inside the retention window references.

A file is kept when it is active in the latest version, when it was removed less than the
retention period ago (time travel to a version inside the window still needs it: it was active in
every version before its removal), or when it was modified less than the retention period ago
(it may belong to a write that has not committed yet). Everything else below the table root is
deleted, except ``_delta_log`` and hidden names (starting with ``_`` or ``.``, unless they are
partition folders ``_col=value``), which vacuum never touches.

The retention defaults to the table property ``delta.deletedFileRetentionDuration`` (7 days when
unset); a shorter window breaks time travel and concurrent readers, so it needs an explicit
``allow_short_retention=True``.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from qbeast.delta.actions import now_ms, resolve_file_path
from qbeast.delta.checkpoint import tombstone_retention_ms
from qbeast.delta.log import LOG_DIR, DeltaLog
from qbeast.errors import InvalidOptionError

logger = logging.getLogger("qbeast.delta.vacuum")


@dataclass
class VacuumResult:
    """What vacuum deleted (or, in a dry run, would delete)."""

    files: list[str] = field(default_factory=list)
    bytes: int = 0
    dry_run: bool = False
    retention_hours: float = 0.0


def _hidden(relative: str) -> bool:
    for part in relative.split("/")[:-1]:
        if part.startswith((".", "_")) and "=" not in part:
            return True
    name = relative.rsplit("/", 1)[-1]
    return name.startswith((".", "_"))


def vacuum(
    log: DeltaLog,
    retention_hours: float | None = None,
    dry_run: bool = False,
    allow_short_retention: bool = False,
    now: int | None = None,
) -> VacuumResult:
    """Delete (or list, when ``dry_run``) the unreferenced files of the table of ``log``.

    ``now`` (epoch ms) exists for tests and reproducible runs; it defaults to the clock.
    """
    started = time.perf_counter()
    snapshot = log.snapshot()
    snapshot.check_writable()
    configured_ms = tombstone_retention_ms(snapshot.metadata)
    if retention_hours is None:
        retention_ms = configured_ms
    else:
        if isinstance(retention_hours, bool) or not isinstance(retention_hours, (int, float)) or retention_hours < 0:
            raise InvalidOptionError(
                f"retention_hours must be a non-negative number, got {retention_hours!r}"
            )
        retention_ms = int(retention_hours * 3_600_000)
    if retention_ms < configured_ms and not allow_short_retention:
        raise InvalidOptionError(
            f"vacuum retention of {retention_ms / 3_600_000:g} hours is shorter than the table's "
            f"{configured_ms / 3_600_000:g} hours (delta.deletedFileRetentionDuration); this can "
            "delete files that time travel or running readers still need. Pass "
            "allow_short_retention=True to do it anyway.",
            option="allow_short_retention", value=False, allowed=True,
        )
    current = now_ms() if now is None else now
    horizon = current - retention_ms
    table = snapshot.table_path
    keep = {resolve_file_path(table, p) for p in snapshot.files}
    keep.update(
        resolve_file_path(table, p)
        for p, rm in snapshot.tombstones.items()
        if (rm.deletion_timestamp or 0) > horizon
    )
    result = VacuumResult(dry_run=dry_run, retention_hours=retention_ms / 3_600_000)
    prefix = table.rstrip("/") + "/"
    for stat in log.storage.walk(table):
        relative = stat.path[len(prefix):]
        if relative.startswith(LOG_DIR + "/") or _hidden(relative):
            continue
        if stat.path in keep or stat.mtime_ms > horizon:
            continue
        result.files.append(stat.path)
        result.bytes += stat.size
    if not dry_run:
        for path in result.files:
            log.storage.delete(path)
    logger.info(
        "vacuum %s: table=%s files=%d bytes=%d retention_hours=%g elapsed=%.3fs",
        "dry run" if dry_run else "done", table, len(result.files), result.bytes,
        result.retention_hours, time.perf_counter() - started,
    )
    return result
