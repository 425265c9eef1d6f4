"""Block and flag tallies: what one Arrow batch counts, and how Spark's accumulators merge them."""
from __future__ import annotations

import numpy as np

from qbeast.index.tally import BlockTally, FlagTally, batch_blocks, batch_flags


def test_batch_blocks_and_tally_merge():
    files = np.array([1, 0, 1, 1, 0])
    cubes = np.array([7, 3, 7, 2, 3], dtype=np.int64)
    weights = np.array([5, -4, -9, 3, 8])
    got = batch_blocks(files, cubes, weights)
    assert got == {(0, 3): (2, -4), (1, 2): (1, 3), (1, 7): (2, -9)}
    merged = BlockTally().addInPlace(dict(got), {(0, 3): (1, -10), (2, 1): (4, 0)})
    assert merged == {(0, 3): (3, -10), (1, 2): (1, 3), (1, 7): (2, -9), (2, 1): (4, 0)}
    assert batch_blocks(files[:0], cubes[:0], weights[:0]) == {}
    # the pieces 0 and 1 of file 0 and the piece 2 of file 1: one count per (file, cube)
    pieces = {(0, 3): (2, -4), (1, 3): (1, -9), (1, 2): (5, 7), (2, 3): (4, 0)}
    owners = [0, 0, 1]
    assert BlockTally().rekeyed(pieces, lambda key: (owners[key[0]], key[1])) == {
        (0, 3): (3, -9), (0, 2): (5, 7), (1, 3): (4, 0)}
    assert FlagTally().rekeyed({0: 1, 1: 4, 2: 2}, lambda piece: owners[piece]) == {0: 5, 1: 2}


def test_batch_flags_and_flag_tally_merge():
    files = np.array([0, 1, 1, 2, 0])
    masks = np.array([0, 1, 4, 0, 2])
    assert batch_flags(files, masks) == {0: 2, 1: 5}
    assert batch_flags(files, np.zeros(5, dtype=np.int64)) == {}
    assert FlagTally().addInPlace({0: 2, 3: 1}, {0: 1, 1: 4}) == {0: 3, 1: 4, 3: 1}
