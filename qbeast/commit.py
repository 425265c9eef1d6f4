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
from dataclasses import fields as fields_of
from typing import TYPE_CHECKING, Any

from qbeast.core.blocks import Block, encode_tags
from qbeast.delta.actions import AddFile, encode_relative_path, resolve_file_path
from qbeast.delta.transaction import Transaction
from qbeast.errors import InvalidOptionError, check_cancelled
from qbeast.skipping_files import delete_index_file, index_new_files

if TYPE_CHECKING:
    from qbeast.delta.log import DeltaLog
    from qbeast.delta.snapshot import Snapshot

logger = logging.getLogger("qbeast.commit")

#: How many times a commit is re-planned after losing a race to a metadata or protocol change.
DEFAULT_REPLAN_RETRIES = 10


@dataclass(frozen=True)
class CommitProperties:
    """How a writing operation commits, the same for every one of them (write, optimize, convert,
    delete, update, merge, delete+insert), as delta-rs's ``CommitProperties``:

    * ``user_metadata``: text stored as the commit's ``commitInfo.userMetadata``;
    * ``app_id`` / ``app_version``: an idempotent transaction (Delta's ``txn`` action). A write
      whose application already committed this version or a later one is skipped;
    * ``max_retries``: how many times a commit that lost a race to a concurrent metadata change
      is re-planned and committed again (0: fail at once);
    * ``cancelled``: a callable checked between an operation's phases and right before its
      commit; when it returns True the operation stops with ``WriteCancelled``, deletes the files
      it wrote and commits nothing (how dbt's Ctrl-C stops a run without racing a commit).

    Values are checked when the object is made, so a bad one fails before any work.
    """

    user_metadata: str | None = None
    app_id: str | None = None
    app_version: int | None = None
    max_retries: int = DEFAULT_REPLAN_RETRIES
    cancelled: Callable[[], bool] | None = None

    def __post_init__(self) -> None:
        _check_fields(self.user_metadata, self.app_id, self.app_version, self.max_retries,
                      self.cancelled, spelled={})

    @property
    def transaction(self) -> tuple[str, int] | None:
        """The idempotent transaction ``(app_id, app_version)``, or None."""
        if self.app_id is None or self.app_version is None:
            return None
        return self.app_id, self.app_version

    def info(self) -> dict[str, Any] | None:
        """The extra ``commitInfo`` fields these properties add (``userMetadata``), or None."""
        return None if self.user_metadata is None else {"userMetadata": self.user_metadata}

    def done_before(self, snapshot: Snapshot | None) -> str | None:
        """Why the operation is skipped, when the table at ``snapshot`` already holds this
        application's transaction at ``app_version`` or later (None: no transaction given, no
        table yet, or not done: go on). Every writing operation asks this first."""
        txn = self.transaction
        if txn is None or snapshot is None:
            return None
        done = snapshot.txn_version(txn[0])
        if done is None or done < txn[1]:
            return None
        return f"skipped: application {txn[0]!r} already committed transaction {done} (asked {txn[1]})"

    def stamp(self, transaction: Transaction) -> Transaction:
        """``transaction`` with this application's transaction recorded (Delta's ``txn``
        action), so a later call with the same ``app_version`` is skipped."""
        if self.transaction is not None:
            transaction.set_transaction(*self.transaction)
        return transaction

    def check_cancelled(self, what: str, before: str) -> None:
        """Raise ``WriteCancelled`` when the caller's ``cancelled`` callback says to stop."""
        check_cancelled(self.cancelled, what, before)


#: The shorthand keyword arguments of entry points (``qbeast.write``) and the field each sets.
SHORTHANDS = {"txn_app_id": "app_id", "txn_version": "app_version"}


