"""Declaring skipping indexes on an existing table and building them for the files it has.

Writes index the files they add (:func:`qbeast.commit.commit_files`); the files a table had
before its declaration (or a declaration's new column), and the files of a converted table, get
their entries here, in one commit. docs/skipping.md describes the indexes.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from qbeast.checks import check_path
from qbeast.commit import CommitProperties, commit_files
from qbeast.commit import commit_properties as properties_of
from qbeast.core.skipping import TAG, column_types, encode_declaration, parse_declaration
from qbeast.delta.log import DeltaLog
from qbeast.delta.transaction import Transaction
from qbeast.skipping_files import (
    INDEX_FILES,
    build_entries,
    declare,
    delete_index_file,
    index_location,
    table_indexes,
    tagged,
    write_index_file,
)

logger = logging.getLogger("qbeast.operations.skipping")


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


def build_missing_indexes(log: Any, declaration: str | None = None, *,
                          operation: str = "BUILD SKIPPING INDEXES",
                          info: Mapping[str, Any] | None = None) -> tuple[int | None, int]:
    """Give every active file that lacks an entry for a declared index its entries, in one
    commit that adds those files again with the new tag (``dataChange: false``), as the files
    of a table written before the declaration, or converted, need. A ``declaration``
    (:func:`qbeast.core.skipping.encode_declaration`) replaces the table's in the same commit.
    The committed version (None when there was nothing to do) and the number of files indexed.

    The files are marked read: a concurrent commit that removes one of them makes this one
    conflict rather than bring the file back.
    """
    snapshot = log.snapshot()
    snapshot.check_writable()
    transaction = declare(Transaction(log, snapshot), declaration)
    indexes = table_indexes(transaction.effective_metadata())
    wanted = {spec.column for spec, _ in indexes}
    missing = []
    for add in snapshot.files.values() if indexes else ():
        name = (add.tags or {}).get(TAG)
        covered: set[str] = set()
        if name is not None:
            decoded = INDEX_FILES.arrays(log.storage, index_location(log.table_path, name))
            covered = set() if decoded is None else decoded.columns_of(add.path)
        if not wanted <= covered:
            missing.append(add)
    if not missing and transaction.effective_metadata() is snapshot.metadata:
        return None, 0
    started = time.perf_counter()
    name = write_index_file(log, build_entries(log, missing, indexes)) if missing else None
    transaction.mark_files_read([a.path for a in missing])
    adds = [replace(tagged(replace(a, tags={k: v for k, v in (a.tags or {}).items() if k != TAG}),
                           name), data_change=False) for a in missing if name is not None]
    try:
        version = commit_files(transaction, adds, operation=operation,
                               parameters={"indexes": [s.label for s, _ in indexes]},
                               metrics={"numIndexedFiles": len(adds)}, info=info,
                               delete_on_failure=False)
    except BaseException:
        delete_index_file(log, name)
        raise
    logger.info("skipping indexes built for %d existing files of %s in %.2fs", len(adds),
                log.table_path, time.perf_counter() - started)
    return version, len(adds)
