"""64-bit hashes of column values: one function for the values a file holds and for a literal.

Skipping indexes (:mod:`qbeast.core.skipping`) store hashes, not values. A file is pruned only
when the hash of a query literal is absent from its index, so the hash of a literal at plan time
must equal the hash of the same value when it was written. Both go through :func:`hash_values`
on an Arrow array of the column's type (the literal as a one-element array,
:func:`literal_array`), so they agree by construction.

Everything is vectorized numpy over Arrow buffers: writes hash whole columns, and a Python loop
per value would cost more than the write. Integers and dates hash their value as a 64-bit
integer, decimals their 128-bit unscaled value at the column's scale, strings their UTF-8 bytes
(case-sensitive, as Spark compares strings) as a polynomial computed from prefix sums over the
Arrow data buffer. Collisions only make a file "may match", never the reverse.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Name of this hash function, recorded in index files (another function is another name).
HASH_NAME = "qh64"

_INTEGRAL = {"byte", "short", "integer", "long"}
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
_C1 = np.uint64(0xFF51AFD7ED558CCD)
_C2 = np.uint64(0xC4CEB9FE1A85EC53)
_SEED_INT = np.uint64(0x9E3779B97F4A7C15)
_SEED_STR = np.uint64(0x2545F4914F6CDD1D)
_SEED_DEC = np.uint64(0x632BE59BD9B4E019)
_DAY_MS = 86_400_000
_S33 = np.uint64(33)


def indexable(type_name: str) -> bool:
    """Whether a Spark column type (Delta schema name) can carry a skipping index."""
    return type_name in _INTEGRAL or type_name in ("string", "date") or bool(_DECIMAL.match(type_name))


INDEXABLE_TYPES = ("tinyint", "smallint", "int", "bigint", "string", "date", "decimal(p, s)")


def mix64(x: np.ndarray) -> np.ndarray:
    """Murmur3's 64-bit finalizer (a bijection that spreads every input bit), in place."""
    x ^= x >> _S33
    x *= _C1
    x ^= x >> _S33
    x *= _C2
    x ^= x >> _S33
    return x


