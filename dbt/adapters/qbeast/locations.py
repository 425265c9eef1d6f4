"""Which folders a qbeast model may write its table into (it never writes into others' data).

A model owns its location when the catalog says so (its own relation lives there), when the Qbeast
table there was last written by dbt for this very relation (the write's ``commitInfo.userMetadata``
records it), or when the folder is missing or empty. Anything else (a plain parquet folder, a plain
Delta table, another model's Qbeast table, a file) is refused with an error naming the path and
what is there, unless the model sets ``take_over_location=true``. A file is refused even then.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, List, Optional

from dbt.adapters.qbeast.errors import QbeastLocationError

#: Key of the JSON object a dbt write stores as ``commitInfo.userMetadata``.
MARKER_KEY = "dbt_relation"
#: Folders a failed first write may leave beside an empty ``_delta_log`` (the writer's staging).
_WRITER_LEFTOVERS = ("_delta_log", "_qbeast_staging_")
#: How far back the history is searched for the latest dbt write (maintenance commits such as
#: OPTIMIZE carry no marker).
HISTORY_DEPTH = 100


def write_marker(relation_name: str) -> str:
    """The ``user_metadata`` of a write made by dbt for ``relation_name`` (``schema.identifier``)."""
    return json.dumps({MARKER_KEY: relation_name.lower()})


def _marker_owner(user_metadata: Optional[str]) -> Optional[str]:
    if not user_metadata:
        return None
    try:
        value = json.loads(user_metadata)
    except ValueError:
        return None
    owner = value.get(MARKER_KEY) if isinstance(value, dict) else None
    return owner if isinstance(owner, str) else None


def same_location(a: Optional[str], b: Optional[str]) -> bool:
    """Whether two table locations name the same folder (trailing slashes, ``.`` parts aside)."""
    if not a or not b:
        return False
    if "://" in a or "://" in b:
        return a.rstrip("/") == b.rstrip("/")
    return os.path.normpath(a) == os.path.normpath(b)


@dataclass(frozen=True)
class FolderContent:
    """What a location holds: ``kind`` (missing, empty, unfinished, file, qbeast, delta, files),
    a description in words for error messages, and for a Qbeast table the relation its latest dbt
    write recorded."""

    kind: str
    description: str
    owner: Optional[str] = None

    @property
    def is_free(self) -> bool:
        """Nothing to protect: no folder, an empty one, or what a failed first write left."""
        return self.kind in ("missing", "empty", "unfinished")


def _files_below(path: str, limit: int = 1000) -> List[str]:
    found: List[str] = []
    for root, _, names in os.walk(path):
        for name in names:
            found.append(os.path.relpath(os.path.join(root, name), path))
            if len(found) >= limit:
                return found
    return found


def _file_above(path: str) -> Optional[str]:
    """The nearest existing ancestor of ``path`` when it is a file (no folder can be made there)."""
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.exists(parent):
        if os.path.dirname(parent) == parent:
            return None
        parent = os.path.dirname(parent)
    return parent if parent and os.path.isfile(parent) else None


def _table_content(spark: Any, path: str) -> Optional[FolderContent]:
    """The Delta/Qbeast table at ``path``, or None when there is no committed table."""
    import qbeast

    table = qbeast.QbeastTable.for_path(spark, path)
    try:
        snapshot = table.snapshot()
    except qbeast.QbeastError:
        return None
    delta = snapshot.delta
    if not snapshot.is_qbeast:
        return FolderContent(
            "delta", f"a Delta table without Qbeast metadata (version {delta.version}, "
            f"{delta.num_files} data files)")
    owner = None
    for entry in table.history(limit=HISTORY_DEPTH):
        owner = _marker_owner(entry.user_metadata)
        if owner is not None:
            break
    who = f"written by dbt for {owner}" if owner else "not written by a dbt model"
    return FolderContent(
        "qbeast", f"a Qbeast table {who} (version {delta.version}, {delta.num_files} data files)",
        owner)


def inspect_location(spark: Any, path: str) -> FolderContent:
    """Classify what ``path`` holds (local folders; other URIs only through their Delta log)."""
    if "://" in path and not path.startswith("file:"):
        content = _table_content(spark, path)
        return content or FolderContent("missing", "no table")
    if os.path.isfile(path):
        return FolderContent("file", "a file, not a folder")
    if not os.path.isdir(path):
        blocking = _file_above(path)
        if blocking is not None:
            return FolderContent("file", f"inside {blocking}, which is a file, not a folder")
        return FolderContent("missing", "nothing")
    entries = [e for e in os.listdir(path) if not e.startswith(".")]
    if not entries:
        return FolderContent("empty", "an empty folder")
    if "_delta_log" in entries:
        content = _table_content(spark, path)
        if content is not None:
            return content
        if all(e.startswith(_WRITER_LEFTOVERS) for e in entries):
            return FolderContent("unfinished", "the leftovers of a write that never committed")
    files = _files_below(path)
    parquet = [f for f in files if f.endswith(".parquet")]
    example = f", e.g. {(parquet or files)[0]}" if files else ""
    count = f"{len(files)}{'+' if len(files) >= 1000 else ''} files{example}"
    if parquet and "_delta_log" not in entries:
        return FolderContent("files", f"a plain parquet folder ({count}) with no Delta log")
    return FolderContent("files", f"a folder that is not a table ({count})")


def check_ownership(
    model: str,
    relation_name: str,
    location: str,
    content: FolderContent,
    catalog_location: Optional[str],
    take_over: bool,
) -> None:
    """Refuse to write ``model``'s table into ``location`` unless the model owns what is there.

    ``catalog_location`` is where the catalog says the model's relation lives now (None when the
    relation does not exist or is a view).
    """
    if content.kind == "file":
        raise QbeastLocationError(
            f"model {model}: the table location {location} is {content.description}; pick "
            "another location_root or alias, or move the file away"
        )
    if (content.is_free or same_location(catalog_location, location)
            or (content.owner is not None and content.owner == relation_name.lower()) or take_over):
        return
    raise QbeastLocationError(
        f"model {model}: the table location {location} holds {content.description}, which this "
        f"model does not own; nothing was written. Pick another location_root (or alias), move "
        f"that data away, or set take_over_location=true to let {relation_name} replace it"
    )
