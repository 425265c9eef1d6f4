"""``upgrade_format``: move a table written by an older qbeast-spark to the current block tags.

Before qbeast-spark 0.6 every file was one block described by flat string tags (``state``,
``cube``, ``revision``, ``elementCount``, ``minWeight``, ``maxWeight``) and the metadata could hold
``qbeast.replicatedSet.<revision>`` keys (FORMAT §5.2). Current readers take such files for root
blocks with no elements, which breaks sampling and appends. The documented migration (FORMAT §5.3)
is applied without touching data:

1. every ``qbeast.replicatedSet.*`` key leaves the metadata configuration;
2. every file with flat tags keeps only its ``revision`` tag and gains ``blocks``, a one-element
   array with the old ``cube`` (under the key ``cubeId``, which the current parser requires),
   ``minWeight``, ``maxWeight``, ``elementCount`` as JSON numbers, and ``replicated`` true exactly
   when the old ``state`` was ``REPLICATED`` or ``ANNOUNCED``.

Column metadata under ``qbeast.`` in the table schema (older versions of this engine copied a
table location there from the table a model read) is removed in the same commit: no reader uses
it, and every projection would copy it on.

Blocks keyed ``cube`` instead of ``cubeId`` (the form the published format document describes,
which qbeast-spark itself rejects) are re-keyed in the same pass.

How a file is re-tagged: Delta has no "update tags" action, but its reconciliation rule says that
of several ``add`` actions for one path the newest wins (Delta's own statistics recomputation
relies on it). So each file gets a new ``add`` (dataChange=false, same path, size and stats, new
tags) and **no** ``remove``. A ``remove`` plus ``add`` of one path in one commit is not read the
same way by every implementation: Delta's Scala replay (and this engine's) applies the actions in
file order, so the later one wins, while delta-rs and DuckDB's delta extension (delta-kernel) keep
the first one they meet — tested: with the remove first, both of them drop the file. The add-only
commit is read identically by all of them. Everything happens in one commit, so the upgrade is
atomic; a table that needs nothing is left untouched (the operation is idempotent).
"""
from __future__ import annotations
from qbeast.delta.outcome import reports_commit_outcome

import dataclasses
import json
import logging
from dataclasses import dataclass

from qbeast.commit import CommitProperties
from qbeast.commit import commit_properties as commit_properties_of
from qbeast.core.columns import engine_metadata_columns, without_engine_metadata
from qbeast.core.blocks import BLOCKS_TAG, REVISION_TAG, Block, TagFormat, decode_tags
from qbeast.core.revision import LAST_REVISION_KEY, REPLICATED_SET_PREFIX
from qbeast.delta.actions import AddFile
from qbeast.delta.log import DeltaLog
from qbeast.errors import FormatError
from qbeast.operations.common import OperationResult, check_bool, check_path
from qbeast.progress import Phase
from qbeast.rebase import RETRYABLE
from qbeast.snapshot import NotAQbeastTableError

logger = logging.getLogger("qbeast.operations.upgrade")

UPGRADE_OPERATION = "UPGRADE QBEAST FORMAT"
_OUTDATED = (TagFormat.LEGACY_FLAT, TagFormat.CUBE_KEY)
_SHOWN_CHANGES = 10


@dataclass(frozen=True)
class TagChange:
    """The tags of one file before and after the upgrade."""

    path: str
    old_tags: dict[str, str]
    new_tags: dict[str, str]


@dataclass(frozen=True)
class UpgradeResult(OperationResult):
    """What ``upgrade_format`` changed (or, in a dry run, would change)."""

    path: str
    dry_run: bool
    read_version: int
    version: int | None
    removed_properties: tuple[str, ...]
    changes: tuple[TagChange, ...]
    #: columns whose schema metadata held ``qbeast.*`` keys (removed)
    cleaned_columns: tuple[str, ...] = ()

    @property
    def needed(self) -> bool:
        """True when the table held outdated metadata."""
        return bool(self.removed_properties or self.changes or self.cleaned_columns)

    @property
    def file_count(self) -> int:
        return len(self.changes)

    def summary_lines(self) -> list[str]:
        if not self.needed:
            return [f"{self.path} already uses the current Qbeast metadata format "
                    f"(version {self.read_version}); nothing to upgrade"]
        head = (f"dry run: would upgrade {self.path}" if self.dry_run
                else f"upgraded {self.path} at version {self.version}")
        lines = [
            f"{head}: {self.file_count} file(s) re-tagged, "
            f"{len(self.removed_properties)} property(ies) removed"
        ]
        lines += [f"  remove property {key}" for key in self.removed_properties]
        if self.cleaned_columns:
            lines.append("  remove qbeast.* column metadata from "
                         + ", ".join(self.cleaned_columns))
        for change in self.changes[:_SHOWN_CHANGES]:
            lines.append(f"  {change.path}: {change.new_tags[BLOCKS_TAG]}")
        if self.file_count > _SHOWN_CHANGES:
            lines.append(f"  ... and {self.file_count - _SHOWN_CHANGES} more file(s)")
        return lines


