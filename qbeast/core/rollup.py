"""Rollup: which cubes share a file (FORMAT §6.4).

Writing one file per cube would leave many tiny files for the sparse cubes near the leaves. The
rollup merges, deepest level first, every group smaller than ``limit`` rows into its parent's group,
so each resulting group becomes one file holding one block per cube it absorbed. Unlike
qbeast-spark's, it does not leave the root's group below the limit when another group can join it
(the format does not prescribe the grouping: any file may hold blocks of any cubes).
"""
from __future__ import annotations

import heapq
import itertools
from typing import Mapping, Sequence

import numpy as np

from qbeast.core.cube_id import CubeId
from qbeast.errors import InvalidOptionError


def _checked_dimensions(sizes: Mapping[CubeId, object], limit: int) -> int | None:
    """The dimension count shared by the cubes of ``sizes`` (``None`` when empty), after checking
    ``limit`` and that the cubes agree."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise InvalidOptionError(f"rollup limit must be a positive int, got {limit!r}")
    if not sizes:
        return None
    dims = {c.dimensions for c in sizes}
    if len(dims) != 1:
        raise InvalidOptionError(f"rollup cubes must share one dimension count, got {sorted(dims)}")
    return dims.pop()


def rollup(sizes: Mapping[CubeId, int], limit: int) -> dict[CubeId, CubeId]:
    """Map each cube of ``sizes`` to the cube whose group (file) it ends up in.

    ``sizes`` holds an estimated or exact row count per populated cube; ``limit`` is the row count
    below which a group is merged into its parent (qbeast-spark uses the desired cube size). The
    root is never merged; a root group still below ``limit`` at the end takes in the smallest
    other group (:func:`_absorb_small_root_group`). Parent groups are created on demand, so a
    cube whose ancestors are all absent can still travel up to the root.
    """
    if _checked_dimensions(sizes, limit) is None:
        return {}
    group_size: dict[CubeId, int] = {}
    members: dict[CubeId, list[CubeId]] = {}
    for cube, size in sizes.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InvalidOptionError(f"rollup size of cube {cube!r} must be an int >= 0, got {size!r}")
        group_size[cube] = size
        members[cube] = [cube]
    # Max-heap on depth; ties do not affect the result because a group's size is final once every
    # deeper level has been processed.
    heap = [(-c.depth, c) for c in group_size]
    heapq.heapify(heap)
    while heap:
        _, cube = heapq.heappop(heap)
        parent = cube.parent
        if parent is None or group_size[cube] >= limit:
            continue
        if parent not in group_size:
            group_size[parent] = 0
            members[parent] = []
            heapq.heappush(heap, (-parent.depth, parent))
        group_size[parent] += group_size.pop(cube)
        members[parent].extend(members.pop(cube))
    _absorb_small_root_group(group_size, members, limit)
    return {member: group for group, cubes in members.items() for member in cubes}


def _absorb_small_root_group(group_size: dict[CubeId, int], members: dict[CubeId, list[CubeId]],
                             limit: int) -> None:
    """Let a root group below ``limit`` take in the smallest other group (in place).

    The root's group holds what is left once every other group reached the limit. In a write of a
    new tree that is the root cube itself, about one cube of rows; in an append into a deep tree
    it is the few appended rows each level above the appended region keeps, often a small file
    that every query over the region reads beside the region's own file (a day appended to the
    30-day scenario: 5k-50k rows next to a file of the rest of the day). Merged, the append is one
    file whose Delta min/max still span only the appended region. The merged group keeps the
    root's name, since cubes outside the plan fall back to the root's file.
    """
    root = next((c for c in group_size if c.parent is None), None)
    if root is None or group_size[root] >= limit or len(group_size) < 2:
        return
    smallest = min((c for c in group_size if c != root), key=lambda c: (group_size[c], c))
    group_size[root] += group_size.pop(smallest)
    members[root].extend(members.pop(smallest))


def banded_rollup(sizes: Mapping[CubeId, Sequence[int]], limit: int,
                  shared_bands: int | None = None) -> dict[tuple[CubeId, int], tuple[CubeId, int]]:
    """Map each ``(cube, band)`` with rows to the group (file) it ends up in, named ``(cube, band)``.

    ``sizes[cube][band]`` holds a cube's estimated rows in each weight band
    (:mod:`qbeast.core.weight_bands`). Groups never mix bands except at the root, so a sample
    skips the files of the bands above ``Weight(f)``:

    * within a band, deepest level first, the groups of a parent's children that are smaller
      than ``limit`` are packed in cube order into groups of at least ``limit`` rows (the first
      child names the pack), and what is left joins the parent's group in that band. Packing
      (instead of :func:`rollup`'s all-into-the-parent) keeps a band's group from spanning a
      parent's whole space when its children are thin slices: a box reads fewer rows;
    * at the root, the lightest bands are joined into one group until it holds half of
      ``limit`` rows (they hold few rows and would otherwise be tiny files), as long as each
      joined band has all its rows in its root group: every cube then keeps blocks with disjoint
      weight ranges, one per group. Other bands keep their own root group, small or not.
      With ``shared_bands``, only the bands below that index may join
      (:func:`qbeast.core.weight_bands.shared_band_count`: a small append into a large table
      keeps its light bands apart).

    Every band gets a root group (possibly empty), so rows of a cube or band the estimate missed
    find a file at their nearest ancestor (see :func:`qbeast.index.assignment.build_write_plan`).
    """
    dimensions = _checked_dimensions(sizes, limit)
    if dimensions is None:
        return {}
    bands = {len(s) for s in sizes.values()}
    if len(bands) != 1:
        raise InvalidOptionError(f"rollup band counts must agree, got {sorted(bands)}")
    band_count = bands.pop()
    if shared_bands is not None and (isinstance(shared_bands, bool) or not isinstance(shared_bands, int)
                                     or shared_bands < 1):
        raise InvalidOptionError(f"rollup shared_bands must be an int >= 1, got {shared_bands!r}")
    joinable = band_count if shared_bands is None else shared_bands
    root = CubeId.root(dimensions)
    result: dict[tuple[CubeId, int], tuple[CubeId, int]] = {}
    root_sizes: list[int] = []
    whole: list[bool] = []
    for band in range(band_count):
        group_size: dict[CubeId, int] = {}
        members: dict[CubeId, list[CubeId]] = {}
        for cube, per_band in sizes.items():
            size = per_band[band]
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
                raise InvalidOptionError(
                    f"rollup size of cube {cube!r} in band {band} must be an int >= 0, got {size!r}")
            if size > 0 or cube == root:
                group_size[cube] = int(size)
                members[cube] = [cube]
        group_size.setdefault(root, 0)
        members.setdefault(root, [root])
        depth = max(c.depth for c in group_size)
        while depth > 0:
            small = sorted(c for c in group_size if c.depth == depth and group_size[c] < limit)
            for parent, kids in itertools.groupby(small, key=lambda c: c.parent):
                pack: list[CubeId] = []
                packed = 0
                for kid in kids:
                    pack.append(kid)
                    packed += group_size[kid]
                    if packed >= limit:  # a pack of siblings big enough to be a file of its own
                        head = pack[0]
                        for other in pack[1:]:
                            group_size[head] += group_size.pop(other)
                            members[head].extend(members.pop(other))
                        pack, packed = [], 0
                if pack:
                    assert parent is not None
                    if parent not in group_size:
                        group_size[parent] = 0
                        members[parent] = []
                    for kid in pack:
                        group_size[parent] += group_size.pop(kid)
                        members[parent].extend(members.pop(kid))
            depth -= 1
        for group, cubes in members.items():
            for cube in cubes:
                result[(cube, band)] = (group, band)
        root_sizes.append(group_size[root])
        whole.append(len(members) == 1)  # every row of the band is in the root's group
    # at the root, the lightest bands join into runs of at least half a file, as long as all of a
    # band's rows are in its root group: a cube then has one block per run and one per group of
    # the other bands, whose weight ranges stay disjoint
    runs: list[list[int]] = []
    held = 0
    for band, size in enumerate(root_sizes):
        if (runs and band < joinable and whole[band] and all(whole[b] for b in runs[-1])
                and 2 * held < limit):
            runs[-1].append(band)
            held += size
        else:
            runs.append([band])
            held = size
    target = {band: (root, run[0]) for run in runs for band in run}
    return {key: (target[group[1]] if group[0] == root else group) for key, group in result.items()}
