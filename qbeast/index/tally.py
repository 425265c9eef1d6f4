"""What the assignment counts per batch of rows, merged across Spark tasks by accumulators.

The assignment UDF already knows, for every row it places, the file, the cube and the weight. So
it counts the blocks — rows and lowest weight per (file, cube) — and flags the files whose float
columns hold NaN or infinities while it runs, and the writer describes the new files without
reading them again. The classes here are the merge rules of those counts (Spark's
``AccumulatorParam`` interface: ``zero`` and ``addInPlace``); they are plain Python so that they
can be pickled to the Python workers and tested without Spark.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


class DictTally:
    """A Spark ``AccumulatorParam`` over dictionaries; subclasses say how two values merge."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, total: dict, more: dict) -> dict:  # noqa: N802 - pyspark's name
        for key, value in more.items():
            seen = total.get(key)
            total[key] = value if seen is None else self.merge(seen, value)
        return total

    def merge(self, seen: Any, value: Any) -> Any:
        raise NotImplementedError

    def rekeyed(self, counts: dict, key: Callable[[Any], Any]) -> dict:
        """``counts`` under new keys, the values that land on one key merged by :meth:`merge`
        (e.g. the counts of a file's band pieces as the counts of the file)."""
        total: dict = {}
        for old, value in counts.items():
            new = key(old)
            seen = total.get(new)
            total[new] = value if seen is None else self.merge(seen, value)
        return total


class BlockTally(DictTally):
    """Merges ``{(file, cube): (rows, min weight)}`` dictionaries (see :func:`batch_blocks`)."""

    def merge(self, seen: tuple, value: tuple) -> tuple:
        return seen[0] + value[0], min(seen[1], value[1])


class FlagTally(DictTally):
    """ORs ``{file: bitmask}`` dictionaries (see :func:`batch_flags`)."""

    def merge(self, seen: int, value: int) -> int:
        return seen | value


def batch_blocks(files: np.ndarray, cubes: np.ndarray, weights: np.ndarray) -> dict:
    """``{(file, cube): (rows, min weight)}`` of one batch of assigned rows."""
    if len(files) == 0:
        return {}
    order = np.lexsort((cubes, files))
    f, c, w = files[order], cubes[order], np.asarray(weights, dtype=np.int64)[order]
    starts = np.flatnonzero(np.r_[True, (f[1:] != f[:-1]) | (c[1:] != c[:-1])])
    counts = np.diff(np.r_[starts, len(f)])
    lows = np.minimum.reduceat(w, starts)
    return {
        (int(fi), int(ci)): (int(n), int(lo))
        for fi, ci, n, lo in zip(f[starts].tolist(), c[starts].tolist(), counts.tolist(),
                                 lows.tolist())
    }


def batch_flags(files: np.ndarray, masks: np.ndarray) -> dict:
    """``{file: OR of the masks}`` of one batch, for the files with a non-zero mask.

    Bit ``i`` of a row's mask is set when the ``i``-th float column the Delta stats describe
    holds NaN or an infinity in that row.
    """
    masks = np.asarray(masks, dtype=np.int64)
    hit = np.flatnonzero(masks)
    out: dict[int, int] = {}
    for file_id, mask in zip(files[hit].tolist(), masks[hit].tolist()):
        out[file_id] = out.get(file_id, 0) | mask
    return out
