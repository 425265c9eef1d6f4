"""Where a table's files lie on the indexed columns, judged by their Delta min/max, and how much
they overlap: what a layout would change for the queries that prune files by those ranges.

Why: a layout re-indexes files into one tree, so that a query on the indexed columns reads the
files of the cubes it meets. The files an append wrote are already such a tree for the appended
rows, and when the appends follow a growing key (a date, an id) each one occupies a range no other
file touches: a query there reads that append's file and nothing else, while after a layout it
reads one file per level of the tree, whose upper levels span every append (the 30-day scenario of
issue 20: a one-day range read 1 file per day appended, 4.7 after the layout). A layout only helps
where files overlap, so the default maintenance asks how many files a query at a random spot of a
file meets (:meth:`FileBoxes.coverage`) and compares it with what a laid-out tree of the table's
rows would give (:func:`tree_levels`).

Bounds come from :func:`qbeast.core.stats_skipping.stat_bounds` (the rule the read planner prunes
by); a bound a file does not state (no stats, all nulls, a truncated string) covers every value,
so a file without stats overlaps everything, which only ever asks for more layout. Strings are
compared by their rank among the bounds of the files at hand.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qbeast.core.columns import ColumnTypes
from qbeast.core.stats_skipping import stat_bounds

#: Pairs of (subject, other file) compared at once: bounds the memory of :meth:`coverage`.
_PAIRS_PER_CHUNK = 1 << 22


@dataclass(frozen=True)
class FileBoxes:
    """Per file its row count and its box on the indexed columns (``NaN``: not stated)."""

    paths: tuple[str, ...]
    #: rows per file (-1 where the stats do not say)
    rows: np.ndarray
    #: (files, columns) lower and upper bounds as floats
    lows: np.ndarray
    highs: np.ndarray

    @classmethod
    def from_stats(cls, files: Sequence[tuple[str, Mapping[str, Any] | None]],
                   columns: Sequence[str], types: ColumnTypes) -> FileBoxes:
        """The boxes of ``files`` (path, parsed ``AddFile.stats``) on ``columns``."""
        n, d = len(files), len(columns)
        rows = np.full(n, -1, dtype=np.int64)
        raw: list[list[tuple[Any, Any]]] = []
        for i, (_, stats) in enumerate(files):
            count = (stats or {}).get("numRecords")
            if isinstance(count, int) and not isinstance(count, bool):
                rows[i] = count
            raw.append([stat_bounds(stats, types, c) if stats else (None, None) for c in columns])
        lows = np.full((n, d), np.nan)
        highs = np.full((n, d), np.nan)
        for c in range(d):
            values = [v for bounds in raw for v in bounds[c] if v is not None]
            strings = sorted({v for v in values if isinstance(v, str)})
            rank = {v: float(r) for r, v in enumerate(strings)}
            for i, bounds in enumerate(raw):
                low, high = bounds[c]
                if low is None or high is None or type(low) is not type(high):
                    continue
                if isinstance(low, str):
                    lows[i, c], highs[i, c] = rank[low], rank[high]
                elif isinstance(low, (int, float)) and not isinstance(low, bool):
                    lows[i, c], highs[i, c] = float(low), float(high)
        return cls(tuple(p for p, _ in files), rows, lows, highs)

    def coverage(self, subjects: Sequence[int]) -> np.ndarray:
        """For each subject file (an index into :attr:`paths`), the expected number of files, itself
        included, whose box holds a point drawn uniformly from the subject's box.

        Per column, the share of the subject's range that another file's range covers (a point
        range: 1 if inside, else 0; an unstated bound: 1); the shares multiply over the columns
        and add up over the files. Files whose ranges only touch cover nothing.

        Subjects are taken in chunks of neighbours on the first column, and each chunk is compared
        only with the files whose first-column range meets the chunk's: for appends along a
        growing key that is a handful of files, whatever the table's size.
        """
        chosen = np.asarray(subjects, dtype=np.int64)
        out = np.ones(len(chosen))
        if len(self.paths) < 2 or not len(chosen) or not self.lows.shape[1]:
            return out
        first_lo, first_hi = self.lows[:, 0], self.highs[:, 0]
        unstated = np.isnan(first_lo)
        order = np.argsort(np.where(unstated[chosen], -np.inf, first_lo[chosen]), kind="stable")
        # a chunk of neighbours, small enough that chunk x candidates fits the pair budget
        size = max(1, _PAIRS_PER_CHUNK // (len(self.paths) * self.lows.shape[1]))
        for start in range(0, len(order), size):
            part = order[start:start + size]
            rows = chosen[part]
            if unstated[rows].any():
                candidates = np.arange(len(self.paths))
            else:
                low, high = first_lo[rows].min(), first_hi[rows].max()
                candidates = np.flatnonzero(unstated | ((first_lo <= high) & (first_hi >= low)))
            out[part] += self._covered(rows, candidates)
        return out

    def _covered(self, rows: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Per subject row, the summed covered shares of the ``candidates`` other than itself."""
        lo, hi = self.lows[rows][:, None, :], self.highs[rows][:, None, :]
        other_lo, other_hi = self.lows[candidates][None, :, :], self.highs[candidates][None, :, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            overlap = np.minimum(hi, other_hi) - np.maximum(lo, other_lo)
            share = np.clip(overlap / (hi - lo), 0.0, 1.0)
            point = (lo == hi) & (other_lo <= lo) & (lo <= other_hi)
        share = np.where(lo == hi, point.astype(float), share)
        share = np.where(np.isnan(lo) | np.isnan(other_lo), 1.0, share)
        covered = share.prod(axis=2)
        covered[rows[:, None] == candidates[None, :]] = 0.0  # the subject itself is the leading 1
        return covered.sum(axis=1)


def tree_levels(rows: int, cube_size: int, dimensions: int) -> int:
    """Files a query at one spot reads in a laid-out tree of ``rows`` rows: its full levels.

    A laid-out tree keeps about ``cube_size`` rows per cube, and the partly filled level below
    its full ones is rolled into their files, so a spot meets one file per *full* level: the
    largest ``K`` (at least 1) whose complete tree of ``K`` levels (``1 + f + f^2 + ...`` cubes,
    fan-out ``f = 2^d``) holds at most ``rows / cube_size`` cubes. Measured on single writes of
    uniform data (1-3 columns, 16-500 cubes), the files a spot meets averaged within 0.1 of this
    count on all but one table (1 column, 500 cubes: 8.4 for 8).
    """
    cubes = max(rows, 0) / max(cube_size, 1)
    fanout = 2 ** max(dimensions, 1)
    levels, width = 1, fanout
    capacity = 1 + width
    while capacity <= cubes:
        levels += 1
        width *= fanout
        capacity += width
    return levels
