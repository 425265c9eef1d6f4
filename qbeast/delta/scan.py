"""What a reader must do with a snapshot's files to return the table's rows.

Replaying the log gives the active files; reading them correctly takes more of the protocol:

* **file locations** — ``add.path`` is a URI, relative to the table root or absolute, and is
  percent-decoded once (:func:`qbeast.delta.actions.resolve_file_path`);
* **partition columns** are not in the data files (and when a writer materializes them the log
  still wins): each file's values come from ``add.partitionValues``, typed by the schema
  (:mod:`qbeast.delta.partition_values`);
* **column mapping** (``name`` mode): data files, partition values and statistics use each
  column's *physical* name (``delta.columnMapping.physicalName``, at every nesting level); the
  table shows the display names. ``id`` mode, which resolves parquet field ids, is refused;
* unsupported features are refused before anything is read (:mod:`qbeast.delta.features`).

Engines (the Spark reader, the Python data source, the JVM bridge's planner) build their scans
from a :class:`ScanSchema` and the :class:`ScanFile` of each file, so these rules live here once.
Everything is plain data (picklable) and knows nothing of Spark or Qbeast.
"""
from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from qbeast.delta import partition_values
from qbeast.delta.actions import AddFile, resolve_file_path
from qbeast.delta.errors import CorruptLogError
from qbeast.delta.features import check_readable, column_mapping_mode

if TYPE_CHECKING:
    from qbeast.delta.snapshot import Snapshot

PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"


@dataclass(frozen=True)
class ScanFile:
    """One active file as a reader needs it.

    ``location`` is a local path or the URI of another storage; ``partition_values`` are
    ``(display name, typed value)`` pairs in partition-column order.
    """

    location: str
    size: int
    partition_values: tuple[tuple[str, Any], ...]
    log_path: str


@dataclass(frozen=True)
class ScanSchema:
    """How the files of a snapshot map onto the table's columns.

    ``table_schema`` is the schema users see (display names); ``data_schema`` is the schema to
    request from the data files: the non-partition columns under their physical names.
    """

    table_schema: dict[str, Any]
    partition_columns: tuple[str, ...]
    mapping_mode: str
    data_schema: dict[str, Any]

    @property
    def is_plain(self) -> bool:
        """True when the data files hold exactly the table's columns under their own names."""
        return not self.partition_columns and self.mapping_mode == "none"

    @cached_property
    def physical_names(self) -> dict[str, str]:
        """Display name -> physical name of every top-level column (identity without mapping)."""
        return {f["name"]: physical_name(f, self.mapping_mode) for f in self.table_schema["fields"]}

    @cached_property
    def partition_types(self) -> dict[str, Any]:
        """Display name -> schema type of each partition column."""
        fields = {f["name"]: f for f in self.table_schema["fields"]}
        return {name: fields[name]["type"] for name in self.partition_columns}

    def data_columns(self) -> list[tuple[str, str, Any]]:
        """``(display name, physical name, display type)`` of the columns read from the files."""
        return [
            (f["name"], self.physical_names[f["name"]], f["type"])
            for f in self.table_schema["fields"]
            if f["name"] not in self.partition_columns
        ]

    def scan_file(self, table_path: str, add: AddFile) -> ScanFile:
        """The :class:`ScanFile` of an active file (partition values parsed and typed)."""
        values: tuple[tuple[str, Any], ...] = ()
        if self.partition_columns:
            raw = add.partition_values or {}
            values = tuple(
                (name, partition_values.parse(raw.get(self.physical_names[name]),
                                              self.partition_types[name], name))
                for name in self.partition_columns
            )
        return ScanFile(resolve_file_path(table_path, add.path), int(add.size or 0), values, add.path)

    def logical_stats(self, stats: dict[str, Any] | None) -> dict[str, Any] | None:
        """File statistics keyed by display names (they are keyed by physical names on disk)."""
        if stats is None or self.mapping_mode == "none":
            return stats
        out = dict(stats)
        for key in ("minValues", "maxValues", "nullCount"):
            if isinstance(stats.get(key), dict):
                out[key] = _rename_stats(stats[key], self.table_schema, self.mapping_mode)
        return out


def physical_name(field: dict[str, Any], mode: str) -> str:
    """The name a column has in the data files, partition values and statistics."""
    if mode == "none":
        return field["name"]
    physical = (field.get("metadata") or {}).get(PHYSICAL_NAME_KEY)
    if not physical:
        raise CorruptLogError(
            f"column {field['name']!r} has no {PHYSICAL_NAME_KEY} although the table uses column "
            f"mapping mode {mode!r}"
        )
    return str(physical)


def _physical_type(type_json: Any, mode: str) -> Any:
    """A schema type with every nested struct field renamed to its physical name."""
    if not isinstance(type_json, dict):
        return type_json
    out = copy.copy(type_json)
    kind = type_json.get("type")
    if kind == "struct":
        out["fields"] = [_physical_field(f, mode) for f in type_json["fields"]]
    elif kind == "array":
        out["elementType"] = _physical_type(type_json["elementType"], mode)
    elif kind == "map":
        out["keyType"] = _physical_type(type_json["keyType"], mode)
        out["valueType"] = _physical_type(type_json["valueType"], mode)
    return out


def _physical_field(field: dict[str, Any], mode: str) -> dict[str, Any]:
    return {**field, "name": physical_name(field, mode), "type": _physical_type(field["type"], mode)}


def _rename_stats(values: dict[str, Any], struct: dict[str, Any], mode: str) -> dict[str, Any]:
    """Statistics of a struct level, physical keys -> display keys (unknown keys dropped)."""
    out: dict[str, Any] = {}
    for field in struct.get("fields", []):
        key = physical_name(field, mode)
        if key not in values:
            continue
        value = values[key]
        child = field["type"]
        if isinstance(value, dict) and isinstance(child, dict) and child.get("type") == "struct":
            value = _rename_stats(value, child, mode)
        out[field["name"]] = value
    return out


def scan_schema(snapshot: Snapshot) -> ScanSchema:
    """The :class:`ScanSchema` of ``snapshot``; refuses tables whose features a scan would misread."""
    check_readable(snapshot.protocol, snapshot.metadata, snapshot.files)
    schema = snapshot.schema
    mode = column_mapping_mode(snapshot.protocol, snapshot.metadata)
    names = [f["name"] for f in schema["fields"]]
    partitions = tuple(snapshot.partition_columns)
    unknown = [c for c in partitions if c not in names]
    if unknown:
        raise CorruptLogError(
            f"{snapshot.table_path}: partition column(s) {unknown} are not in the table schema "
            f"{names}"
        )
    data_fields = [_physical_field(f, mode) for f in schema["fields"] if f["name"] not in partitions]
    return ScanSchema(schema, partitions, mode, {"type": "struct", "fields": data_fields})


def scan_files(snapshot: Snapshot, adds: Iterable[AddFile] | None = None) -> list[ScanFile]:
    """The :class:`ScanFile` of ``adds`` (default: every active file) of ``snapshot``."""
    layout = scan_schema(snapshot)
    chosen = snapshot.files.values() if adds is None else adds
    return [layout.scan_file(snapshot.table_path, add) for add in chosen]


__all__ = ["PHYSICAL_NAME_KEY", "ScanFile", "ScanSchema", "physical_name", "scan_files", "scan_schema"]
