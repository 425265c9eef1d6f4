"""The actions of a Delta commit and their JSON form.

Each commit file is newline-delimited JSON, one object per action, whose single key names the
action (``add``, ``remove``, ``metaData``, ``protocol``, ``txn``, ``commitInfo``). The dataclasses
use Python field names; ``to_json`` / ``from_json`` convert from and to the body of the action
(the object under the key). Keys this engine does not model are kept in ``extra`` so that a file
read from the log can be written back (for instance in a checkpoint) without losing anything.

``AddFile.tags`` is an opaque ``dict[str, str]`` kept verbatim: the Qbeast index lives there and
this layer must not interpret or reorder it. ``AddFile.stats`` stays the raw JSON string until
someone asks for a value (``parsed_stats``), because a snapshot holds thousands of files and most
callers never look at their statistics.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union
from urllib.parse import quote, unquote, urlparse

from qbeast.delta.errors import CorruptLogError
from qbeast.storage import local_path

_UNPARSED: Any = object()


def now_ms() -> int:
    """Current wall-clock time in epoch milliseconds (the unit of every Delta timestamp)."""
    return time.time_ns() // 1_000_000


def _opt_dict(value: Any) -> dict[str, Any] | None:
    return dict(value) if value is not None else None


@dataclass(slots=True, eq=False)
class AddFile:
    """A data file that becomes part of the table.

    ``path`` is the URL-encoded path as written in the log (relative to the table root, or an
    absolute URI); use :func:`resolve_file_path` to get a file-system path.
    """

    KEY: ClassVar[str] = "add"

    path: str
    partition_values: dict[str, str | None]
    size: int
    modification_time: int
    data_change: bool = True
    stats: str | None = None
    tags: dict[str, str] | None = None
    extra: dict[str, Any] | None = None
    _stats_cache: Any = field(default=_UNPARSED, init=False, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> AddFile:
        """Build from the body of an ``add`` action."""
        require_fields("add", body, ("path",))
        known = _ADD_KEYS
        extra = {k: v for k, v in body.items() if k not in known and v is not None} or None
        return cls(
            body["path"],
            body.get("partitionValues") or {},
            body.get("size", 0),
            body.get("modificationTime", 0),
            body.get("dataChange", True),
            body.get("stats"),
            _opt_dict(body.get("tags")),
            extra,
        )

    def to_json(self) -> dict[str, Any]:
        """Body of the ``add`` action, with the keys Delta readers expect."""
        out: dict[str, Any] = {
            "path": self.path,
            "partitionValues": self.partition_values,
            "size": self.size,
            "modificationTime": self.modification_time,
            "dataChange": self.data_change,
        }
        if self.stats is not None:
            out["stats"] = self.stats
        if self.tags is not None:
            out["tags"] = self.tags
        if self.extra:
            out.update(self.extra)
        return out

    @property
    def parsed_stats(self) -> dict[str, Any] | None:
        """The statistics JSON, parsed on first access (None if the file has none)."""
        if self._stats_cache is _UNPARSED:
            self._stats_cache = json.loads(self.stats) if self.stats else None
        return self._stats_cache

    @property
    def num_records(self) -> int | None:
        """``numRecords`` from the statistics, or None when statistics are missing."""
        stats = self.parsed_stats
        return None if stats is None else stats.get("numRecords")

    @property
    def deletion_vector(self) -> dict[str, Any] | None:
        """The deletion vector descriptor, if a writer attached one (we never do)."""
        return (self.extra or {}).get("deletionVector")

    @property
    def dv_unique_id(self) -> str | None:
        """The deletion vector part of the file's identity (``(path, dv uniqueId)``), or None."""
        return deletion_vector_unique_id(self.deletion_vector)

    def remove(self, deletion_timestamp: int | None = None, data_change: bool = True) -> RemoveFile:
        """The ``remove`` action that takes this file out of the table (tags carried along)."""
        return RemoveFile(
            self.path,
            now_ms() if deletion_timestamp is None else deletion_timestamp,
            data_change,
            True,
            self.partition_values,
            self.size,
            self.tags,
            self.stats,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AddFile):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]


