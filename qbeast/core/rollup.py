"""Rollup: which cubes share a file (FORMAT §6.4).

Writing one file per cube would leave many tiny files for the sparse cubes near the leaves. The
rollup merges, deepest level first, every group smaller than ``limit`` rows into its parent's group,
so each resulting group becomes one file holding one block per cube it absorbed.
"""
from __future__ import annotations

import heapq
from typing import Mapping

from qbeast.core.cube_id import CubeId
from qbeast.errors import InvalidOptionError


def rollup(sizes: Mapping[CubeId, int], limit: int) -> dict[CubeId, CubeId]:
    """Map each cube of ``sizes`` to the cube whose group (file) it ends up in.

    ``sizes`` holds an estimated or exact row count per populated cube; ``limit`` is the row count
    below which a group is merged into its parent (qbeast-spark uses the desired cube size). The
    root is never merged. Parent groups are created on demand, so a cube whose ancestors are all
    absent can still travel up to the root.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise InvalidOptionError(f"rollup limit must be a positive int, got {limit!r}")
    if not sizes:
        return {}
    dims = {c.dimensions for c in sizes}
    if len(dims) != 1:
        raise InvalidOptionError(f"rollup cubes must share one dimension count, got {sorted(dims)}")
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
    return {member: group for group, cubes in members.items() for member in cubes}
