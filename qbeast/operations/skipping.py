"""Declaring skipping indexes on an existing table and building them for the files it has.

Writes index the files they add (:func:`qbeast.commit.commit_files`); the files a table had
before its declaration (or a declaration's new column), and the files of a converted table, get
their entries here, in one commit. docs/skipping.md describes the indexes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qbeast.checks import check_path
from qbeast.commit import CommitProperties
from qbeast.commit import commit_properties as properties_of
from qbeast.core.skipping import column_types, encode_declaration, parse_declaration
from qbeast.delta.log import DeltaLog
from qbeast.skipping_files import build_missing_indexes


@dataclass(frozen=True)
class SkippingIndexResult:
    """What :func:`build_skipping_indexes` committed: the version (None: nothing to do) and how
    many existing files got index entries."""

    path: str
    version: int | None
    files_indexed: int

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "version": self.version, "files_indexed": self.files_indexed}

    def __str__(self) -> str:
        if self.version is None:
            return f"skipping indexes of {self.path}: every file is indexed, nothing committed"
        return (f"skipping indexes of {self.path}: {self.files_indexed} files indexed "
                f"in version {self.version}")


def build_skipping_indexes(path: str, skipping_indexes: Any = None, *,
                           commit_properties: CommitProperties | None = None) -> SkippingIndexResult:
    """Build the declared skipping indexes for every file of the table at ``path`` that lacks
    them; with ``skipping_indexes`` (as ``qbeast.write`` takes it) declare those first, in the
    same commit (``{}`` removes the declaration)."""
    check_path("path", path)
    props = properties_of(commit_properties)
    log = DeltaLog.for_path(path)
    declaration = None
    if skipping_indexes is not None:
        schema = log.snapshot().metadata.schema
        declaration = encode_declaration(parse_declaration(skipping_indexes, column_types(schema)))
    version, count = build_missing_indexes(log, declaration, info=props.info())
    return SkippingIndexResult(log.table_path, version, count)
