"""Pruning files with skipping indexes: may a file hold a row matching a predicate?

Beside :mod:`qbeast.core.stats_skipping` (min/max) and the OTree walk
(:mod:`qbeast.core.selection`): ``=``, ``IN``, ``IS NULL`` (and ``<=>``, which the parsers read
as one of those) on a column with a ``values`` or ``bloom`` index
(:mod:`qbeast.core.skipping`) drop the files whose entry proves the value absent. Everything
else keeps the file; so does a file without an entry for the column, an entry built for another
column type, or a literal that cannot be represented exactly in the column's type.

A plan asks about thousands of files at once, so entries are probed as arrays: the entries of
one column in one index file form a :class:`ColumnBatch`, and a predicate is evaluated to one
boolean per file (:func:`may_match`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from qbeast.core import expressions as ex
from qbeast.core.skipping import Entry, bloom_positions
from qbeast.core.value_hash import literal_hashes

class ColumnBatch:
    """The entries of one column for the files of one index file, probed together.

    ``rows`` maps a data file path to its row; a file whose entry is missing or was built for
    another type than ``type_name`` is "unknown" (always may match).
    """

    def __init__(self, entries: Mapping[str, Entry | None], type_name: str) -> None:
        self.rows = {path: i for i, path in enumerate(entries)}
        n = len(self.rows)
        self.kind = ""
        self.unknown = np.ones(n, dtype=bool)
        self.nulls = np.ones(n, dtype=bool)
        self.overflow = np.zeros(n, dtype=bool)
        value_rows: list[np.ndarray] = []
        value_hashes: list[np.ndarray] = []
        self.bloom = np.zeros(n, dtype=bool)
        self.offsets = np.zeros(n, dtype=np.int64)
        self.bits = np.ones(n, dtype=np.uint64)
        self.probes = np.zeros(n, dtype=np.int64)
        chunks: list[bytes] = []
        offset = 0
        for i, entry in enumerate(entries.values()):
            if entry is None or entry.type_name != type_name:
                continue
            self.kind = self.kind or entry.kind
            self.unknown[i] = False
            self.nulls[i] = entry.has_null
            if entry.payload is None:
                self.overflow[i] = True
            elif entry.kind == "values":
                stored = np.frombuffer(entry.payload, dtype="<u8")
                value_hashes.append(stored)
                value_rows.append(np.full(len(stored), i, dtype=np.int64))
            elif entry.kind == "bloom":
                self.bloom[i] = True
                self.offsets[i], self.bits[i], self.probes[i] = offset, entry.bits, entry.probes
                chunks.append(entry.payload)
                offset += len(entry.payload)
            else:  # a kind this engine does not know
                self.unknown[i] = True
        self.value_hashes = (np.concatenate(value_hashes) if value_hashes
                             else np.empty(0, dtype=np.uint64)).astype(np.uint64)
        self.value_rows = np.concatenate(value_rows) if value_rows else np.empty(0, dtype=np.int64)
        self.bitmap = np.frombuffer(b"".join(chunks), dtype=np.uint8) if chunks else np.empty(0, np.uint8)

    def may_contain(self, hashes: np.ndarray) -> np.ndarray:
        """Per row: whether the file may hold one of the values hashed to ``hashes``."""
        n = len(self.unknown)
        found = self.unknown | self.overflow
        if len(hashes) == 0:
            return found
        if len(self.value_hashes):
            hit = np.isin(self.value_hashes, hashes)
            found = found | (np.bincount(self.value_rows[hit], minlength=n) > 0)
        rows = np.flatnonzero(self.bloom)
        if rows.size:
            # every probe of every file at once: (probes, files) positions, one gather per value
            bits, probes, offsets = self.bits[rows], self.probes[rows], self.offsets[rows]
            steps = np.arange(int(probes.max()), dtype=np.uint64)[:, None]
            unused = steps.astype(np.int64) >= probes[None, :]
            any_value = np.zeros(rows.size, dtype=bool)
            for h in hashes.astype(np.uint64):
                position = bloom_positions(h, steps, bits[None, :])
                byte = self.bitmap[offsets[None, :] + (position >> np.uint64(3)).astype(np.int64)]
                bit = (byte >> (position & np.uint64(7)).astype(np.uint8)) & 1
                any_value |= ((bit == 1) | unused).all(axis=0)
            found[rows] |= any_value
        return found

    def may_hold_null(self) -> np.ndarray:
        """Per row: whether the file may hold a null in the column."""
        return self.unknown | self.nulls


@dataclass(frozen=True)
class FileRef:
    """A file a plan considers: its path in the log and the index file its tag names (or None)."""

    path: str
    index: str | None


#: ``(index file location, column, column type) -> ColumnBatch`` or None (no usable index file)
BatchSource = Callable[[str, str, str], "ColumnBatch | None"]


class _Masks(ex.ExpressionVisitor[np.ndarray]):
    def __init__(self, files: Sequence[FileRef], columns: Mapping[ex.Subject, str], source: BatchSource,
                 only: ex.Subject | None) -> None:
        self.files = files
        self.columns = columns  # indexed column (table spelling) or call of one -> type name
        self.source = source
        self.only = only
        self.n = len(files)
        groups: dict[str, list[int]] = {}
        for i, ref in enumerate(files):
            if ref.index is not None:
                groups.setdefault(ref.index, []).append(i)
        self.groups = {k: np.array(v, dtype=np.int64) for k, v in groups.items()}

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

    def _per_file(self, column: ex.Subject, probe: Callable[[ColumnBatch], np.ndarray]) -> np.ndarray:
        out = self._all()
        if column not in self.columns or (self.only is not None and column != self.only):
            return out
        type_name = self.columns[column]
        for location, positions in self.groups.items():
            batch = self.source(location, str(column), type_name)  # how index files key it
            if batch is None:
                continue
            answers = probe(batch)
            for position in positions.tolist():
                row = batch.rows.get(self.files[position].path)
                if row is not None:
                    out[position] = answers[row]
        return out

    def _values(self, column: ex.Subject, values: Sequence[object]) -> np.ndarray:
        if column not in self.columns:
            return self._all()
        hashes = literal_hashes(self.columns[column], values)
        if hashes is None:
            return self._all()
        return self._per_file(column, lambda batch: batch.may_contain(hashes))

    def visit_comparison(self, predicate: ex.Comparison) -> np.ndarray:
        if isinstance(predicate, ex.EqualTo):
            return self._values(predicate.column, [predicate.value])
        return self._all()

    def visit_in(self, predicate: ex.In) -> np.ndarray:
        if not predicate.values:
            return self._all()
        return self._values(predicate.column, list(predicate.values))

    def visit_is_null(self, predicate: ex.IsNull) -> np.ndarray:
        return self._per_file(predicate.column, lambda batch: batch.may_hold_null())

    def visit_is_not_null(self, predicate: ex.IsNotNull) -> np.ndarray:
        return self._all()


def may_match(predicate: ex.Expression, files: Sequence[FileRef], columns: Mapping[ex.Subject, str],
              source: BatchSource, *, only: ex.Subject | None = None) -> np.ndarray:
    """Per file: False only when a skipping index proves no row of the file satisfies
    ``predicate``.

    ``columns`` maps the table's indexed columns (the table's spelling; predicates name columns
    so) and the calls of columns indexes are declared on (``lower(email)``) to the Spark type of
    their values; ``only`` restricts the pruning to one column's index (how a
    plan reports what each index removed).
    """
    if not files or not columns or isinstance(predicate, ex.AlwaysTrue):
        return np.ones(len(files), dtype=bool)
    return ex.visit(ex.push_down_not(predicate), _Masks(files, columns, source, only))


def referenced_columns(predicate: ex.Expression, columns: Mapping[ex.Subject, str]) -> list[ex.Subject]:
    """The indexed columns and calls ``predicate`` tests (the indexes that may prune it)."""
    names = ex.references(predicate)
    return [c for c in columns if c in names]
