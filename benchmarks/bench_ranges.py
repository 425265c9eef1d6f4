"""Range queries on 2 and 3 indexed columns: files, bytes and time for three table layouts.

Layouts, all holding the same rows:

* **qbeast**: ``qbeast.write`` indexed on the queried columns; read with
  ``QbeastTable.to_df(filter=box)`` (OTree pruning, then Delta stats pruning).
* **parquet**: Spark's parquet writer with ``maxRecordsPerFile`` set to qbeast's average rows per
  file (same file count, no layout); Spark opens every file (row-group statistics may skip row
  groups inside a file, not files).
* **delta z-order**: ``deltalake`` write + ``optimize.z_order`` on the same columns, target file
  size = qbeast's average file size. The files a Delta reader opens are those whose min/max
  statistics (``DeltaTable.get_add_actions``) overlap the box on every column: the data skipping
  rule of Delta readers, cross-checked against ``deltalake``'s own fragment pruning
  (``to_pyarrow_dataset().get_fragments(filter)``). The timed read hands those files to Spark's
  parquet scan with the same filter, so all three layouts are timed on the same reader.

Files and bytes of qbeast and parquet reads come from Spark's scan metrics; every count is
checked against the exact number of qualifying rows computed with numpy from the source chunks.

Queries: for a target selectivity ``s`` on ``d`` columns, each column gets a range holding a
share ``s^(1/d)`` of its values, starting at a random quantile (seeded), so that the box holds
about ``s`` of the rows when the columns are independent (the data sets' columns are). The
achieved selectivity is measured and reported.

Ideal file count of a query on a layout: ``ceil(qualifying rows / (table rows / table files))``,
the fewest files of that layout's average size that could hold the qualifying rows.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.dataset as pads

from bench_write_peers import write_delta, write_parquet, write_qbeast, zorder_delta
from datasets import Dataset
from measure import collect_with_io, folder_bytes, fresh_dir, interleaved, median

logger = logging.getLogger("qbeast.benchmarks.ranges")


def _boxes(values: dict[str, np.ndarray], selectivity: float, count: int, seed: int):
    """``count`` boxes ``{column: (lo, hi)}`` (inclusive) of about ``selectivity`` of the rows."""
    rng = np.random.default_rng(seed)
    share = selectivity ** (1.0 / len(values))
    sorted_values = {c: np.sort(v) for c, v in values.items()}
    n = len(next(iter(values.values())))
    boxes = []
    for _ in range(count):
        box = {}
        for column, ordered in sorted_values.items():
            start = rng.uniform(0.0, 1.0 - share)
            lo = ordered[int(start * (n - 1))]
            hi = ordered[int((start + share) * (n - 1))]
            box[column] = (lo.item(), hi.item())
        boxes.append(box)
    return boxes


def _sql(box: dict[str, tuple[Any, Any]]) -> str:
    return " AND ".join(f"{c} BETWEEN {lo!r} AND {hi!r}" for c, (lo, hi) in box.items())


def _qualifying(values: dict[str, np.ndarray], box) -> int:
    mask = np.ones(len(next(iter(values.values()))), dtype=bool)
    for column, (lo, hi) in box.items():
        mask &= (values[column] >= lo) & (values[column] <= hi)
    return int(mask.sum())


class ZorderFiles:
    """The files of a Z-ordered Delta table that min/max data skipping keeps for a box."""

    def __init__(self, path: str) -> None:
        import pyarrow as pa
        from deltalake import DeltaTable

        self.table = DeltaTable(path)
        self.actions = pa.table(self.table.get_add_actions(flatten=True))
        self.path = path
        self.total_files = self.actions.num_rows
        self.total_bytes = int(sum(self.actions["size_bytes"].to_pylist()))

    def select(self, box) -> tuple[list[str], int]:
        keep = np.ones(self.total_files, dtype=bool)
        for column, (lo, hi) in box.items():
            keep &= (self.actions[f"min.{column}"].to_numpy() <= hi)
            keep &= (self.actions[f"max.{column}"].to_numpy() >= lo)
        paths = [f"{self.path}/{p}" for p, k in zip(self.actions["path"].to_pylist(), keep) if k]
        size = int(np.asarray(self.actions["size_bytes"].to_numpy())[keep].sum())
        return paths, size

    def deltalake_count(self, box) -> int:
        """Files ``deltalake``'s own pyarrow fragment pruning keeps (the cross-check)."""
        expr = None
        for column, (lo, hi) in box.items():
            part = (pads.field(column) >= lo) & (pads.field(column) <= hi)
            expr = part if expr is None else expr & part
        return len(list(self.table.to_pyarrow_dataset().get_fragments(filter=expr)))


