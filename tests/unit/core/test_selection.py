"""Cube and file selection for sampled / filtered reads (FORMAT §7.2, §7.5)."""
from __future__ import annotations

import random

import pytest

from qbeast.core.blocks import Block
from qbeast.core.cube_id import CubeId
from qbeast.core.index_status import IndexStatus
from qbeast.core.query_space import AllSpace, EmptySpace, QuerySpaceFromTo
from qbeast.core.selection import (
    sample_weight_range,
    select_cubes,
    select_files,
    select_sample_files,
)
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.errors import InvalidOptionError


@pytest.mark.parametrize("f, files", [(0.01, 1), (0.1, 5), (0.5, 15)])
def test_v07_fixture_sampling_selects_format_file_counts(v07_index, f, files):
    # FORMAT §7.5: the 16-file table read at f = 0.01 / 0.1 / 0.5.
    assert len(select_sample_files(v07_index, f)) == files


def test_v07_fixture_full_read_selects_every_file(v07_index):
    assert select_files(v07_index, [AllSpace()]) == set(v07_index.files)
    assert len(v07_index.files) == 16
    assert select_sample_files(v07_index, 1.0) == set(v07_index.files)


def test_sample_weight_range():
    assert sample_weight_range(0.0, 0.1) == (MIN_WEIGHT, -1717986918)
    assert sample_weight_range(0.0, 0.5) == (MIN_WEIGHT, 0)
    with pytest.raises(InvalidOptionError, match="sample bounds"):
        sample_weight_range(0.5, 0.1)
    with pytest.raises(InvalidOptionError, match="sample bounds"):
        sample_weight_range(0.0, 1.5)


def c1(path: str) -> CubeId:
    return CubeId.from_codes(1, [int(ch) for ch in path])


@pytest.fixture
def tree(revisions) -> IndexStatus:
    """A 1-D index: root inner, c0 missing, c00 inner, c01/c1/c000 leaves."""
    files = [
        ("fR", [Block("", MIN_WEIGHT, -1000, 10)]),
        ("f00", [Block(c1("00").string, -900, 0, 10)]),
        ("f01", [Block(c1("01").string, -800, MAX_WEIGHT, 3)]),
        ("f1", [Block(c1("1").string, -950, MAX_WEIGHT, 4)]),
        ("f000", [Block(c1("000").string, 10, MAX_WEIGHT, 2)]),
    ]
    return IndexStatus.from_files(revisions.linear_revision(1), files)


@pytest.mark.parametrize(
    "weight_from, weight_to, expected",
    [
        (MIN_WEIGHT, -1000, {"fR"}),  # weight_to <= root threshold: stop at the root
        (MIN_WEIGHT, -850, {"fR", "f1", "f00"}),  # f01's rows all weigh >= -800
        (MIN_WEIGHT, 5, {"fR", "f1", "f00", "f01"}),  # c000 reached, its rows weigh >= 10
        (MIN_WEIGHT, 11, {"fR", "f1", "f00", "f01", "f000"}),
        (1, 100, {"f1", "f01", "f000"}),  # blocks whose threshold is below 1 hold no such row
    ],
)
def test_hand_tree(tree, weight_from, weight_to, expected):
    assert select_files(tree, [AllSpace()], weight_from, weight_to) == expected


def test_missing_inner_cube_is_traversed(tree):
    cubes = select_cubes(tree, [AllSpace()], MIN_WEIGHT, 5)
    assert [s.cube for s in cubes] == [c1(""), c1("00"), c1("000"), c1("01"), c1("1")]


def test_empty_space_and_no_space(tree):
    assert select_files(tree, [EmptySpace()], MIN_WEIGHT, 5) == set()
    assert select_files(tree, [], MIN_WEIGHT, 5) == set()


def test_space_pruning(tree):
    lower_half = QuerySpaceFromTo((None,), (0.3,))
    assert select_files(tree, [lower_half], MIN_WEIGHT, 11) == {"fR", "f00", "f01", "f000"}
    first_eighth = QuerySpaceFromTo((None,), (0.1,))
    assert select_files(tree, [first_eighth], MIN_WEIGHT, 11) == {"fR", "f00", "f000"}
    # Two spaces: the union of what each selects.
    upper = QuerySpaceFromTo((0.9,), (None,))
    assert select_files(tree, [first_eighth, upper], MIN_WEIGHT, 11) == {"fR", "f00", "f000", "f1"}


def test_full_range_read_never_stops_and_keeps_every_block(revisions):
    # c0's only block is a leaf block (threshold MAX) but c00 exists below (an append that gave
    # c0 no new block, FORMAT §13); a row weighing MAX_WEIGHT sits in the root-level leaf.
    files = [
        ("fR", [Block("", MIN_WEIGHT, -5, 3)]),
        ("f0", [Block(c1("0").string, MAX_WEIGHT, MAX_WEIGHT, 1)]),
        ("f00", [Block(c1("00").string, 0, MAX_WEIGHT, 2)]),
    ]
    status = IndexStatus.from_files(revisions.linear_revision(1), files)
    space = QuerySpaceFromTo((None,), (0.2,))
    assert select_files(status, [space]) == {"fR", "f0", "f00"}
    # A sample follows qbeast-spark exactly: it stops at c0 and drops its block (min = MAX).
    assert select_files(status, [space], MIN_WEIGHT, MAX_WEIGHT - 1) == {"fR"}


