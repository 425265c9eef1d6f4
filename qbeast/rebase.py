"""Re-planning a Qbeast commit that lost a race, so that concurrent appends succeed.

The Delta layer rebases a commit by itself when the commits that won the race cannot change its
outcome (plain appends); it stops with :class:`MetadataChangedError` when one of them changed the
table metadata, which for a Qbeast table is what opening a revision does. A write or optimize has
then already written its files; this module decides, from the fresh snapshot, whether those files
can still be committed and how, so that only true conflicts fail:

* files written **into an existing revision R** stay valid while R is unchanged in the fresh
  snapshot (revisions are immutable; appends into one revision commute, because a cube's
  effective threshold is the minimum over its blocks and thresholds are only ever lowered —
  FORMAT §6.6, §13). If R changed or vanished (the table was overwritten), the write conflicts;
* files written for a revision **the commit opens** (``R+1``) are self-contained: their blocks
  describe a complete tree. If another writer opened a revision with that id first, the files
  are re-tagged (tags live in the log, not in the parquet files) as the next free id, and the
  metadata records the revision under that id;
* files the commit **removes** (optimize) must still be active; otherwise it is a true conflict;
* the **schema**: columns shared with the fresh table must keep their types; columns the commit
  adds (``merge_schema``) are merged into the fresh schema.

:func:`commit_with_retries` runs the commit, and on a metadata or protocol race reloads the
snapshot, re-plans with :func:`rebase` and commits again, a bounded number of times, logging each
retry. The writer and optimize both go through it.
"""
from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from qbeast.commit import DEFAULT_REPLAN_RETRIES, commit_files, delete_new_files
from qbeast.core.blocks import REVISION_TAG
from qbeast.core.columns import canonical_type
from qbeast.core.revision import Revision, updated_configuration
from qbeast.delta.actions import AddFile, Metadata
from qbeast.delta.errors import (
    ConcurrentDeleteReadError,
    ConcurrentModificationError,
    MetadataChangedError,
    ProtocolChangedError,
)
from qbeast.delta.transaction import Transaction
from qbeast.snapshot import QbeastSnapshot

logger = logging.getLogger("qbeast.rebase")


@dataclass
class PlannedCommit:
    """What a write or optimize commits, independent of the table version it was planned on.

    ``revision`` is the revision the added files are tagged with and ``opens_revision`` whether
    this commit creates it. ``removes`` are active files the commit replaces. ``schema_string``
    is the schema the commit records when it changes it (new table, merged columns), and
    ``data_schema`` the schema of the written files (their columns must keep their types).
    """

    revision: Revision | None
    opens_revision: bool
    adds: list[AddFile]
    removes: list[AddFile] = field(default_factory=list)
    schema_string: str | None = None
    data_schema: dict[str, Any] | None = None
    #: where the plan was made, for messages
    read_version: int = -1


class WriteConflictError(ConcurrentModificationError):
    """A concurrent commit changed what this commit depends on; it cannot be re-planned."""


def _same_revision(a: Revision, b: Revision) -> bool:
    return json.loads(a.to_json()) == json.loads(b.to_json())


def _retag(add: AddFile, revision_id: int) -> AddFile:
    tags = dict(add.tags or {})
    tags[REVISION_TAG] = str(revision_id)
    return dataclasses.replace(add, tags=tags)


def _field_types(schema: dict[str, Any] | None) -> dict[str, str]:
    return {f["name"]: canonical_type(f) for f in (schema or {}).get("fields", [])}


def rebase(planned: PlannedCommit, fresh: QbeastSnapshot | None) -> PlannedCommit:
    """``planned`` made valid on top of ``fresh``, or :class:`WriteConflictError`."""
    if fresh is None:
        raise WriteConflictError("the table disappeared while the commit was being made")
    table = fresh.table_path
    for add in planned.removes:
        if add.path not in fresh.delta.files:
            raise ConcurrentDeleteReadError(
                f"file {add.path} of {table} that this operation rewrites was removed by another "
                f"commit after version {planned.read_version} (e.g. a concurrent optimize or "
                "overwrite); nothing was committed — run the operation again"
            )
    schema_string = _rebased_schema(planned, fresh)
    revision = planned.revision
    kept = dataclasses.replace(planned, schema_string=schema_string, read_version=fresh.version)
    if revision is None or not planned.adds:
        # no file to tag (an empty write): an existing Qbeast table keeps its revisions
        return dataclasses.replace(kept, opens_revision=planned.opens_revision and not fresh.is_qbeast)
    if not fresh.is_qbeast:
        raise WriteConflictError(
            f"{table} lost its Qbeast metadata (qbeast.lastRevisionID) in a concurrent commit "
            f"after version {planned.read_version} (an overwrite by another engine?); nothing "
            "was committed — run the write again"
        )
    current = fresh.revisions.get(revision.revision_id)
    if current is not None and _same_revision(current, revision):
        return dataclasses.replace(kept, opens_revision=False)
    if not planned.opens_revision:
        raise WriteConflictError(
            f"revision {revision.revision_id} of {table}, which this commit's files were indexed "
            f"into, was replaced by a concurrent commit after version {planned.read_version} "
            "(the table was overwritten); nothing was committed — run the write again"
        )
    new_id = max(fresh.revisions, default=0) + 1
    logger.info("re-tagging %d file(s) of %s from revision %d to %d (revision %d was opened by "
                "another writer)", len(planned.adds), table, revision.revision_id, new_id,
                revision.revision_id)
    return dataclasses.replace(kept, revision=dataclasses.replace(revision, revision_id=new_id),
                               adds=[_retag(a, new_id) for a in planned.adds])


