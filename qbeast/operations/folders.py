"""What a table location holds, in words: before a tool writes a table into a folder.

A tool that writes tables on a user's behalf (dbt's qbeast materialization) must not write into
someone else's data. :func:`describe_folder` tells it what is at a location (nothing, an empty
folder, the leftovers of a write that never committed, a file, a Qbeast or plain Delta table, or
other files) and, for a table, the ``commitInfo.userMetadata`` of its latest commits, where
the tool recorded who wrote it. It runs where the files are: in the caller's process, or in the
driver of ``qbeast serve`` (``CALL qbeast_system.describe_location(...)``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from qbeast.operations.common import OperationResult

#: Folders a failed first write may leave beside an empty ``_delta_log`` (the writer's staging).
_WRITER_LEFTOVERS = ("_delta_log", "_qbeast_staging_")
#: How far back the history is searched for commits with user metadata (maintenance commits
#: such as OPTIMIZE carry none).
HISTORY_DEPTH = 100
FOLDER_KINDS = ("missing", "empty", "unfinished", "file", "qbeast", "delta", "files")


@dataclass(frozen=True)
class FolderDescription(OperationResult):
    """``kind`` (one of :data:`FOLDER_KINDS`), a description in words for error messages, and
    for a table its version, data files and the user metadata of its latest commits that have
    some (newest first)."""

    path: str
    kind: str
    description: str
    version: int | None = None
    files: int | None = None
    user_metadata: tuple[str, ...] = ()

    def summary_lines(self) -> list[str]:
        return [f"{self.path}: {self.description}"]


def _files_below(path: str, limit: int = 1000) -> list[str]:
    found: list[str] = []
    for root, _, names in os.walk(path):
        for name in names:
            found.append(os.path.relpath(os.path.join(root, name), path))
            if len(found) >= limit:
                return found
    return found


def _file_above(path: str) -> str | None:
    """The nearest existing ancestor of ``path`` when it is a file (no folder can be made there)."""
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.exists(parent):
        if os.path.dirname(parent) == parent:
            return None
        parent = os.path.dirname(parent)
    return parent if parent and os.path.isfile(parent) else None


def _table(path: str) -> FolderDescription | None:
    """The Delta/Qbeast table at ``path``, or None when there is no committed table."""
    from qbeast.errors import QbeastError
    from qbeast.operations.maintenance import table_history
    from qbeast.snapshot import QbeastSnapshot

    try:
        snapshot = QbeastSnapshot.load(path)
    except QbeastError:
        return None
    delta = snapshot.delta
    facts = f"version {delta.version}, {delta.num_files} data files"
    if not snapshot.is_qbeast:
        return FolderDescription(path, "delta", f"a Delta table without Qbeast metadata ({facts})",
                                 delta.version, delta.num_files)
    metadata = tuple(e.user_metadata for e in table_history(path, limit=HISTORY_DEPTH).entries
                     if e.user_metadata)
    return FolderDescription(path, "qbeast", f"a Qbeast table ({facts})", delta.version,
                             delta.num_files, metadata)


def describe_folder(path: str) -> FolderDescription:
    """Classify what ``path`` holds (local folders; other URIs only through their Delta log)."""
    if "://" in path and not path.startswith("file:"):
        return _table(path) or FolderDescription(path, "missing", "no table")
    if os.path.isfile(path):
        return FolderDescription(path, "file", "a file, not a folder")
    if not os.path.isdir(path):
        blocking = _file_above(path)
        if blocking is not None:
            return FolderDescription(path, "file", f"inside {blocking}, which is a file, not a folder")
        return FolderDescription(path, "missing", "nothing")
    entries = [e for e in os.listdir(path) if not e.startswith(".")]
    if not entries:
        return FolderDescription(path, "empty", "an empty folder")
    if "_delta_log" in entries:
        table = _table(path)
        if table is not None:
            return table
        if all(e.startswith(_WRITER_LEFTOVERS) for e in entries):
            return FolderDescription(path, "unfinished", "the leftovers of a write that never committed")
    files = _files_below(path)
    parquet = [f for f in files if f.endswith(".parquet")]
    example = f", e.g. {(parquet or files)[0]}" if files else ""
    count = f"{len(files)}{'+' if len(files) >= 1000 else ''} files{example}"
    if parquet and "_delta_log" not in entries:
        return FolderDescription(path, "files", f"a plain parquet folder ({count}) with no Delta log")
    return FolderDescription(path, "files", f"a folder that is not a table ({count})")


__all__ = ["FOLDER_KINDS", "FolderDescription", "HISTORY_DEPTH", "describe_folder"]
