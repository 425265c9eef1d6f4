"""Optimistic transactions: collect actions, then publish them as the next version.

A commit is one file ``<version>.json`` created with put-if-absent, so it is all-or-nothing and can
never replace another writer's version. When the name is taken (another writer won the race) the
transaction reads the winning commits and decides:

* it conflicts and fails with a specific :class:`ConcurrentModificationError` subclass when a
  winner changed the protocol or the metadata, removed a file this transaction read or removes,
  recorded the same application transaction id, or added data to a table this transaction read as
  a whole (:meth:`Transaction.mark_table_read`);
* otherwise (e.g. both sides blindly append) it rebases: retries at the next free version, up to
  ``max_retries`` times.

Every ``delta.checkpointInterval`` versions the committer also writes a checkpoint.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from qbeast import __version__
from qbeast.delta.actions import (
    Action,
    AddFile,
    CommitInfo,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    actions_to_bytes,
    now_ms,
)
from qbeast.delta.checkpoint import checkpoint_interval, write_checkpoint
from qbeast.delta.errors import (
    AppendOnlyTableError,
    CommitFailedError,
    ConcurrentAppendError,
    ConcurrentDeleteReadError,
    ConcurrentModificationError,
    ConcurrentTransactionError,
    DeltaError,
    MetadataChangedError,
    ProtocolChangedError,
)
from qbeast.delta.features import check_writable
from qbeast.delta.outcome import record_commit
from qbeast.delta.snapshot import parse_commit
from qbeast.errors import InvalidOptionError

if TYPE_CHECKING:
    from qbeast.delta.log import DeltaLog
    from qbeast.delta.snapshot import Snapshot

logger = logging.getLogger("qbeast.delta.transaction")

ENGINE_INFO = f"dbt-qbeast/{__version__}"
DEFAULT_MAX_RETRIES = 100
DEFAULT_PROTOCOL = Protocol(1, 2)


def _validate_schema(metadata: Metadata) -> None:
    if metadata.schema_string is None:  # readers accept such a table; we never write one
        raise InvalidOptionError("metadata to commit has no schema_string (the Delta protocol requires it)")
    try:
        schema = json.loads(metadata.schema_string)
    except ValueError as exc:
        raise InvalidOptionError(f"metadata schema_string is not JSON: {exc}") from exc
    if not isinstance(schema, dict) or schema.get("type") != "struct" or not isinstance(
        schema.get("fields"), list
    ):
        raise InvalidOptionError(
            'metadata schema_string must be a Spark struct schema: {"type": "struct", "fields": [...]}'
        )
    names = [f.get("name") for f in schema["fields"]]
    unknown = [c for c in metadata.partition_columns if c not in names]
    if unknown:
        raise InvalidOptionError(
            f"partition column(s) {unknown} are not in the schema; allowed columns: {names}"
        )


class Transaction:
    """Actions to be committed atomically on top of ``read_snapshot`` (None for a new table)."""

    def __init__(
        self, log: DeltaLog, read_snapshot: Snapshot | None, max_retries: int = DEFAULT_MAX_RETRIES
    ) -> None:
        if not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidOptionError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        self.log = log
        self.read_snapshot = read_snapshot
        self.read_version = read_snapshot.version if read_snapshot is not None else -1
        self.max_retries = max_retries
        self._adds: list[AddFile] = []
        self._removes: list[RemoveFile] = []
        self._metadata: Metadata | None = None
        self._protocol: Protocol | None = None
        self._txns: dict[str, SetTransaction] = {}
        self._files_read: set[str] = set()
        self._read_whole_table = False
        self.committed_version: int | None = None
        self.attempts = 0

    # ------------------------------------------------------------------ building

    def add_actions(self, *actions: Action | Iterable[Action]) -> Transaction:
        """Queue ``AddFile`` / ``RemoveFile`` actions (or other actions, routed to their setter)."""
        for item in actions:
            if isinstance(item, (AddFile, RemoveFile, Metadata, Protocol, SetTransaction)):
                self._add_one(item)
            elif isinstance(item, Iterable) and not isinstance(item, (str, bytes, Mapping)):
                for action in item:
                    self._add_one(action)
            else:
                raise InvalidOptionError(
                    f"add_actions accepts AddFile, RemoveFile, Metadata, Protocol or "
                    f"SetTransaction objects (or iterables of them), got {type(item).__name__}"
                )
        return self

    def _add_one(self, action: Any) -> None:
        if isinstance(action, AddFile):
            self._adds.append(action)
        elif isinstance(action, RemoveFile):
            self._removes.append(action)
        elif isinstance(action, Metadata):
            self.update_metadata(action)
        elif isinstance(action, Protocol):
            self.update_protocol(action)
        elif isinstance(action, SetTransaction):
            self.set_transaction(action.app_id, action.version)
        else:
            raise InvalidOptionError(
                "add_actions accepts AddFile, RemoveFile, Metadata, Protocol or SetTransaction "
                f"objects, got {type(action).__name__}"
            )

    @property
    def added_files(self) -> list[AddFile]:
        """The ``AddFile`` actions queued so far, in order."""
        return list(self._adds)

    def replace_added_files(self, adds: Iterable[AddFile]) -> Transaction:
        """Swap queued ``AddFile`` actions for the given ones of the same paths (e.g. with more
        tags); a path that is not queued is refused."""
        by_path = {add.path: add for add in adds}
        unknown = sorted(set(by_path) - {add.path for add in self._adds})
        if unknown:
            raise InvalidOptionError(f"replace_added_files: {unknown} are not queued AddFiles")
        self._adds = [by_path.get(add.path, add) for add in self._adds]
        return self

    def mark_files_read(self, paths: Iterable[str]) -> Transaction:
        """Declare that the result depends on these files: a concurrent removal is a conflict."""
        self._files_read.update(paths)
        return self

    def mark_table_read(self) -> Transaction:
        """Declare that the result depends on the whole table: concurrent appends conflict too."""
        self._read_whole_table = True
        return self

    def update_metadata(self, metadata: Metadata) -> Transaction:
        """Replace the table metadata in this commit (required when creating a table)."""
        _validate_schema(metadata)
        self._metadata = metadata
        return self

    def update_protocol(self, protocol: Protocol) -> Transaction:
        """Set the protocol in this commit; versions can only go up on an existing table."""
        current = self.read_snapshot.protocol if self.read_snapshot is not None else None
        if current is not None and (
            protocol.min_reader_version < current.min_reader_version
            or protocol.min_writer_version < current.min_writer_version
        ):
            raise InvalidOptionError(
                f"protocol cannot be downgraded from reader {current.min_reader_version} / writer "
                f"{current.min_writer_version} to reader {protocol.min_reader_version} / writer "
                f"{protocol.min_writer_version}"
            )
        self._protocol = protocol
        return self

    def set_transaction(self, app_id: str, version: int) -> Transaction:
        """Record application transaction ``version`` of ``app_id`` (idempotent writes)."""
        if not isinstance(app_id, str) or not app_id:
            raise InvalidOptionError(f"txn app_id must be a non-empty string, got {app_id!r}")
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise InvalidOptionError(f"txn version must be a non-negative integer, got {version!r}")
        self._txns[app_id] = SetTransaction(app_id, version, now_ms())
        return self

    # ------------------------------------------------------------------ committing

    def effective_metadata(self) -> Metadata | None:
        """The metadata this transaction commits under: its own update, else the read snapshot's
        (None for a new table that has none yet)."""
        if self._metadata is not None:
            return self._metadata
        return self.read_snapshot.metadata if self.read_snapshot is not None else None

    def _effective(self) -> tuple[Protocol, Metadata]:
        snap = self.read_snapshot
        protocol = self._protocol or (snap.protocol if snap is not None else DEFAULT_PROTOCOL)
        metadata = self._metadata or (snap.metadata if snap is not None else None)
        if metadata is None:
            raise InvalidOptionError(
                f"creating the Delta table {self.log.table_path} needs a Metadata action "
                "(update_metadata) with its schema"
            )
        return protocol, metadata

    def _validate(self, blind_append: bool, protocol: Protocol, metadata: Metadata) -> None:
        files = self.read_snapshot.files if self.read_snapshot is not None else {}
        check_writable(protocol, metadata, files)
        if blind_append and (self._removes or self._files_read or self._read_whole_table):
            raise InvalidOptionError(
                "blind_append=True is only allowed for commits that add files without reading "
                "or removing any; this transaction removes or read files"
            )
        if metadata.configuration.get("delta.appendOnly", "false").lower() == "true":
            if any(rm.data_change for rm in self._removes):
                raise AppendOnlyTableError(
                    f"table {self.log.table_path} has delta.appendOnly=true: data cannot be "
                    "removed (only dataChange=false rewrites are allowed)"
                )
        seen: set[str] = set()
        for add in self._adds:
            if add.path in seen:
                raise InvalidOptionError(f"file {add.path!r} is added twice in one commit")
            seen.add(add.path)

    def _build_actions(
        self,
        operation: str,
        parameters: Mapping[str, Any] | None,
        blind_append: bool,
        metrics: Mapping[str, Any] | None,
        info: Mapping[str, Any] | None,
    ) -> list[Action]:
        params = {
            k: v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
            for k, v in (parameters or {}).items()
        }
        extra: dict[str, Any] = {"isolationLevel": "WriteSerializable"}
        if self.read_version >= 0:
            extra["readVersion"] = self.read_version
        extra.update(info or {})
        commit_info = CommitInfo(
            timestamp=now_ms(),
            operation=operation,
            operation_parameters=params,
            engine_info=ENGINE_INFO,
            is_blind_append=blind_append,
            operation_metrics={k: str(v) for k, v in metrics.items()} if metrics else None,
            extra=extra,
        )
        actions: list[Action] = [commit_info]
        if self._protocol is not None or self.read_snapshot is None:
            actions.append(self._protocol or DEFAULT_PROTOCOL)
        if self._metadata is not None:
            actions.append(self._metadata)
        actions.extend(self._txns.values())
        actions.extend(self._removes)
        actions.extend(self._adds)
        return actions

    def commit(
        self,
        operation: str,
        parameters: Mapping[str, Any] | None = None,
        blind_append: bool = False,
        metrics: Mapping[str, Any] | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> int:
        """Publish the queued actions as the next version and return that version.

        ``parameters`` become ``commitInfo.operationParameters`` (non-strings JSON-encoded),
        ``metrics`` its ``operationMetrics`` and ``info`` extra ``commitInfo`` keys.
        """
        if self.committed_version is not None:
            raise DeltaError(f"transaction already committed as version {self.committed_version}")
        if not isinstance(operation, str) or not operation:
            raise InvalidOptionError(f"commit operation must be a non-empty string, got {operation!r}")
        started = time.perf_counter()
        protocol, metadata = self._effective()
        self._validate(blind_append, protocol, metadata)
        interval = checkpoint_interval(metadata)  # validated before publishing, used after
        data = actions_to_bytes(self._build_actions(operation, parameters, blind_append, metrics, info))
        version = self.read_version + 1
        checked = self.read_version
        for attempt in range(self.max_retries + 1):
            self.attempts = attempt + 1
            target = f"{self.log.log_path}/{version:020d}.json"
            try:
                published = self.log.storage.put_if_absent(target, data)
            except OSError as exc:
                raise CommitFailedError(
                    f"cannot write the commit file {target}: {exc.strerror or exc}; nothing was "
                    f"committed (the table is still at version {checked})"
                ) from exc
            if published:
                break
            latest = self.log.list_log(since=version).latest_version  # the winners only
            if latest < version:  # the winner's file vanished meanwhile: look again, whole
                latest = max(self.log.list_log().latest_version, version)
            for winner in range(checked + 1, latest + 1):
                self._check_conflicts(winner)
            checked = latest
            version = latest + 1
            logger.debug("commit of %s lost a race; rebasing to version %d", self.log.table_path, version)
        else:
            raise ConcurrentModificationError(
                f"commit to {self.log.table_path} gave up after {self.max_retries + 1} attempts: "
                "other writers kept committing first (raise max_retries to wait longer)"
            )
        self.committed_version = version
        record_commit(version)
        logger.info(
            "committed: table=%s version=%d operation=%s adds=%d removes=%d attempts=%d elapsed=%.3fs",
            self.log.table_path, version, operation, len(self._adds), len(self._removes),
            self.attempts, time.perf_counter() - started,
        )
        self._maybe_checkpoint(version, interval)
        return version

    def _check_conflicts(self, winner: int) -> None:
        source = f"{self.log.log_path}/{winner:020d}.json"
        removing = {rm.path for rm in self._removes}
        if self.read_version < 0:
            raise MetadataChangedError(
                f"another writer created the table {self.log.table_path} (version {winner}) while "
                "this transaction was creating it; retry the operation against the new table"
            )
        for key, body in parse_commit(self.log.read_commit(winner), source):
            if key == "protocol":
                raise ProtocolChangedError(
                    f"version {winner} of {self.log.table_path} changed the protocol after this "
                    f"transaction read version {self.read_version}; retry the operation"
                )
            if key == "metaData":
                raise MetadataChangedError(
                    f"version {winner} of {self.log.table_path} changed the table metadata after "
                    f"this transaction read version {self.read_version}; retry the operation"
                )
            if key == "txn" and body.get("appId") in self._txns:
                raise ConcurrentTransactionError(
                    f"version {winner} of {self.log.table_path} already records application "
                    f"transaction {body.get('appId')!r} (version {body.get('version')})"
                )
            if key == "remove":
                path = body.get("path")
                if path in self._files_read or path in removing:
                    raise ConcurrentDeleteReadError(
                        f"version {winner} of {self.log.table_path} removed file {path!r} that "
                        "this transaction read or removes; retry the operation"
                    )
            if key == "add" and self._read_whole_table and body.get("dataChange", True):
                raise ConcurrentAppendError(
                    f"version {winner} of {self.log.table_path} added file {body.get('path')!r} "
                    f"to a table this transaction read as a whole; retry the operation"
                )

    def _maybe_checkpoint(self, version: int, interval: int) -> None:
        if version == 0 or version % interval != 0:
            return
        try:
            write_checkpoint(self.log, self.log.snapshot(version))
        except Exception:  # the commit is durable; a missing checkpoint only costs read time
            logger.warning("checkpoint at version %d of %s failed", version, self.log.table_path,
                           exc_info=True)
