"""Weight bands and the rollup by subtree and band (issue 20)."""
from __future__ import annotations

import numpy as np
import pytest

from qbeast.core.cube_id import CubeId
from qbeast.core.rollup import banded_rollup
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT, weight_from_fraction
from qbeast.core.weight_bands import (
    BAND_COUNT,
    BAND_FRACTIONS,
    EDGES,
    band_of,
    band_shares,
    shared_band_count,
)
from qbeast.errors import InvalidOptionError
from qbeast.index.assignment import build_write_plan


def c2(*codes: int) -> CubeId:
    return CubeId.from_codes(2, list(codes))


def test_band_edges_are_the_sample_weights_of_their_fractions():
    # a sample of an edge fraction reads rows < Weight(f): none of the band starting there
    for k, f in enumerate(BAND_FRACTIONS):
        edge = weight_from_fraction(f)
        assert band_of(edge) == k + 1 and band_of(edge - 1) == k
    assert band_of(MIN_WEIGHT) == 0 and band_of(MAX_WEIGHT) == BAND_COUNT - 1
    assert list(band_of(np.array([MIN_WEIGHT, int(EDGES[3]), MAX_WEIGHT]))) == [0, 4, BAND_COUNT - 1]


def test_band_shares_follow_the_weight_range():
    whole = band_shares(MIN_WEIGHT - 1, MAX_WEIGHT)
    assert whole.sum() == pytest.approx(1.0)
    assert whole[-1] == pytest.approx(0.5) and whole[-2] == pytest.approx(0.3)  # [0.5, 1), [0.2, 0.5)
    leaf = band_shares(weight_from_fraction(0.3), MAX_WEIGHT)  # a leaf under a 0.3 threshold
    assert leaf.sum() == pytest.approx(1.0)
    assert leaf[-2] == pytest.approx(0.2 / 0.7, rel=1e-6) and leaf[:-2].sum() == 0
    assert band_shares(5, 5)[band_of(5)] == 1.0  # an empty range: the threshold's band


def test_banded_rollup_never_mixes_bands_below_the_root_and_packs_siblings():
    root, a, b, c, d = c2(), c2(0), c2(1), c2(2), c2(3)
    n = BAND_COUNT
    top = n - 1  # the heaviest band

    def only(band: int, rows: int) -> list[int]:
        out = [0] * n
        out[band] = rows
        return out

    root_rows = only(0, 100)
    root_rows[top] = 60
    sizes = {root: root_rows, a: only(top, 40), b: only(top, 40), c: only(top, 40), d: only(top, 10)}
    groups = banded_rollup(sizes, 100)
    # children of one band are packed in cube order until a pack reaches the limit (a+b+c = 120);
    # the rest (d) joins its parent's group of that band; at the root the empty bands 1..8 join
    # band 0's group (runs are named by their first band), the top one (70 rows) stays apart
    assert groups[(a, top)] == groups[(b, top)] == groups[(c, top)] == (a, top)
    assert groups[(d, top)] == groups[(root, top)] == (root, top)
    # band 0 (100 rows) fills a run; the empty bands 1..8 make one more
    assert groups[(root, 0)] == (root, 0) and groups[(root, 1)] == groups[(root, 8)] == (root, 1)
    # no group below the root holds two bands
    for (cube, band), (group, group_band) in groups.items():
        assert group == root or group_band == band
        assert group.is_ancestor_of(cube) or group.parent == cube.parent


def test_banded_rollup_joins_the_lightest_root_bands():
    root = c2()
    child = c2(1)
    sizes = {root: [10, 10, 10, 40, 10, 0, 10, 10, 10, 10],
             child: [0, 0, 0, 0, 0, 0, 0, 0, 70, 0]}
    groups = banded_rollup(sizes, 60)
    # light bands join until a run holds half the limit (30 rows); band 8 has a group below the
    # root (the child's 70 rows) so it joins nothing, and the bands after it start again
    targets = [groups[(root, band)] for band in range(BAND_COUNT)]
    assert targets == [(root, 0)] * 3 + [(root, 3)] + [(root, 4)] * 4 + [(root, 8), (root, 9)]
    assert groups[(child, 8)] == (child, 8)


def test_shared_bands_reach_the_fractions_whose_sample_is_one_target_file():
    # band k may share the lightest file while BAND_FRACTIONS[k] x table rows <= one cube
    assert shared_band_count(2_000_000, 100_000) == 6  # up to 5%: the root of a single write
    assert shared_band_count(3_000_000, 50_000) == 4  # a small append into a large table: < 1%
    assert shared_band_count(600_000, 50_000) == 6  # 5% of 600k = 30k rows; 10% is 60k
    assert shared_band_count(100_000, 50_000) == BAND_COUNT - 1  # 50% of it is one cube
    assert shared_band_count(40_000, 50_000) == BAND_COUNT  # a table smaller than one cube
    assert shared_band_count(10**12, 1) == 1  # the lightest band always has a file


def test_banded_rollup_shares_only_the_allowed_light_bands():
    root = c2()
    sizes = {root: [10] * BAND_COUNT}  # every band whole at the root, all small
    assert {banded_rollup(sizes, 1_000)[(root, b)] for b in range(BAND_COUNT)} == {(root, 0)}
    capped = banded_rollup(sizes, 1_000, shared_bands=3)
    targets = [capped[(root, b)] for b in range(BAND_COUNT)]
    assert targets == [(root, 0)] * 3 + [(root, b) for b in range(3, BAND_COUNT)]


def test_banded_rollup_bad_input():
    with pytest.raises(InvalidOptionError, match="shared_bands"):
        banded_rollup({c2(): [1, 2]}, 10, shared_bands=0)
    with pytest.raises(InvalidOptionError, match="band counts"):
        banded_rollup({c2(): [1, 2], c2(0): [1]}, 10)
    with pytest.raises(InvalidOptionError, match="limit"):
        banded_rollup({c2(): [1]}, 0)
    with pytest.raises(InvalidOptionError, match="int >= 0"):
        banded_rollup({c2(): [-1]}, 5)


def test_banded_plan_puts_each_band_of_a_cube_in_its_own_file():
    root = c2()
    t_root = weight_from_fraction(0.04)
    weights = {root: t_root}
    sizes = {root: 400, **{c2(k): 2_500 for k in range(4)}}  # leaves under a shallow root
    plan = build_write_plan(2, weights, sizes, 400, weight_bands=True)
    rng = np.random.default_rng(1)
    coords = rng.random((20_000, 2))
    w = rng.integers(MIN_WEIGHT, MAX_WEIGHT, 20_000, dtype=np.int64)
    cubes, files = plan.assign(coords, w)
    leaf_rows = w > t_root
    bands = band_of(w)
    for file_id in np.unique(files[leaf_rows]):
        # below the root, a file holds the rows of one band only
        assert len(np.unique(bands[leaf_rows & (files == file_id)])) == 1
    plain = build_write_plan(2, weights, sizes, 400)
    plain_cubes, _ = plain.assign(coords, w)
    assert (plain_cubes == cubes).all()  # bands change files, never cubes
