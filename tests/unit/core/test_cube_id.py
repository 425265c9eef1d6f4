"""Cube ids: strings, geometry, tree navigation, ordering, vectorized mapping (FORMAT §1)."""
from __future__ import annotations

import random

import numpy as np
import pytest

from qbeast.core.cube_id import (
    ALPHABET,
    CubeId,
    PointOutOfRangeError,
    can_pack,
    codes_to_strings,
    pack_codes,
    point_codes,
    strings_to_codes,
    symbols_per_level,
    unique_codes,
    unpack_key,
)
from qbeast.errors import FormatError, InvalidOptionError

# FORMAT §1.4 table: string -> per level (dim0, dim1) upper-half flags -> from, to.
TABLE_2D = [
    ("", [], (0.0, 0.0), (1.0, 1.0)),
    ("A", [(0, 0)], (0.0, 0.0), (0.5, 0.5)),
    ("Q", [(0, 1)], (0.0, 0.5), (0.5, 1.0)),
    ("g", [(1, 0)], (0.5, 0.0), (1.0, 0.5)),
    ("w", [(1, 1)], (0.5, 0.5), (1.0, 1.0)),
    ("wg", [(1, 1), (1, 0)], (0.75, 0.5), (1.0, 0.75)),
    ("gw", [(1, 0), (1, 1)], (0.75, 0.25), (1.0, 0.5)),
    ("wQ", [(1, 1), (0, 1)], (0.5, 0.75), (0.75, 1.0)),
]


def _codes_from_flags(levels):
    # Dimension 0 is the most significant bit of a level's code.
    return [sum(bit << (len(flags) - 1 - j) for j, bit in enumerate(flags)) for flags in levels]


@pytest.mark.parametrize("text, levels, lo, hi", TABLE_2D)
def test_format_table_2d(text, levels, lo, hi):
    cube = CubeId.from_string(2, text)
    assert cube.codes == tuple(_codes_from_flags(levels))
    assert cube.depth == len(levels)
    assert cube.string == text == str(cube)
    assert cube.bounds() == (lo, hi)
    assert CubeId.from_codes(2, _codes_from_flags(levels)) == cube


def test_containers_of_point_066_083():
    chain = list(CubeId.containers((0.66, 0.83), max_depth=4))
    assert [c.string for c in chain] == ["", "w", "wQ", "wQg", "wQgQ"]
    assert chain[3].bounds() == ((0.625, 0.75), (0.75, 0.875))
    for cube in chain:
        assert cube.contains((0.66, 0.83))


def test_containers_is_lazy_and_unbounded():
    it = CubeId.containers((0.1, 0.9))
    depths = [next(it).depth for _ in range(40)]
    assert depths == list(range(40))


def test_border_points():
    # CubeIdTest: 0 stays in the lowest cube, 1 in the highest at every level.
    low = list(CubeId.containers((0.0, 0.0), max_depth=3))[-1]
    assert low.bounds() == ((0.0, 0.0), (0.125, 0.125))
    high = list(CubeId.containers((1.0, 0.0), max_depth=3))[-1]
    assert high.bounds() == ((0.875, 0.0), (1.0, 0.125))
    assert high.contains((1.0, 0.0)) and not high.contains((0.5, 0.0))
    # 0.5 belongs to the upper half at level 1.
    assert list(CubeId.containers((0.5, 0.5), max_depth=1))[-1].string == "w"


@pytest.mark.parametrize("bad", [(-0.1, 0.5), (0.5, 1.0000001), (float("nan"), 0.2)])
def test_containers_rejects_out_of_range(bad):
    with pytest.raises(PointOutOfRangeError, match="coordinate"):
        next(iter(CubeId.containers(bad)))


def test_3d_and_1d_symbols():
    assert CubeId.from_codes(3, [0b100]).string == "g"  # dim 0
    assert CubeId.from_codes(3, [0b010]).string == "Q"  # dim 1
    assert CubeId.from_codes(3, [0b001]).string == "I"  # dim 2
    assert CubeId.from_codes(3, [0b111]).string == "4"  # all three
    assert CubeId.from_codes(1, [0]).string == "A"
    assert CubeId.from_codes(1, [1]).string == "g"
    assert CubeId.from_string(1, "gAg").codes == (1, 0, 1)


