"""Cube identifiers of the OTree (FORMAT §1).

A cube of a ``d``-dimensional revision is the path from the root: per level one *code* in
``[0, 2**d)`` telling, for each dimension, whether the cube is the lower or the upper half of its
parent. Bit ``d-1-j`` of a code is set when the cube is the upper half along dimension ``j``, so
dimension 0 is the most significant bit. With this layout comparing the code tuples
lexicographically (shorter prefix first) is exactly qbeast-spark's pre-order, which the read path
relies on, and the string form is a plain re-chunking of the bits in 6-bit base64 symbols.

Two paths map points to cubes:

* ``CubeId.containers(point)`` — scalar, a lazy walk from the root (tests, small inputs);
* ``point_codes(coords, depth)`` — numpy, whole Arrow batches at once (the writer).

Both perform the same float operations (double, then subtract 1 when >= 1), which are exact in
binary floating point, so they agree bit for bit.
"""
from __future__ import annotations

from functools import total_ordering
from typing import Iterable, Iterator, Sequence

import numpy as np

from qbeast.errors import FormatError, InvalidOptionError, QbeastError

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_SYMBOL_INDEX = {ch: i for i, ch in enumerate(ALPHABET)}
_ALPHABET_BYTES = np.frombuffer(ALPHABET.encode("ascii"), dtype=np.uint8)

#: Largest number of code bits a packed int64 key can hold (one bit spare for the sign, one for
#: the depth marker of :func:`pack_codes`).
PACKED_KEY_BITS = 62


class PointOutOfRangeError(QbeastError, ValueError):
    """A normalized coordinate is outside [0, 1] (or NaN): the revision does not cover the row."""


def symbols_per_level(dimensions: int) -> int:
    """Base64 symbols used per tree level: ``ceil(d / 6)``."""
    _check_dimensions(dimensions)
    return (dimensions + 5) // 6


def _check_dimensions(dimensions: int) -> None:
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
        raise InvalidOptionError(f"dimension count must be a positive int, got {dimensions!r}")


def _code_to_symbols(code: int, dimensions: int) -> list[int]:
    """Split one level's code into its base64 symbol indices (6 dims per symbol, dim 0 first)."""
    spl = (dimensions + 5) // 6
    padded = code << (6 * spl - dimensions)
    return [(padded >> (6 * (spl - 1 - k))) & 63 for k in range(spl)]


