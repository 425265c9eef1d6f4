"""Weight bands: the slices of the weight space a writer may put in different files (issue 20).

Why: a cube holds rows of every weight between its parent's threshold and its own; a shallow
leaf holds everything from its parent's threshold up to the maximum weight. A sample of fraction
``f`` needs only the rows below ``Weight(f)``, but a file is read whole as soon as one of its
blocks can hold such a row (FORMAT §7.2: ``to > block.minWeight``). When the rows of one cube are
split by weight into several files, each holding one block of the cube whose ``minWeight`` is the
true minimum of its rows and whose ``maxWeight`` is the cube's threshold (FORMAT §4-§6: a cube
may have several blocks; its effective threshold is the minimum over them, which stays the
cube's threshold), a sample skips the files of the bands it does not reach.

The band edges are ``Weight(b)`` for the fractions ``b`` of :data:`BAND_FRACTIONS`, a 1-2-5
series: the fractions people sample (1%, 5%, 10%, 20%, 50%) are edges, so such a sample reads no
row of a band it does not need. Between edges a sample reads up to the next edge (at most 2.5x
the needed rows of the straddled band, e.g. ``f = 0.21`` reads the band up to 0.5). Finer bands
would bound that better but make every box query read one more layer of files per band.
"""
from __future__ import annotations

import numpy as np

from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT, weight_from_fraction
from qbeast.errors import InvalidOptionError

#: Band layouts (setting ``spark.qbeast.index.weightBands``): each file's rows ordered by band,
#: one row group per band (a sample reads a prefix of each file it needs); each band of a
#: subtree in files of its own; no bands (one block per cube, rows in arrival order).
BANDS_IN_ROW_GROUPS = "rowGroups"
BANDS_IN_FILES = "files"
NO_BANDS = "false"
LAYOUTS: tuple[str, ...] = (BANDS_IN_ROW_GROUPS, BANDS_IN_FILES, NO_BANDS)


def band_layout(value: bool | str) -> str:
    """The layout a setting value or flag names (``True`` and ``"true"``: bands in files)."""
    if value is True or value == "true":
        return BANDS_IN_FILES
    if value is False:
        return NO_BANDS
    if value in LAYOUTS:
        return str(value)
    raise InvalidOptionError(
        f"weight band layout must be one of {', '.join(LAYOUTS)} (or true/false), got {value!r}")

#: Fractions whose ``Weight`` separates two bands (a 1-2-5 series from 0.1% to 50%).
BAND_FRACTIONS: tuple[float, ...] = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)

#: ``Weight(b)`` of each band fraction, increasing: band ``k`` holds weights in
#: ``[EDGES[k-1], EDGES[k])`` (``MIN_WEIGHT`` and ``MAX_WEIGHT`` inclusive close the first and last).
EDGES: np.ndarray = np.array([weight_from_fraction(b) for b in BAND_FRACTIONS], dtype=np.int64)

#: How many bands the edges make.
BAND_COUNT: int = len(BAND_FRACTIONS) + 1


def shared_band_count(table_rows: int, limit: int) -> int:
    """How many of the lightest bands may share one file at the root (at least one).

    A file holding the lightest bands up to edge ``b`` is read whole by every sample, so it may
    only reach the fractions whose sample of the whole table is at most one target file
    (``b x table_rows <= limit``): samples that small read a file anyway, while a larger one
    then reads none of the file's rows it does not need. For the write that creates a table
    this is the root's whole weight range (its threshold is about ``limit / rows``); for a small
    append into a large table it keeps the append's light bands apart (a 100k-row append into a
    3M-row table with 50k-row cubes shares only the bands below 1%, where the old rule put
    everything below 50% in one file that every sample read whole).
    """
    rows = max(int(table_rows), 1)
    upper = (*BAND_FRACTIONS, 1.0)  # band k holds the fractions up to upper[k]
    count = 0
    while count < BAND_COUNT and upper[count] * rows <= limit * (1 + 1e-9):
        count += 1
    return max(count, 1)


def band_of(weights: np.ndarray | int) -> np.ndarray | int:
    """The band of each weight: the number of edges at or below it (0 .. ``BAND_COUNT - 1``)."""
    found = np.searchsorted(EDGES, np.asarray(weights, dtype=np.int64), side="right")
    return int(found) if np.ndim(found) == 0 else found


def band_shares(low: int, high: int) -> np.ndarray:
    """The share of the weights in ``(low, high]`` that falls in each band (sums to 1).

    Row weights are hashes, so the rows a cube keeps are spread evenly over its weight range
    ``(parent threshold, own threshold]``; this turns a cube's estimated row count into estimated
    row counts per band without reading data. An empty range puts everything in ``high``'s band.
    """
    low = max(int(low), MIN_WEIGHT - 1)
    high = min(int(high), MAX_WEIGHT)
    shares = np.zeros(BAND_COUNT, dtype=np.float64)
    if high <= low:
        shares[band_of(max(high, MIN_WEIGHT))] = 1.0
        return shares
    starts = np.concatenate(([MIN_WEIGHT - 1], EDGES - 1))  # band k covers (starts[k], ends[k]]
    ends = np.concatenate((EDGES - 1, [MAX_WEIGHT]))
    overlap = np.clip(np.minimum(ends, high) - np.maximum(starts, low), 0, None)
    return overlap / float(high - low)
