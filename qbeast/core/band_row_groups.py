"""Weight bands as row groups: what a data file records about them, and the prefix a sample reads.

Why: a file is where a box query prunes (few, spatially narrow files) and a row group is where a
reader can stop early. The ``rowGroups`` band layout (:mod:`qbeast.core.weight_bands`) keeps the
rollup's files and writes each file's rows in pieces of increasing weight band, one or more row
groups per piece. The footer's key-value metadata then records, per piece in file order, the
lowest row weight it holds and its row count (:data:`FOOTER_KEY`). A sample below ``Weight(f)``
needs only the pieces whose lowest weight is below it; they come first, so it reads the file
from its start up to the end of the last such piece and no further.

The record lives inside the parquet file, not in the Delta log: the format (FORMAT §4-§6) is
unchanged, any reader still reads the whole file, and a file without the record, or whose record
does not match its row groups, is read whole.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Footer key-value metadata key of the piece record (a JSON list of ``[min weight, rows]``).
FOOTER_KEY = "qbeast.weightBandPieces"


@dataclass(frozen=True)
class Piece:
    """One band piece of a file: the lowest weight of its rows and how many rows it holds."""

    min_weight: int
    rows: int


def encode_pieces(pieces: Sequence[Piece]) -> str:
    """The footer value of ``pieces`` (in file order)."""
    return json.dumps([[p.min_weight, p.rows] for p in pieces], separators=(",", ":"))


def decode_pieces(text: str | bytes | None) -> tuple[Piece, ...] | None:
    """The pieces a footer value records; ``None`` when absent or not a valid record."""
    if text is None:
        return None
    try:
        raw = json.loads(text)
        pieces = tuple(Piece(int(w), int(n)) for w, n in raw)
    except (TypeError, ValueError):
        return None
    return pieces if pieces and all(p.rows > 0 for p in pieces) else None


def split_by_floors(weights: np.ndarray, floors: Sequence[int]) -> tuple[np.ndarray, list[Piece]]:
    """Rows of a file regrouped into the pieces of an earlier version of it.

    ``floors`` are the lowest weights of the old file's pieces (increasing). Each row goes to the
    last piece whose floor is at or below its weight (the first piece when it is lighter than
    every floor), so pieces keep disjoint, increasing weight ranges whatever rows remain. Returns
    the row order (stable within a piece) and the new pieces, empty ones dropped; a row-level
    rewrite keeps a file's band layout this way.
    """
    weights = np.asarray(weights, dtype=np.int64)
    piece_of = np.searchsorted(np.asarray(floors[1:], dtype=np.int64), weights, side="right")
    order = np.argsort(piece_of, kind="stable")
    counts = np.bincount(piece_of, minlength=len(floors))
    pieces = []
    start = 0
    for count in counts:
        if count:
            lightest = int(weights[order[start:start + count]].min())
            pieces.append(Piece(lightest, int(count)))
        start += int(count)
    return order, pieces


def row_group_spans(footer: Any) -> list[tuple[int, int, int]]:
    """``(first byte, end byte, rows)`` of every row group of a ``pyarrow.parquet.FileMetaData``.

    A row group starts at its first column chunk (the dictionary page when there is one): that
    is the offset parquet readers use to decide which split reads a row group (its midpoint).
    """
    spans = []
    for i in range(footer.num_row_groups):
        group = footer.row_group(i)
        start = end = None
        for j in range(group.num_columns):
            chunk = group.column(j)
            first = (chunk.dictionary_page_offset if chunk.has_dictionary_page
                     else chunk.data_page_offset)
            last = first + chunk.total_compressed_size
            start = first if start is None else min(start, first)
            end = last if end is None else max(end, last)
        spans.append((int(start or 0), int(end or 0), int(group.num_rows)))
    return spans


@dataclass(frozen=True)
class PieceLayout:
    """What a reader keeps of a footer: the piece record and the row groups' byte ends and rows."""

    pieces: tuple[Piece, ...]
    group_ends: tuple[int, ...]
    group_rows: tuple[int, ...]

    @classmethod
    def of(cls, footer: Any) -> PieceLayout | None:
        """The layout of a ``pyarrow.parquet.FileMetaData``; ``None`` without a piece record."""
        pieces = decode_pieces((footer.metadata or {}).get(FOOTER_KEY.encode()))
        if pieces is None:
            return None
        spans = row_group_spans(footer)
        return cls(pieces, tuple(end for _, end, _ in spans), tuple(rows for _, _, rows in spans))

    def prefix_bytes(self, below: int) -> int | None:
        """Bytes from the start of the file that hold every row lighter than ``below``;
        ``None`` when the whole file is needed (the last piece is needed, or the record does
        not match the row groups).

        Readers that take a file length (Spark's file index) read a row group when its
        midpoint falls inside the length, so this prefix reads exactly the row groups of the
        needed pieces.
        """
        needed = [i for i, p in enumerate(self.pieces) if p.min_weight < below]
        if not needed or needed[-1] == len(self.pieces) - 1:
            return None  # none: the index chose the file for a lighter row, read it whole
        rows_to_end = sum(p.rows for p in self.pieces[: needed[-1] + 1])
        seen = 0
        for end, rows in zip(self.group_ends, self.group_rows):
            seen += rows
            if seen == rows_to_end:
                return end
            if seen > rows_to_end:
                return None  # a piece boundary inside a row group: not a file this layout wrote
        return None

    def groups_within(self, length: int) -> list[int]:
        """Indexes of the row groups a reader of the first ``length`` bytes reads (those that end
        inside them: the prefixes of :meth:`prefix_bytes` end exactly at a row group's end)."""
        return [i for i, end in enumerate(self.group_ends) if end <= length]

    def rows_within(self, length: int) -> int:
        """Rows of the row groups of :meth:`groups_within`."""
        return sum(self.group_rows[i] for i in self.groups_within(length))