_ADD_KEYS = frozenset(
    ["path", "partitionValues", "size", "modificationTime", "dataChange", "stats", "tags"]
)


@dataclass(slots=True)
class RemoveFile:
    """A file taken out of the table; kept as a tombstone until vacuum's retention passes."""

    KEY: ClassVar[str] = "remove"

    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: dict[str, str | None] | None = None
    size: int | None = None
    tags: dict[str, str] | None = None
    stats: str | None = None
    extra: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> RemoveFile:
        """Build from the body of a ``remove`` action."""
        require_fields("remove", body, ("path",))
        extra = {k: v for k, v in body.items() if k not in _REMOVE_KEYS and v is not None} or None
        return cls(
            body["path"],
            body.get("deletionTimestamp"),
            body.get("dataChange", True),
            body.get("extendedFileMetadata"),
            _opt_dict(body.get("partitionValues")),
            body.get("size"),
            _opt_dict(body.get("tags")),
            body.get("stats"),
            extra,
        )

    def to_json(self) -> dict[str, Any]:
        """Body of the ``remove`` action (optional keys only when known)."""
        out: dict[str, Any] = {"path": self.path, "dataChange": self.data_change}
        optional = (
            ("deletionTimestamp", self.deletion_timestamp),
            ("extendedFileMetadata", self.extended_file_metadata),
            ("partitionValues", self.partition_values),
            ("size", self.size),
            ("tags", self.tags),
            ("stats", self.stats),
        )
        out.update((k, v) for k, v in optional if v is not None)
        if self.extra:
            out.update(self.extra)
        return out

    @property
    def dv_unique_id(self) -> str | None:
        """The deletion vector part of the removed logical file's identity, or None."""
        return deletion_vector_unique_id((self.extra or {}).get("deletionVector"))


_REMOVE_KEYS = frozenset(
    [
        "path",
        "deletionTimestamp",
        "dataChange",
        "extendedFileMetadata",
        "partitionValues",
        "size",
        "tags",
        "stats",
    ]
)


