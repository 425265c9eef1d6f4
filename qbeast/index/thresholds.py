"""The thresholds of an existing index as appends and optimize use them, and the blocks that record
the thresholds a write assigned rows with.

A reader knows a cube's threshold only from its blocks: the *effective* threshold is the minimum
``maxWeight`` over them (FORMAT §6.1, §13). Appends into a revision never raise it; optimize keeps
it exactly; and whenever a write places rows below a cube using a threshold that no block of that
cube states, a zero-element block states it (:func:`threshold_markers`).
"""
from __future__ import annotations

from collections.abc import Mapping

from qbeast.core.blocks import Block
from qbeast.core.cube_id import CubeId
from qbeast.core.index_status import IndexStatus
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.core.weight_bands import band_of
from qbeast.index.assignment import WritePlan

#: Threshold given to cubes that exist only as ancestors: below every weight, so no row stops.
PASS_THROUGH = MIN_WEIGHT - 1


def effective_thresholds(status: IndexStatus) -> dict[CubeId, int]:
    """Each existing cube's effective threshold: the minimum ``maxWeight`` over its blocks."""
    return {cube_status.cube: cube_status.max_weight for cube_status in status}


def pass_through_thresholds(status: IndexStatus) -> dict[CubeId, int]:
    """The thresholds rows are re-assigned with by optimize: each cube's effective one, and a
    threshold below every weight for ancestors that have no block (readers descend through them,
    so rows must keep walking through them too)."""
    thresholds = effective_thresholds(status)
    for cube in list(thresholds):
        for ancestor in cube.ancestors():
            if ancestor in thresholds:
                break
            thresholds[ancestor] = PASS_THROUGH
    return thresholds


def threshold_markers(per_file: Mapping[int, list[Block]], plan: WritePlan,
                      existing: IndexStatus | None) -> list[tuple[int, Block]]:
    """Zero-element blocks that make the committed index state the thresholds rows were placed by.

    ``per_file`` holds the blocks each new file (by plan file id) holds. Readers only know a
    cube's threshold from its blocks (the minimum over them). Two kinds of cube can end up
    without a block in this commit although rows were assigned using their threshold:

    * an inner cube that received no row while rows went to its descendants (a sparse region): the
      index would lack the parent of a written cube;
    * an existing cube of the revision whose threshold this append lowered but which received no
      row: its effective threshold would stay the old, higher one, and a sample with
      ``Weight(f)`` between the two would stop there and miss the rows placed below (FORMAT §13).

    For each such cube a block ``(cube, threshold, threshold, 0)`` is attached to one of the new
    files (the cube's own rollup file when it was written, else the file that needed it).
    """
    dims = plan.dimensions
    current = effective_thresholds(existing) if existing is not None else {}
    covered = {b.cube for blocks in per_file.values() for b in blocks}
    markers: list[tuple[int, Block]] = []

    def mark(cube: CubeId, fallback_file: int) -> None:
        node = plan.tree.index[cube]
        threshold = int(plan.max_weights[node])
        covered.add(cube.string)
        if threshold >= current.get(cube, MAX_WEIGHT):
            return  # the stored blocks already carry this threshold (or a lower one)
        target = int(plan.files[node])
        markers.append((target if target in per_file else fallback_file,
                        Block(cube.string, threshold, threshold, 0)))

    for file_id, blocks in list(per_file.items()):
        for block in list(blocks):
            for ancestor in CubeId.from_string(dims, block.cube).ancestors():
                if ancestor.string in covered:
                    break
                mark(ancestor, file_id)
    if per_file:
        first = next(iter(per_file))
        for cube in current:
            node = plan.tree.index.get(cube)
            if node is not None and cube.string not in covered and plan.max_weights[node] < current[cube]:
                mark(cube, first)
    return markers



def files_to_lay_out(status: IndexStatus, paths: set[str] | None = None) -> set[str]:
    """The files (among ``paths``; all when ``None``) optimize must rewrite to lay the revision out.

    Optimize re-assigns rows with the effective thresholds and writes each cube's rows as one
    block (or one per weight band: the write split the cube's rows by weight) and every such
    block was written with the cube's effective threshold (its ``maxWeight`` is the minimum over
    the cube's blocks; zero-element marker blocks state thresholds and hold nothing). A freshly
    written revision is laid out; an append that reached a cube again, or lowered its threshold,
    leaves that cube to lay out. Every file holding a block of such a cube - markers included, so
    that no lowered threshold is dropped while rows placed by it stay - is rewritten, and when its
    threshold was lowered, every file of its subtree (where its heavier rows move); the rest of
    the revision is not touched, which bounds what maintenance after an append rewrites by what
    the append reached. Computed from the blocks alone: no data is read.
    """
    out: set[str] = set()
    for cube_status in status:
        holding = [fb.block for fb in cube_status.blocks if fb.block.element_count > 0]
        if any(b.max_weight != cube_status.max_weight for b in holding):
            # rows above the lowered threshold move down into the subtree: its files too, or
            # a cube there would end with a second block
            out.update(fb.path for below in status.subtree(cube_status.cube) for fb in below.blocks)
        elif len(holding) > 1 and not _weight_bands(holding):
            out.update(fb.path for fb in cube_status.blocks)
    return out if paths is None else out & paths


def _weight_bands(blocks: list[Block]) -> bool:
    """Whether several blocks of one cube are the weight bands a write laid it out in: each in a
    band of its own (:mod:`qbeast.core.weight_bands`, judged by ``minWeight``, the one weight a
    block states). An append that reaches a cube again adds a block starting in the cube's
    lowest band, next to the one already there, so it is not taken for a band."""
    bands = [band_of(b.min_weight) for b in blocks]
    return len(set(bands)) == len(bands)


def is_laid_out(status: IndexStatus, paths: set[str] | None = None) -> bool:
    """Whether optimize has nothing to rewrite among ``paths`` (see :func:`files_to_lay_out`)."""
    return not files_to_lay_out(status, paths)
