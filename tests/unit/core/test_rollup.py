"""Rollup of cubes into files (FORMAT §6.4, RollupTest)."""
from __future__ import annotations

import pytest

from qbeast.core.cube_id import CubeId
from qbeast.core.rollup import rollup
from qbeast.errors import InvalidOptionError


def c1(path: str) -> CubeId:
    """A 1-D cube from a path of 0/1 digits (``""`` = root)."""
    return CubeId.from_codes(1, [int(ch) for ch in path])


def test_rollup_test_example():
    sizes = {c1(""): 1, c1("00"): 1, c1("01"): 2, c1("10"): 2, c1("11"): 3}
    result = rollup(sizes, 3)
    assert result == {
        c1("00"): c1("0"),
        c1("01"): c1("0"),
        c1("10"): c1(""),
        c1("11"): c1("11"),
        c1(""): c1(""),
    }


def test_root_is_never_merged_and_big_cubes_stay():
    sizes = {c1(""): 5, c1("0"): 10, c1("1"): 1}
    assert rollup(sizes, 5) == {c1(""): c1(""), c1("0"): c1("0"), c1("1"): c1("")}


def test_a_root_group_below_the_limit_takes_in_the_smallest_other_group():
    # an append into a deep tree: a few rows at the root and above the appended region, most of
    # them deeper; the root's remainder does not stay a small file of its own
    sizes = {c1(""): 1, c1("0"): 0, c1("00"): 6, c1("01"): 7, c1("1"): 1}
    result = rollup(sizes, 5)
    assert result[c1("00")] == c1("") and result[c1("01")] == c1("01")  # 6 < 7: 00 joins
    assert result[c1("")] == result[c1("0")] == result[c1("1")] == c1("")
    # at the limit the root's group stays as qbeast-spark leaves it
    assert set(rollup({c1(""): 5, c1("00"): 6, c1("01"): 7}, 5).values()) == {c1(""), c1("00"), c1("01")}
    # alone, it stays small: there is nothing to merge
    assert rollup({c1(""): 1, c1("1"): 2}, 5) == {c1(""): c1(""), c1("1"): c1("")}


def test_group_reaches_root_through_missing_ancestors():
    deep = CubeId.from_string(2, "wQgQ")
    result = rollup({deep: 1}, 10)
    assert result == {deep: CubeId.root(2)}


def test_merge_accumulates_until_limit():
    # Four small siblings fill their parent's group up to the limit; the parent group then stays.
    parent = CubeId.from_string(2, "g")
    sizes = {child: 2 for child in parent.children()}
    result = rollup(sizes, 8)
    assert set(result.values()) == {parent}
    result = rollup(sizes, 9)
    assert set(result.values()) == {CubeId.root(2)}


def test_every_input_cube_is_mapped_to_itself_or_an_ancestor():
    cubes = [CubeId.from_string(2, s) for s in ["", "A", "AQ", "AQg", "w", "ww", "wA", "gAw"]]
    sizes = {c: (i * 7) % 5 for i, c in enumerate(cubes)}
    result = rollup(sizes, 4)
    assert set(result) == set(cubes)
    for cube, group in result.items():
        assert group.is_ancestor_of(cube)


def test_empty_input():
    assert rollup({}, 3) == {}


@pytest.mark.parametrize("limit", [0, -1, 2.5, True])
def test_bad_limit(limit):
    with pytest.raises(InvalidOptionError, match="limit"):
        rollup({c1(""): 1}, limit)


def test_bad_sizes_and_mixed_dimensions():
    with pytest.raises(InvalidOptionError, match="size"):
        rollup({c1(""): -1}, 3)
    with pytest.raises(InvalidOptionError, match="dimension"):
        rollup({c1(""): 1, CubeId.root(2): 1}, 3)
