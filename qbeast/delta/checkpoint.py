"""Classic Delta checkpoints: the whole table state at one version in parquet.

A checkpoint holds one row per action of the reconciled state (protocol, metaData, txn, the
active ``add`` files and the unexpired ``remove`` tombstones); each row has one non-null column
named after its action. Readers start from the newest checkpoint and replay only the commits
after it, which is what keeps loading a long-lived table fast.

Reading is columnar (pyarrow): the ``add`` rows stay in Arrow form behind a path index
(:mod:`qbeast.delta.file_index`) until a caller looks at a file, since a table can have tens of
thousands of files and most operations only need some of them.
Multi-part checkpoints (``<v>.checkpoint.<i>.<n>.parquet``) are read as the union of their parts
and can be written with ``parts > 1``. V2 checkpoints (sidecar files) are refused: their
reader feature ``v2Checkpoint`` is not implemented.
"""
from __future__ import annotations

import io

import json
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from qbeast.delta.actions import Metadata, Protocol, RemoveFile, SetTransaction, now_ms
from qbeast.delta.errors import CorruptLogError, UnsupportedFeatureError
from qbeast.delta.file_index import CheckpointAdds
from qbeast.errors import InvalidOptionError
from qbeast.storage import Storage

if TYPE_CHECKING:
    from qbeast.delta.log import DeltaLog
    from qbeast.delta.snapshot import Snapshot

logger = logging.getLogger("qbeast.delta.checkpoint")

LAST_CHECKPOINT = "_last_checkpoint"
DEFAULT_CHECKPOINT_INTERVAL = 10
CHECKPOINT_INTERVAL_KEY = "delta.checkpointInterval"
TOMBSTONE_RETENTION_KEY = "delta.deletedFileRetentionDuration"
DEFAULT_TOMBSTONE_RETENTION_MS = 7 * 24 * 3600 * 1000


def checkpoint_file_names(version: int, parts: int = 1) -> list[str]:
    """Names of the files of a checkpoint at ``version`` (one, or ``parts`` multi-part files)."""
    if parts == 1:
        return [f"{version:020d}.checkpoint.parquet"]
    return [f"{version:020d}.checkpoint.{i:010d}.{parts:010d}.parquet" for i in range(1, parts + 1)]


@dataclass
class CheckpointState:
    """The reconciled table state read from a checkpoint."""

    adds: CheckpointAdds | None = None
    tombstones: dict[str, RemoveFile] = field(default_factory=dict)
    metadata: Metadata | None = None
    protocol: Protocol | None = None
    txns: dict[str, SetTransaction] = field(default_factory=dict)


_MAP = pa.map_(pa.string(), pa.string())
_ADD_TYPE = pa.struct(
    [
        pa.field("path", pa.string(), nullable=False),
        pa.field("partitionValues", _MAP),
        pa.field("size", pa.int64()),
        pa.field("modificationTime", pa.int64()),
        pa.field("dataChange", pa.bool_()),
        pa.field("stats", pa.string()),
        pa.field("tags", _MAP),
    ]
)
_REMOVE_TYPE = pa.struct(
    [
        pa.field("path", pa.string(), nullable=False),
        pa.field("deletionTimestamp", pa.int64()),
        pa.field("dataChange", pa.bool_()),
        pa.field("extendedFileMetadata", pa.bool_()),
        pa.field("partitionValues", _MAP),
        pa.field("size", pa.int64()),
        pa.field("tags", _MAP),
    ]
)
_METADATA_TYPE = pa.struct(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("description", pa.string()),
        pa.field(
            "format",
            pa.struct([pa.field("provider", pa.string()), pa.field("options", _MAP)]),
        ),
        pa.field("schemaString", pa.string()),
        pa.field("partitionColumns", pa.list_(pa.string())),
        pa.field("configuration", _MAP),
        pa.field("createdTime", pa.int64()),
    ]
)
_PROTOCOL_TYPE = pa.struct(
    [
        pa.field("minReaderVersion", pa.int32(), nullable=False),
        pa.field("minWriterVersion", pa.int32(), nullable=False),
        pa.field("readerFeatures", pa.list_(pa.string())),
        pa.field("writerFeatures", pa.list_(pa.string())),
    ]
)
_TXN_TYPE = pa.struct(
    [
        pa.field("appId", pa.string(), nullable=False),
        pa.field("version", pa.int64(), nullable=False),
        pa.field("lastUpdated", pa.int64()),
    ]
)
CHECKPOINT_SCHEMA = pa.schema(
    [
        pa.field("txn", _TXN_TYPE),
        pa.field("add", _ADD_TYPE),
        pa.field("remove", _REMOVE_TYPE),
        pa.field("metaData", _METADATA_TYPE),
        pa.field("protocol", _PROTOCOL_TYPE),
    ]
)