@total_ordering
class CubeId:
    """An immutable, hashable cube of a ``dimensions``-dimensional OTree.

    Ordering is the pre-order of qbeast-spark (parent before children, children in sibling order),
    so sorted containers of cubes can be scanned like the Scala ``SortedMap``.
    """

    __slots__ = ("_dimensions", "_codes", "_hash")

    def __init__(self, dimensions: int, codes: Sequence[int] = ()) -> None:
        _check_dimensions(dimensions)
        limit = 1 << dimensions
        codes_t = tuple(int(c) for c in codes)
        for c in codes_t:
            if not 0 <= c < limit:
                raise InvalidOptionError(
                    f"cube code {c} out of range [0, {limit}) for {dimensions} dimensions"
                )
        self._dimensions = dimensions
        self._codes = codes_t
        self._hash = hash((dimensions, codes_t))

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def root(cls, dimensions: int) -> CubeId:
        """The root cube (depth 0, string ``""``)."""
        return cls(dimensions, ())

    @classmethod
    def from_codes(cls, dimensions: int, codes: Sequence[int]) -> CubeId:
        """The cube reached by following ``codes`` from the root."""
        return cls(dimensions, codes)

    @classmethod
    def from_string(cls, dimensions: int, text: str) -> CubeId:
        """Decode a cube string as written in block tags (FORMAT §1.3).

        The dimension count is not part of the string; it comes from the revision. A length that is
        not a multiple of the symbols per level, a character outside the alphabet or a symbol with
        bits beyond the last dimension means the string does not belong to a ``d``-dimensional
        tree, and raises :class:`FormatError`.
        """
        if not isinstance(text, str):
            raise FormatError(f"cube id must be a string, got {text!r}")
        spl = symbols_per_level(dimensions)
        if len(text) % spl:
            raise FormatError(
                f"cube id {text!r} has length {len(text)}, not a multiple of {spl} "
                f"symbols per level for {dimensions} dimensions"
            )
        pad = 6 * spl - dimensions
        codes = []
        for start in range(0, len(text), spl):
            value = 0
            for ch in text[start : start + spl]:
                idx = _SYMBOL_INDEX.get(ch)
                if idx is None:
                    raise FormatError(
                        f"cube id {text!r} contains {ch!r}, not a base64 symbol of {ALPHABET!r}"
                    )
                value = (value << 6) | idx
            if value & ((1 << pad) - 1):
                raise FormatError(
                    f"cube id {text!r} sets bits beyond dimension {dimensions - 1}: "
                    f"it was not written for a {dimensions}-dimensional revision"
                )
            codes.append(value >> pad)
        return cls(dimensions, codes)

    @classmethod
    def containers(cls, point: Sequence[float], max_depth: int | None = None) -> Iterator[CubeId]:
        """The cubes containing a normalized ``point``, root first, down to ``max_depth`` (or forever).

        A coordinate of exactly 1.0 lies in the upper half at every level.
        """
        coords = [float(x) for x in point]
        for j, x in enumerate(coords):
            if not 0.0 <= x <= 1.0:  # also rejects NaN
                raise PointOutOfRangeError(
                    f"coordinate {j} of point {tuple(coords)} is {x}; normalized coordinates "
                    "must lie in [0, 1]"
                )
        d = len(coords)
        codes: list[int] = []
        yield cls(d, ())
        while max_depth is None or len(codes) < max_depth:
            code = 0
            for j in range(d):
                x = coords[j] * 2.0
                if x >= 1.0:
                    code |= 1 << (d - 1 - j)
                    x -= 1.0
                coords[j] = x
            codes.append(code)
            yield cls(d, codes)

    # -- properties ---------------------------------------------------------------------------
    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def depth(self) -> int:
        return len(self._codes)

    @property
    def codes(self) -> tuple[int, ...]:
        return self._codes

    @property
    def is_root(self) -> bool:
        return not self._codes

    @property
    def string(self) -> str:
        """The base64 form stored in the ``cubeId`` of block tags."""
        return "".join(
            ALPHABET[s] for c in self._codes for s in _code_to_symbols(c, self._dimensions)
        )

    def __str__(self) -> str:
        return self.string

    def __repr__(self) -> str:
        return f"CubeId({self._dimensions}, {self.string!r})"

    # -- tree navigation ----------------------------------------------------------------------
    @property
    def parent(self) -> CubeId | None:
        """The parent cube, ``None`` for the root."""
        if not self._codes:
            return None
        return CubeId(self._dimensions, self._codes[:-1])

    def child(self, code: int) -> CubeId:
        """The child reached with ``code`` (see the module docstring for the bit layout)."""
        return CubeId(self._dimensions, self._codes + (code,))

    def children(self) -> Iterator[CubeId]:
        """The ``2**d`` children in sibling order (in 2-D: A, Q, g, w)."""
        for code in range(1 << self._dimensions):
            yield self.child(code)

    def ancestors(self) -> Iterator[CubeId]:
        """Strict ancestors, nearest first (parent, grandparent, ..., root)."""
        for depth in range(self.depth - 1, -1, -1):
            yield CubeId(self._dimensions, self._codes[:depth])

    def is_ancestor_of(self, other: CubeId) -> bool:
        """True if ``other`` is this cube or lies below it (qbeast-spark includes equality)."""
        return (
            self._dimensions == other._dimensions
            and len(self._codes) <= len(other._codes)
            and other._codes[: len(self._codes)] == self._codes
        )

    # -- geometry -----------------------------------------------------------------------------
    def bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """``(from, to)`` per dimension; the cube covers ``[from, to)`` (``to == 1.0`` inclusive)."""
        d = self._dimensions
        lows = [0.0] * d
        for level, code in enumerate(self._codes):
            step = 2.0 ** -(level + 1)
            for j in range(d):
                if code >> (d - 1 - j) & 1:
                    lows[j] += step
        width = 2.0 ** -self.depth
        return tuple(lows), tuple(lo + width for lo in lows)

    def contains(self, point: Sequence[float]) -> bool:
        """Whether the normalized ``point`` falls in this cube (1.0 belongs to cubes ending at 1)."""
        if len(point) != self._dimensions:
            raise InvalidOptionError(
                f"point has {len(point)} coordinates, cube has {self._dimensions} dimensions"
            )
        lows, highs = self.bounds()
        return all(
            (lo <= x < hi) or (x == 1.0 and hi == 1.0) for x, lo, hi in zip(point, lows, highs)
        )

    # -- identity and ordering ----------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CubeId):
            return NotImplemented
        return self._dimensions == other._dimensions and self._codes == other._codes

    def __lt__(self, other: CubeId) -> bool:
        if not isinstance(other, CubeId):
            return NotImplemented
        if self._dimensions != other._dimensions:
            raise InvalidOptionError(
                f"cannot order cubes of {self._dimensions} and {other._dimensions} dimensions"
            )
        return self._codes < other._codes

    def __hash__(self) -> int:
        return self._hash


