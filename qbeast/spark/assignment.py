"""Row -> cube -> file assignment of the write pass (FORMAT §6.3, §6.4).

The driver condenses everything the tasks need into a :class:`WritePlan`: the cubes that got a
threshold, their thresholds, and the file (rollup group) each cube's rows go to. A task then walks
each row's container path from the root and stops at the first cube that either has no threshold
or whose threshold is >= the row's weight (inclusive, as qbeast-spark's ``PointWeightIndexer``).

Cube ids sent between the assignment and the file-writing tasks are int64: a node id of the plan's
tree for cubes of the plan, or ``len(tree) + parent_node * 2**d + code`` for a child that is not in
the plan (a region without an estimated domain, which acts as a leaf and is written with threshold
``MAX_WEIGHT``). Such a cube shares the file of its parent.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from qbeast.core.cube_id import CubeId, descend_one_level
from qbeast.core.rollup import rollup
from qbeast.core.weight import MAX_WEIGHT
from qbeast.spark.cube_tree import CubeTree


@dataclass
class WritePlan:
    """Thresholds and file groups of one write, shipped to the tasks (small: cube-level only)."""

    tree: CubeTree
    max_weights: np.ndarray  # per node, int64; MAX_WEIGHT for cubes without a threshold
    files: np.ndarray  # per node, the file (rollup group) index
    file_count: int

    @property
    def dimensions(self) -> int:
        return self.tree.dimensions

    def assign(self, coords: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cube ids (see the module docstring) and file indexes of the given rows.

        ``coords`` is ``(n, d)`` in [0, 1] (not modified), ``weights`` the int32 row weights.
        """
        n, d = coords.shape
        cubes = np.empty(n, dtype=np.int64)
        files = np.empty(n, dtype=np.int32)
        rows = np.arange(n)
        nodes = np.zeros(n, dtype=np.int64)
        x = np.array(coords, dtype=np.float64)
        w = np.asarray(weights, dtype=np.int64)
        outside = len(self.tree)
        while rows.size:
            stop = w[rows] <= self.max_weights[nodes]
            cubes[rows[stop]] = nodes[stop]
            files[rows[stop]] = self.files[nodes[stop]]
            go = ~stop
            rows, nodes, x = rows[go], nodes[go], x[go]
            if not rows.size:
                break
            codes = descend_one_level(x)
            children = self.tree.child(nodes, codes)
            missing = children < 0
            cubes[rows[missing]] = outside + (nodes[missing] << d) + codes[missing]
            files[rows[missing]] = self.files[nodes[missing]]
            found = ~missing
            rows, nodes, x = rows[found], children[found], x[found]
        return cubes, files

    def cube_and_threshold(self, cube_id: int) -> tuple[str, int]:
        """The cube string and block ``maxWeight`` of a cube id produced by :meth:`assign`."""
        outside = len(self.tree)
        if cube_id < outside:
            return self.tree.cubes[cube_id].string, int(self.max_weights[cube_id])
        parent, code = divmod(cube_id - outside, 1 << self.dimensions)
        return self.tree.cubes[parent].child(code).string, MAX_WEIGHT


def build_write_plan(
    dimensions: int,
    weights: Mapping[CubeId, int],
    block_sizes: Mapping[CubeId, int],
    desired_cube_size: int,
) -> WritePlan:
    """Plan the assignment: thresholds per cube and one file per rollup group (FORMAT §6.4).

    ``block_sizes`` (estimated rows per cube) drive the rollup with ``limit = desired_cube_size``;
    a cube without a rollup entry writes to the group of its nearest ancestor that has one.
    """
    tree = CubeTree(dimensions, list(weights) + list(block_sizes))
    max_weights = tree.values(dict(weights), MAX_WEIGHT, np.int64)
    groups = rollup({c: int(s) for c, s in block_sizes.items()}, desired_cube_size)
    root = CubeId.root(dimensions)
    group_ids: dict[CubeId, int] = {}
    for group in sorted(set(groups.values()) | {root}):
        group_ids[group] = len(group_ids)
    files = np.zeros(len(tree), dtype=np.int32)
    for node, cube in enumerate(tree.cubes):  # pre-order: a parent's file is known first
        if cube in groups:
            files[node] = group_ids[groups[cube]]
        elif node > 0:
            files[node] = files[tree.parents[node]]
        else:
            files[node] = group_ids[root]
    return WritePlan(tree, max_weights, files, len(group_ids))


def assigned_cube_ids(plan: WritePlan, coords: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Convenience for tests and tools: the cube strings rows are assigned to."""
    cube_ids, _ = plan.assign(coords, weights)
    uniq, inverse = np.unique(cube_ids, return_inverse=True)
    names = np.array([plan.cube_and_threshold(int(c))[0] for c in uniq], dtype=object)
    return names[inverse.reshape(-1)]