def run_layouts(spark, data: Dataset, dims: int, cube_size: int, selectivities: list[float],
                queries: int, repeat: int, values: dict[str, np.ndarray],
                parquet_path: str | None) -> tuple[dict[str, Any], str]:
    """One data set and one column count: build the layouts, run every query on each."""
    from pyspark.sql import functions as F

    from qbeast import QbeastTable

    columns = data.range_columns[:dims]
    q_dir = fresh_dir(f"ranges-qbeast-{data.kind}-{dims}d")
    result = write_qbeast(spark, data, q_dir, columns, cube_size)
    q_files, q_bytes = folder_bytes(q_dir)
    rows_per_file = max(1, data.rows // q_files)
    if parquet_path is None:
        p_dir = fresh_dir(f"ranges-parquet-{data.kind}")
        write_parquet(spark, data, p_dir, rows_per_file)
        parquet_path = str(p_dir)
    p_files, p_bytes = folder_bytes(Path(parquet_path))
    z_dir = fresh_dir(f"ranges-zorder-{data.kind}-{dims}d")
    write_delta(data, z_dir)
    zorder_delta(z_dir, columns, max(64 * 1024, q_bytes // q_files))
    zorder = ZorderFiles(str(z_dir))
    logger.info("ranges %s %dd: layouts built qbeast files=%d parquet files=%d zorder files=%d",
                data.kind, dims, len(result.files), p_files, zorder.total_files)

    table = QbeastTable.for_path(spark, str(q_dir))
    parquet_df = spark.read.parquet(parquet_path)
    sub = {c: values[c] for c in columns}
    layouts = {"qbeast": (q_files, q_bytes), "parquet": (p_files, p_bytes),
               "delta z-order": (zorder.total_files, zorder.total_bytes)}
    out_rows = []
    for s_index, selectivity in enumerate(selectivities):
        per: dict[str, dict[str, list[float]]] = {
            name: {"files": [], "bytes": [], "time": [], "ideal": []} for name in layouts}
        achieved, mismatches = [], 0
        for box in _boxes(sub, selectivity, queries, seed=1000 * dims + s_index):
            expected = _qualifying(sub, box)
            achieved.append(expected / data.rows)
            predicate = _sql(box)
            z_paths, z_bytes = zorder.select(box)
            if zorder.deltalake_count(box) != len(z_paths):
                mismatches += 1
            seen: dict[str, Any] = {}

            def read_qbeast(predicate=predicate):
                seen["qbeast"] = collect_with_io(table.to_df(filter=predicate).agg(F.count(F.lit(1))))

            def read_parquet(predicate=predicate):
                seen["parquet"] = collect_with_io(parquet_df.filter(predicate).agg(F.count(F.lit(1))))

            def read_zorder(predicate=predicate, z_paths=z_paths):
                df = spark.read.parquet(*z_paths) if z_paths else None
                seen["delta z-order"] = (
                    collect_with_io(df.filter(predicate).agg(F.count(F.lit(1)))) if df is not None
                    else ([(0,)], None))

            times = interleaved({"qbeast": read_qbeast, "parquet": read_parquet,
                                 "delta z-order": read_zorder}, repeat)
            for name, (files_total, _bytes_total) in layouts.items():
                (count_row,), io = seen[name]
                if int(count_row[0]) != expected:
                    raise AssertionError(f"{name} returned {count_row[0]} rows for {predicate}, "
                                         f"numpy counts {expected}")
                files = io.files if io is not None else 0
                size = io.bytes if io is not None else 0
                if name == "delta z-order":
                    files, size = len(z_paths), z_bytes
                per[name]["files"].append(files)
                per[name]["bytes"].append(size)
                per[name]["time"].extend(times[name])
                per[name]["ideal"].append(math.ceil(expected / (data.rows / files_total)))
        row = {"selectivity": selectivity, "achieved": float(np.mean(achieved)),
               "queries": queries, "zorder_crosscheck_mismatches": mismatches}
        for name, (files_total, bytes_total) in layouts.items():
            row[name] = {"files": float(np.mean(per[name]["files"])),
                         "bytes": float(np.mean(per[name]["bytes"])),
                         "ideal_files": float(np.mean(per[name]["ideal"])),
                         "files_total": files_total, "bytes_total": bytes_total,
                         "time_s": median(per[name]["time"])}
        out_rows.append(row)
        logger.info("ranges %s %dd s=%s: files qbeast=%.1f parquet=%.1f zorder=%.1f (ideal %.1f)",
                    data.kind, dims, selectivity, row["qbeast"]["files"], row["parquet"]["files"],
                    row["delta z-order"]["files"], row["qbeast"]["ideal_files"])
    return ({"dataset": data.kind, "dims": dims, "columns": list(columns), "rows": data.rows,
             "cube_size": cube_size, "selectivities": out_rows}, parquet_path)


def run(spark, sets: list[Dataset], cube_size: int, selectivities: list[float], queries: int,
        repeat: int) -> list[dict[str, Any]]:
    results = []
    for data in sets:
        values = {c: np.asarray(data.arrow_dataset().to_table(columns=[c])[c].to_numpy())
                  for c in data.range_columns}
        parquet_path = None
        for dims in (2, 3):
            result, parquet_path = run_layouts(spark, data, dims, cube_size, selectivities,
                                               queries, repeat, values, parquet_path)
            results.append(result)
    return results
