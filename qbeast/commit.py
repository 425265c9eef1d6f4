"""From the data files a write produced to one Delta commit: shared by every operation that adds files.

``qbeast.write``, ``optimize`` and the row-level operations (delete, update, merge) all end the same way: the
files their tasks wrote are described (:class:`WrittenFile`), each becomes an ``AddFile`` whose
tags carry the revision and the blocks (:func:`add_file`), and one transaction publishes them
(:func:`commit_files`). When that commit fails — a conflicting concurrent commit, a full disk —
nothing references the new files, so they are deleted at once instead of being left to vacuum;
the table stays at the version it had.

Like :mod:`qbeast.snapshot`, this module joins the format core (block tags) and the transaction
log (actions, commits) and knows nothing of Spark.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from qbeast.core.blocks import Block, encode_tags
from qbeast.delta.actions import AddFile, encode_relative_path, resolve_file_path
from qbeast.delta.transaction import Transaction

if TYPE_CHECKING:
    from qbeast.delta.log import DeltaLog

logger = logging.getLogger("qbeast.commit")


@dataclass(frozen=True)
class WrittenFile:
    """One data file a write produced, described from what was actually written.

    ``file_id`` is the write plan's file (rollup group) the rows were assigned to; ``path`` is
    relative to the table root; ``stats`` is the Delta stats JSON of the file; ``blocks`` are the
    index blocks the file holds (cube, lowest row weight, cube threshold, row count).
    """

    file_id: int
    path: str
    size: int
    modification_time: int
    num_records: int
    stats: str
    blocks: tuple[Block, ...]

    def with_blocks(self, extra: Iterable[Block]) -> WrittenFile:
        """This file with ``extra`` blocks appended (e.g. zero-element threshold markers)."""
        more = tuple(extra)
        return replace(self, blocks=self.blocks + more) if more else self


def add_file(written: WrittenFile, revision_id: int, *, data_change: bool = True) -> AddFile:
    """The ``AddFile`` of a written file: Delta stats, and tags naming its revision and blocks.

    ``data_change`` is False for rewrites that keep the table's rows (optimize). A file without
    blocks of the staging revision (a rewritten staging file) is untagged, as staging files are.
    """
    tags = (None if revision_id == 0 and not written.blocks
            else encode_tags(revision_id, written.blocks))
    return AddFile(
        encode_relative_path(written.path), {}, int(written.size), int(written.modification_time),
        data_change, written.stats, tags,
    )


def commit_files(
    transaction: Transaction,
    new_files: Sequence[AddFile],
    *,
    operation: str,
    parameters: Mapping[str, Any] | None = None,
    metrics: Mapping[str, Any] | None = None,
    info: Mapping[str, Any] | None = None,
    before_commit: Callable[[], None] | None = None,
    delete_on_failure: bool = True,
) -> int:
    """Add ``new_files`` to ``transaction`` and commit it; returns the committed version.

    Everything else the commit holds (removes, metadata, application transactions) is set on the
    transaction by the caller. If the commit fails for any reason, the new files are deleted —
    no version references them — and the error propagates. ``before_commit`` runs right before
    the commit: an exception it raises (e.g. a cancelled write) abandons the commit the same way.
    ``delete_on_failure=False`` keeps the new files for a caller that commits them again
    (:func:`qbeast.rebase.commit_with_retries`), which then deletes them itself when it gives up.
    """
    transaction.add_actions(list(new_files))
    try:
        if before_commit is not None:
            before_commit()
        return transaction.commit(operation, parameters, metrics=metrics, info=info)
    except BaseException:
        if delete_on_failure and transaction.committed_version is None:
            delete_new_files(transaction.log, new_files)
        raise


def delete_new_files(log: DeltaLog, new_files: Iterable[AddFile]) -> None:
    """Delete files written for a commit that was not made (missing ones are skipped)."""
    for add in new_files:
        try:
            log.storage.delete(resolve_file_path(log.table_path, add.path))
        except OSError as exc:  # best effort: vacuum removes whatever is left
            logger.warning("could not delete uncommitted file %s of %s: %s", add.path,
                           log.table_path, exc)