def _rebased_schema(planned: PlannedCommit, fresh: QbeastSnapshot) -> str | None:
    """The schema to commit on top of ``fresh`` (None = keep the fresh one)."""
    if planned.data_schema is None:
        return None
    theirs = fresh.delta.schema
    their_types = _field_types(theirs)
    ours = _field_types(planned.data_schema)
    changed = sorted(n for n in ours if n in their_types and their_types[n] != ours[n])
    if changed:
        raise WriteConflictError(
            f"column(s) {changed} of {fresh.table_path} changed type in a concurrent commit "
            f"after version {planned.read_version}; the written files no longer match the table "
            "— nothing was committed, run the write again"
        )
    missing = [f for f in planned.data_schema["fields"] if f["name"] not in their_types]
    if not missing:
        return None
    if planned.schema_string is None:
        raise WriteConflictError(
            f"column(s) {[f['name'] for f in missing]} were dropped from {fresh.table_path} by a "
            f"concurrent commit after version {planned.read_version}; nothing was committed — "
            "run the write again (with merge_schema=True to add them back)"
        )
    return json.dumps({**theirs, "fields": list(theirs["fields"]) + missing})


def metadata_for(planned: PlannedCommit, snapshot: QbeastSnapshot | None,
                 new_metadata: Callable[[str, dict[str, str]], Metadata] | None = None) -> Metadata | None:
    """The ``metaData`` action ``planned`` needs on top of ``snapshot`` (None if unchanged).

    ``new_metadata(schema_string, configuration)`` makes the metadata of a new table; without
    it (operations that only change an existing table: optimize, row-level changes) a missing
    ``snapshot`` is a programming error.
    """
    configuration = dict(snapshot.configuration) if snapshot is not None else {}
    changed = planned.schema_string is not None or snapshot is None
    if planned.opens_revision and planned.revision is not None:
        configuration = updated_configuration(configuration, planned.revision)
        changed = True
    if not changed:
        return None
    if snapshot is None:
        if new_metadata is None:
            raise AssertionError("this operation changes an existing table; it never creates one")
        assert planned.schema_string is not None
        return new_metadata(planned.schema_string, configuration)
    old = snapshot.delta.metadata
    return dataclasses.replace(
        old, schema_string=planned.schema_string or old.schema_string, configuration=configuration,
        format_options=dict(old.format_options), partition_columns=list(old.partition_columns),
    )


#: Races a commit is re-planned after (anything else is a true conflict and propagates).
RETRYABLE = (MetadataChangedError, ProtocolChangedError)


def commit_with_retries(
    path: str,
    planned: PlannedCommit,
    snapshot: QbeastSnapshot | None,
    build: Callable[[PlannedCommit, QbeastSnapshot | None], Transaction],
    *,
    what: str,
    operation: str,
    parameters: Mapping[str, Any] | Callable[[PlannedCommit], Mapping[str, Any]],
    metrics: Mapping[str, Any] | None = None,
    info: Mapping[str, Any] | None = None,
    max_retries: int = DEFAULT_REPLAN_RETRIES,
    before_commit: Callable[[], None] | None = None,
) -> tuple[int, PlannedCommit]:
    """Commit ``planned`` on ``snapshot``; after a lost race re-plan on a fresh snapshot and retry.

    ``build(plan, snapshot)`` makes the transaction of a plan (metadata, removes, application
    transaction) without its new files, which :func:`qbeast.commit.commit_files` adds and
    commits; ``parameters`` may depend on the plan (a re-tagged revision id). Returns the
    committed version and the plan that was committed (re-tagged files, revision id). Gives up
    with the last race error after ``max_retries`` re-plans (0: no retry); true conflicts raise
    from :func:`rebase` at once. Whenever nothing was committed, the new files are deleted.
    ``before_commit`` runs before each attempt's commit (e.g. a cancelled write stops there).
    """
    attempt = 0
    transaction: Transaction | None = None
    try:
        while True:
            transaction = build(planned, snapshot)
            params = parameters(planned) if callable(parameters) else parameters
            try:
                version = commit_files(transaction, planned.adds, operation=operation,
                                       parameters=params, metrics=metrics, info=info,
                                       before_commit=before_commit,
                                       delete_on_failure=False)
                return version, planned
            except RETRYABLE as exc:
                if attempt >= max_retries:
                    if max_retries == 0:
                        raise
                    raise type(exc)(
                        f"{what} on {path} lost the commit race {attempt + 1} times (last: {exc}); "
                        f"gave up after {max_retries} re-plans"
                    ) from exc
                attempt += 1
                snapshot = QbeastSnapshot.load_if_exists(path)
                planned = rebase(planned, snapshot)
                logger.warning(
                    "%s on %s: commit lost a race (%s); re-planned on version %s, retry %d of %d",
                    what, path, type(exc).__name__, snapshot.version if snapshot else None,
                    attempt, max_retries,
                )
    except BaseException:
        if transaction is not None and transaction.committed_version is None:
            delete_new_files(transaction.log, planned.adds)
        raise


__all__ = [
    "DEFAULT_REPLAN_RETRIES",
    "PlannedCommit",
    "WriteConflictError",
    "commit_with_retries",
    "metadata_for",
    "rebase",
]