_ACTION_COLUMNS = ("add", "remove", "metaData", "protocol", "txn", "sidecar", "checkpointMetadata")


# --------------------------------------------------------------------------- reading


def _map_to_dict(value: Any) -> dict[str, Any] | None:
    return dict(value) if value is not None else None


def _non_null(table: pa.Table, column: str) -> pa.StructArray | None:
    """The non-null rows of one action column, as a single struct array (None if absent)."""
    if column not in table.column_names:
        return None
    chunked = table.column(column)
    if chunked.null_count == len(chunked):
        return None
    array = chunked.combine_chunks() if chunked.num_chunks != 1 else chunked.chunk(0)
    return array.filter(array.is_valid())


def _read_removes(struct: pa.StructArray, tombstones: dict[str, RemoveFile]) -> None:
    for row in struct.to_pylist():
        row["partitionValues"] = _map_to_dict(row.get("partitionValues"))
        row["tags"] = _map_to_dict(row.get("tags"))
        tombstones[row["path"]] = RemoveFile.from_json({k: v for k, v in row.items() if v is not None})


def read_checkpoint(storage: Storage, paths: list[str], size: int | None = None) -> CheckpointState:
    """Read the (one or more) parquet files of a checkpoint into a :class:`CheckpointState`.

    ``size`` is the bytes of a one-file checkpoint when known (``_last_checkpoint`` records it):
    an object store then reads a large checkpoint by ranges, its footer and the columns read
    here and later (the ``add`` columns a snapshot needs), not the whole file.
    """
    state = CheckpointState()
    add_parts: list[tuple[pq.ParquetFile, pa.ChunkedArray]] = []
    for path in paths:
        try:
            source = storage.open_input(path, size if len(paths) == 1 else None)
            if isinstance(source, io.BytesIO):  # read whole: parquet reads the bytes in place
                source = pa.BufferReader(source.getbuffer())
            parquet = pq.ParquetFile(source, pre_buffer=True)
            names = parquet.schema_arrow.names
            columns = [c for c in _ACTION_COLUMNS if c in names and c != "add"]
            table = parquet.read(columns=columns + (["add.path"] if "add" in names else []))
        except (OSError, pa.ArrowException) as exc:
            raise CorruptLogError(f"checkpoint file {path} cannot be read as parquet: {exc}") from exc
        for unsupported in ("sidecar", "checkpointMetadata"):
            if _non_null(table, unsupported) is not None:
                raise UnsupportedFeatureError(
                    f"checkpoint {path} is a V2 checkpoint ({unsupported} rows); the reader "
                    "feature 'v2Checkpoint' is not implemented"
                )
        if "add" in table.column_names:
            add_parts.append((parquet, table.column("add")))
        removes = _non_null(table, "remove")
        if removes is not None:
            _read_removes(removes, state.tombstones)
        metas = _non_null(table, "metaData")
        if metas is not None:
            row = metas.to_pylist()[-1]
            row["configuration"] = _map_to_dict(row.get("configuration"))
            fmt = row.get("format") or {}
            row["format"] = {"provider": fmt.get("provider"), "options": _map_to_dict(fmt.get("options"))}
            state.metadata = Metadata.from_json(row)
        protos = _non_null(table, "protocol")
        if protos is not None:
            state.protocol = Protocol.from_json(protos.to_pylist()[-1])
        txns = _non_null(table, "txn")
        if txns is not None:
            for row in txns.to_pylist():
                state.txns[row["appId"]] = SetTransaction.from_json(row)
    if state.metadata is None or state.protocol is None:
        raise CorruptLogError(f"checkpoint {paths[0]} lacks its metaData or protocol row")
    state.adds = CheckpointAdds(add_parts)
    return state


def read_last_checkpoint(storage: Storage, log_path: str) -> dict[str, Any] | None:
    """The ``_last_checkpoint`` hint (version, size, parts...), or None if absent or unreadable."""
    try:
        return json.loads(storage.read_bytes(f"{log_path}/{LAST_CHECKPOINT}"))
    except FileNotFoundError:
        return None
    except ValueError:
        logger.warning("ignoring unreadable %s/%s", log_path, LAST_CHECKPOINT)
        return None


# --------------------------------------------------------------------------- writing


def parse_interval_ms(text: str, key: str) -> int:
    """Milliseconds of a Delta interval property such as ``interval 7 days``."""
    units = {
        "millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000,
        "day": 86_400_000, "week": 7 * 86_400_000,
    }
    words = text.strip().lower().split()
    if words and words[0] == "interval":
        words = words[1:]
    if len(words) == 2:
        unit = words[1].rstrip("s")
        try:
            if unit in units:
                return int(float(words[0]) * units[unit])
        except ValueError:
            pass
    raise InvalidOptionError(
        f"table property {key}={text!r} is not an interval; expected 'interval <n> <unit>' with "
        f"unit one of {sorted(units)}"
    )


