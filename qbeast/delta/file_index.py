"""The active-file map of a snapshot, built without one Python object per file up front.

A checkpoint of a large table holds tens of thousands of ``add`` rows. Decoding their stats and
tags and turning each into an :class:`AddFile` costs several times more than reading the paths,
and many callers only need the paths or the count. :class:`CheckpointAdds` therefore decodes just
a ``path -> row`` index up front and the rest the first time any file is looked at. :class:`FileIndex` overlays the
adds and removes of the JSON commits replayed after the checkpoint and behaves as a read-only
``Mapping[str, AddFile]`` for everybody else.
"""
from __future__ import annotations

import datetime
import decimal
import gc
import json
import math
from collections.abc import Callable, ItemsView, Iterator, Mapping, ValuesView
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from qbeast.delta.actions import AddFile
from qbeast.delta.errors import CorruptLogError
from qbeast.delta.partition_values import serialize as serialize_partition_value

# Fields of the checkpoint add struct that AddFile models directly; derived columns
# (stats_parsed, partitionValues_parsed) are redundant with the JSON ones and skipped.
_MODELLED = ("path", "partitionValues", "size", "modificationTime", "dataChange", "stats", "tags")
_SKIPPED = frozenset(_MODELLED) | {"stats_parsed", "partitionValues_parsed"}


class CheckpointAdds:
    """The ``add`` rows of a checkpoint: eager path index, everything else on first use.

    At load only ``add.path`` is decoded from the parquet files (stats and tags are most of a
    checkpoint's bytes); the full ``add`` column is read from the same in-memory parquet files
    the first time any file is looked at, then each ``AddFile`` is built once, on demand.
    """

    __slots__ = ("index", "_parts", "_columns", "_objects")

    def __init__(self, parts: list[tuple[pq.ParquetFile, pa.ChunkedArray]]) -> None:
        """``parts``: per checkpoint file, the parquet file and its ``add`` column (paths only)."""
        self._parts = [pf for pf, _ in parts]
        self.index: dict[str, int] = {}
        offset = 0
        for _, column in parts:
            for struct in column.chunks:
                valid = struct.is_valid()
                rows = pc.indices_nonzero(valid).to_pylist()
                paths = struct.field("path").filter(valid).to_pylist()
                self.index.update(zip(paths, (offset + r for r in rows)))
                offset += len(struct)
        self._columns: dict[str, list[Any]] | None = None
        self._objects: dict[int, AddFile] = {}

    def _load_columns(self) -> dict[str, list[Any]]:
        try:
            chunks = [c for pf in self._parts for c in pf.read(columns=["add"]).column("add").chunks]
        except (OSError, pa.ArrowException) as exc:
            raise CorruptLogError(f"checkpoint add rows cannot be decoded: {exc}") from exc
        names = list(_MODELLED)
        for struct in chunks:
            names.extend(f.name for f in struct.type if f.name not in _SKIPPED and f.name not in names)
        columns: dict[str, list[Any]] = {}
        for name in names:
            values: list[Any] = []
            for struct in chunks:
                index = struct.type.get_field_index(name)
                if index < 0 or struct.field(index).null_count == len(struct):
                    values.extend([None] * len(struct))
                else:
                    values.extend(struct.field(index).to_pylist())
            if name in _MODELLED or any(v is not None for v in values):
                columns[name] = values
        _fill_from_parsed(columns, chunks)
        self._columns = columns
        return columns

    def _build(self, c: dict[str, list[Any]], row: int) -> AddFile:
        pv, tags = c["partitionValues"][row], c["tags"][row]
        extra = None
        if len(c) > len(_MODELLED):
            extra = {k: v[row] for k, v in c.items() if k not in _SKIPPED and v[row] is not None} or None
        add = AddFile(
            c["path"][row],
            dict(pv) if pv else {},
            c["size"][row] or 0,
            c["modificationTime"][row] or 0,
            bool(c["dataChange"][row]),
            c["stats"][row],
            dict(tags) if tags is not None else None,
            extra,
        )
        self._objects[row] = add
        return add

    def get(self, row: int) -> AddFile:
        """The AddFile of one checkpoint row (built once, then cached)."""
        add = self._objects.get(row)
        if add is not None:
            return add
        return self._build(self._columns if self._columns is not None else self._load_columns(), row)

    def get_all(self) -> dict[int, AddFile]:
        """Every row's AddFile, built in one pass (what iterating over all files needs)."""
        if len(self._objects) < len(self.index):
            with gc_paused():
                c = self._columns if self._columns is not None else self._load_columns()
                objects = self._objects
                if len(c) > len(_MODELLED):  # rare extra columns: the general path
                    for row in self.index.values():
                        if row not in objects:
                            self._build(c, row)
                    return objects
                # the common case, unrolled: this loop runs once per file of the table
                paths, pvs, sizes = c["path"], c["partitionValues"], c["size"]
                mtimes, changes, stats, tags = c["modificationTime"], c["dataChange"], c["stats"], c["tags"]
                for row in self.index.values():
                    if row in objects:
                        continue
                    pv, tg = pvs[row], tags[row]
                    objects[row] = AddFile(
                        paths[row], dict(pv) if pv else {}, sizes[row] or 0, mtimes[row] or 0,
                        bool(changes[row]), stats[row], dict(tg) if tg is not None else None, None,
                    )
        return self._objects


