"""The blocks of one data file recomputed from the rows it keeps (copy-on-write row-level changes).

A delete, update or merge rewrites only the files holding affected rows, and every row that stays
must stay in the cube it was written to: that is what keeps the OTree's sampling invariant
(FORMAT §6.3, §13) without re-estimating anything. The cube of a row is recoverable from the
file's own tags: walking the row's container path from the root, it is the first cube that has a
block *in this file* whose ``maxWeight`` is >= the row's weight (the block's ``maxWeight`` is the
threshold the row was assigned with; cubes without a block in the file are walked through).

:func:`file_plan` turns a file's blocks into a :class:`~qbeast.index.assignment.WritePlan` that
performs exactly that walk, :func:`recount_blocks` gives the file's blocks for the rows that
remain (``elementCount`` and ``minWeight`` recomputed, ``maxWeight`` kept as the cube's
threshold), and :func:`settle_empty_blocks` decides, with the whole revision in view, which blocks
left without rows must stay as zero-element blocks because they carry a threshold or the parent of
a cube that still holds rows.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from qbeast.core.blocks import Block
from qbeast.core.cube_id import CubeId
from qbeast.errors import QbeastError
from qbeast.index.assignment import WritePlan, build_write_plan
from qbeast.index.thresholds import PASS_THROUGH


class BlockMismatchError(QbeastError):
    """A row of a file fits none of the file's blocks: the file's tags do not describe its rows."""


def file_plan(dimensions: int, blocks: Iterable[Block]) -> WritePlan:
    """A plan whose walk stops each row in the first block cube of its path that admits it.

    Ancestors without a block in the file get a threshold below every weight (no row stops
    there). Should a file hold two blocks of one cube, the larger ``maxWeight`` is used (every
    row of that cube in the file is <= it).
    """
    weights: dict[CubeId, int] = {}
    for block in blocks:
        cube = CubeId.from_string(dimensions, block.cube)
        weights[cube] = max(weights.get(cube, block.max_weight), block.max_weight)
    own = set(weights)
    for cube in own:
        for ancestor in cube.ancestors():
            if ancestor not in own:
                weights[ancestor] = PASS_THROUGH
    if not weights:
        weights[CubeId.root(dimensions)] = PASS_THROUGH
    return build_write_plan(dimensions, weights, {}, 1)


def row_cubes(plan: WritePlan, coords: np.ndarray, weights: np.ndarray,
              file_name: str = "") -> np.ndarray:
    """The cube string of each row (see :func:`file_plan`); raises if a row fits no block."""
    cube_ids, _ = plan.assign(coords, weights)
    outside = cube_ids >= len(plan.tree)
    passed = np.zeros(len(cube_ids), dtype=bool)
    inside = ~outside
    passed[inside] = plan.max_weights[cube_ids[inside]] == PASS_THROUGH
    if outside.any() or passed.any():
        raise BlockMismatchError(
            f"{int(outside.sum() + passed.sum())} row(s) of file {file_name!r} fit none of its "
            "blocks (no block cube on their path has a maxWeight >= their weight): the file's "
            "tags do not describe its rows; the file was not rewritten"
        )
    uniq, inverse = np.unique(cube_ids, return_inverse=True)
    names = np.array([plan.tree.cubes[int(c)].string for c in uniq], dtype=object)
    return names[inverse.reshape(-1)]


def recount_blocks(old: Sequence[Block], cubes: np.ndarray, weights: np.ndarray) -> tuple[Block, ...]:
    """The file's blocks for the rows that remain, in the order of ``old``.

    ``cubes``/``weights`` describe the remaining rows. A block left without rows is returned with
    ``elementCount`` 0 and ``minWeight == maxWeight`` (the zero-element form threshold markers
    use); :func:`settle_empty_blocks` decides whether it is kept.
    """
    w = np.asarray(weights, dtype=np.int64)
    out: list[Block] = []
    seen: set[str] = set()
    for block in old:
        if block.cube in seen:
            continue  # a duplicate block of a cube: its rows are counted with the first one
        seen.add(block.cube)
        members = w[cubes == block.cube] if len(w) else w
        if len(members):
            out.append(Block(block.cube, int(members.min()), block.max_weight, int(len(members)),
                             block.replicated))
        else:
            out.append(Block(block.cube, block.max_weight, block.max_weight, 0))
    return tuple(out)


def settle_empty_blocks(
    dimensions: int,
    rewritten: Mapping[str, Sequence[Block]],
    others: Iterable[Block],
) -> dict[str, tuple[Block, ...]]:
    """Per rewritten file, its blocks without the zero-element ones the index does not need.

    ``rewritten`` maps each rewritten file of one revision to its recounted blocks;
    ``others`` are the blocks every other file of the revision will hold after the commit
    (untouched files and appended ones). A block without rows is kept only when dropping it
    would change what readers see:

    * its ``maxWeight`` is below every remaining block of its cube — the cube's effective
      threshold (the minimum) would rise, and a sample would stop at the cube and miss rows
      placed below it with the lower threshold (FORMAT §13);
    * or no remaining block holds the cube while one of its descendants still does (the index
      would lose the parent of a written cube).

    Of several such blocks of one cube only the one with the lowest threshold is kept.
    """
    remaining = [b for b in others] + [b for blocks in rewritten.values() for b in blocks
                                        if b.element_count > 0]
    lowest: dict[str, int] = {}
    for block in remaining:
        lowest[block.cube] = min(lowest.get(block.cube, block.max_weight), block.max_weight)
    parents: set[str] = set()
    for cube in lowest:
        parents.update(a.string for a in CubeId.from_string(dimensions, cube).ancestors())
    wanted: dict[str, tuple[str, int]] = {}  # cube -> (file, threshold) of the one marker kept
    for name, blocks in rewritten.items():
        for block in blocks:
            if block.element_count > 0:
                continue
            needed = (block.max_weight < lowest[block.cube] if block.cube in lowest
                      else block.cube in parents)
            best = wanted.get(block.cube)
            if needed and (best is None or block.max_weight < best[1]):
                wanted[block.cube] = (name, block.max_weight)
    return {
        name: tuple(b for b in blocks
                    if b.element_count > 0 or wanted.get(b.cube) == (name, b.max_weight))
        for name, blocks in rewritten.items()
    }
