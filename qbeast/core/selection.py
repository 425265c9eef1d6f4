"""Which cubes and files a sampled and/or filtered read must open (FORMAT §7.2).

The OTree stores, in every cube, rows with weights above the thresholds of all its ancestors and
below its own. A read of the weight range ``[weight_from, weight_to)`` therefore stops descending
below a cube as soon as ``weight_to <= threshold``: nothing deeper can qualify. Space pruning skips
subtrees whose cube does not intersect any query space.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from qbeast.core.cube_id import CubeId
from qbeast.core.index_status import CubeStatus, FileBlock, IndexStatus
from qbeast.core.query_space import AllSpace, EmptySpace, QuerySpace
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT, check_weight, weight_from_fraction
from qbeast.errors import InvalidOptionError


def select_cubes(
    index_status: IndexStatus,
    spaces: Sequence[QuerySpace],
    weight_from: int = MIN_WEIGHT,
    weight_to: int = MAX_WEIGHT,
) -> list[CubeStatus]:
    """Existing cubes a read of ``[weight_from, weight_to)`` within ``spaces`` may need, pre-order.

    The walk is qbeast-spark's depth-first search: missing inner cubes are traversed (their
    children can exist), and an existing cube's children are visited only while
    ``weight_to > cube threshold``. Candidate children are taken from the cubes that exist below,
    which yields the same result as trying all ``2**d`` children, without the cost for wide trees.

    A read of the full weight range is not a sample but a plain filtered read, which must see every
    row: it never stops descending. (qbeast-spark does not consult the OTree for such reads; with
    thresholds as written by appends (FORMAT §13) stopping could miss rows whose weight is exactly
    ``MAX_WEIGHT`` or rows below a cube whose last append left it no new block.)
    """
    check_weight(weight_from, "weight_from")
    check_weight(weight_to, "weight_to")
    sampling = weight_from != MIN_WEIGHT or weight_to != MAX_WEIGHT
    selected: dict[CubeId, CubeStatus] = {}
    for space in spaces:
        if isinstance(space, EmptySpace):
            continue
        if isinstance(space, AllSpace) and not sampling:
            return list(index_status.cubes)
        for status in _walk(index_status, space, weight_to if sampling else None):
            selected[status.cube] = status
    return sorted(selected.values(), key=lambda s: s.cube)


def _walk(
    index_status: IndexStatus, space: QuerySpace, weight_to: int | None
) -> Iterable[CubeStatus]:
    """Depth-first search of §7.2; ``weight_to=None`` descends regardless of thresholds."""
    if not index_status.cubes:
        return
    root = CubeId.root(index_status.revision.dimension_count)
    stack = [root]
    while stack:
        cube = stack.pop()
        status = index_status.get(cube)
        if status is not None:
            yield status
            if weight_to is not None and weight_to <= status.max_weight:
                continue
        stack.extend(
            child for child in _existing_children(index_status, cube) if space.intersects(child)
        )


def _existing_children(index_status: IndexStatus, cube: CubeId) -> list[CubeId]:
    """Children of ``cube`` that are, or have below them, an existing cube."""
    depth = cube.depth
    codes = dict.fromkeys(
        s.cube.codes[depth] for s in index_status.subtree(cube) if s.cube.depth > depth
    )
    return [cube.child(code) for code in codes]


def select_blocks(
    index_status: IndexStatus,
    spaces: Sequence[QuerySpace],
    weight_from: int = MIN_WEIGHT,
    weight_to: int = MAX_WEIGHT,
) -> list[FileBlock]:
    """Blocks of the revision a read of ``[weight_from, weight_to)`` may need.

    Among the blocks of the selected cubes, a block is kept when its weight interval can meet the
    read's: ``weight_from <= block.maxWeight`` and ``weight_to > block.minWeight``. A read of the
    full weight range (no sampling) keeps every block of the selected cubes.
    """
    sampling = weight_from != MIN_WEIGHT or weight_to != MAX_WEIGHT
    return [
        fb
        for status in select_cubes(index_status, spaces, weight_from, weight_to)
        for fb in status.blocks
        if not sampling
        or (weight_from <= fb.block.max_weight and weight_to > fb.block.min_weight)
    ]


def select_files(
    index_status: IndexStatus,
    spaces: Sequence[QuerySpace],
    weight_from: int = MIN_WEIGHT,
    weight_to: int = MAX_WEIGHT,
) -> set[str]:
    """Files of the revision holding a block a read of ``[weight_from, weight_to)`` may need
    (:func:`select_blocks`): a file is read whole when any of its blocks is needed."""
    return {fb.path for fb in select_blocks(index_status, spaces, weight_from, weight_to)}


def sample_weight_range(fraction_from: float, fraction_to: float) -> tuple[int, int]:
    """The weight range ``[Weight(lower), Weight(upper))`` of a Spark sample with these bounds."""
    if not 0.0 <= fraction_from <= fraction_to <= 1.0:
        raise InvalidOptionError(
            f"sample bounds must satisfy 0 <= lower <= upper <= 1, got ({fraction_from}, {fraction_to})"
        )
    return weight_from_fraction(fraction_from), weight_from_fraction(fraction_to)


def select_sample_files(index_status: IndexStatus, sample_fraction: float) -> set[str]:
    """Files a ``sample(sample_fraction)`` of the whole revision (no predicate) must read."""
    low, high = sample_weight_range(0.0, sample_fraction)
    return select_files(index_status, [AllSpace()], low, high)
