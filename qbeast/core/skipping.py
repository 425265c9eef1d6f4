"""Skipping indexes: what a table declares, what one file's entry holds, and the index file codec.

A table declares per column a ``values`` index (the exact set of the column's values in a file,
up to ``max_values``), a ``fuse`` index (a binary fuse filter at false-positive rate ``fpp``,
:mod:`qbeast.core.fuse_filter`) or a ``bloom`` index (a Bloom filter at rate ``fpp``);
docs/skipping.md says when to use which. Entries hold 64-bit hashes of the values
(:mod:`qbeast.core.value_hash`), so they are as small for strings as for ints.

Entries of the files one commit adds are stored together in one index file (:func:`encode_index_file`
/ :func:`decode_index_file`), versioned: a reader treats anything it does not understand (another
version, another hash function, an entry of a kind it does not know, a missing entry) as "may
match", never as "no match". Kinds are open within a version: a new kind is a new entry shape
that older readers skip, so adding ``fuse`` kept the version at 1.
Plain data and numpy; no files, no Spark.
"""
from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from qbeast.core import fuse_filter
from qbeast.core.derived import ALLOWED, SOURCE_TYPE, Call, parse_call
from qbeast.core.value_hash import HASH_NAME, INDEXABLE_TYPES, indexable
from qbeast.errors import FormatError, InvalidOptionError

#: Delta configuration key holding a table's declaration (a JSON object).
CONFIG_KEY = "qbeast.skippingIndexes"
#: AddFile tag naming the index file (relative to the table root) with the file's entries.
TAG = "qbeast.skippingIndex"
#: Folder (under the table root) of the index files; hidden from Delta readers and Delta's vacuum.
INDEX_DIR = "_qbeast_skipping"
INDEX_SUFFIX = ".qsi"

KINDS = ("values", "fuse", "bloom")
#: A lookup of a value held by one file reads that file and about ``fpp`` of the others: 0.7%
#: keeps that under 1% of the table with room for the random draw, at 10.3 bits (1.3 bytes)
#: per distinct value and file (1% costs 9.6 bits but puts half of all lookups above 1%).
DEFAULT_FPP = 0.007
#: A fuse filter's default: 9-bit fingerprints (0.2%), about 10.3 bits per value at 60,000
#: values a file, the size of a Bloom filter at 0.7% with a third of its false positives.
DEFAULT_FUSE_FPP = 0.002
DEFAULT_MAX_VALUES = 256
#: The index file versions this engine reads (every one it ever wrote) and the one it writes.
READABLE_VERSIONS = (1,)
VERSION = 1
_MAGIC = b"QBSKIP01"
_MAX_PROBES = 16


@dataclass(frozen=True)
class IndexSpec:
    """One declared index: ``kind`` on ``column`` with its parameter. ``column`` is a column
    name or the canonical text of an expression of one (``lower(email)``,
    :mod:`qbeast.core.derived`), which is also how index files key the entries."""

    column: str
    kind: str
    fpp: float = DEFAULT_FPP
    max_values: int = DEFAULT_MAX_VALUES

    @property
    def call(self) -> Call | None:
        """The expression the index is on; None for an index on a column itself."""
        return parse_call(self.column)

    @property
    def source(self) -> str:
        """The column the index reads."""
        call = self.call
        return self.column if call is None else call.column

    @property
    def label(self) -> str:
        """How plans and logs name the index: ``column:kind``."""
        return f"{self.column}:{self.kind}"

    def to_json(self) -> dict[str, Any]:
        if self.kind in ("bloom", "fuse"):
            return {"kind": self.kind, "fpp": self.fpp}
        return {"kind": "values", "max_values": self.max_values}


def _bad(option: str, value: Any, allowed: Any, message: str) -> InvalidOptionError:
    return InvalidOptionError(message, option=option, value=value, allowed=allowed)


