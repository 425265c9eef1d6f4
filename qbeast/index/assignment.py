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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from qbeast.core.blocks import Block
from qbeast.core.cube_id import CubeId, descend_one_level
from qbeast.core.rollup import banded_rollup, rollup
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.core.weight_bands import (
    BAND_COUNT,
    BANDS_IN_FILES,
    BANDS_IN_ROW_GROUPS,
    band_layout,
    band_of,
    band_shares,
    shared_band_count,
)
from qbeast.index.cube_tree import CubeTree
from qbeast.index.estimation import estimate_cube_weights, estimated_block_sizes

if TYPE_CHECKING:
    from qbeast.core.index_status import IndexStatus
    from qbeast.core.revision import Revision


#: Most cells (``2**(depth * dimensions)``) of a plan's lookup grid: at most about 20 MB (one
#: dimension, 16 levels; 12 MB for two dimensions and 8 levels), built in milliseconds per task.
GRID_CELL_LIMIT = 1 << 16


@dataclass
class LookupGrid:
    """Every cell of the regular grid at ``depth`` with its path through the plan, precomputed.

    Why: walking a batch level by level compacts the row arrays and searches the tree once per
    level, which made the walk most of the write's Python time. A cell of the grid at depth ``D``
    is crossed by the same cubes at depths 0..D for every point in it, so one gather of the cell's
    row in ``thresholds`` gives each row all its stop tests at once. The cell of a coordinate is
    ``floor(x * 2**D)`` (the top ``D`` bits of ``x``, capped for ``x == 1``), exactly the choices
    :func:`qbeast.core.cube_id.descend_one_level` makes, because scaling by a power of two and
    taking the fractional part are exact in binary floating point.

    Per cell and depth: the threshold (``MAX_WEIGHT`` where the path leaves the plan, so that
    every row stops at the first cube outside it), the cube id and the file a row stopping there
    gets; per cell, the node at depth ``D`` (-1 if the path left the plan).
    """

    depth: int
    thresholds: np.ndarray  # (cells, depth + 1) int64
    cube_ids: np.ndarray  # (cells, depth + 1) int64
    files: np.ndarray  # (cells, depth + 1) int32
    last_nodes: np.ndarray  # (cells,) int64

    @classmethod
    def build(cls, plan: WritePlan) -> LookupGrid:
        tree, d = plan.tree, plan.dimensions
        deepest = max(c.depth for c in tree.cubes)
        depth = min(deepest, (GRID_CELL_LIMIT.bit_length() - 1) // d)
        count = 1 << (depth * d)
        index = np.arange(count, dtype=np.int64)
        cells = [(index >> (depth * (d - 1 - j))) & ((1 << depth) - 1) for j in range(d)]
        thresholds = np.full((count, depth + 1), MAX_WEIGHT, dtype=np.int64)
        cube_ids = np.zeros((count, depth + 1), dtype=np.int64)
        files = np.zeros((count, depth + 1), dtype=np.int32)
        nodes = np.zeros(count, dtype=np.int64)
        inside = np.ones(count, dtype=bool)
        outside = len(tree)
        for level in range(depth + 1):
            if level:
                codes = np.zeros(count, dtype=np.int64)
                for j in range(d):
                    codes |= ((cells[j] >> (depth - level)) & 1) << (d - 1 - j)
                children = tree.child(np.where(inside, nodes, -1), codes)
                left = inside & (children < 0)  # the path leaves the plan here: a leaf
                cube_ids[left, level] = outside + (nodes[left] << d) + codes[left]
                files[left, level] = plan.files[nodes[left]]
                inside &= children >= 0
                nodes = np.where(inside, children, nodes)
            thresholds[inside, level] = plan.max_weights[nodes[inside]]
            cube_ids[inside, level] = nodes[inside]
            files[inside, level] = plan.files[nodes[inside]]
        return cls(depth, thresholds, cube_ids, files, np.where(inside, nodes, -1))


@dataclass
class WritePlan:
    """Thresholds and file groups of one write, shipped to the tasks (small: cube-level only)."""

    tree: CubeTree
    max_weights: np.ndarray  # per node, int64; MAX_WEIGHT for cubes without a threshold
    files: np.ndarray  # per node, the file (rollup group) index (with bands: its threshold's band)
    file_count: int
    #: with weight bands, per node and band (qbeast.core.weight_bands) the file of the node's rows
    #: in that band; None: a cube's rows all go to ``files``
    band_files: np.ndarray | None = None
    #: with weight bands as row groups: per plan file (a "piece": one band of one rollup group)
    #: the output file it becomes a row group of; pieces of one output file are numbered in band
    #: order. None: every plan file is an output file.
    row_group_files: np.ndarray | None = None
    _grid: LookupGrid | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def dimensions(self) -> int:
        return self.tree.dimensions

    @property
    def output_file_count(self) -> int:
        """Files the write publishes: the plan files, or the files that hold their band pieces."""
        if self.row_group_files is None:
            return self.file_count
        return int(self.row_group_files.max()) + 1 if len(self.row_group_files) else 0

    def assign(self, coords: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cube ids (see the module docstring) and file indexes of the given rows.

        ``coords`` is ``(n, d)`` in [0, 1] (not modified), ``weights`` the int32 row weights.
        Rows first go through the plan's :class:`LookupGrid` (every level down to the grid's depth
        in one gather); the few rows heavier than every threshold on that stretch of their path
        continue level by level from the grid's last cube.
        """
        n, d = coords.shape
        cubes = np.empty(n, dtype=np.int64)
        files = np.empty(n, dtype=np.int32)
        w = np.asarray(weights, dtype=np.int64)
        grid = self.lookup_grid()
        depth = grid.depth
        scaled = np.array(coords, dtype=np.float64) * float(1 << depth)  # exact: a power of two
        cells = np.minimum(np.floor(scaled), float((1 << depth) - 1)).astype(np.int64)
        packed = np.zeros(n, dtype=np.int64)
        for j in range(d):
            packed |= cells[:, j] << (depth * (d - 1 - j))
        stop = w[:, None] <= grid.thresholds[packed]
        level = stop.argmax(axis=1)
        placed = stop[np.arange(n), level]
        cubes[:] = grid.cube_ids[packed, level]
        files[:] = grid.files[packed, level]
        rest = np.flatnonzero(~placed)
        if rest.size:
            # their cube at the grid's depth exists and is too light: go on below it, with the
            # coordinates relative to that cube (x * 2**depth minus its integer part, exact)
            self._walk(cubes, files, w, rest, grid.last_nodes[packed[rest]],
                       scaled[rest] - cells[rest])
        if self.band_files is not None:
            outside = len(self.tree)
            nodes = np.where(cubes < outside, cubes, (cubes - outside) >> d)
            files[:] = self.band_files[nodes, band_of(w)]
        return cubes, files

    def _walk(self, cubes: np.ndarray, files: np.ndarray, w: np.ndarray, rows: np.ndarray,
              nodes: np.ndarray, x: np.ndarray) -> None:
        """Level-by-level walk of ``rows`` from ``nodes`` (``x`` relative to them), in place."""
        d = self.dimensions
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

    def lookup_grid(self) -> LookupGrid:
        """The plan's :class:`LookupGrid`, built on first use (in the task, not shipped)."""
        if self._grid is None:
            self._grid = LookupGrid.build(self)
        return self._grid

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_grid"] = None  # rebuilt where it is used: cheaper than shipping it
        return state

    def cube_and_threshold(self, cube_id: int) -> tuple[str, int]:
        """The cube string and block ``maxWeight`` of a cube id produced by :meth:`assign`."""
        outside = len(self.tree)
        if cube_id < outside:
            return self.tree.cubes[cube_id].string, int(self.max_weights[cube_id])
        parent, code = divmod(cube_id - outside, 1 << self.dimensions)
        return self.tree.cubes[parent].child(code).string, MAX_WEIGHT

    def block(self, cube_id: int, count: int, min_weight: int) -> Block:
        """The block of ``count`` rows of cube ``cube_id`` (from :meth:`assign`) whose lowest
        weight is ``min_weight``; its ``maxWeight`` is the cube's threshold."""
        cube, threshold = self.cube_and_threshold(cube_id)
        return Block(cube, min_weight, threshold, count)


def build_write_plan(
    dimensions: int,
    weights: Mapping[CubeId, int],
    block_sizes: Mapping[CubeId, int],
    desired_cube_size: int,
    weight_bands: bool | str = False,
    table_rows: int | None = None,
) -> WritePlan:
    """Plan the assignment: thresholds per cube and one file per rollup group (FORMAT §6.4).

    ``block_sizes`` (estimated rows per cube) drive the rollup with ``limit = desired_cube_size``;
    a cube without a rollup entry writes to the group of its nearest ancestor that has one.
    With ``weight_bands`` each cube's rows are split by weight band into groups of
    :func:`qbeast.core.rollup.banded_rollup` (rows per band estimated from the cube's weight
    range, :func:`qbeast.core.weight_bands.band_shares`), so one cube may get a block in several
    files, each with the cube's threshold as ``maxWeight``. ``table_rows`` (the table's rows
    once the write commits, at least the rows of ``block_sizes``; ``None`` when the log does not
    know them: files without statistics) bounds which of the lightest bands share a file in
    that layout (:func:`qbeast.core.weight_bands.shared_band_count`).

    ``weight_bands`` names the layout (:data:`qbeast.core.weight_bands.LAYOUTS`): ``True`` or
    ``"files"`` as above; ``"rowGroups"`` keeps the rollup's files (one block per cube, as
    without bands) and splits each file's rows by band into pieces, plan files of their own that
    the writer joins in band order as the row groups of one file (:attr:`WritePlan.
    row_group_files`), so a sample reads a prefix of a file; ``False`` or ``"false"``: no bands.
    """
    layout = band_layout(weight_bands)
    tree = CubeTree(dimensions, list(weights) + list(block_sizes))
    max_weights = tree.values(dict(weights), MAX_WEIGHT, np.int64)
    rows = max(sum(int(round(s)) for s in block_sizes.values()), table_rows or 0)
    if layout == BANDS_IN_FILES:
        return _banded_plan(tree, max_weights, block_sizes, desired_cube_size,
                            shared_band_count(rows, desired_cube_size))
    files, count = _rollup_files(tree, block_sizes, desired_cube_size)
    if layout == BANDS_IN_ROW_GROUPS:
        return _row_group_plan(tree, max_weights, files, count)
    return WritePlan(tree, max_weights, files, count)


def _rollup_files(tree: CubeTree, block_sizes: Mapping[CubeId, int],
                  desired_cube_size: int) -> tuple[np.ndarray, int]:
    """Per node its rollup group (file) index, and the number of groups (FORMAT §6.4)."""
    dimensions = tree.dimensions
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
    return files, len(group_ids)


def _row_group_plan(tree: CubeTree, max_weights: np.ndarray, groups: np.ndarray,
                    group_count: int) -> WritePlan:
    """:func:`build_write_plan` with weight bands as row groups: one piece per (group, band).

    A node's rows (and those of its children outside the plan, which share its group) weigh more
    than its parent's threshold, so a group gets pieces from the band of its lightest possible
    row up to the last band. Every band is a piece of its own, however few rows it holds: a piece
    is a row group, not a file, so a light one costs a few footer entries, while a piece shared
    by several light bands is read whole by every sample below its top edge, in every later
    version of the table (the bands-in-files layout shares them by the table's size at write
    time; here that made the early files of a growing table read up to 20% of their rows for a
    5% sample). Which piece a row lands in only decides how much of a file a sample reads: the
    writer records each piece's true lowest weight in the file, and a reader reads every row
    group up to the last one that can hold a sampled row.
    """
    parents = np.asarray(tree.parents, dtype=np.int64)
    lower = np.where(parents >= 0, max_weights[np.maximum(parents, 0)], MIN_WEIGHT - 1)
    lowest = np.full(group_count, BAND_COUNT - 1, dtype=np.int64)
    np.minimum.at(lowest, groups, band_of(np.minimum(lower + 1, MAX_WEIGHT)))
    piece_ids = np.full((group_count, BAND_COUNT), -1, dtype=np.int32)
    owners: list[int] = []
    for group in range(group_count):
        for band in range(int(lowest[group]), BAND_COUNT):
            piece_ids[group, band] = len(owners)
            owners.append(group)
    # every band maps to a piece of the node's group: its own piece, or (bands a row of the
    # group cannot reach) the group's first piece
    first = piece_ids[np.arange(group_count), lowest]
    by_band = np.where(piece_ids >= 0, piece_ids, first[:, None])
    band_files = by_band[groups]
    files = band_files[np.arange(len(tree)), band_of(np.minimum(max_weights, MAX_WEIGHT))]
    return WritePlan(tree, max_weights, files.astype(np.int32), len(owners),
                     band_files.astype(np.int32), np.asarray(owners, dtype=np.int32))


def _banded_plan(tree: CubeTree, max_weights: np.ndarray, block_sizes: Mapping[CubeId, int],
                 desired_cube_size: int, shared_bands: int) -> WritePlan:
    """:func:`build_write_plan` with weight bands: files per (node, band)."""
    root = CubeId.root(tree.dimensions)
    sizes: dict[CubeId, list[int]] = {}
    for cube, size in block_sizes.items():
        node = tree.index[cube]
        low = int(max_weights[tree.parents[node]]) if node > 0 else MIN_WEIGHT - 1
        sizes[cube] = [int(round(s)) for s in band_shares(low, int(max_weights[node])) * int(size)]
    sizes.setdefault(root, [0] * BAND_COUNT)
    groups = banded_rollup(sizes, desired_cube_size, shared_bands)
    group_ids: dict[tuple[CubeId, int], int] = {}
    for group in sorted(set(groups.values()), key=lambda g: (g[0], g[1])):
        group_ids[group] = len(group_ids)
    band_files = np.zeros((len(tree), BAND_COUNT), dtype=np.int32)
    for node, cube in enumerate(tree.cubes):  # pre-order: a parent's files are known first
        for band in range(BAND_COUNT):
            target = groups.get((cube, band))
            if target is not None:
                band_files[node, band] = group_ids[target]
            else:  # the root has a group in every band
                band_files[node, band] = band_files[tree.parents[node], band]
    files = band_files[np.arange(len(tree)), band_of(np.minimum(max_weights, MAX_WEIGHT))]
    return WritePlan(tree, max_weights, files.astype(np.int32), len(group_ids), band_files)


def assigned_cube_ids(plan: WritePlan, coords: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Convenience for tests and tools: the cube strings rows are assigned to."""
    cube_ids, _ = plan.assign(coords, weights)
    uniq, inverse = np.unique(cube_ids, return_inverse=True)
    names = np.array([plan.cube_and_threshold(int(c))[0] for c in uniq], dtype=object)
    return names[inverse.reshape(-1)]


def plan_from_domains(revision: Revision, input_domains: dict[CubeId, float], *,
                      count: int, sampled: float, existing: IndexStatus | None,
                      thresholds: Any, desired_cube_size: int, table_rows: int | None,
                      weight_bands: str) -> WritePlan:
    """The write plan from the input's summed local-tree domains (what the estimation's tasks
    return, :func:`qbeast.index.estimation.partition_domains_function`): scaled to the input's
    rows when they were sampled, added to the ``existing`` index's domains, then thresholds,
    block sizes and the plan. The driver's half of the Spark estimation
    (:func:`qbeast.spark.write.steps.analyze`) and of the driver-local append
    (:mod:`qbeast.spark.write.local`)."""
    desired = desired_cube_size
    dims = revision.dimension_count
    root = CubeId.root(dims)
    realized = input_domains.get(root, 0.0)
    if sampled < 1.0 and realized > 0:
        # Every sampled row passes through its local tree's root, so the summed root domain is the
        # realized sample size. Scaling by count / that size (a ratio estimate) instead of by
        # 1 / fraction removes the Bernoulli noise of the sample size, and the root's domain is
        # the exact row count as in a full estimation (its threshold exactly cube_size / rows,
        # where 1 / fraction once put it 0.03% below and a 1% sample of 20M rows read 5 files).
        scale = count / realized
        input_domains = {cube: domain * scale for cube, domain in input_domains.items()}
        input_domains[root] = float(count)
    domains = dict(input_domains)
    if existing is not None and len(existing):
        for cube, domain in existing.cube_domains().items():
            domains[cube] = domains.get(cube, 0.0) + domain
    weights = estimate_cube_weights(domains, desired, thresholds, input_domains=input_domains)
    sizes = estimated_block_sizes(weights, input_domains)
    return build_write_plan(dims, weights, sizes, desired, weight_bands=weight_bands,
                            table_rows=max(round(domains.get(root, float(count))), table_rows or 0))