def test_8d_two_symbols_per_level():
    assert symbols_per_level(8) == 2
    dims = {0, 6, 7}
    code = sum(1 << (8 - 1 - j) for j in dims)
    cube = CubeId.from_codes(8, [code])
    assert cube.string == "gw"
    assert CubeId.from_string(8, "gw") == cube


def test_8d_round_trip_and_prefix_property():
    rng = random.Random(5)
    for _ in range(200):
        codes = [rng.randrange(256) for _ in range(rng.randrange(0, 6))]
        cube = CubeId.from_codes(8, codes)
        assert CubeId.from_string(8, cube.string) == cube
        assert len(cube.string) == 2 * len(codes)
        if cube.parent is not None:
            assert cube.string.startswith(cube.parent.string)
            assert cube.parent.string == cube.string[:-2]


@pytest.mark.parametrize("d", [1, 2, 3, 5, 6, 7, 12, 13, 20])
def test_round_trip_any_dimension_count(d):
    rng = random.Random(d)
    for _ in range(50):
        codes = [rng.randrange(1 << d) for _ in range(rng.randrange(0, 5))]
        cube = CubeId.from_codes(d, codes)
        assert len(cube.string) == symbols_per_level(d) * len(codes)
        assert CubeId.from_string(d, cube.string) == cube


def test_bad_strings():
    with pytest.raises(FormatError, match="not a base64 symbol"):
        CubeId.from_string(2, "w!")
    with pytest.raises(FormatError, match="multiple of 2"):
        CubeId.from_string(8, "gwA")
    with pytest.raises(FormatError, match="beyond dimension"):
        CubeId.from_string(1, "Q")  # 1-D only uses the top bit of each symbol
    with pytest.raises(FormatError):
        CubeId.from_string(2, None)  # type: ignore[arg-type]


def test_bad_construction():
    with pytest.raises(InvalidOptionError, match="out of range"):
        CubeId.from_codes(2, [4])
    with pytest.raises(InvalidOptionError, match="dimension"):
        CubeId.root(0)


def test_children_in_sibling_order_and_parent():
    root = CubeId.root(2)
    children = list(root.children())
    assert [c.string for c in children] == ["A", "Q", "g", "w"]
    assert all(c.parent == root for c in children)
    assert root.parent is None and root.is_root
    assert len(list(CubeId.root(3).children())) == 8
    assert [c.string for c in CubeId.from_string(2, "w").children()] == ["wA", "wQ", "wg", "ww"]
    assert [a.string for a in CubeId.from_string(2, "wQg").ancestors()] == ["wQ", "w", ""]


def test_is_ancestor_of_includes_equality():
    w = CubeId.from_string(2, "w")
    assert w.is_ancestor_of(w)
    assert w.is_ancestor_of(CubeId.from_string(2, "wQg"))
    assert CubeId.root(2).is_ancestor_of(w)
    assert not w.is_ancestor_of(CubeId.root(2))
    assert not w.is_ancestor_of(CubeId.from_string(2, "gw"))
    assert not CubeId.root(1).is_ancestor_of(CubeId.root(2))


def _preorder(cube: CubeId, depth: int):
    yield cube
    if cube.depth < depth:
        for child in cube.children():
            yield from _preorder(child, depth)


def test_ordering_is_preorder():
    expected = list(_preorder(CubeId.root(2), 3))
    shuffled = expected[:]
    random.Random(3).shuffle(shuffled)
    assert sorted(shuffled) == expected
    # Parents before children, and siblings' subtrees contiguous.
    w, wA, g = (CubeId.from_string(2, s) for s in ("w", "wA", "g"))
    assert CubeId.root(2) < g < CubeId.from_string(2, "gw") < w < wA
    with pytest.raises(InvalidOptionError):
        _ = CubeId.root(1) < CubeId.root(2)


def test_ordering_equals_symbol_index_order_not_ascii():
    rng = random.Random(9)
    cubes = [CubeId.from_codes(7, [rng.randrange(128) for _ in range(rng.randrange(4))]) for _ in range(300)]
    by_symbols = sorted(cubes, key=lambda c: [ALPHABET.index(ch) for ch in c.string])
    assert sorted(cubes) == by_symbols
    # ASCII order differs: '0' < 'A' in ASCII but index 52 > 0 in the alphabet.
    a, digit = CubeId.from_string(6, "A"), CubeId.from_string(6, "0")
    assert a < digit and "0" < "A"