def _one_spec(column: str, raw: Any) -> IndexSpec:
    allowed_kinds = list(KINDS)
    if isinstance(raw, str):
        raw = {"kind": raw}
    if not isinstance(raw, Mapping):
        raise _bad("skipping_indexes", raw, allowed_kinds,
                   f"skipping_indexes[{column!r}] must be one of {allowed_kinds} or a dict with "
                   f"'kind' (and 'fpp' for fuse and bloom, 'max_values' for values), got {raw!r}")
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind.lower() not in KINDS:
        raise _bad("skipping_indexes", kind, allowed_kinds,
                   f"skipping_indexes[{column!r}]: unknown index kind {kind!r}; allowed: {allowed_kinds}")
    kind = kind.lower()
    params = {"bloom": {"kind", "fpp"}, "fuse": {"kind", "fpp"}, "values": {"kind", "max_values"}}[kind]
    unknown = sorted(set(raw) - params)
    if unknown:
        raise _bad("skipping_indexes", unknown[0], sorted(params),
                   f"skipping_indexes[{column!r}]: unknown parameter(s) {unknown} for a {kind} "
                   f"index; allowed: {sorted(params)}")
    if kind in ("bloom", "fuse"):
        fpp = raw.get("fpp", DEFAULT_FPP if kind == "bloom" else DEFAULT_FUSE_FPP)
        if isinstance(fpp, bool) or not isinstance(fpp, (int, float)) or not 0.0 < fpp < 1.0:
            raise _bad("skipping_indexes", fpp, "a number in (0, 1)",
                       f"skipping_indexes[{column!r}]: fpp must be a number in (0, 1), got {fpp!r}")
        return IndexSpec(column, kind, fpp=float(fpp))
    limit = raw.get("max_values", DEFAULT_MAX_VALUES)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1_000_000:
        raise _bad("skipping_indexes", limit, "an integer in [1, 1000000]",
                   f"skipping_indexes[{column!r}]: max_values must be an integer in [1, 1000000], "
                   f"got {limit!r}")
    return IndexSpec(column, kind, max_values=limit)


#: Field metadata key under which Spark records a string column's collation.
_COLLATIONS = "__COLLATIONS"


def _type_name(field: Mapping[str, Any]) -> str:
    name = field["type"] if isinstance(field["type"], str) else str(field["type"].get("type"))
    if _COLLATIONS in (field.get("metadata") or {}):
        # a collated string compares by its collation (UTF8_LCASE: 'A' = 'a'), not by bytes
        return f"{name} with a collation"
    return name


def column_types(schema: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Lower-cased top-level column name -> ``(name, full type)`` of a JSON schema: like
    :func:`qbeast.core.columns.column_types`, but a decimal keeps its precision and scale
    (``decimal(10,2)``), which its hashes depend on, and a string with a collation is named so
    (it cannot be indexed: values equal by the collation hash differently)."""
    return {f["name"].lower(): (f["name"], _type_name(f)) for f in schema.get("fields", [])}


def parse_declaration(raw: Any, types: Mapping[str, tuple[str, str]] | None = None) -> tuple[IndexSpec, ...]:
    """The indexes of a ``skipping_indexes=`` value (a dict ``column -> kind or {kind, ...}``).

    With ``types`` (lower-cased column name -> ``(name, Spark type)``, as :func:`column_types`) columns are resolved to the table's spelling and
    checked: an unknown column or a type that cannot be indexed is refused naming what is allowed.
    """
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise _bad("skipping_indexes", raw, "a dict of column -> 'values', 'fuse' or 'bloom'",
                   f"skipping_indexes must be a dict of column -> 'values', 'fuse' or 'bloom' (e.g. "
                   f"{{'order_id': 'fuse', 'status': 'values'}}), got {raw!r}")
    specs: list[IndexSpec] = []
    for column, entry in raw.items():
        if not isinstance(column, str) or not column:
            raise _bad("skipping_indexes", column, "column names",
                       f"skipping_indexes keys must be column names, got {column!r}")
        call = parse_call(column)
        name = column if call is None else str(call)
        if types is not None:
            source = column if call is None else call.column
            found = types.get(source.lower())
            if found is None:
                names = sorted(n for n, _ in types.values())
                raise _bad("skipping_indexes", column, names,
                           f"skipping_indexes: column {source!r} is not in the table; its columns "
                           f"are {names}")
            name, type_name = found
            if call is not None:
                if type_name != SOURCE_TYPE:
                    raise _bad("skipping_indexes", column, list(ALLOWED),
                               f"skipping_indexes: {column!r} needs a string column, but {name!r} "
                               f"has type {type_name}; expressions allowed: {', '.join(ALLOWED)} of "
                               f"a string column c")
                name = str(call.with_column(name))
            elif not indexable(type_name):
                raise _bad("skipping_indexes", column, list(INDEXABLE_TYPES),
                           f"skipping_indexes: column {name!r} has type {type_name}, which cannot "
                           f"carry a skipping index; indexable types: {', '.join(INDEXABLE_TYPES)}")
        specs.append(_one_spec(name, entry))
    seen = [s.column.lower() for s in specs]
    if len(set(seen)) != len(seen):
        raise _bad("skipping_indexes", raw, "one index per column",
                   f"skipping_indexes names a column twice: {sorted(seen)}")
    return tuple(specs)


def encode_declaration(specs: tuple[IndexSpec, ...]) -> str:
    """The configuration value of a declaration (:data:`CONFIG_KEY`)."""
    return json.dumps({s.column: s.to_json() for s in specs}, separators=(",", ":"))


def declared(configuration: Mapping[str, str] | None) -> tuple[IndexSpec, ...]:
    """A table's declaration from its Delta configuration (none when absent or unreadable: a
    declaration another version wrote must not stop writes, it only stops new entries)."""
    text = (configuration or {}).get(CONFIG_KEY)
    if not text:
        return ()
    try:
        return parse_declaration(json.loads(text))
    except (ValueError, InvalidOptionError):
        return ()


# -- one file's entry -------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One file's index of one column.

    ``payload`` is the sorted set of value hashes (``values``; None when the file has more than
    ``max_values`` distinct values), the Bloom filter's bit array (``bloom``, ``bits`` bits,
    ``probes`` probes per value) or the fuse filter's packed fingerprints (``fuse``, ``bits``
    bits each, in the shape ``seed``, ``segment_length``, ``segments``,
    :class:`qbeast.core.fuse_filter.FuseShape`). ``has_null`` is exact for every kind.
    """

    kind: str
    type_name: str
    has_null: bool
    distinct: int
    payload: bytes | None
    bits: int = 0
    probes: int = 0
    seed: int = 0
    segment_length: int = 0
    segments: int = 0


