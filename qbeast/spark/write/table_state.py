"""What a write needs to know about the table it writes to, read once from the Delta log.

Kept apart from the Spark jobs so that the decisions that depend only on the log — is this a
Qbeast table, which revision is the latest, what thresholds do its cubes have, which schema must
the new data match — can be read (and tested) without running Spark.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qbeast.core.index_status import IndexStatus
from qbeast.core.revision import Revision
from qbeast.delta.log import DeltaLog
from qbeast.snapshot import QbeastSnapshot


@dataclass
class TableState:
    """The log's view of the target table at the version the write starts from."""

    log: DeltaLog
    qbeast: QbeastSnapshot | None

    @classmethod
    def load(cls, path: str) -> TableState:
        log = DeltaLog.for_path(path)
        if not log.table_exists():
            return cls(log, None)
        return cls(log, QbeastSnapshot(log.snapshot()))

    @property
    def snapshot(self):
        """The Delta snapshot (``None`` for a new table)."""
        return self.qbeast.delta if self.qbeast is not None else None

    @property
    def exists(self) -> bool:
        return self.qbeast is not None

    @property
    def is_qbeast(self) -> bool:
        return self.qbeast is not None and self.qbeast.is_qbeast

    @property
    def latest_revision_id(self) -> int | None:
        return self.qbeast.latest_revision_id if self.qbeast is not None and self.is_qbeast else None

    @property
    def latest_revision(self) -> Revision | None:
        return self.qbeast.latest_revision if self.qbeast is not None and self.is_qbeast else None

    @property
    def schema(self) -> dict[str, Any] | None:
        """The Delta schema (parsed ``schemaString``) or ``None`` for a new table."""
        return self.snapshot.schema if self.snapshot is not None else None

    @property
    def configuration(self) -> dict[str, str]:
        return dict(self.snapshot.configuration) if self.snapshot is not None else {}

    def index_status(self, revision: Revision) -> IndexStatus:
        """The cubes of ``revision`` as its files describe them (FORMAT §6.1)."""
        assert self.qbeast is not None
        return self.qbeast.index_status(revision.revision_id)
