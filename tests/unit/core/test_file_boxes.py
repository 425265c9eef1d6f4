"""Files' boxes on the indexed columns from their Delta stats, their overlap, and the levels of a
laid-out tree: what the default maintenance judges a layout by (issue 20)."""
from __future__ import annotations

import numpy as np
import pytest

from qbeast.core.file_boxes import FileBoxes, tree_levels

TYPES = {"t": ("t", "timestamp"), "u": ("u", "long"), "s": ("s", "string"), "x": ("x", "double")}


def _stats(rows: int, **bounds: tuple[object, object]) -> dict:
    return {"numRecords": rows, "minValues": {c: lo for c, (lo, _) in bounds.items()},
            "maxValues": {c: hi for c, (_, hi) in bounds.items()}}


def _day(day: int) -> tuple[str, str]:
    return f"2019-11-{day + 1:02d}T00:00:00.000Z", f"2019-11-{day + 1:02d}T23:59:59.999Z"


def test_appends_along_a_growing_key_cover_only_themselves():
    files = [(f"day{d}", _stats(100, t=_day(d), u=(0, 1000))) for d in range(5)]
    boxes = FileBoxes.from_stats(files, ["t", "u"], TYPES)
    assert boxes.rows.tolist() == [100] * 5
    assert boxes.coverage(range(5)).tolist() == [1.0] * 5


def test_overlapping_files_add_the_share_of_the_box_they_cover():
    files = [("a", _stats(10, x=(0.0, 10.0), u=(0, 10))),
             ("b", _stats(10, x=(5.0, 15.0), u=(0, 10))),    # half of a's x range
             ("c", _stats(10, x=(0.0, 10.0), u=(5, 10))),     # half of a's u range
             ("whole", _stats(10, x=(-100.0, 100.0), u=(-100, 100)))]
    cover = FileBoxes.from_stats(files, ["x", "u"], TYPES).coverage([0, 3])
    assert cover[0] == pytest.approx(1 + 0.5 + 0.5 + 1)
    # the wide file: each small one covers a tiny share of it
    assert cover[1] == pytest.approx(1 + 0.05 * 0.05 + 0.05 * 0.05 + 0.05 * 0.025)


def test_touching_ranges_cover_nothing_and_points_count_when_inside():
    files = [("a", _stats(5, x=(0.0, 1.0))), ("b", _stats(5, x=(1.0, 2.0))),
             ("p", _stats(5, x=(1.5, 1.5))), ("q", _stats(5, x=(7.0, 7.0)))]
    cover = FileBoxes.from_stats(files, ["x"], TYPES).coverage([0, 1, 2, 3])
    assert cover.tolist() == [1.0, 1.0, 2.0, 1.0]  # p lies inside b; a point covers no range


def test_unstated_bounds_cover_everything():
    files = [("a", _stats(5, x=(0.0, 1.0))), ("nostats", None), ("nulls", _stats(5)),
             ("long string", _stats(5, s=("a", "b" * 40))), ("b", _stats(5, s=("c", "d")))]
    boxes = FileBoxes.from_stats(files, ["x"], TYPES)
    assert boxes.rows.tolist() == [5, -1, 5, 5, 5]
    assert np.isnan(boxes.lows[1:]).all()
    assert boxes.coverage([0]).tolist() == [5.0]  # every other file may hold its rows
    # strings compare by rank; a truncated maximum is not a bound
    strings = FileBoxes.from_stats(files, ["s"], TYPES)
    assert np.isnan(strings.lows[3, 0]) and strings.lows[4, 0] < strings.highs[4, 0]


def _brute_force(lows: np.ndarray, highs: np.ndarray) -> np.ndarray:
    """The coverage by the definition, every pair compared (NaN bounds: cover everything)."""
    n, d = lows.shape
    out = np.ones(n)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            product = 1.0
            for c in range(d):
                lo, hi, olo, ohi = lows[i, c], highs[i, c], lows[j, c], highs[j, c]
                if np.isnan(lo) or np.isnan(olo):
                    share = 1.0
                elif lo == hi:
                    share = float(olo <= lo <= ohi)
                else:
                    share = max(0.0, min(hi, ohi) - max(lo, olo)) / (hi - lo)
                product *= share
            out[i] += product
    return out


@pytest.mark.parametrize("budget", [1 << 22, 64])
def test_chunks_and_neighbour_pruning_give_the_definition(monkeypatch, budget):
    """Subjects go in chunks of neighbours on the first column, each compared only with the files
    whose first-column range meets the chunk's: the sums are those of every pair compared."""
    import qbeast.core.file_boxes as fb

    monkeypatch.setattr(fb, "_PAIRS_PER_CHUNK", budget)
    rng = np.random.default_rng(1)
    n = 120
    lows = rng.random((n, 2)) * 10
    highs = lows + rng.random((n, 2)) * np.array([0.3, 4.0])
    highs[::7] = lows[::7]  # point ranges
    lows[5, 0] = highs[5, 0] = np.nan  # a file that does not state its first column
    lows[9, 1] = highs[9, 1] = np.nan
    files = [(str(i), _stats(1, x=(lows[i, 0], highs[i, 0]), u=(lows[i, 1], highs[i, 1])))
             for i in range(n)]
    for i in (5,):
        files[i] = (str(i), _stats(1, u=(lows[i, 1], highs[i, 1])))
    files[9] = ("9", _stats(1, x=(lows[9, 0], highs[9, 0])))
    boxes = FileBoxes.from_stats(files, ["x", "u"], {"x": ("x", "double"), "u": ("u", "double")})
    subjects = list(rng.permutation(n)[:80])
    expected = _brute_force(boxes.lows, boxes.highs)[subjects]
    assert np.allclose(boxes.coverage(subjects), expected)


def test_many_files_along_a_growing_key_compare_only_with_neighbours():
    n = 20_000  # every pair would be 400M comparisons; neighbours only, a few per file
    files = [(str(d), _stats(1, x=(float(d), d + 0.5), u=(0, 1000))) for d in range(n)]
    boxes = FileBoxes.from_stats(files, ["x", "u"], TYPES)
    assert boxes.coverage(range(n)).tolist() == [1.0] * n


def test_tree_levels_count_the_levels_of_full_cubes():
    assert tree_levels(10, 50_000, 2) == 1  # one file
    assert tree_levels(50_000, 50_000, 2) == 1
    assert tree_levels(249_999, 50_000, 2) == 1  # the second level is not full yet
    assert tree_levels(250_000, 50_000, 2) == 2  # 1 + 4 cubes
    assert tree_levels(3_000_000, 50_000, 2) == 3  # 60 cubes: 1 + 4 + 16 <= 60 < 85
    assert tree_levels(3_000_000, 50_000, 3) == 2  # 1 + 8 <= 60 < 73
    assert tree_levels(1_600, 100, 1) == 4  # 1 + 2 + 4 + 8 <= 16 < 31
    assert tree_levels(0, 1, 1) == 1