def upgraded_tags(tags: dict[str, str]) -> dict[str, str] | None:
    """The current-format tags of a file with outdated tags, or None if they are current.

    Only the ``revision`` tag is kept; ``blocks`` always carries the ``replicated`` flag so that the
    old ``state`` is not lost.
    """
    decoded = decode_tags(tags)
    if decoded.format not in _OUTDATED:
        return None
    return {
        REVISION_TAG: tags[REVISION_TAG],
        BLOCKS_TAG: _blocks_json(decoded.blocks),
    }


def _blocks_json(blocks: tuple[Block, ...]) -> str:
    return json.dumps(
        [
            {
                "cubeId": b.cube,
                "minWeight": b.min_weight,
                "maxWeight": b.max_weight,
                "elementCount": b.element_count,
                "replicated": b.replicated,
            }
            for b in blocks
        ],
        separators=(",", ":"),
    )


@reports_commit_outcome(lambda path, *args, **kwargs: path)
def upgrade_format(path: str, dry_run: bool = False,
                   commit_properties: CommitProperties | None = None) -> UpgradeResult:
    """Upgrade the Qbeast metadata of the table at ``path`` in place (one commit, data untouched).

    With ``dry_run=True`` nothing is written and the result lists what would change.
    ``commit_properties`` (:class:`qbeast.CommitProperties`): user metadata and the application
    transaction recorded by the commit, and a ``cancelled`` callback checked right before it. An
    upgrade is idempotent by itself (a second one finds nothing to change), so it is never
    skipped for an application version already committed. A commit that loses a race to a
    concurrent metadata change is planned again on the new version, up to
    ``commit_properties.max_retries`` times, like every other writing operation.
    """
    check_path(path)
    check_bool(dry_run, "dry_run")
    props = commit_properties_of(commit_properties)
    log = DeltaLog.for_path(path)
    for attempt in range(props.max_retries + 1):
        try:
            return _upgrade(log, dry_run, props)
        except RETRYABLE as exc:
            if attempt == props.max_retries:
                raise
            logger.info("upgrade %s: lost a race to a concurrent change (%s); planning again "
                        "(attempt %d of %d)", log.table_path, exc, attempt + 2, props.max_retries + 1)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _upgrade(log: DeltaLog, dry_run: bool, props: CommitProperties) -> UpgradeResult:
    """One plan and commit of the upgrade on the latest snapshot."""
    snapshot = log.snapshot()
    configuration = snapshot.configuration
    if LAST_REVISION_KEY not in configuration:
        raise NotAQbeastTableError(
            f"{log.table_path} has no Qbeast metadata ({LAST_REVISION_KEY}); upgrade_format only "
            "applies to tables written by qbeast-spark or this engine"
        )
    phase = Phase(logger, "upgrade", log.table_path, "scan")
    removed = tuple(sorted(k for k in configuration if k.startswith(REPLICATED_SET_PREFIX)))
    changes: list[TagChange] = []
    new_adds: list[AddFile] = []
    for add in snapshot.files.values():
        if not add.tags:
            continue
        try:
            tags = upgraded_tags(add.tags)
        except FormatError as exc:
            raise FormatError(f"file {add.path} of {log.table_path}: {exc}") from exc
        if tags is None:
            continue
        changes.append(TagChange(add.path, dict(add.tags), tags))
        new_adds.append(
            AddFile(add.path, dict(add.partition_values), add.size, add.modification_time,
                    False, add.stats, tags, dict(add.extra) if add.extra else None)
        )
    cleaned = tuple(engine_metadata_columns(snapshot.schema))
    phase.done(files=len(changes), properties=len(removed), active_files=snapshot.num_files,
               columns=len(cleaned))
    result = UpgradeResult(log.table_path, dry_run, snapshot.version, None, removed, tuple(changes),
                           cleaned)
    if not result.needed or dry_run:
        logger.info("upgrade %s: %s", log.table_path, result.summary_lines()[0])
        return result
    snapshot.check_writable()
    phase = Phase(logger, "upgrade", log.table_path, "commit")
    transaction = props.stamp(log.start_transaction(snapshot))
    if removed or cleaned:
        kept = {k: v for k, v in configuration.items() if k not in removed}
        schema_string = (json.dumps(without_engine_metadata(snapshot.schema)) if cleaned
                         else snapshot.metadata.schema_string)
        transaction.update_metadata(dataclasses.replace(
            snapshot.metadata, configuration=kept, schema_string=schema_string))
    # Re-adding the same paths replaces their tags; the commit must fail if another writer
    # removed one of them meanwhile, or the re-add would resurrect a deleted file.
    transaction.mark_files_read(a.path for a in new_adds)
    transaction.add_actions(new_adds)
    props.check_cancelled(f"upgrade of {log.table_path}", "the commit")
    version = transaction.commit(
        UPGRADE_OPERATION,
        {"removedProperties": list(removed), "retaggedFiles": len(changes),
         **({"cleanedColumns": list(cleaned)} if cleaned else {})},
        metrics={"numRetaggedFiles": len(changes), "numRemovedProperties": len(removed)},
        info=props.info(),
    )
    phase.done(version=version, files=len(changes))
    return UpgradeResult(log.table_path, False, snapshot.version, version, removed, tuple(changes),
                         cleaned)
