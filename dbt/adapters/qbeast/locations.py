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
from typing import Any, Optional

from dbt.adapters.qbeast.errors import QbeastLocationError

#: Key of the JSON object a dbt write stores as ``commitInfo.userMetadata``.
MARKER_KEY = "dbt_relation"


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


def folder_content(description: Any) -> FolderContent:
    """The adapter's view of the engine's description of a folder (``qbeast.describe_folder``,
    made where the files are): for a Qbeast table, the relation its latest dbt write recorded."""
    kind, words = str(description.kind), str(description.description)
    if kind != "qbeast":
        return FolderContent(kind, words)
    owner = next((o for o in map(_marker_owner, description.user_metadata) if o is not None), None)
    who = f"written by dbt for {owner}" if owner else "not written by a dbt model"
    facts = f"version {description.version}, {description.files} data files"
    return FolderContent("qbeast", f"a Qbeast table {who} ({facts})", owner)


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