@dataclass(slots=True)
class Metadata:
    """The table's identity, schema, partitioning and configuration (``metaData`` action)."""

    KEY: ClassVar[str] = "metaData"

    id: str
    schema_string: str | None
    partition_columns: list[str] = field(default_factory=list)
    configuration: dict[str, str] = field(default_factory=dict)
    created_time: int | None = None
    name: str | None = None
    description: str | None = None
    format_provider: str = "parquet"
    format_options: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        schema_string: str,
        partition_columns: list[str] | tuple[str, ...] = (),
        configuration: dict[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> Metadata:
        """Metadata for a new table: fresh uuid and creation time."""
        return cls(
            str(uuid.uuid4()),
            schema_string,
            list(partition_columns),
            dict(configuration or {}),
            now_ms(),
            name,
            description,
        )

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Metadata:
        """Build from the body of a ``metaData`` action."""
        require_fields("metaData", body, ("id",))
        fmt = body.get("format") or {}
        return cls(
            body["id"],
            body.get("schemaString"),
            list(body.get("partitionColumns") or []),
            dict(body.get("configuration") or {}),
            body.get("createdTime"),
            body.get("name"),
            body.get("description"),
            fmt.get("provider", "parquet"),
            dict(fmt.get("options") or {}),
        )

    def to_json(self) -> dict[str, Any]:
        """Body of the ``metaData`` action."""
        out: dict[str, Any] = {
            "id": self.id,
            "format": {"provider": self.format_provider, "options": self.format_options},
        }
        if self.schema_string is not None:
            out["schemaString"] = self.schema_string
        out.update({
            "partitionColumns": self.partition_columns,
            "configuration": self.configuration,
        })
        if self.name is not None:
            out["name"] = self.name
        if self.description is not None:
            out["description"] = self.description
        if self.created_time is not None:
            out["createdTime"] = self.created_time
        return out

    @property
    def schema(self) -> dict[str, Any]:
        """The Spark/Delta schema as parsed JSON (``{"type": "struct", "fields": [...]}``).

        A ``metaData`` action without ``schemaString`` (some pipeline engines write one) loads,
        so that the rest of the table can be described, but has no schema to read data with.
        """
        if self.schema_string is None:
            raise CorruptLogError(
                f"the metaData action of table {self.id} has no schemaString: the table schema, "
                "which the Delta protocol requires, is missing, so the data files cannot be "
                "interpreted (re-create the table's metadata with a Delta writer that records it)"
            )
        try:
            schema = json.loads(self.schema_string)
        except ValueError as exc:
            raise CorruptLogError(f"metaData.schemaString of table {self.id} is not JSON: {exc}") from exc
        if not isinstance(schema, dict) or not isinstance(schema.get("fields"), list):
            raise CorruptLogError(
                f"metaData.schemaString of table {self.id} is not a struct schema "
                '({"type": "struct", "fields": [...]})'
            )
        return schema

    @property
    def column_names(self) -> list[str]:
        """Top-level column names in schema order."""
        return [f["name"] for f in self.schema.get("fields", [])]


@dataclass(slots=True)
class Protocol:
    """Reader/writer protocol versions and, from versions 3/7 on, explicit feature lists."""

    KEY: ClassVar[str] = "protocol"

    min_reader_version: int = 1
    min_writer_version: int = 2
    reader_features: list[str] | None = None
    writer_features: list[str] | None = None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Protocol:
        """Build from the body of a ``protocol`` action."""
        require_fields("protocol", body, ("minReaderVersion", "minWriterVersion"))
        rf, wf = body.get("readerFeatures"), body.get("writerFeatures")
        return cls(
            int(body["minReaderVersion"]),
            int(body["minWriterVersion"]),
            list(rf) if rf is not None else None,
            list(wf) if wf is not None else None,
        )

    def to_json(self) -> dict[str, Any]:
        """Body of the ``protocol`` action (feature lists only when present)."""
        out: dict[str, Any] = {
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        }
        if self.reader_features is not None:
            out["readerFeatures"] = self.reader_features
        if self.writer_features is not None:
            out["writerFeatures"] = self.writer_features
        return out


@dataclass(slots=True)
class SetTransaction:
    """Records that application ``app_id`` committed its transaction number ``version``.

    Writers use it for idempotent retries: before writing batch N they check whether the table
    already holds N for their application id.
    """

    KEY: ClassVar[str] = "txn"

    app_id: str
    version: int
    last_updated: int | None = None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SetTransaction:
        """Build from the body of a ``txn`` action."""
        require_fields("txn", body, ("appId", "version"))
        return cls(body["appId"], int(body["version"]), body.get("lastUpdated"))

    def to_json(self) -> dict[str, Any]:
        """Body of the ``txn`` action."""
        out: dict[str, Any] = {"appId": self.app_id, "version": self.version}
        if self.last_updated is not None:
            out["lastUpdated"] = self.last_updated
        return out


@dataclass(slots=True)
class CommitInfo:
    """Provenance of a commit; informational except for the in-commit timestamp.

    ``version`` is not part of the JSON: readers fill it from the commit file name.
    """

    KEY: ClassVar[str] = "commitInfo"

    timestamp: int | None = None
    operation: str | None = None
    operation_parameters: dict[str, Any] = field(default_factory=dict)
    engine_info: str | None = None
    is_blind_append: bool | None = None
    operation_metrics: dict[str, Any] | None = None
    in_commit_timestamp: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    version: int | None = None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> CommitInfo:
        """Build from the body of a ``commitInfo`` action (anything unmodelled goes to extra)."""
        extra = {k: v for k, v in body.items() if k not in _COMMIT_INFO_KEYS}
        return cls(
            body.get("timestamp"),
            body.get("operation"),
            dict(body.get("operationParameters") or {}),
            body.get("engineInfo"),
            body.get("isBlindAppend"),
            body.get("operationMetrics"),
            body.get("inCommitTimestamp"),
            extra,
        )

    def to_json(self) -> dict[str, Any]:
        """Body of the ``commitInfo`` action."""
        out: dict[str, Any] = {}
        if self.in_commit_timestamp is not None:
            out["inCommitTimestamp"] = self.in_commit_timestamp
        out["timestamp"] = self.timestamp
        out["operation"] = self.operation
        out["operationParameters"] = self.operation_parameters
        if self.is_blind_append is not None:
            out["isBlindAppend"] = self.is_blind_append
        if self.operation_metrics is not None:
            out["operationMetrics"] = self.operation_metrics
        if self.engine_info is not None:
            out["engineInfo"] = self.engine_info
        out.update(self.extra)
        return {k: v for k, v in out.items() if v is not None}


_COMMIT_INFO_KEYS = frozenset(
    [
        "timestamp",
        "operation",
        "operationParameters",
        "engineInfo",
        "isBlindAppend",
        "operationMetrics",
        "inCommitTimestamp",
    ]
)

Action = Union[AddFile, RemoveFile, Metadata, Protocol, SetTransaction, CommitInfo]

ACTION_CLASSES: dict[str, type] = {
    cls.KEY: cls for cls in (AddFile, RemoveFile, Metadata, Protocol, SetTransaction, CommitInfo)
}


def action_to_line(action: Action) -> str:
    """One line of a commit file (compact JSON, no trailing newline)."""
    return json.dumps({action.KEY: action.to_json()}, separators=(",", ":"), ensure_ascii=False)


def actions_to_bytes(actions: list[Action]) -> bytes:
    """A whole commit file: one JSON line per action."""
    return ("\n".join(action_to_line(a) for a in actions) + "\n").encode("utf-8")


def require_fields(action: str, body: dict[str, Any], names: tuple[str, ...]) -> None:
    """Raise :class:`CorruptLogError` naming the action and field when a required field is absent."""
    missing = [n for n in names if body.get(n) is None]
    if missing:
        raise CorruptLogError(
            f"{action} action lacks the required field(s) {missing} (Delta protocol); "
            f"fields present: {sorted(body)}"
        )


def deletion_vector_unique_id(descriptor: dict[str, Any] | None) -> str | None:
    """``<storageType><pathOrInlineDv>[@<offset>]``: the DV part of a logical file's key."""
    if not descriptor:
        return None
    uid = f"{descriptor.get('storageType', '')}{descriptor.get('pathOrInlineDv', '')}"
    offset = descriptor.get("offset")
    return uid if offset is None else f"{uid}@{offset}"


def encode_relative_path(path: str) -> str:
    """URL-encode a path relative to the table root, as Delta writes it in ``add.path``."""
    return quote(path, safe="/=")


def resolve_file_path(table_path: str, path: str) -> str:
    """Where a file named in the log lives: a local path, or the URI of another storage.

    ``add.path`` is an RFC 2396 URI (Delta protocol): either relative to the table root or
    absolute. It is percent-decoded exactly once, so a file whose name holds ``%`` is written
    ``%25`` in the log and found under its real name. ``file:`` URIs (``file:/x``,
    ``file:///x``, ``file://localhost/x``) become local paths; URIs of other schemes
    (``s3://...``) are returned unchanged for a storage that understands them.
    """
    scheme = _uri_scheme(path)
    if scheme is not None:
        parsed = urlparse(path)
        if scheme != "file":
            return path
        if parsed.netloc not in ("", "localhost"):
            return path  # file://host/share/...: not a local path
        return local_path(path)
    if path.startswith("/"):
        return unquote(path)
    return f"{table_path.rstrip('/')}/{unquote(path)}"


def is_local_file_path(location: str) -> bool:
    """True when :func:`resolve_file_path` gave a local file-system path (not another URI)."""
    return _uri_scheme(location) is None


def _uri_scheme(path: str) -> str | None:
    """The URI scheme of ``path`` (lower case), or None for a relative or plain absolute path.

    A scheme is letters/digits/``+-.`` before the first ``:``, and comes before any ``/``: a
    relative path such as ``ts=2020-01-01 00:00:00/part-0.parquet`` has none.
    """
    head, sep, _ = path.partition(":")
    if not sep or not head or "/" in head or not head[0].isalpha():
        return None
    if not all(c.isalnum() or c in "+-." for c in head):
        return None
    if len(head) == 1:  # a Windows drive letter, not a scheme
        return None
    return head.lower()