# -- vectorized helpers (one Arrow batch at a time, no per-row Python) -------------------------


def point_codes(coords: np.ndarray, depth: int) -> np.ndarray:
    """Per row, the codes of the row's containers at levels ``1..depth``: shape ``(n, depth)``.

    ``coords`` is ``(n, d)`` float64 in [0, 1]; row ``i``'s depth-``k`` container is
    ``CubeId.from_codes(d, out[i, :k])``. Raises :class:`PointOutOfRangeError` for coordinates
    outside [0, 1] or NaN (a revision that does not cover the data).
    """
    x = np.array(coords, dtype=np.float64, copy=True)
    if x.ndim != 2:
        raise InvalidOptionError(f"coords must be a 2-D (rows, dimensions) array, got {x.shape}")
    if depth < 0:
        raise InvalidOptionError(f"depth must be >= 0, got {depth}")
    n, d = x.shape
    _check_dimensions(d)
    if d > 63:
        raise InvalidOptionError(f"at most 63 dimensions fit an int64 code, got {d}")
    bad = ~((x >= 0.0) & (x <= 1.0))
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise PointOutOfRangeError(
            f"coordinate {col} of row {row} is {x[row, col]}; normalized coordinates must lie "
            f"in [0, 1] ({int(bad.sum())} bad values in the batch)"
        )
    out = np.zeros((n, depth), dtype=np.int64)
    for level in range(depth):
        out[:, level] = descend_one_level(x)
    return out


def descend_one_level(coords: np.ndarray) -> np.ndarray:
    """One level of :func:`point_codes`: the child codes of ``coords`` and their next coordinates.

    ``coords`` (``(n, d)`` float64, already checked to lie in [0, 1]) is rewritten in place into
    the coordinates relative to the chosen child (double, subtract 1 in the upper half), so a
    caller can stop descending for some rows and keep going for others with the exact float
    operations :func:`point_codes` performs. Bit ``d-1-j`` of a code is set for the upper half
    along dimension ``j``.
    """
    n, d = coords.shape
    codes = np.zeros(n, dtype=np.int64)
    for j in range(d):
        col = coords[:, j]
        col *= 2.0
        upper = col >= 1.0
        col[upper] -= 1.0
        codes |= upper.astype(np.int64) << (d - 1 - j)
    return codes