_LOW = np.uint64(0xFFFFFFFF)
_HIGH = np.uint64(32)


def bloom_positions(hashes: np.ndarray | np.uint64, step: int | np.ndarray,
                    bits: np.ndarray | np.uint64) -> np.ndarray:
    """The bit of probe ``step`` of each hash in a filter of ``bits`` bits (broadcasting): double
    hashing of the hash's two 32-bit halves, mapped to ``[0, bits)`` by a multiply-shift (no
    division)."""
    h1 = hashes & _LOW
    h2 = (hashes >> _HIGH) | np.uint64(1)
    with np.errstate(over="ignore"):
        probe = (h1 + np.asarray(step, dtype=np.uint64) * h2) & _LOW
        return (probe * np.asarray(bits, dtype=np.uint64)) >> _HIGH


def bloom_size(distinct: int, fpp: float) -> tuple[int, int]:
    """``(bits, probes)`` of a Bloom filter for ``distinct`` values at false-positive rate ``fpp``
    (bits rounded up to whole 64-bit words)."""
    n = max(1, distinct)
    bits = math.ceil(-n * math.log(fpp) / (math.log(2) ** 2))
    bits = min(2**32 - 64, max(64, -(-bits // 64) * 64))
    probes = min(_MAX_PROBES, max(1, round(bits / n * math.log(2))))
    return bits, probes


def _sorted_unique(hashes: np.ndarray) -> np.ndarray:
    """The distinct values of ``hashes``, sorted: a sort and a comparison of neighbours (numpy's
    ``unique`` hashes them first, which is many times slower on a file's thousands of distinct
    64-bit values)."""
    ordered = np.sort(np.asarray(hashes, dtype=np.uint64))
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def build_entry(spec: IndexSpec, type_name: str, hashes: np.ndarray, has_null: bool) -> Entry:
    """The entry of ``spec`` for a file whose non-null values hash to ``hashes``."""
    distinct = _sorted_unique(hashes)
    if spec.kind == "values":
        payload = None if len(distinct) > spec.max_values else distinct.astype("<u8").tobytes()
        return Entry("values", type_name, has_null, len(distinct), payload)
    if spec.kind == "fuse":
        shape, packed = fuse_filter.build(distinct, spec.fpp)
        return Entry("fuse", type_name, has_null, len(distinct), packed, shape.fingerprint_bits,
                     seed=shape.seed, segment_length=shape.segment_length, segments=shape.segments)
    bits, probes = bloom_size(len(distinct), spec.fpp)
    array = np.zeros(bits, dtype=bool)
    for step in range(probes):
        array[bloom_positions(distinct, step, np.uint64(bits))] = True
    return Entry("bloom", type_name, has_null, len(distinct),
                 np.packbits(array, bitorder="little").tobytes(), bits, probes)


def unknown_entry(spec: IndexSpec, type_name: str, has_null: bool) -> Entry:
    """The entry of a file whose values the index cannot hold exactly (an expression this
    engine does not compute exactly for it, :func:`qbeast.core.derived.evaluate`): it may
    match any value, like a value list over ``max_values``; ``has_null`` stays exact."""
    return Entry(spec.kind, type_name, has_null, 0, None)


# -- index files ------------------------------------------------------------------------------


def encode_index_file(entries: Mapping[str, Mapping[str, Entry]]) -> bytes:
    """The bytes of an index file holding ``entries`` (data file path as in the log -> column ->
    entry)."""
    payload = bytearray()
    files: dict[str, dict[str, Any]] = {}
    for path, columns in entries.items():
        described: dict[str, Any] = {}
        for column, entry in columns.items():
            item: dict[str, Any] = {"kind": entry.kind, "type": entry.type_name,
                                    "nulls": entry.has_null, "distinct": entry.distinct}
            if entry.payload is not None:
                item["offset"], item["length"] = len(payload), len(entry.payload)
                payload += entry.payload
            if entry.kind == "bloom":
                item["bits"], item["probes"] = entry.bits, entry.probes
            elif entry.kind == "fuse":
                item["fingerprint_bits"], item["seed"] = entry.bits, entry.seed
                item["segment_length"], item["segments"] = entry.segment_length, entry.segments
            described[column] = item
        files[path] = described
    header = json.dumps({"version": VERSION, "hash": HASH_NAME, "files": files},
                        separators=(",", ":")).encode()
    return _MAGIC + struct.pack("<I", len(header)) + header + bytes(payload)


@dataclass(frozen=True)
class ColumnArrays:
    """One column's entries in one index file, as arrays over the file's rows (its data files).

    ``kinds`` and ``types`` index :attr:`kind_names` and :attr:`type_names` (``-1``: the data
    file has no entry for the column); ``offsets`` are into :attr:`IndexFileArrays.body`
    (``-1``: no payload, e.g. a value list over its limit).
    """

    kind_names: tuple[str, ...]
    type_names: tuple[str, ...]
    kinds: np.ndarray  # int16
    types: np.ndarray  # int16
    nulls: np.ndarray  # bool
    distinct: np.ndarray  # int64
    offsets: np.ndarray  # int64
    lengths: np.ndarray  # int64
    bits: np.ndarray  # uint64: a Bloom filter's bits, a fuse filter's fingerprint bits
    probes: np.ndarray  # int64
    seeds: np.ndarray  # uint64 (fuse)
    segment_lengths: np.ndarray  # uint64 (fuse)
    segments: np.ndarray  # uint64 (fuse)

    def rows_of(self, kind: str, type_name: str) -> np.ndarray:
        """Per row: whether the entry is of ``kind`` and was built for ``type_name``."""
        if kind not in self.kind_names or type_name not in self.type_names:
            return np.zeros(len(self.kinds), dtype=bool)
        return ((self.kinds == self.kind_names.index(kind))
                & (self.types == self.type_names.index(type_name)))


@dataclass(frozen=True)
class IndexFileArrays:
    """A decoded index file: the data files it covers (``paths``, one row each) and per column
    the entries as arrays (:class:`ColumnArrays`), payloads left in ``body`` (no copy per entry):
    what planning probes many files at once with."""

    paths: tuple[str, ...]
    columns: Mapping[str, ColumnArrays]
    body: np.ndarray  # uint8

    def columns_of(self, path: str) -> set[str]:
        """The columns ``path`` has an entry for (none when the file does not cover it)."""
        if path not in self._rows:
            return set()
        row = self._rows[path]
        return {c for c, a in self.columns.items() if a.kinds[row] >= 0}

    @cached_property
    def _rows(self) -> dict[str, int]:
        return {p: i for i, p in enumerate(self.paths)}

    def entries(self) -> dict[str, dict[str, Entry]]:
        """The same entries as :class:`Entry` objects (data file path -> column -> entry)."""
        out: dict[str, dict[str, Entry]] = {p: {} for p in self.paths}
        for column, a in self.columns.items():
            for row in np.flatnonzero(a.kinds >= 0).tolist():
                start, size = int(a.offsets[row]), int(a.lengths[row])
                out[self.paths[row]][column] = Entry(
                    a.kind_names[a.kinds[row]], a.type_names[a.types[row]], bool(a.nulls[row]),
                    int(a.distinct[row]), None if start < 0 else self.body[start:start + size].tobytes(),
                    int(a.bits[row]), int(a.probes[row]), int(a.seeds[row]),
                    int(a.segment_lengths[row]), int(a.segments[row]))
        return out


def _column_arrays(paths: tuple[str, ...], column: str, items: list[tuple[int, Mapping[str, Any]]],
                   body_size: int) -> ColumnArrays:
    rows = len(paths)
    kind_names: dict[str, int] = {}
    type_names: dict[str, int] = {}
    where = np.array([row for row, _ in items], dtype=np.int64)

    def filled(values: list[Any], dtype: Any, missing: Any) -> np.ndarray:
        out = np.full(rows, missing, dtype=dtype)
        out[where] = np.array(values, dtype=dtype)
        return out

    entries = [item for _, item in items]
    kinds = filled([kind_names.setdefault(str(e["kind"]), len(kind_names)) for e in entries], np.int16, -1)
    types = filled([type_names.setdefault(str(e["type"]), len(type_names)) for e in entries], np.int16, -1)
    nulls = filled([bool(e["nulls"]) for e in entries], bool, True)
    distinct = filled([int(e["distinct"]) for e in entries], np.int64, 0)
    offsets = filled([int(e.get("offset", -1)) for e in entries], np.int64, -1)
    lengths = filled([int(e.get("length", 0)) if "offset" in e else 0 for e in entries], np.int64, 0)
    bits = filled([int(e.get("bits", e.get("fingerprint_bits", 0))) for e in entries], np.uint64, 0)
    probes = filled([int(e.get("probes", 0)) for e in entries], np.int64, 0)
    seeds = filled([int(e.get("seed", 0)) for e in entries], np.uint64, 0)
    segment_lengths = filled([int(e.get("segment_length", 0)) for e in entries], np.uint64, 0)
    segments = filled([int(e.get("segments", 0)) for e in entries], np.uint64, 0)
    has = offsets >= 0
    bad = has & ((offsets + lengths > body_size) | (lengths < 0))
    bad |= has & (kinds == kind_names.get("values", -2)) & (lengths % 8 != 0)
    bloom = has & (kinds == kind_names.get("bloom", -2))
    bad |= bloom & ((bits == 0) | (bits > 8 * lengths.astype(np.uint64)) | (probes < 1)
                    | (probes > _MAX_PROBES))
    fuse = has & (kinds == kind_names.get("fuse", -2))
    if fuse.any():
        power_of_two = (segment_lengths & (segment_lengths - np.uint64(1))) == 0
        slots = (segments + np.uint64(fuse_filter.ARITY - 1)) * segment_lengths
        bad |= fuse & ((bits < 1) | (bits > fuse_filter.MAX_FINGERPRINT_BITS) | (segments < 1)
                       | (segment_lengths < 1) | (segment_lengths > 1 << 16) | ~power_of_two
                       | (segments > 1 << 32)
                       | (slots * bits > 8 * lengths.astype(np.uint64)))
    if bad.any():
        raise FormatError(f"skipping index entry of {paths[int(np.argmax(bad))]}/{column} runs "
                          "past the file or has a malformed Bloom or fuse filter")
    return ColumnArrays(tuple(kind_names), tuple(type_names), kinds, types, nulls, distinct,
                        offsets, lengths, bits, probes, seeds, segment_lengths, segments)


def decode_index_arrays(data: bytes) -> IndexFileArrays | None:
    """An index file decoded for probing; None for a version or hash function this engine does
    not read (every file it names is then "may match"). A damaged file raises
    :class:`FormatError`."""
    if len(data) < 12 or data[:6] != _MAGIC[:6]:
        raise FormatError("not a skipping index file (bad magic)")
    try:
        version = int(data[6:8].decode())
    except ValueError as exc:
        raise FormatError("skipping index file with an unreadable version") from exc
    if version not in READABLE_VERSIONS:
        return None
    (length,) = struct.unpack("<I", data[8:12])
    try:
        header = json.loads(data[12:12 + length])
    except ValueError as exc:
        raise FormatError(f"skipping index file header is not JSON: {exc}") from exc
    if not isinstance(header, dict) or header.get("version") != version or header.get("hash") != HASH_NAME:
        return None
    body = np.frombuffer(data, dtype=np.uint8, offset=min(len(data), 12 + length))
    try:
        files = header["files"]
        paths = tuple(files)
        by_column: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
        for row, columns in enumerate(files.values()):
            for column, item in columns.items():
                by_column.setdefault(column, []).append((row, item))
        arrays = {column: _column_arrays(paths, column, items, len(body))
                  for column, items in by_column.items()}
    except FormatError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, OverflowError) as exc:
        raise FormatError(f"skipping index file header is malformed: {exc}") from exc
    return IndexFileArrays(paths, arrays, body)


def decode_index_file(data: bytes) -> dict[str, dict[str, Entry]] | None:
    """The entries of an index file (:func:`decode_index_arrays` as :class:`Entry` objects);
    None for a version or hash function this engine does not read. A damaged file raises
    :class:`FormatError`."""
    arrays = decode_index_arrays(data)
    return None if arrays is None else arrays.entries()