def tombstone_retention_ms(metadata: Metadata) -> int:
    """How long removed files stay in checkpoints (``delta.deletedFileRetentionDuration``)."""
    value = metadata.configuration.get(TOMBSTONE_RETENTION_KEY)
    return DEFAULT_TOMBSTONE_RETENTION_MS if value is None else parse_interval_ms(value, TOMBSTONE_RETENTION_KEY)


def checkpoint_interval(metadata: Metadata) -> int:
    """Commits between checkpoints (``delta.checkpointInterval``, default 10)."""
    value = metadata.configuration.get(CHECKPOINT_INTERVAL_KEY)
    if value is None:
        return DEFAULT_CHECKPOINT_INTERVAL
    try:
        interval = int(value)
    except ValueError:
        interval = 0
    if interval < 1:
        raise InvalidOptionError(
            f"table property {CHECKPOINT_INTERVAL_KEY}={value!r} must be a positive integer"
        )
    return interval


def _rows(snapshot: Snapshot, now: int) -> list[dict[str, Any]]:
    """One dict per checkpoint row (a single non-null action column each)."""
    md = snapshot.metadata
    rows: list[dict[str, Any]] = [
        {"protocol": snapshot.protocol.to_json()},
        {
            "metaData": {
                "id": md.id,
                "name": md.name,
                "description": md.description,
                "format": {"provider": md.format_provider, "options": list(md.format_options.items())},
                "schemaString": md.schema_string,
                "partitionColumns": md.partition_columns,
                "configuration": list(md.configuration.items()),
                "createdTime": md.created_time,
            }
        },
    ]
    rows.extend({"txn": t.to_json()} for t in snapshot.txns.values())
    for add in snapshot.files.values():
        rows.append(
            {
                "add": {
                    "path": add.path,
                    "partitionValues": list(add.partition_values.items()),
                    "size": add.size,
                    "modificationTime": add.modification_time,
                    "dataChange": False,
                    "stats": add.stats,
                    "tags": list(add.tags.items()) if add.tags is not None else None,
                }
            }
        )
    horizon = now - tombstone_retention_ms(md)
    for rm in snapshot.tombstones.values():
        if (rm.deletion_timestamp or 0) > horizon:
            rows.append(
                {
                    "remove": {
                        "path": rm.path,
                        "deletionTimestamp": rm.deletion_timestamp,
                        "dataChange": False,
                        "extendedFileMetadata": rm.extended_file_metadata,
                        "partitionValues": list((rm.partition_values or {}).items())
                        if rm.partition_values is not None else None,
                        "size": rm.size,
                        "tags": list(rm.tags.items()) if rm.tags is not None else None,
                    }
                }
            )
    return rows


def write_checkpoint(log: DeltaLog, snapshot: Snapshot, parts: int = 1) -> list[str]:
    """Write a checkpoint of ``snapshot`` (optionally in ``parts`` files) and ``_last_checkpoint``.

    Checkpoint files are written atomically and may be rewritten: their content at a given
    version is fully determined by the log, so a concurrent identical write is harmless.
    Returns the paths written.
    """
    from qbeast.delta.features import check_writable
    if not isinstance(parts, int) or parts < 1:
        raise InvalidOptionError(f"checkpoint parts must be a positive integer, got {parts!r}")
    check_writable(snapshot.protocol, snapshot.metadata, snapshot.files)
    started = time.perf_counter()
    rows = _rows(snapshot, now_ms())
    parts = min(parts, len(rows))
    names = checkpoint_file_names(snapshot.version, parts)
    per_part = -(-len(rows) // parts)
    written, total_bytes = [], 0
    for index, name in enumerate(names):
        chunk = rows[index * per_part:(index + 1) * per_part]
        table = pa.Table.from_pylist(chunk, schema=CHECKPOINT_SCHEMA)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="snappy")
        data = sink.getvalue().to_pybytes()
        path = f"{log.log_path}/{name}"
        log.storage.write_bytes(path, data)
        written.append(path)
        total_bytes += len(data)
    hint: dict[str, Any] = {
        "version": snapshot.version,
        "size": len(rows),
        "sizeInBytes": total_bytes,
        "numOfAddFiles": len(snapshot.files),
    }
    if parts > 1:
        hint["parts"] = parts
    previous = read_last_checkpoint(log.storage, log.log_path)
    if previous is None or int(previous.get("version", -1)) <= snapshot.version:
        log.storage.write_bytes(f"{log.log_path}/{LAST_CHECKPOINT}", json.dumps(hint).encode())
    logger.info(
        "checkpoint written: table=%s version=%d rows=%d files=%d parts=%d elapsed=%.3fs",
        log.table_path, snapshot.version, len(rows), len(snapshot.files), parts,
        time.perf_counter() - started,
    )
    return written
