"""The state of a Delta table at one version, reconstructed by log replay.

Replay starts from the newest usable checkpoint at or below the wanted version and applies the
JSON commits after it in order: an ``add`` makes a path active (and forgets a tombstone for it),
a ``remove`` makes it inactive and records a tombstone, the last ``metaData`` / ``protocol`` win
and ``txn`` actions keep the latest version per application id. Files are keyed by the path
string exactly as written in the log.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from qbeast.delta.actions import (
    AddFile,
    CommitInfo,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    resolve_file_path,
)
from qbeast.delta.errors import CorruptLogError
from qbeast.delta.features import check_readable, check_writable
from qbeast.delta.file_index import FileIndex

if TYPE_CHECKING:
    from qbeast.delta.log import DeltaLog


def parse_commit(data: bytes, source: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(action key, body)`` for each line of a commit file.

    ``source`` names the file in errors, so a corrupt log points at the exact line.
    """
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise CorruptLogError(f"{source} line {number} is not valid JSON: {exc}") from exc
        if not isinstance(obj, dict) or len(obj) != 1:
            raise CorruptLogError(
                f"{source} line {number} must be an object with exactly one action key, got "
                f"{line[:80]!r}"
            )
        key, body = next(iter(obj.items()))
        if not isinstance(body, dict):
            raise CorruptLogError(f"{source} line {number}: action {key!r} is not an object")
        yield key, body


class ReplayState:
    """Mutable state while replaying; becomes a :class:`Snapshot` at the end."""

    __slots__ = ("files", "tombstones", "metadata", "protocol", "txns", "commit_info", "table_path")

    def __init__(
        self,
        files: FileIndex | None = None,
        tombstones: dict[str, RemoveFile] | None = None,
        metadata: Metadata | None = None,
        protocol: Protocol | None = None,
        txns: dict[str, SetTransaction] | None = None,
        table_path: str = "",
    ) -> None:
        self.files = files if files is not None else FileIndex()
        self.tombstones = tombstones if tombstones is not None else {}
        self.metadata = metadata
        self.protocol = protocol
        self.txns = txns if txns is not None else {}
        self.commit_info: CommitInfo | None = None
        self.table_path = table_path

    def _location(self, path: str) -> str:
        return resolve_file_path(self.table_path, path)

    def _supports_deletion_vectors(self) -> bool:
        protocol = self.protocol
        return protocol is not None and "deletionVectors" in (protocol.reader_features or ())

    def apply(self, data: bytes, source: str) -> None:
        """Apply one commit file's actions in order.

        Logical files are identified by ``(path, deletion vector id)``: on a table that supports
        deletion vectors, a ``remove`` only deactivates the active file if it names the same
        deletion vector (a DELETE commits the file with its new vector and removes it with the
        old one). Paths are matched as file locations, so a remove that spells the path of an
        active file differently (absolute URI, other percent-encoding) still removes it.
        """
        files, tombstones = self.files, self.tombstones
        self.commit_info = None
        try:
            for key, body in parse_commit(data, source):
                if key == "add":
                    add = AddFile.from_json(body)
                    files.add(add)
                    tombstones.pop(add.path, None)
                elif key == "remove":
                    rm = RemoveFile.from_json(body)
                    target = files.key_for(rm.path, self._location)
                    if target is not None and (
                        not self._supports_deletion_vectors()
                        or files[target].dv_unique_id == rm.dv_unique_id
                    ):
                        files.remove(target)
                    tombstones[rm.path] = rm
                elif key == "metaData":
                    self.metadata = Metadata.from_json(body)
                elif key == "protocol":
                    self.protocol = Protocol.from_json(body)
                elif key == "txn":
                    txn = SetTransaction.from_json(body)
                    self.txns[txn.app_id] = txn
                elif key == "commitInfo":
                    self.commit_info = CommitInfo.from_json(body)
                # cdc, domainMetadata, checkpointMetadata... do not change the file set; the
                # features that make them matter are gated in qbeast.delta.features.
        except CorruptLogError as exc:
            if str(exc).startswith(source):
                raise
            raise CorruptLogError(f"{source}: {exc}") from exc
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptLogError(
                f"{source} holds a malformed action ({type(exc).__name__}: {exc}); the file does "
                "not follow the Delta protocol"
            ) from exc


class Snapshot:
    """An immutable view of the table at ``version``.

    ``files`` maps the log path of every active file to its :class:`AddFile` (tags verbatim; a
    read-only mapping whose entries are built on first access);
    ``timestamp`` is the commit time of ``version`` in epoch milliseconds.
    """

    def __init__(
        self,
        log: DeltaLog,
        version: int,
        state: ReplayState,
        timestamp: int | Callable[[], int],
        checkpoint_version: int | None = None,
    ) -> None:
        if state.metadata is None or state.protocol is None:
            missing = "metaData" if state.metadata is None else "protocol"
            raise CorruptLogError(
                f"Delta log of {log.table_path} has no {missing} action at version {version}"
            )
        self.log = log
        self.version = version
        self.metadata: Metadata = state.metadata
        self.protocol: Protocol = state.protocol
        self.files: Mapping[str, AddFile] = state.files
        self.tombstones: dict[str, RemoveFile] = state.tombstones
        self.txns: dict[str, SetTransaction] = state.txns
        self._timestamp = timestamp
        self.checkpoint_version = checkpoint_version

    def __repr__(self) -> str:
        return (
            f"Snapshot(table={self.table_path!r}, version={self.version}, "
            f"files={len(self.files)})"
        )

    @property
    def timestamp(self) -> int:
        """Commit time of ``version`` in epoch ms (looked up on first access)."""
        if callable(self._timestamp):
            self._timestamp = self._timestamp()
        return self._timestamp

    @property
    def table_path(self) -> str:
        """Absolute path of the table root."""
        return self.log.table_path

    @property
    def schema(self) -> dict[str, Any]:
        """Parsed schema JSON (``{"type": "struct", "fields": [...]}``)."""
        return self.metadata.schema

    @property
    def configuration(self) -> dict[str, str]:
        """Table properties (``metaData.configuration``)."""
        return self.metadata.configuration

    @property
    def partition_columns(self) -> list[str]:
        """Partition column names (empty for Qbeast tables)."""
        return self.metadata.partition_columns

    def txn_version(self, app_id: str) -> int | None:
        """Last committed transaction number of application ``app_id``, or None."""
        txn = self.txns.get(app_id)
        return None if txn is None else txn.version

    def file_path(self, add: AddFile | str) -> str:
        """File-system path of an active file (URL-decoded, joined with the table root)."""
        path = add.path if isinstance(add, AddFile) else add
        return resolve_file_path(self.table_path, path)

    @property
    def num_files(self) -> int:
        """Number of active files."""
        return len(self.files)

    @property
    def size_bytes(self) -> int:
        """Sum of the active files' sizes."""
        return sum(f.size for f in self.files.values())

    @property
    def num_records(self) -> int | None:
        """Total rows from the file statistics; None when a file has no ``numRecords``."""
        total = 0
        for add in self.files.values():
            count = add.num_records
            if count is None:
                return None
            total += count
        return total

    def check_readable(self) -> None:
        """Raise ``UnsupportedFeatureError`` if a parquet scan of the files would be wrong."""
        check_readable(self.protocol, self.metadata, self.files)

    def check_writable(self) -> None:
        """Raise ``UnsupportedFeatureError`` if committing to this table could corrupt it."""
        check_writable(self.protocol, self.metadata, self.files)
