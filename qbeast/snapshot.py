"""The Qbeast view of one Delta snapshot: revisions, files per revision, index status.

This is the only module that combines the transaction log (which treats tags and table
properties as opaque strings) with the format core (which knows what they mean). The writer, the
reader, the table operations and the CLI all go through it, so that tag decoding and revision
parsing happen in one place and once per snapshot.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from functools import cached_property

from qbeast.core.blocks import Block, DecodedTags, TagFormat, decode_tags
from qbeast.core.index_status import IndexStatus
from qbeast.core.revision import LAST_REVISION_KEY, Revision, revisions_from_configuration
from qbeast.delta.actions import AddFile
from qbeast.delta.log import DeltaLog
from qbeast.delta.snapshot import Snapshot
from qbeast.errors import FormatError, InvalidOptionError
from qbeast.storage import Storage

logger = logging.getLogger("qbeast.snapshot")

STAGING_REVISION_ID = 0
_LEGACY_CONFIG_PREFIX = "qbeast.replicatedSet."


class NotAQbeastTableError(InvalidOptionError):
    """The path holds a Delta table without Qbeast metadata where Qbeast metadata is required."""


class QbeastSnapshot:
    """A Delta snapshot read through the Qbeast format.

    Tags are decoded lazily and at most once per file. A table without
    ``qbeast.lastRevisionID`` (plain Delta, or converted parquet before conversion) is still a
    valid ``QbeastSnapshot``: ``is_qbeast`` is False and every file counts as staging.
    """

    def __init__(self, delta: Snapshot) -> None:
        self.delta = delta
        self._decoded: dict[str, DecodedTags] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def load(
        cls,
        path: str,
        version: int | None = None,
        timestamp: int | float | str | datetime | None = None,
        storage: Storage | None = None,
    ) -> QbeastSnapshot:
        """Load the latest snapshot of ``path`` (or the one at ``version`` / ``timestamp``)."""
        log = DeltaLog.for_path(path, storage)
        return cls(log.snapshot(version=version, timestamp=timestamp))

    @classmethod
    def load_if_exists(cls, path: str, storage: Storage | None = None) -> QbeastSnapshot | None:
        """The latest snapshot, or None when ``path`` holds no Delta table yet."""
        log = DeltaLog.for_path(path, storage)
        if not log.table_exists():
            return None
        return cls(log.snapshot())

    # ------------------------------------------------------------------ basic facts
    @property
    def version(self) -> int:
        return self.delta.version

    @property
    def table_path(self) -> str:
        return self.delta.table_path

    @property
    def configuration(self) -> dict[str, str]:
        return self.delta.configuration

    @property
    def is_qbeast(self) -> bool:
        """True when the table carries Qbeast metadata (qbeast-spark's own test)."""
        return LAST_REVISION_KEY in self.configuration

    @cached_property
    def revisions(self) -> dict[int, Revision]:
        """Every revision recorded in the table properties, by id."""
        return revisions_from_configuration(self.configuration)

    @property
    def latest_revision_id(self) -> int:
        if not self.is_qbeast:
            raise NotAQbeastTableError(
                f"{self.table_path} is a Delta table without Qbeast metadata "
                f"(no {LAST_REVISION_KEY!r} property); convert it with qbeast.convert_to_qbeast"
            )
        text = self.configuration[LAST_REVISION_KEY]
        try:
            return int(text)
        except ValueError:
            raise FormatError(f"{LAST_REVISION_KEY} must be an integer, got {text!r}") from None

    @property
    def latest_revision(self) -> Revision:
        rid = self.latest_revision_id
        try:
            return self.revisions[rid]
        except KeyError:
            raise FormatError(
                f"{self.table_path}: {LAST_REVISION_KEY}={rid} but no qbeast.revision.{rid} "
                f"property exists (found revisions {sorted(self.revisions)})"
            ) from None

    def revision(self, revision_id: int) -> Revision:
        try:
            return self.revisions[revision_id]
        except KeyError:
            raise InvalidOptionError(
                f"revision {revision_id} does not exist in {self.table_path}; "
                f"existing revisions: {sorted(self.revisions)}"
            ) from None

    # ------------------------------------------------------------------ files and tags
    def files(self) -> Iterator[AddFile]:
        return iter(self.delta.files.values())

    def decoded(self, add: AddFile) -> DecodedTags:
        """The decoded tags of an active file (cached)."""
        found = self._decoded.get(add.path)
        if found is None:
            try:
                found = decode_tags(add.tags)
            except FormatError as exc:
                raise FormatError(f"file {add.path} of {self.table_path}: {exc}") from exc
            self._decoded[add.path] = found
        return found

    def blocks(self, add: AddFile) -> tuple[Block, ...]:
        return self.decoded(add).blocks

    def revision_of(self, add: AddFile) -> int:
        return self.decoded(add).revision_id

    @cached_property
    def _by_revision(self) -> dict[int, list[AddFile]]:
        grouped: dict[int, list[AddFile]] = {}
        for add in self.files():
            grouped.setdefault(self.revision_of(add), []).append(add)
        return grouped

    def files_by_revision(self) -> dict[int, list[AddFile]]:
        """Active files grouped by revision id; staging files (untagged, revision "0") under 0."""
        return {rid: list(files) for rid, files in self._by_revision.items()}

    def revision_files(self, revision_id: int) -> list[AddFile]:
        return list(self._by_revision.get(revision_id, ()))

    def staging_files(self) -> list[AddFile]:
        return self.revision_files(STAGING_REVISION_ID)

    @cached_property
    def needs_upgrade(self) -> bool:
        """True when the table still holds pre-0.6 metadata (flat tags or replicated sets).

        Such tables are read as plain Delta (no sampling pushdown) until ``upgrade_format``.
        """
        if any(key.startswith(_LEGACY_CONFIG_PREFIX) for key in self.configuration):
            return True
        return any(self.decoded(add).format is TagFormat.LEGACY_FLAT for add in self.files())

    def index_status(self, revision_id: int | None = None) -> IndexStatus:
        """The cubes of one revision (default: the latest) built from its files' blocks."""
        rid = self.latest_revision_id if revision_id is None else revision_id
        revision = self.revision(rid)
        files = self.revision_files(rid)
        return IndexStatus.from_files(revision, ((f.path, self.blocks(f)) for f in files))

    def __repr__(self) -> str:
        return (
            f"QbeastSnapshot(table={self.table_path!r}, version={self.version}, "
            f"qbeast={self.is_qbeast}, files={self.delta.num_files})"
        )
