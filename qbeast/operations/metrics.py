"""Index metrics of one revision: how well the OTree is shaped (the numbers qbeast-spark prints).

The figures come from the block tags alone (no data is read): cube, block and file counts, the
tree's height and average fanout, bytes, and the distribution of element counts per cube, per
block and per depth. A healthy index has cubes close to the desired cube size at the inner
levels, few blocks per cube (``optimize`` brings it to one) and a fanout close to ``2**d`` near
the root.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from qbeast.core.weight import MAX_WEIGHT, fraction
from qbeast.errors import InvalidOptionError
from qbeast.operations.common import OperationResult, check_optional_int, check_path, format_table
from qbeast.snapshot import NotAQbeastTableError, QbeastSnapshot


@dataclass(frozen=True)
class SizeStats:
    """Distribution of a list of sizes: count, min, max, mean, population stddev, quartiles."""

    count: int
    min: int | None
    max: int | None
    mean: float | None
    stddev: float | None
    p25: float | None
    p50: float | None
    p75: float | None

    @classmethod
    def of(cls, values: Sequence[int]) -> SizeStats:
        if not values:
            return cls(0, None, None, None, None, None, None, None)
        ordered = sorted(values)
        n = len(ordered)
        mean = sum(ordered) / n
        stddev = math.sqrt(sum((v - mean) ** 2 for v in ordered) / n)
        return cls(n, ordered[0], ordered[-1], mean, stddev,
                   _quantile(ordered, 0.25), _quantile(ordered, 0.5), _quantile(ordered, 0.75))

    def text(self) -> str:
        if self.count == 0:
            return "(none)"
        return (f"min {self.min}, max {self.max}, mean {self.mean:.1f}, stddev {self.stddev:.1f}, "
                f"p25 {self.p25:g}, p50 {self.p50:g}, p75 {self.p75:g} (n={self.count})")


def _quantile(ordered: Sequence[int], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default method)."""
    pos = (len(ordered) - 1) * q
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (pos - low))


@dataclass(frozen=True)
class DepthMetrics:
    """The cubes of one tree level: how many, how full, and their average threshold."""

    depth: int
    cube_count: int
    element_count: int
    cube_element_count: SizeStats
    inner_cube_count: int
    avg_max_weight_fraction: float | None
    block_count: int = 0
    file_count: int = 0  # files holding a block of a cube at this depth


@dataclass(frozen=True)
class IndexMetrics(OperationResult):
    """Shape of the OTree of one revision (see the module docstring)."""

    path: str
    revision_id: int
    indexed_columns: tuple[str, ...]
    dimension_count: int
    desired_cube_size: int
    element_count: int
    cube_count: int
    block_count: int
    file_count: int
    bytes: int
    height: int
    avg_fanout: float | None
    cube_element_count: SizeStats
    block_element_count: SizeStats
    blocks_per_cube: SizeStats
    blocks_per_file: SizeStats
    file_bytes: SizeStats
    depths: tuple[DepthMetrics, ...]

    def summary_lines(self) -> list[str]:
        fanout = "-" if self.avg_fanout is None else f"{self.avg_fanout:.3f}"
        lines = [
            f"OTree index metrics of {self.path}",
            f"revision id:          {self.revision_id}",
            f"indexed columns:      {', '.join(self.indexed_columns)}",
            f"dimensions:           {self.dimension_count}",
            f"desired cube size:    {self.desired_cube_size}",
            f"element count:        {self.element_count}",
            f"height:               {self.height}",
            f"average fanout:       {fanout} (of at most {2 ** self.dimension_count})",
            f"cubes:                {self.cube_count}",
            f"blocks:               {self.block_count}",
            f"files:                {self.file_count}",
            f"bytes:                {self.bytes}",
            "",
            f"elements per cube:    {self.cube_element_count.text()}",
            f"elements per block:   {self.block_element_count.text()}",
            f"blocks per cube:      {self.blocks_per_cube.text()}",
            f"blocks per file:      {self.blocks_per_file.text()}",
            f"bytes per file:       {self.file_bytes.text()}",
            "",
            "per depth:",
        ]
        rows = [
            (
                d.depth, d.cube_count, d.element_count, d.cube_element_count.min,
                d.cube_element_count.max, d.cube_element_count.mean, d.cube_element_count.stddev,
                d.inner_cube_count, d.avg_max_weight_fraction,
            )
            for d in self.depths
        ]
        lines += format_table(
            ("depth", "cubes", "elements", "min", "max", "mean", "stddev", "inner", "avg maxWeight"),
            rows,
        )
        return lines