def test_hash_and_equality():
    assert len({CubeId.from_string(2, "wQ"), CubeId.from_codes(2, [3, 1])}) == 1
    assert CubeId.root(2) != CubeId.root(3)


def test_contains_matches_containers():
    rng = random.Random(1)
    for _ in range(200):
        p = (rng.choice([0.0, 0.5, 1.0, rng.random()]), rng.random())
        chain = list(CubeId.containers(p, max_depth=5))
        deepest = chain[-1]
        for sibling in deepest.parent.children():
            assert sibling.contains(p) == (sibling == deepest)


# -- vectorized path --------------------------------------------------------------------------


def _random_points(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    pts = rng.random((n, d))
    borders = np.array([0.0, 0.5, 1.0, 0.25, 0.75, 1 / 3, np.nextafter(1.0, 0.0)])
    mask = rng.random((n, d)) < 0.3
    pts[mask] = rng.choice(borders, size=mask.sum())
    return pts


@pytest.mark.parametrize("d", [1, 2, 3, 7])
def test_point_codes_equal_scalar_containers(d):
    rng = np.random.default_rng(d)
    pts = _random_points(rng, 500, d)
    depth = 6
    codes = point_codes(pts, depth)
    assert codes.shape == (500, depth) and codes.dtype == np.int64
    strings = codes_to_strings(d, codes)
    for i, p in enumerate(pts.tolist()):
        chain = list(CubeId.containers(p, max_depth=depth))
        assert tuple(codes[i]) == chain[-1].codes
        assert strings[i] == chain[-1].string
    for k in range(depth + 1):
        prefix = codes_to_strings(d, codes[:, :k])
        assert prefix == [s[: k * symbols_per_level(d)] for s in strings]


def test_point_codes_rejects_bad_input():
    with pytest.raises(PointOutOfRangeError, match="row 1"):
        point_codes(np.array([[0.1, 0.2], [1.5, 0.3]]), 3)
    with pytest.raises(PointOutOfRangeError):
        point_codes(np.array([[np.nan, 0.2]]), 3)
    with pytest.raises(InvalidOptionError):
        point_codes(np.array([0.1, 0.2]), 3)


def test_point_codes_does_not_modify_input():
    pts = np.array([[0.3, 0.9]])
    point_codes(pts, 4)
    assert pts.tolist() == [[0.3, 0.9]]


def test_codes_to_strings_8d_and_strings_to_codes():
    codes = np.array([[0b10000011, 0], [255, 1]])
    assert codes_to_strings(8, codes) == ["gwAA", "/wAQ"]
    assert strings_to_codes(8, ["gwAA", "/wAQ"], 2).tolist() == codes.tolist()
    with pytest.raises(InvalidOptionError, match="depth"):
        strings_to_codes(2, ["w"], 2)
    assert codes_to_strings(2, np.zeros((3, 0), dtype=np.int64)) == ["", "", ""]


def test_packed_keys_group_and_sort_like_cubes():
    rng = np.random.default_rng(4)
    pts = _random_points(rng, 2000, 3)
    codes = point_codes(pts, 5)
    assert can_pack(3, 5) and not can_pack(3, 21)
    keys = pack_codes(3, codes)
    cubes = [CubeId.from_codes(3, row) for row in codes.tolist()]
    for key, cube in zip(keys.tolist()[:200], cubes):
        assert unpack_key(3, 5, key) == cube
    order = np.argsort(keys, kind="stable")
    assert [cubes[i] for i in order] == sorted(cubes)
    with pytest.raises(InvalidOptionError, match="unique_codes"):
        pack_codes(3, np.zeros((1, 21), dtype=np.int64))


@pytest.mark.parametrize("d, depth", [(2, 4), (7, 10)])  # packed path and row-wise fallback
def test_unique_codes_both_paths(d, depth):
    rng = np.random.default_rng(d)
    pts = _random_points(rng, 1500, d)
    codes = point_codes(pts, depth)[:, :depth]
    uniq, inverse = unique_codes(d, codes)
    assert can_pack(d, depth) == (d * depth <= 62)
    assert (uniq[inverse] == codes).all()
    cubes = [CubeId.from_codes(d, row) for row in uniq.tolist()]
    assert cubes == sorted(set(cubes))
