"""Helpers of the Delta interoperability tests: write data through our log, compare with delta-rs."""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from qbeast.delta.actions import AddFile, Metadata
from qbeast.delta.log import DeltaLog

_SPARK_TYPES = {pa.int64(): "long", pa.int32(): "integer", pa.float64(): "double", pa.string(): "string"}


def spark_schema_json(schema: pa.Schema) -> str:
    """The Delta ``schemaString`` of a flat Arrow schema."""
    fields = [{"name": f.name, "type": _SPARK_TYPES[f.type], "nullable": True, "metadata": {}}
              for f in schema]
    return json.dumps({"type": "struct", "fields": fields})


def stats_json(table: pa.Table) -> str:
    """Delta file statistics (numRecords, minValues, maxValues, nullCount) of an Arrow table."""
    mins, maxs, nulls = {}, {}, {}
    for name in table.column_names:
        column = table.column(name)
        nulls[name] = column.null_count
        if column.null_count < len(column):
            mm = pc.min_max(column).as_py()
            mins[name], maxs[name] = mm["min"], mm["max"]
    return json.dumps({"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs,
                       "nullCount": nulls})


def write_data_file(log: DeltaLog, data: pa.Table, tags: dict[str, str] | None,
                    partition: dict[str, str] | None = None) -> AddFile:
    """Write ``data`` as a parquet file of the table and return its AddFile.

    Partition values go in the folder name (percent-encoded like delta-rs does) and not in the
    file; the log path is that folder name URL-encoded once more, as the protocol requires.
    """
    from urllib.parse import quote

    folder = "/".join(f"{k}={quote(v, safe='')}" for k, v in (partition or {}).items())
    name = f"{uuid.uuid4()}.parquet"
    relative = f"{folder}/{name}" if folder else name
    target = Path(log.table_path) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    file_data = data.drop_columns(list(partition)) if partition else data
    pq.write_table(file_data, target)
    stat = os.stat(target)
    return AddFile(quote(relative, safe="/="), dict(partition or {}), stat.st_size,
                   stat.st_mtime_ns // 1_000_000, True, stats_json(file_data), tags)


def create_table(log: DeltaLog, schema: pa.Schema, partition_columns: list[str] | None = None,
                 configuration: dict[str, str] | None = None) -> int:
    """Commit version 0 (metadata only) of a table with the given Arrow schema."""
    tx = log.start_transaction()
    tx.update_metadata(Metadata.create(spark_schema_json(schema), partition_columns or [], configuration))
    return tx.commit("CREATE TABLE")


def append(log: DeltaLog, data: pa.Table, tags: dict[str, str] | None = None,
           partition_by: str | None = None) -> int:
    """Blind-append ``data`` (one file, or one per partition value) and return the version."""
    if partition_by is None:
        adds = [write_data_file(log, data, tags)]
    else:
        adds = []
        for value in pc.unique(data.column(partition_by)).to_pylist():
            part = data.filter(pc.equal(data.column(partition_by), value))
            adds.append(write_data_file(log, part, tags, {partition_by: value}))
    return log.start_transaction().add_actions(adds).commit("WRITE", {"mode": "Append"}, blind_append=True)


def overwrite(log: DeltaLog, data: pa.Table, tags: dict[str, str] | None = None) -> int:
    """Replace every active file by one file holding ``data``."""
    snap = log.snapshot()
    tx = log.start_transaction(snap).mark_table_read()
    tx.add_actions([f.remove() for f in snap.files.values()], write_data_file(log, data, tags))
    return tx.commit("WRITE", {"mode": "Overwrite"})


def deltalake_view(path: str, version: int) -> dict[str, Any]:
    """What delta-rs reports for a version: files (log paths), schema, configuration, protocol."""
    from deltalake import DeltaTable

    dt = DeltaTable(path, version=version)
    adds = pa.table(dt.get_add_actions(flatten=False)).to_pylist()
    proto = dt.protocol()
    meta = dt.metadata()
    return {
        "version": dt.version(),
        "files": {a["path"]: (a["size_bytes"], a["num_records"], a.get("partition") or {}) for a in adds},
        "uris": set(dt.file_uris()),
        "schema": json.loads(dt.schema().to_json()),
        "configuration": dict(meta.configuration),
        "partition_columns": list(meta.partition_columns),
        "id": meta.id,
        "protocol": (proto.min_reader_version, proto.min_writer_version),
    }


def our_view(path: str, version: int) -> dict[str, Any]:
    """The same facts as :func:`deltalake_view`, from our log layer."""
    snap = DeltaLog.for_path(path).snapshot(version)
    files = {}
    for p, add in snap.files.items():
        pv = {k: add.partition_values.get(k) for k in snap.partition_columns}
        files[p] = (add.size, add.num_records, pv)
    return {
        "version": snap.version,
        "files": files,
        "uris": {snap.file_path(a) for a in snap.files.values()},
        "schema": snap.schema,
        "configuration": snap.configuration,
        "partition_columns": snap.partition_columns,
        "id": snap.metadata.id,
        "protocol": (snap.protocol.min_reader_version, snap.protocol.min_writer_version),
    }