def _flat(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values


def referenced_values(values: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, bool]:
    """The distinct values a dictionary-encoded column refers to (no nulls), and whether it
    holds a null: what an index of a column read as a dictionary needs, without hashing and
    sorting each row's copy of its few values."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts, has_null = [], False
    for chunk in chunks:
        has_null |= chunk.null_count > 0
        used = pc.unique(pc.drop_null(chunk.indices))
        taken = chunk.dictionary.take(used)
        has_null |= taken.null_count > 0
        parts.append(pc.drop_null(taken))
    value_type = values.type.value_type
    return (pa.concat_arrays(parts) if parts else pa.array([], value_type)), has_null


def hash_values(values: pa.Array | pa.ChunkedArray, type_name: str) -> tuple[np.ndarray, bool]:
    """The hashes (``uint64``, one per non-null value, in order) of ``values``, a column of Spark
    type ``type_name``, and whether it holds a null."""
    array = _flat(values)
    has_null = array.null_count > 0
    if has_null:
        array = pc.drop_null(array)
    if type_name in _INTEGRAL or type_name == "date":
        if pa.types.is_date32(array.type):
            array = array.view(pa.int32())
        ints = np.asarray(array.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
        return mix64(ints.view(np.uint64) ^ _SEED_INT), has_null
    match = _DECIMAL.match(type_name)
    if match:
        target = pa.decimal128(int(match.group(1)), int(match.group(2)))
        if array.type != target:
            array = array.cast(target)
        array = pa.concat_arrays([array]) if array.offset else array
        words = np.frombuffer(array.buffers()[1], dtype="<u8")[: 2 * len(array)].reshape(-1, 2)
        low = mix64(words[:, 0].copy() ^ _SEED_DEC)
        return mix64(low ^ words[:, 1]), has_null
    if type_name == "string":
        return _hash_strings(array), has_null
    raise ValueError(f"no skipping-index hash for column type {type_name}")


#: Strings hashed per step (bounds the temporary arrays, which are 8 bytes per string byte).
_STRING_CHUNK_BYTES = 1 << 23
_BASE = np.uint64(0x100000001B3)  # odd, so invertible modulo 2**64
_BASE_INVERSE = np.uint64(pow(0x100000001B3, -1, 2**64))
_powers: list[tuple[np.ndarray, np.ndarray]] = []


def _power_table(length: int) -> tuple[np.ndarray, np.ndarray]:
    """``BASE**j`` and ``BASE**-j`` modulo 2**64 for ``j < length`` (grown and kept; threads
    swap in a whole new pair, never half of one)."""
    have = _powers[-1] if _powers else None
    if have is not None and len(have[0]) >= length:
        return have
    size = max(length, 1024, 0 if have is None else 2 * len(have[0]))
    with np.errstate(over="ignore"):
        up = np.cumprod(np.full(size, _BASE, dtype=np.uint64))
        down = np.cumprod(np.full(size, _BASE_INVERSE, dtype=np.uint64))
    pair = (np.concatenate([[np.uint64(1)], up[:-1]]), np.concatenate([[np.uint64(1)], down[:-1]]))
    _powers[:] = [pair]
    return pair


def _hash_strings(array: pa.Array) -> np.ndarray:
    """Hashes of UTF-8 strings: a polynomial of the bytes modulo 2**64, computed for all strings
    at once from prefix sums over the data buffer, mixed with the length by the finalizer."""
    if not pa.types.is_large_string(array.type):
        array = array.cast(pa.large_string())
    n = len(array)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[array.offset: array.offset + n + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.empty(0, np.uint8)
    out = np.empty(n, dtype=np.uint64)
    first = 0
    while first < n:
        last = int(np.searchsorted(offsets, offsets[first] + _STRING_CHUNK_BYTES, side="right")) - 1
        last = min(n, max(last, first + 1))
        base = int(offsets[first])
        local = offsets[first:last + 1] - base
        chunk = data[base: int(offsets[last])]
        up, down = _power_table(len(chunk) + 1)
        with np.errstate(over="ignore"):
            sums = np.zeros(len(chunk) + 1, dtype=np.uint64)
            np.cumsum(chunk.astype(np.uint64) * up[: len(chunk)], out=sums[1:])
            raw = (sums[local[1:]] - sums[local[:-1]]) * down[local[:-1]]
            lengths = (local[1:] - local[:-1]).astype(np.uint64)
            out[first:last] = mix64(mix64(raw ^ _SEED_STR) ^ lengths)
        first = last
    return out


def arrow_type(type_name: str) -> pa.DataType:
    """The Arrow type a column of an indexable Spark type is hashed as."""
    if type_name == "byte":
        return pa.int8()
    if type_name == "short":
        return pa.int16()
    if type_name == "integer":
        return pa.int32()
    if type_name == "long":
        return pa.int64()
    if type_name == "date":
        return pa.date32()
    if type_name == "string":
        return pa.large_string()
    match = _DECIMAL.match(type_name)
    if match:
        return pa.decimal128(int(match.group(1)), int(match.group(2)))
    raise ValueError(f"no skipping-index hash for column type {type_name}")


def literal_array(type_name: str, value: Any) -> pa.Array | None:
    """A predicate literal (canonical form, :func:`qbeast.core.expressions.canonical_literal`) as a
    one-element array of the column's type, or None when it cannot be represented exactly there
    (then the index must not prune on it).

    Canonical literals are ints, strings, floats for decimals and epoch milliseconds for dates.
    """
    if isinstance(value, bool):
        return None
    if type_name in _INTEGRAL:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or not -(2**63) <= value < 2**63:
            return None
        return pa.array([value], pa.int64())
    if type_name == "date":
        if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
            return pa.array([value], pa.date32())
        if not isinstance(value, int) or value % _DAY_MS:
            return None
        return pa.array([value // _DAY_MS], pa.int32()).view(pa.date32())
    if type_name == "string":
        return pa.array([value], pa.large_string()) if isinstance(value, str) else None
    match = _DECIMAL.match(type_name)
    if match:
        precision, scale = int(match.group(1)), int(match.group(2))
        if isinstance(value, float):
            # a float literal is exact only while it round-trips its shortest decimal form
            if not np.isfinite(value) or precision > 15:
                return None
            value = decimal.Decimal(repr(value))
        elif isinstance(value, int):
            value = decimal.Decimal(value)
        if not isinstance(value, decimal.Decimal):
            return None
        try:
            exact = value.quantize(decimal.Decimal(1).scaleb(-scale), context=decimal.Context(prec=60))
        except decimal.InvalidOperation:
            return None
        if exact != value or len(exact.as_tuple().digits) > precision:
            return None
        return pa.array([exact], pa.decimal128(precision, scale))
    return None


def literal_hashes(type_name: str, values: Any) -> np.ndarray | None:
    """Hashes of predicate literals for a column of ``type_name``; None when any literal cannot
    be represented exactly in that type (the caller must then keep every file)."""
    arrays = []
    for value in values:
        array = literal_array(type_name, value)
        if array is None:
            return None
        arrays.append(array)
    if not arrays:
        return np.empty(0, dtype=np.uint64)
    hashes = [hash_values(a, type_name)[0] for a in arrays]
    return np.concatenate(hashes)
