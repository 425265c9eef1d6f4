"""Pruning files with skipping indexes: may a file hold a row matching a predicate?

Beside :mod:`qbeast.core.stats_skipping` (min/max) and the OTree walk
(:mod:`qbeast.core.selection`): ``=``, ``IN``, ``IS NULL`` (and ``<=>``, which the parsers read
as one of those) on a column with a ``values``, ``fuse`` or ``bloom`` index
(:mod:`qbeast.core.skipping`) drop the files whose entry proves the value absent. Everything
else keeps the file; so does a file without an entry for the column, an entry built for another
column type, or a literal that cannot be represented exactly in the column's type.

A plan asks about thousands of files at once, so entries are probed as arrays, with no Python
work per data file until the answers are handed out: the index files a plan's files name form
one :class:`IndexView` (their rows and payloads concatenated once, then cached), the entries of
one column over all its rows one :class:`ColumnBatch`, and a predicate is evaluated to one
boolean per row (:func:`may_match`), then per file (:meth:`IndexView.answers`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from qbeast.core import expressions as ex
from qbeast.core import fuse_filter
from qbeast.core.skipping import IndexFileArrays, bloom_positions
from qbeast.core.value_hash import literal_hashes

_U3 = np.uint64(3)
_U7 = np.uint64(7)


def _gather(body: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The byte ranges ``[start, start + length)`` of ``body``, concatenated (vectorized)."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.uint8)
    ends = np.cumsum(lengths)
    index = np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)
    return body[index]


class IndexView:
    """The index files a plan's files name (``name`` -> decoded file, None when it cannot be
    read), as one row space: each data file entry of each index file is a row; payloads are
    concatenated into one :attr:`body`. Column batches are built on first use and kept."""

    def __init__(self, files: Mapping[str, IndexFileArrays | None]) -> None:
        self.rows: dict[str, dict[str, int]] = {}
        self.parts: list[tuple[IndexFileArrays, int, int]] = []  # (file, first row, body base)
        bodies: list[np.ndarray] = []
        row = base = 0
        for name, arrays in files.items():
            if arrays is None:
                self.rows[name] = {}
                continue
            self.rows[name] = dict(zip(arrays.paths, range(row, row + len(arrays.paths))))
            self.parts.append((arrays, row, base))
            bodies.append(arrays.body)
            row += len(arrays.paths)
            base += len(arrays.body)
        self.size = row
        bodies.append(np.zeros(2, dtype=np.uint8))  # fuse probes read 3 bytes from a slot's first
        self.body = np.concatenate(bodies)
        self._batches: dict[tuple[str, str], ColumnBatch] = {}

    def batch(self, column: str, type_name: str) -> ColumnBatch:
        """The entries of ``column`` (as index files key it) built for ``type_name``."""
        key = (column, type_name)
        found = self._batches.get(key)
        if found is None:
            found = self._batches[key] = ColumnBatch(self, column, type_name)
        return found

    def answers(self, mask: np.ndarray, names: Sequence[str | None], paths: Sequence[str]) -> list[bool]:
        """Per data file (``paths``, each naming the index file ``names``): ``mask`` at its row,
        True for a file without a name, or not covered by the index file it names."""
        flags = mask.tolist()
        flags.append(True)
        missing, rows = self.size, self.rows
        empty: dict[str, int] = {}
        return [True if name is None else flags[rows.get(name, empty).get(path, missing)]
                for name, path in zip(names, paths)]


@dataclass(frozen=True)
class _FuseRows:
    """The fuse filters of a :class:`ColumnBatch`: rows, where their fingerprints start in the
    body, their distinct counts and shapes, one entry per filter."""

    rows: np.ndarray
    starts: np.ndarray
    distinct: np.ndarray
    seeds: np.ndarray
    lengths: np.ndarray
    segments: np.ndarray
    bits: np.ndarray


class ColumnBatch:
    """The entries of one column over the rows of an :class:`IndexView`, probed together.

    A row whose entry is missing, of a kind this engine does not know, or built for another
    type than ``type_name`` is "unknown" (always may match); ``kind`` is the kind of the first
    usable entry (empty when there is none).
    """

    def __init__(self, view: IndexView, column: str, type_name: str) -> None:
        n = view.size
        self.kind = ""
        self.unknown = np.ones(n, dtype=bool)
        self.nulls = np.ones(n, dtype=bool)
        self.overflow = np.zeros(n, dtype=bool)
        values: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (rows, starts, lengths)
        blooms: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # + bits, probes
        fuses: list[tuple[np.ndarray, ...]] = []  # rows, starts, distinct, seeds, lengths, segments, bits
        for arrays, first, base in view.parts:
            a = arrays.columns.get(column)
            if a is None:
                continue
            is_values, is_bloom = a.rows_of("values", type_name), a.rows_of("bloom", type_name)
            is_fuse = a.rows_of("fuse", type_name)
            usable = is_values | is_bloom | is_fuse
            if not usable.any():
                continue
            if not self.kind:
                at = int(np.argmax(usable))
                self.kind = "values" if is_values[at] else "fuse" if is_fuse[at] else "bloom"
            part = slice(first, first + len(usable))
            self.unknown[part] = ~usable
            self.nulls[part] = a.nulls | ~usable
            stored = a.offsets >= 0
            self.overflow[part] = usable & ~stored
            rows = np.flatnonzero(is_values & stored)
            if rows.size:
                values.append((first + rows, base + a.offsets[rows], a.lengths[rows]))
            rows = np.flatnonzero(is_bloom & stored)
            if rows.size:
                blooms.append((first + rows, base + a.offsets[rows], a.bits[rows], a.probes[rows]))
            rows = np.flatnonzero(is_fuse & stored)
            if rows.size:
                fuses.append((first + rows, base + a.offsets[rows], a.distinct[rows], a.seeds[rows],
                              a.segment_lengths[rows], a.segments[rows], a.bits[rows]))
        self.body = view.body
        self.fuse = _FuseRows(*(np.concatenate(x) for x in zip(*fuses))) if fuses else None
        if values:
            rows, starts, lengths = (np.concatenate(x) for x in zip(*values))
            self.value_hashes = _gather(view.body, starts, lengths).view("<u8").astype(np.uint64)
            self.value_rows = np.repeat(rows, lengths // 8)
        else:
            self.value_hashes = np.empty(0, dtype=np.uint64)
            self.value_rows = np.empty(0, dtype=np.int64)
        if blooms:
            rows, starts, bits, probes = (np.concatenate(x) for x in zip(*blooms))
        else:
            rows, starts = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
            bits, probes = np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
        self.bloom_rows = rows
        self.bloom_starts = starts[None, :]
        self.bloom_bits = bits[None, :]
        most = int(probes.max()) if probes.size else 0
        self.steps = np.arange(most, dtype=np.uint64)[:, None]
        # probes past a filter's own count always "hit" (filters of fewer probes share the steps)
        self.unused = None if probes.size == 0 or probes.min() == most else (
            np.arange(most)[:, None] >= probes[None, :])

    def may_contain(self, hashes: np.ndarray) -> np.ndarray:
        """Per row: whether the file may hold one of the values hashed to ``hashes``."""
        found = self.unknown | self.overflow
        if len(hashes) == 0:
            return found
        if len(self.value_hashes):
            found[self.value_rows[np.isin(self.value_hashes, hashes)]] = True
        if self.bloom_rows.size:
            # every probe of every filter at once: (probes, filters) bit positions per value
            hit = np.zeros(self.bloom_rows.size, dtype=bool)
            for h in np.asarray(hashes, dtype=np.uint64):
                position = bloom_positions(h, self.steps, self.bloom_bits)
                byte = self.body[self.bloom_starts + (position >> _U3).astype(np.int64)]
                bit = ((byte >> (position & _U7).astype(np.uint8)) & 1).astype(bool)
                if self.unused is not None:
                    bit |= self.unused
                hit |= bit.all(axis=0)
            found[self.bloom_rows[hit]] = True
        if self.fuse is not None:
            f = self.fuse
            hit = fuse_filter.may_contain(self.body, f.starts, (f.seeds, f.lengths, f.segments, f.bits),
                                          hashes)
            found[f.rows[hit & (f.distinct > 0)]] = True  # an empty filter holds nothing
        return found

    def may_hold_null(self) -> np.ndarray:
        """Per row: whether the file may hold a null in the column."""
        return self.unknown | self.nulls


class _Masks(ex.ExpressionVisitor[np.ndarray]):
    def __init__(self, view: IndexView, columns: Mapping[ex.Subject, str], only: ex.Subject | None) -> None:
        self.view = view
        self.columns = columns  # indexed column (table spelling) or call of one -> type name
        self.only = only
        self.n = view.size

    def _all(self) -> np.ndarray:
        return np.ones(self.n, dtype=bool)

    def visit_true(self) -> np.ndarray:
        return self._all()

    def visit_false(self) -> np.ndarray:
        return np.zeros(self.n, dtype=bool)

    def visit_and(self, results: list[np.ndarray]) -> np.ndarray:
        return np.logical_and.reduce(results) if results else self._all()

    def visit_or(self, results: list[np.ndarray]) -> np.ndarray:
        return np.logical_or.reduce(results) if results else np.zeros(self.n, dtype=bool)

    def visit_not(self, result: np.ndarray) -> np.ndarray:  # pragma: no cover - pushed down first
        return self._all()

    def _per_row(self, column: ex.Subject, probe: Callable[[ColumnBatch], np.ndarray]) -> np.ndarray:
        if column not in self.columns or (self.only is not None and column != self.only):
            return self._all()
        return probe(self.view.batch(str(column), self.columns[column]))  # how index files key it

    def _values(self, column: ex.Subject, values: Sequence[object]) -> np.ndarray:
        if column not in self.columns:
            return self._all()
        hashes = literal_hashes(self.columns[column], values)
        if hashes is None:
            return self._all()
        return self._per_row(column, lambda batch: batch.may_contain(hashes))

    def visit_comparison(self, predicate: ex.Comparison) -> np.ndarray:
        if isinstance(predicate, ex.EqualTo):
            return self._values(predicate.column, [predicate.value])
        return self._all()

    def visit_in(self, predicate: ex.In) -> np.ndarray:
        if not predicate.values:
            return self._all()
        return self._values(predicate.column, list(predicate.values))

    def visit_is_null(self, predicate: ex.IsNull) -> np.ndarray:
        return self._per_row(predicate.column, lambda batch: batch.may_hold_null())

    def visit_is_not_null(self, predicate: ex.IsNotNull) -> np.ndarray:
        return self._all()


def may_match(predicate: ex.Expression, view: IndexView, columns: Mapping[ex.Subject, str], *,
              only: ex.Subject | None = None) -> np.ndarray:
    """Per row of ``view``: False only when a skipping index proves no row of that data file
    satisfies ``predicate``.

    ``columns`` maps the table's indexed columns (the table's spelling; predicates name columns
    so) and the calls of columns indexes are declared on (``lower(email)``) to the Spark type of
    their values; ``only`` restricts the pruning to one column's index (how a
    plan reports what each index removed).
    """
    if not view.size or not columns or isinstance(predicate, ex.AlwaysTrue):
        return np.ones(view.size, dtype=bool)
    return ex.visit(ex.push_down_not(predicate), _Masks(view, columns, only))


def referenced_columns(predicate: ex.Expression, columns: Mapping[ex.Subject, str]) -> list[ex.Subject]:
    """The indexed columns and calls ``predicate`` tests (the indexes that may prune it)."""
    names = ex.references(predicate)
    return [c for c in columns if c in names]
