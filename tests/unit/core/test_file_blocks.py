"""qbeast.index.file_blocks: a file's rows back to their cubes, recounted blocks, kept markers."""
from __future__ import annotations

import numpy as np
import pytest

from qbeast.core.blocks import Block
from qbeast.core.cube_id import CubeId
from qbeast.index.file_blocks import (
    BlockMismatchError,
    file_plan,
    recount_blocks,
    row_cubes,
    settle_empty_blocks,
)


def _cube(codes: tuple[int, ...]) -> str:
    return CubeId.from_codes(2, codes).string


ROOT, A, AB = _cube(()), _cube((0,)), _cube((0, 3))


def test_rows_stop_at_the_first_block_of_their_file_that_admits_them():
    # the file holds the root (threshold 100) and a grandchild (threshold 1000), not the child:
    # rows walk through the child
    blocks = [Block(ROOT, -50, 100, 2), Block(AB, 150, 1000, 2)]
    plan = file_plan(2, blocks)
    coords = np.array([[0.1, 0.1], [0.4, 0.4], [0.4, 0.4], [0.45, 0.49]])
    weights = np.array([-50, 100, 150, 900])
    assert row_cubes(plan, coords, weights).tolist() == [ROOT, ROOT, AB, AB]
    recounted = recount_blocks(blocks, np.array([ROOT, AB], dtype=object), np.array([100, 900]))
    assert recounted == (Block(ROOT, 100, 100, 1), Block(AB, 900, 1000, 1))


def test_a_row_that_fits_no_block_is_an_error_not_a_guess():
    plan = file_plan(2, [Block(AB, 0, 1000, 1)])
    with pytest.raises(BlockMismatchError, match="f.parquet"):
        row_cubes(plan, np.array([[0.9, 0.9]]), np.array([5]), "f.parquet")
    with pytest.raises(BlockMismatchError):
        row_cubes(plan, np.array([[0.4, 0.4]]), np.array([2000]), "f.parquet")


def test_a_block_left_empty_becomes_zero_elements_at_its_threshold():
    recounted = recount_blocks([Block(ROOT, 1, 100, 3)], np.array([], dtype=object),
                               np.array([], dtype=np.int64))
    assert recounted == (Block(ROOT, 100, 100, 0),)


def test_empty_blocks_are_dropped_unless_they_carry_a_lower_threshold_or_a_parent():
    rewritten = {
        "f1": (Block(ROOT, 100, 100, 0), Block(A, 5, 300, 4)),
        "f2": (Block(A, 200, 200, 0), Block(AB, 400, 400, 0)),
    }
    # others: the root is also held elsewhere with a higher threshold, A's threshold 300 only
    others = [Block(ROOT, 0, 150, 9), Block(AB, 500, 900, 2)]
    settled = settle_empty_blocks(2, rewritten, others)
    # root: 100 < 150 -> kept (lower threshold); A: 200 < 300 -> kept; AB: 400 < 900 -> kept
    assert settled == {"f1": (Block(ROOT, 100, 100, 0), Block(A, 5, 300, 4)),
                       "f2": (Block(A, 200, 200, 0), Block(AB, 400, 400, 0))}
    # same thresholds elsewhere: nothing to carry
    others = [Block(ROOT, 0, 100, 9), Block(A, 0, 200, 1), Block(AB, 500, 400, 2)]
    settled = settle_empty_blocks(2, rewritten, others)
    assert settled == {"f1": (Block(A, 5, 300, 4),), "f2": ()}


def test_an_emptied_parent_stays_while_a_descendant_holds_rows():
    rewritten = {"f1": (Block(ROOT, 10, 10, 0), Block(A, 20, 20, 0))}
    others = [Block(AB, 30, 900, 5)]
    assert settle_empty_blocks(2, rewritten, others) == {"f1": rewritten["f1"]}
    # nothing below any more: both go
    assert settle_empty_blocks(2, rewritten, []) == {"f1": ()}


def test_only_the_lowest_of_several_empty_blocks_of_a_cube_is_kept():
    rewritten = {"f1": (Block(A, 50, 50, 0),), "f2": (Block(A, 40, 40, 0),)}
    settled = settle_empty_blocks(2, rewritten, [Block(A, 60, 100, 3)])
    assert settled == {"f1": (), "f2": (Block(A, 40, 40, 0),)}
