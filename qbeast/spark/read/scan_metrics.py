"""What Spark's file scans of an executed query read, from Spark's own scan metrics.

The approximate answers report the rows and bytes they read, and the benchmarks compare reads:
both count from the ``FileSourceScanExec`` nodes of the plan that ran (files opened, bytes of
those files as the file index reports them, rows the scan returned), not from the engine's read
plan, so a qbeast read and a plain parquet read are counted by the same code.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any


@dataclass(frozen=True)
class ScanIO:
    """What Spark's file scans of one executed query opened."""

    files: int
    bytes: int
    rows_scanned: int

    def __add__(self, other: ScanIO) -> ScanIO:
        return ScanIO(self.files + other.files, self.bytes + other.bytes,
                      self.rows_scanned + other.rows_scanned)


def _children(plan: Any) -> list[Any]:
    kind = plan.getClass().getSimpleName()
    if kind == "AdaptiveSparkPlanExec":
        return [plan.executedPlan()]
    if kind.endswith("QueryStageExec"):
        return [plan.plan()]
    out, it = [], plan.children().iterator()
    while it.hasNext():
        out.append(it.next())
    return out


def _metric(plan: Any, name: str) -> int:
    metrics = plan.metrics()
    return int(metrics.apply(name).value()) if metrics.contains(name) else 0


def scan_io(df: Any, planned: Sequence[Any] = ()) -> ScanIO:
    """The scan metrics of ``df``'s executed plan (call after an action ran on ``df``).

    Sums ``numFiles`` / ``filesSize`` / ``numOutputRows`` of every parquet file scan; a query
    whose plan has none (a local relation) read nothing. A Spark Connect DataFrame's executed
    plan lives in the server, out of reach: there the figures are the engine's read plans
    ``planned`` (:class:`qbeast.spark.read.planner.ReadPlan`: files and bytes it opens, the
    rows of those files), the one place the engine's own count stands in for Spark's.
    """
    if not hasattr(df, "_jdf"):
        return ScanIO(sum(len(p.files) for p in planned), sum(p.selected_bytes for p in planned),
                      sum(p.file_rows or 0 for p in planned))
    files = size = rows = 0
    stack = [df._jdf.queryExecution().executedPlan()]
    while stack:
        plan = stack.pop()
        if plan.getClass().getSimpleName() == "FileSourceScanExec":
            files += _metric(plan, "numFiles")
            size += _metric(plan, "filesSize")
            rows += _metric(plan, "numOutputRows")
        stack.extend(_children(plan))
    return ScanIO(files, size, rows)


def collect_with_io(df: Any) -> tuple[list[Any], ScanIO]:
    """``df.collect()`` and what its file scans read."""
    rows = df.collect()
    return rows, scan_io(df)