def _fill_from_parsed(columns: dict[str, list[Any]], chunks: list[pa.StructArray]) -> None:
    """Rebuild ``stats`` / ``partitionValues`` from their ``*_parsed`` structs where missing.

    Checkpoints may store statistics only as ``stats_parsed`` (``writeStatsAsJson=false``) and
    partition values as ``partitionValues_parsed``; the rest of the engine reads the JSON and
    string forms, so rows that lack those get them rebuilt here.
    """
    for derived, target in (("stats_parsed", "stats"), ("partitionValues_parsed", "partitionValues")):
        values = columns[target]
        missing = [row for row, value in enumerate(values) if value is None]
        if not missing or not any(s.type.get_field_index(derived) >= 0 for s in chunks):
            continue
        parsed: list[Any] = []
        for struct in chunks:
            index = struct.type.get_field_index(derived)
            parsed.extend(struct.field(index).to_pylist() if index >= 0 else [None] * len(struct))
        for row in missing:
            source = parsed[row]
            if source is None:
                continue
            if target == "stats":
                values[row] = json.dumps(_jsonable(source), separators=(",", ":"))
            else:
                values[row] = [(k, serialize_partition_value(v)) for k, v in source.items()]


def _jsonable(value: Any) -> Any:
    """A ``stats_parsed`` value in the JSON form of ``stats`` (dates ISO, timestamps ms UTC)."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items() if v is not None}
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return value.isoformat(timespec="milliseconds") + "Z"
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, bytes):
        return None
    return value


class FileIndex(Mapping[str, AddFile]):
    """Active files keyed by log path: checkpoint rows overlaid with later commits."""

    __slots__ = ("_base", "_shadowed", "_added", "_canonical", "_canonical_fn")

    def __init__(self, base: CheckpointAdds | None = None) -> None:
        self._base = base
        self._shadowed: set[str] = set()  # checkpoint paths removed or re-added since
        self._added: dict[str, AddFile] = {}
        # file location -> log path, built only when an action names a file by another spelling
        self._canonical: dict[str, str] | None = None
        self._canonical_fn: Callable[[str], str] | None = None

    def key_for(self, path: str, canonical: Callable[[str], str]) -> str | None:
        """The active key naming the same file as ``path``, or None.

        The log path string is the key, but one file can be spelled in several ways (relative
        or absolute URI, ``%20`` or a space...): the protocol compares decoded locations. A
        direct hit costs nothing; the first miss builds a location index, kept up to date after.
        """
        if path in self:
            return path
        if self._canonical is None:
            self._canonical_fn = canonical
            self._canonical = {canonical(p): p for p in self}
        return self._canonical.get(canonical(path))

    # -- replay (mutation is only used while building a snapshot)

    def add(self, add: AddFile) -> None:
        """Apply an ``add`` action."""
        if self._canonical is not None:
            location = self._canonical_fn(add.path)  # type: ignore[misc]
            previous = self._canonical.get(location)
            if previous is not None and previous != add.path:
                self.remove(previous)
            self._canonical[location] = add.path
        if self._base is not None and add.path in self._base.index:
            self._shadowed.add(add.path)
        self._added[add.path] = add

    def remove(self, path: str) -> None:
        """Apply a ``remove`` action (unknown paths are ignored, as the protocol says)."""
        if self._canonical is not None and path in self:
            self._canonical.pop(self._canonical_fn(path), None)  # type: ignore[misc]
        self._added.pop(path, None)
        if self._base is not None and path in self._base.index:
            self._shadowed.add(path)

    # -- Mapping

    def __getitem__(self, path: str) -> AddFile:
        add = self._added.get(path)
        if add is not None:
            return add
        if self._base is None or path in self._shadowed:
            raise KeyError(path)
        return self._base.get(self._base.index[path])

    def __contains__(self, path: object) -> bool:
        if path in self._added:
            return True
        return self._base is not None and path in self._base.index and path not in self._shadowed

    def __iter__(self) -> Iterator[str]:
        if self._base is not None:
            shadowed = self._shadowed
            if shadowed:
                yield from (p for p in self._base.index if p not in shadowed)
            else:
                yield from self._base.index
        yield from self._added

    def values(self) -> ValuesView[AddFile]:
        """All active AddFiles (built in bulk rather than one lookup at a time)."""
        return _Values(self)

    def items(self) -> ItemsView[str, AddFile]:
        """``(path, AddFile)`` pairs of all active files (built in bulk)."""
        return _Items(self)

    def _iter_values(self) -> Iterator[AddFile]:
        if self._base is not None:
            objects = self._base.get_all()
            shadowed = self._shadowed
            for path, row in self._base.index.items():
                if path not in shadowed:
                    yield objects[row]
        yield from self._added.values()

    def __len__(self) -> int:
        base = len(self._base.index) - len(self._shadowed) if self._base is not None else 0
        return base + len(self._added)

    def __repr__(self) -> str:
        return f"FileIndex({len(self)} files)"


class _Values(ValuesView):
    _mapping: FileIndex

    def __iter__(self) -> Iterator[AddFile]:
        return self._mapping._iter_values()


class _Items(ItemsView):
    _mapping: FileIndex

    def __iter__(self) -> Iterator[tuple[str, AddFile]]:
        return zip(iter(self._mapping), self._mapping._iter_values())


@contextmanager
def gc_paused() -> Iterator[None]:
    """Suspend the cyclic garbage collector while building many small acyclic objects.

    Each collection would walk every object created so far without freeing any of them; for a
    10,000-file snapshot that is most of the build time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