def codes_to_strings(dimensions: int, codes: np.ndarray) -> list[str]:
    """Cube strings of the rows of a ``(n, k)`` code array (each row a depth-``k`` cube)."""
    spl = symbols_per_level(dimensions)
    arr = np.asarray(codes, dtype=np.int64)
    if arr.ndim != 2:
        raise InvalidOptionError(f"codes must be a 2-D (rows, depth) array, got {arr.shape}")
    n, k = arr.shape
    if k == 0:
        return [""] * n
    padded = arr << (6 * spl - dimensions)
    symbols = np.empty((n, k, spl), dtype=np.uint8)
    for s in range(spl):
        symbols[:, :, s] = (padded >> (6 * (spl - 1 - s))) & 63
    chars = _ALPHABET_BYTES[symbols.reshape(n, k * spl)]
    return [b.decode("ascii") for b in chars.view(f"S{k * spl}").ravel()]


def strings_to_codes(dimensions: int, strings: Iterable[str], depth: int) -> np.ndarray:
    """Inverse of :func:`codes_to_strings` for cubes of one ``depth``: ``(n, depth)`` int64."""
    rows = []
    for text in strings:
        row = CubeId.from_string(dimensions, text).codes
        if len(row) != depth:
            raise InvalidOptionError(f"cube {text!r} has depth {len(row)}, expected {depth}")
        rows.append(row)
    return np.array(rows, dtype=np.int64).reshape(len(rows), depth)


def can_pack(dimensions: int, depth: int) -> bool:
    """Whether depth-``depth`` prefixes fit in one int64 key (``depth * d <= 62``)."""
    return depth * dimensions <= PACKED_KEY_BITS


def pack_codes(dimensions: int, codes: np.ndarray) -> np.ndarray:
    """One int64 key per row for the depth-``k`` prefix given as ``(n, k)`` codes.

    Keys compare like the cubes they stand for (pre-order among cubes of the same depth), so
    ``np.unique`` / ``np.searchsorted`` on keys groups and sorts rows by cube without Python loops.
    Only valid when :func:`can_pack` holds; deeper prefixes must use :func:`unique_codes`, which
    falls back to row-wise ``np.unique`` on the code matrix.
    """
    arr = np.asarray(codes, dtype=np.int64)
    n, k = arr.shape
    if not can_pack(dimensions, k):
        raise InvalidOptionError(
            f"depth {k} x {dimensions} dimensions needs {k * dimensions} bits; packed keys hold "
            f"at most {PACKED_KEY_BITS} (use unique_codes instead)"
        )
    key = np.zeros(n, dtype=np.int64)
    for level in range(k):
        key = (key << dimensions) | arr[:, level]
    return key


def unpack_key(dimensions: int, depth: int, key: int) -> CubeId:
    """The cube of a key produced by :func:`pack_codes` for prefixes of ``depth`` levels."""
    mask = (1 << dimensions) - 1
    key = int(key)
    codes = [(key >> (dimensions * (depth - 1 - level))) & mask for level in range(depth)]
    return CubeId(dimensions, codes)


def unique_codes(dimensions: int, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a ``(n, k)`` code array in cube order, and each input row's group index.

    Uses packed int64 keys when the prefix fits (:func:`can_pack`), otherwise ``np.unique`` over
    rows (slower but unlimited depth). Lexicographic row order equals cube pre-order.
    """
    arr = np.asarray(codes, dtype=np.int64)
    n, k = arr.shape
    if can_pack(dimensions, k):
        keys, first, inverse = np.unique(
            pack_codes(dimensions, arr), return_index=True, return_inverse=True
        )
        return arr[first].reshape(len(keys), k), inverse.reshape(n)
    uniq, inverse = np.unique(arr, axis=0, return_inverse=True)
    return uniq.reshape(-1, k), inverse.reshape(n)