def index_metrics(path: str, revision_id: int | None = None) -> IndexMetrics:
    """Metrics of revision ``revision_id`` (default: the latest) of the Qbeast table at ``path``.

    The staging revision 0 has no OTree: its files are reported as one root cube whose element
    count comes from the files' Delta statistics.
    """
    check_path(path)
    check_optional_int(revision_id, "revision_id", 0)
    snapshot = QbeastSnapshot.load(path)
    if not snapshot.is_qbeast:
        raise NotAQbeastTableError(
            f"index_metrics needs a Qbeast table, but {snapshot.table_path} has no Qbeast metadata; "
            "convert it with qbeast.convert_to_qbeast first"
        )
    rid = snapshot.latest_revision_id if revision_id is None else revision_id
    if rid not in snapshot.revisions:
        raise InvalidOptionError(
            f"revision_id {rid} does not exist in {snapshot.table_path}; "
            f"allowed values: {sorted(snapshot.revisions)}"
        )
    return metrics_of_snapshot(snapshot, rid)


def metrics_of_snapshot(snapshot: QbeastSnapshot, revision_id: int) -> IndexMetrics:
    """:func:`index_metrics` on an already loaded snapshot."""
    revision = snapshot.revision(revision_id)
    files = snapshot.revision_files(revision_id)
    status = snapshot.index_status(revision_id)
    staging = revision_id == 0
    blocks_per_file = [len(snapshot.blocks(f)) for f in files]
    cube_counts: list[int] = []
    block_counts: list[int] = []
    blocks_per_cube: list[int] = []
    for cube in status:
        count = cube.element_count
        if staging:
            count = sum(f.num_records or 0 for f in files)
        cube_counts.append(count)
        blocks_per_cube.append(len(cube.blocks))
        block_counts.extend(fb.block.element_count for fb in cube.blocks)
    if staging:
        block_counts = [f.num_records or 0 for f in files]

    present = {c.cube for c in status}
    children: dict[object, int] = {}
    for cube_id in present:
        parent = cube_id.parent
        if parent is not None and parent in present:
            children[parent] = children.get(parent, 0) + 1
    avg_fanout = sum(children.values()) / len(children) if children else None

    by_depth: dict[int, list] = {}
    for cube, count in zip(status, cube_counts):
        by_depth.setdefault(cube.cube.depth, []).append((cube, count))
    depths = []
    for depth in sorted(by_depth):
        entries = by_depth[depth]
        inner = [c for c, _ in entries if c.max_weight < MAX_WEIGHT]
        depths.append(
            DepthMetrics(
                depth=depth,
                cube_count=len(entries),
                element_count=sum(n for _, n in entries),
                cube_element_count=SizeStats.of([n for _, n in entries]),
                inner_cube_count=len(inner),
                avg_max_weight_fraction=(
                    sum(fraction(c.max_weight) for c in inner) / len(inner) if inner else None
                ),
                block_count=len(files) if staging else sum(len(c.blocks) for c, _ in entries),
                file_count=len(files) if staging else len({p for c, _ in entries for p in c.files}),
            )
        )
    sizes = [f.size for f in files]
    return IndexMetrics(
        path=snapshot.table_path,
        revision_id=revision_id,
        indexed_columns=tuple(revision.columns),
        dimension_count=revision.dimension_count,
        desired_cube_size=revision.desired_cube_size,
        element_count=sum(cube_counts),
        cube_count=len(status),
        block_count=sum(blocks_per_file),
        file_count=len(files),
        bytes=sum(sizes),
        height=(max(by_depth) + 1) if by_depth else 0,
        avg_fanout=avg_fanout,
        cube_element_count=SizeStats.of(cube_counts),
        block_element_count=SizeStats.of(block_counts),
        blocks_per_cube=SizeStats.of(blocks_per_cube),
        blocks_per_file=SizeStats.of(blocks_per_file),
        file_bytes=SizeStats.of(sizes),
        depths=tuple(depths),
    )
