"""Cube-domain estimation and cube thresholds: the analysis pass of the write (FORMAT §6.2).

The writer must decide every cube's maximum weight before assigning a single row, from one scan
of the data, without sending rows to the driver. Following qbeast-spark's double-pass analyzer:

1. every Spark task cuts its rows into buffers of at most ``buffer_capacity`` rows and builds an
   independent *local* OTree per buffer (:func:`local_tree_domains`), with a per-cube capacity of
   ``group_cube_size`` rows; from each local tree it derives a *domain* per cube (how many rows of
   the whole input fall in the cube's region);
2. Spark sums the domains per cube (only cube-level aggregates reach the driver);
3. the driver turns the summed domains into thresholds top-down (:func:`estimate_cube_weights`)
   and into estimated block sizes for the rollup (:func:`estimated_block_sizes`).

The local tree is built level by level instead of row by row. Processing rows in ascending weight
and dropping each into the first cube of its path that accepts it is the same as: at every level,
group the rows that are still unplaced by their cube, and let each cube take its first
``group_cube_size`` rows in weight order (only rows lighter than the cube's existing threshold, for
inner cubes of the revision being appended to). A cube never accepts a row after rejecting a
lighter one, so both orders give the same trees, and the level form is a handful of numpy calls.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from qbeast.core.cube_id import CubeId, descend_one_level
from qbeast.core.revision import Revision
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT, fraction, fractions, normalized_to_weight
from qbeast.errors import InvalidOptionError
from qbeast.index.batches import ArrowMapFunction, concat_batches
from qbeast.index.points import table_points
from qbeast.index.cube_tree import CubeTree

#: Smallest per-buffer cube capacity (``CubeDomainsBuilder``'s floor).
MIN_GROUP_CUBE_SIZE = 30
#: Sampled rows a cube of the desired size must still hold, so that small cube sizes keep enough
#: rows per cube for a stable threshold (the fraction is raised to ``this / cube_size``).
MIN_SAMPLED_ROWS_PER_CUBE = 1_000
#: Schema of the rows the estimation tasks emit: one per (local tree, cube).
DOMAIN_SCHEMA = "cube string, domain double"

_NO_LIMIT = MAX_WEIGHT + 1  # a threshold no int32 weight reaches: "accept any weight"


def group_cube_size(
    desired_cube_size: int, num_partitions: int, num_elements: int, buffer_capacity: int
) -> int:
    """Per-local-tree cube capacity: the desired size split over the independent local trees.

    ``max(30, dcs // max(numPartitions, numElements // bufferCapacity))`` with integer divisions,
    as qbeast-spark computes it (e.g. 1e6, 15 partitions, 2e6 rows, 1e5 buffer -> 50000).
    """
    trees = max(num_partitions, num_elements // buffer_capacity, 1)
    return max(MIN_GROUP_CUBE_SIZE, desired_cube_size // trees)


def estimation_fraction(count: int, desired_cube_size: int, sample_rows: int) -> float:
    """Fraction of the input rows the estimation pass builds its local trees from (1.0: all).

    Why a sample is enough: thresholds depend on the *ratio* of a cube's domain to the desired
    cube size, and rows are sampled independently of their weight. Local trees built from a
    Bernoulli sample of fraction ``s`` with the desired size scaled by ``s`` accept, in every cube,
    the same weights in expectation as trees over all rows, so their domains divided by ``s``
    estimate the full domains. Transferring and sorting only the sample in Python makes the pass
    cost a JVM scan instead of about one plain parquet write (benchmarks/results/write.md).

    The fraction is ``sample_rows / count``, raised so that a cube of ``desired_cube_size`` rows
    still has :data:`MIN_SAMPLED_ROWS_PER_CUBE` sampled rows; inputs of at most ``sample_rows``
    rows, and ``sample_rows == 0``, are estimated from every row.
    """
    if sample_rows <= 0 or count <= sample_rows:
        return 1.0
    return min(1.0, max(sample_rows / count, MIN_SAMPLED_ROWS_PER_CUBE / desired_cube_size))


@dataclass(frozen=True)
class ExistingThresholds:
    """Inner-cube thresholds of the revision an append writes into, laid out for batch lookups.

    Only inner cubes (threshold below ``MAX_WEIGHT``) restrict a local tree: they accept just the
    rows lighter than their threshold. Leaves and new cubes accept any row while they have room.
    """

    tree: CubeTree
    limits: np.ndarray  # per node: the inner threshold, or _NO_LIMIT

    @classmethod
    def from_thresholds(cls, dimensions: int, thresholds: Mapping[CubeId, int]) -> ExistingThresholds:
        tree = CubeTree(dimensions, thresholds)
        inner = {c: w for c, w in thresholds.items() if w < MAX_WEIGHT}
        return cls(tree, tree.values(inner, _NO_LIMIT, np.int64))


def local_tree_domains(
    coords: np.ndarray,
    weights: np.ndarray,
    gcs: int,
    existing: ExistingThresholds | None = None,
) -> tuple[list[CubeId], np.ndarray]:
    """Build one local OTree from a buffer of points and return its cubes and their domains.

    ``coords`` is ``(n, d)`` in [0, 1], ``weights`` the rows' int32 weights. Per cube the local
    normalized weight is ``fraction(last accepted weight)`` for full or existing inner cubes and
    ``gcs / count`` (a leaf, >= 1) otherwise; domains follow bottom-up: a non-root cube's domain is
    its subtree size divided by ``1 - NW(parent)``, the root's domain is the number of points.
    """
    n, d = coords.shape
    if n == 0:
        return [], np.zeros(0)
    order = np.argsort(weights, kind="stable")
    w_sorted = np.asarray(weights, dtype=np.int64)[order]
    x = np.array(coords, dtype=np.float64)[order]
    rows = np.arange(n)  # positions in weight order of the rows still looking for a cube
    group = np.zeros(n, dtype=np.int64)
    ngroups = 1
    ex_nodes = np.zeros(n, dtype=np.int64) if existing is not None else None
    parents_per_level: list[np.ndarray] = [np.array([-1], dtype=np.int64)]
    codes_per_level: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
    counts_per_level: list[np.ndarray] = []
    nws_per_level: list[np.ndarray] = []
    while True:
        w = w_sorted[rows]
        if existing is not None and ex_nodes is not None:
            first = np.zeros(ngroups, dtype=np.int64)
            first[group] = np.arange(len(group))  # any member: a group shares its cube
            nodes = ex_nodes[first]
            limit = np.where(nodes >= 0, existing.limits[np.maximum(nodes, 0)], _NO_LIMIT)
        else:
            limit = np.full(ngroups, _NO_LIMIT, dtype=np.int64)
        by_group = np.argsort(group, kind="stable")  # keeps weight order inside each group
        starts = np.searchsorted(group[by_group], np.arange(ngroups))
        rank = np.empty(len(rows), dtype=np.int64)
        rank[by_group] = np.arange(len(rows)) - starts[group[by_group]]
        accept = (rank < gcs) & (w < limit[group])
        count = np.bincount(group[accept], minlength=ngroups)
        last = np.full(ngroups, MIN_WEIGHT, dtype=np.int64)
        np.maximum.at(last, group[accept], w[accept])
        inner = limit <= MAX_WEIGHT
        full_weight = np.where(count > 0, last, np.minimum(limit, MAX_WEIGHT))
        nw = np.where(
            inner | (count >= gcs),
            fractions(full_weight),
            gcs / np.maximum(count, 1),
        )
        counts_per_level.append(count)
        nws_per_level.append(nw)
        keep = ~accept
        if not keep.any():
            break
        rows = rows[keep]
        x = x[keep]
        codes = descend_one_level(x)
        keys = (group[keep] << d) | codes
        uniq, group = np.unique(keys, return_inverse=True)
        group = group.reshape(-1)
        ngroups = len(uniq)
        parents_per_level.append(uniq >> d)
        codes_per_level.append(uniq & ((1 << d) - 1))
        if existing is not None and ex_nodes is not None:
            ex_nodes = existing.tree.child(ex_nodes[keep], codes)
    return _domains_bottom_up(d, parents_per_level, codes_per_level, counts_per_level, nws_per_level)


def _domains_bottom_up(
    d: int,
    parents: Sequence[np.ndarray],
    codes: Sequence[np.ndarray],
    counts: Sequence[np.ndarray],
    nws: Sequence[np.ndarray],
) -> tuple[list[CubeId], np.ndarray]:
    """Subtree sizes from the deepest level up, domains per cube, cube ids top-down."""
    depth = len(counts)
    tree_sizes = [c.astype(np.float64) for c in counts]
    domains: list[np.ndarray] = [np.zeros(0)] * depth
    for level in range(depth - 1, 0, -1):
        parent_nw = nws[level - 1][parents[level]]
        # A parent whose last accepted weight is MAX_WEIGHT has NW 1; qbeast-spark would divide by
        # zero there. Such a cube keeps every weight, so its children see its whole domain.
        denominator = np.where(parent_nw < 1.0, 1.0 - parent_nw, 1.0)
        domains[level] = tree_sizes[level] / denominator
        tree_sizes[level - 1] += np.bincount(
            parents[level], weights=tree_sizes[level], minlength=len(tree_sizes[level - 1])
        )
    domains[0] = tree_sizes[0]
    cubes_by_level: list[list[CubeId]] = [[CubeId.root(d)]]
    for level in range(1, depth):
        above = cubes_by_level[level - 1]
        cubes_by_level.append(
            [above[p].child(int(c)) for p, c in zip(parents[level].tolist(), codes[level].tolist())]
        )
    cubes = [c for level in cubes_by_level for c in level]
    return cubes, np.concatenate(domains)


def partition_domains_function(
    revision: Revision,
    *,
    columns: Sequence[str],
    weight_column: str,
    gcs: int,
    buffer_capacity: int,
    existing: ExistingThresholds | None,
) -> ArrowMapFunction:
    """The ``mapInArrow`` function of the estimation pass (one output batch per local tree).

    Memory per task is bounded by ``buffer_capacity`` rows of the indexed columns plus the weight.
    """
    if buffer_capacity <= 0:
        raise InvalidOptionError(f"buffer_capacity must be a positive int, got {buffer_capacity}")

    def build(buffer: list[pa.RecordBatch]) -> pa.RecordBatch:
        table = concat_batches(buffer)
        coords = table_points(revision, table, columns)
        weights = table.column(weight_column).to_numpy()
        cubes, domains = local_tree_domains(coords, weights, gcs, existing)
        return pa.RecordBatch.from_arrays(
            [pa.array([c.string for c in cubes], pa.string()), pa.array(domains, pa.float64())],
            names=["cube", "domain"],
        )

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        buffer: list[pa.RecordBatch] = []
        buffered = 0
        for batch in batches:
            offset = 0
            while offset < batch.num_rows:
                take = min(buffer_capacity - buffered, batch.num_rows - offset)
                buffer.append(batch.slice(offset, take))
                buffered += take
                offset += take
                if buffered == buffer_capacity:
                    yield build(buffer)
                    buffer, buffered = [], 0
        if buffered:
            yield build(buffer)

    return run


def estimate_cube_weights(
    domains: Mapping[CubeId, float],
    desired_cube_size: int,
    existing: Mapping[CubeId, int] | None = None,
    input_domains: Mapping[CubeId, float] | None = None,
) -> dict[CubeId, int]:
    """Cube thresholds from the summed domains, top-down (FORMAT §6.2 c).

    ``NW(c) = 1`` (leaf) when ``domain <= dcs``, else ``NW(parent) + dcs / floor(domain)``; cubes
    under a leaf or under a cube without an estimate get none. ``existing`` holds the effective
    thresholds of the revision an append writes into: an existing cube's threshold is never raised
    (it is clamped to its current value), so the rows already stored keep satisfying the reader's
    invariant "every row is heavier than the thresholds of its ancestors".

    With ``input_domains`` (the domains of this write's rows alone), an existing cube this write
    does not reach keeps its threshold: lowering it only because its parent's was lowered would
    leave it a marker block and its files to rewrite by the next optimize although none of its
    rows changed. Keeping it is safe: the rows already stored weigh more than the parent's old
    threshold, hence more than its new, lower one.
    """
    existing = existing or {}
    nws: dict[CubeId, float] = {}
    out: dict[CubeId, int] = {}
    for cube in sorted(domains):  # pre-order: parents first
        parent = cube.parent
        if parent is None:
            parent_nw = 0.0
        else:
            if parent not in nws or nws[parent] >= 1.0:
                continue
            parent_nw = nws[parent]
        domain = domains[cube]
        current = existing.get(cube)
        if current is not None and input_domains is not None and input_domains.get(cube, 0.0) <= 0.0:
            nws[cube] = fraction(current) if current < MAX_WEIGHT else 1.0
            out[cube] = current
            continue
        nw = 1.0 if domain <= desired_cube_size else parent_nw + desired_cube_size / math.floor(domain)
        weight = normalized_to_weight(nw)
        if current is not None and current < MAX_WEIGHT and weight > current:
            weight = current
            nw = min(nw, fraction(current))
        nws[cube] = nw
        out[cube] = weight
    return out


def estimated_block_sizes(
    weights: Mapping[CubeId, int], input_domains: Mapping[CubeId, float]
) -> dict[CubeId, int]:
    """Rows each cube should receive from this write (FORMAT §6.2 d), for the rollup.

    ``floor((fraction(maxW(c)) - fraction(maxW(parent))) * inputDomain(c))`` with an absent
    threshold counting as ``MAX_WEIGHT`` and the root's parent as ``MIN_WEIGHT``.
    """
    sizes: dict[CubeId, int] = {}
    for cube, domain in input_domains.items():
        upper = fraction(weights.get(cube, MAX_WEIGHT))
        parent = cube.parent
        lower = fraction(MIN_WEIGHT if parent is None else weights.get(parent, MAX_WEIGHT))
        sizes[cube] = max(0, math.floor((upper - lower) * domain))
    return sizes