def _check_fields(user_metadata: Any, app_id: Any, app_version: Any, max_retries: Any,
                  cancelled: Any, *, spelled: Mapping[str, str]) -> None:
    """Refuse bad commit properties, naming each as the caller spelled it (``spelled``: field ->
    the shorthand the caller gave, e.g. ``app_id`` -> ``txn_app_id``)."""

    def name(field: str) -> str:
        return spelled.get(field, field)

    if user_metadata is not None and not isinstance(user_metadata, str):
        raise InvalidOptionError(
            f"{name('user_metadata')} must be a string, got {user_metadata!r}",
            option=name("user_metadata"), value=user_metadata, allowed="a string")
    if (app_id is None) != (app_version is None):
        app, version = name("app_id"), name("app_version")
        raise InvalidOptionError(
            f"{app} and {version} must be given together (idempotent writes), got "
            f"{app}={app_id!r}, {version}={app_version!r}",
            option=app if app_id is None else version,
            value=None, allowed=f"both {app} and {version}, or neither")
    if app_id is not None and (not isinstance(app_id, str) or not app_id):
        raise InvalidOptionError(f"{name('app_id')} must be a non-empty string, got {app_id!r}",
                                 option=name("app_id"), value=app_id, allowed="a non-empty string")
    if app_version is not None and (isinstance(app_version, bool) or not isinstance(app_version, int)
                                    or app_version < 0):
        raise InvalidOptionError(
            f"{name('app_version')} must be an integer >= 0, got {app_version!r}",
            option=name("app_version"), value=app_version, allowed="an integer >= 0")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise InvalidOptionError(f"max_retries must be an integer >= 0, got {max_retries!r}",
                                 option="max_retries", value=max_retries, allowed="an integer >= 0")
    if cancelled is not None and not callable(cancelled):
        raise InvalidOptionError(
            f"{name('cancelled')} must be a callable returning a bool, got {cancelled!r}",
            option=name("cancelled"), value=cancelled, allowed="a callable returning a bool")


def commit_properties(given: CommitProperties | None = None, **shorthands: Any) -> CommitProperties:
    """The properties of one call: ``given`` or the defaults, with the entry point's shorthand
    keyword arguments (``user_metadata``, ``cancelled``, ``txn_app_id``/``txn_version``) folded in.

    A shorthand may not contradict ``given``: the call is refused naming both. A bad value is
    refused with the name the caller used (``txn_version``, not ``app_version``), and so is a
    transaction given by halves (``txn_app_id and txn_version must be given together``).
    """
    if given is not None and not isinstance(given, CommitProperties):
        raise InvalidOptionError(
            f"commit_properties must be a qbeast.CommitProperties, got {type(given).__name__}",
            option="commit_properties", value=given, allowed="a qbeast.CommitProperties")
    fields = {SHORTHANDS.get(k, k): v for k, v in shorthands.items() if v is not None}
    base = given or CommitProperties()
    clash = sorted(k for k, v in fields.items() if getattr(base, k) not in (None, v))
    if clash:
        raise InvalidOptionError(
            f"{clash} given both as keyword arguments and in commit_properties; give each once",
            option=clash[0], value=fields[clash[0]], allowed="one of the two places")
    if not fields:
        return base
    spelled = {field: short for short, field in SHORTHANDS.items()
               if any(shorthands.get(s) is not None for s in SHORTHANDS)}
    merged = {**{f.name: getattr(base, f.name) for f in fields_of(base)}, **fields}
    _check_fields(merged["user_metadata"], merged["app_id"], merged["app_version"],
                  merged["max_retries"], merged["cancelled"], spelled=spelled)
    return replace(base, **fields)


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

    Where the table declares skipping indexes, the new files get their index file here
    (:func:`qbeast.skipping_files.index_new_files`): the one place every operation that adds
    files passes. The index file of a commit that was not made is always deleted (a commit made
    again builds its own).
    """
    index_name = None
    try:
        transaction.add_actions(list(new_files))
        # every file the commit adds: row-level changes queue their rewritten files themselves
        tagged, index_name = index_new_files(transaction.log, transaction.effective_metadata(),
                                             transaction.added_files)
        if index_name is not None:
            transaction.replace_added_files(tagged)
        if before_commit is not None:
            before_commit()
        return transaction.commit(operation, parameters, metrics=metrics, info=info)
    except BaseException:
        if transaction.committed_version is None:
            delete_index_file(transaction.log, index_name)
            if delete_on_failure:
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