def test_bad_weights(tree):
    with pytest.raises(InvalidOptionError, match="weight_to"):
        select_files(tree, [AllSpace()], MIN_WEIGHT, MAX_WEIGHT + 1)
    with pytest.raises(InvalidOptionError, match="weight_from"):
        select_cubes(tree, [AllSpace()], 0.5, 7)  # type: ignore[arg-type]


def _brute_force(status, spaces, weight_from, weight_to):
    """Files from the definition: a cube is read iff its whole path intersects a space and, when
    sampling, every existing strict ancestor's threshold is below ``weight_to``."""
    sampling = (weight_from, weight_to) != (MIN_WEIGHT, MAX_WEIGHT)
    out = set()
    for s in status.cubes:
        path = [*s.cube.ancestors(), s.cube]
        if not any(
            not isinstance(sp, EmptySpace) and all(sp.intersects(a) for a in path) for sp in spaces
        ):
            continue
        if sampling and any(
            status.get(a) is not None and weight_to <= status.get(a).max_weight
            for a in s.cube.ancestors()
        ):
            continue
        for fb in s.blocks:
            if not sampling or (
                weight_from <= fb.block.max_weight and weight_to > fb.block.min_weight
            ):
                out.add(fb.path)
    return out


def test_selection_matches_definition_on_random_trees(revisions):
    rng = random.Random(42)
    rev = revisions.linear_revision(2)
    for _ in range(60):
        cubes = {CubeId.root(2)}
        for _ in range(rng.randrange(1, 40)):
            parent = rng.choice(sorted(cubes))
            if parent.depth < 5:
                cubes.add(parent.child(rng.randrange(4)))
        cubes = [c for c in cubes if rng.random() < 0.8]  # leave some inner cubes missing
        files = []
        for i, cube in enumerate(cubes):
            for j in range(rng.randrange(1, 3)):
                lo = rng.randrange(MIN_WEIGHT, MAX_WEIGHT)
                hi = rng.choice([MAX_WEIGHT, rng.randrange(lo, MAX_WEIGHT + 1)])
                files.append((f"f{i}_{j}_{rng.randrange(3)}", [Block(cube.string, lo, hi, 1)]))
        status = IndexStatus.from_files(rev, files)
        for _ in range(5):
            spaces = []
            for _ in range(rng.randrange(0, 3)):
                a, b = sorted(rng.random() for _ in range(2))
                c, e = sorted(rng.random() for _ in range(2))
                spaces.append(QuerySpaceFromTo((a, rng.choice([None, c])), (b, rng.choice([None, e]))))
            spaces.append(rng.choice([AllSpace(), EmptySpace(), QuerySpaceFromTo((0.0, 0.5), (0.5, 1.0))]))
            w_from = rng.choice([MIN_WEIGHT, rng.randrange(MIN_WEIGHT, 0)])
            w_to = rng.choice([MAX_WEIGHT, rng.randrange(0, MAX_WEIGHT)])
            assert select_files(status, spaces, w_from, w_to) == _brute_force(
                status, spaces, w_from, w_to
            )


def test_weight_bands_of_one_cube_in_different_files(revisions):
    """A cube whose rows are split into weight bands (blocks with disjoint weight ranges, every
    one carrying the cube's threshold as maxWeight, FORMAT §13) in different files: a sample
    reads only the files of the bands that can hold rows below Weight(f), and the planner
    counts the blocks it needs separately from the files."""
    from qbeast.core.selection import select_blocks

    files = [
        ("root", [Block("", MIN_WEIGHT, -1000, 10)]),
        ("low", [Block(c1("0").string, -999, MAX_WEIGHT, 10), Block(c1("1").string, -990, MAX_WEIGHT, 9)]),
        ("high", [Block(c1("0").string, 0, MAX_WEIGHT, 10), Block(c1("1").string, 5, MAX_WEIGHT, 12)]),
    ]
    status = IndexStatus.from_files(revisions.linear_revision(1), files)
    assert status.get(c1("0")).max_weight == MAX_WEIGHT  # bands do not lower the threshold
    assert select_files(status, [AllSpace()], MIN_WEIGHT, -1000) == {"root"}
    assert select_files(status, [AllSpace()], MIN_WEIGHT, 0) == {"root", "low"}
    assert len(select_blocks(status, [AllSpace()], MIN_WEIGHT, 0)) == 3
    assert select_files(status, [AllSpace()], MIN_WEIGHT, 1) == {"root", "low", "high"}
    assert len(select_blocks(status, [AllSpace()], MIN_WEIGHT, 1)) == 4  # c1's high band: min 5
    assert len(select_blocks(status, [AllSpace()])) == 5  # a plain read needs every block
