"""Optimize: bytes rewritten relative to the optimized revision's bytes, and what it buys.

A table that a scheduled job appends to gets one block per cube per append; ``optimize_table``
rewrites the revision's files so that every cube is one block again. The figure of merit is the
write amplification (bytes of the files it removed and added, relative to the bytes of the
revision before), next to the effect on a 10% sample (files and bytes it reads) and the time.

Peer: the same appends into a ``deltalake`` table, then ``optimize.z_order`` on the same columns
(it rewrites every file it considers) and, separately timed on a second copy, ``optimize.compact``
(bin-packing, no clustering). Their rewritten bytes come from the metrics they return.
"""
from __future__ import annotations

import logging
from typing import Any

from datasets import Dataset
from measure import collect_with_io, fresh_dir, timed

logger = logging.getLogger("qbeast.benchmarks.optimize")


def _revision_stats(path: str) -> dict[str, int]:
    from qbeast.snapshot import QbeastSnapshot

    snapshot = QbeastSnapshot.load(path)
    files = snapshot.files_by_revision().get(snapshot.latest_revision_id, [])
    blocks = sum(len(snapshot.blocks(a)) for a in files)
    cubes = len(snapshot.index_status(snapshot.latest_revision_id).cubes)
    return {"files": len(files), "bytes": sum(int(a.size or 0) for a in files), "blocks": blocks,
            "cubes": cubes}


def _file_sizes(path: str) -> dict[str, int]:
    """Active file path (as in the log) -> size in bytes."""
    from qbeast.delta.log import DeltaLog

    return {p: int(a.size or 0) for p, a in DeltaLog.for_path(path).snapshot().files.items()}


def _sample_io(spark, path: str) -> dict[str, int]:
    from pyspark.sql import functions as F

    from qbeast import QbeastTable

    (row,), io = collect_with_io(QbeastTable.for_path(spark, path).sample(0.1).agg(F.count(F.lit(1))))
    return {"files": io.files, "bytes": io.bytes, "rows": int(row[0])}


def _delta_bytes(path: str) -> int:
    import pyarrow as pa
    from deltalake import DeltaTable

    return int(sum(pa.table(DeltaTable(path).get_add_actions(flatten=True))["size_bytes"].to_pylist()))


def run(spark, data: Dataset, columns: tuple[str, ...], cube_size: int, appends: int) -> dict[str, Any]:
    from deltalake import DeltaTable, write_deltalake

    import pyarrow.compute as pa_compute

    import qbeast
    from qbeast.operations.optimize import optimize_table

    source = data.spark_df(spark)
    q_dir = fresh_dir(f"optimize-qbeast-{data.kind}")
    z_dir, c_dir = fresh_dir(f"optimize-zorder-{data.kind}"), fresh_dir(f"optimize-compact-{data.kind}")
    arrow = data.arrow_dataset().to_table()
    step = -(-data.rows // appends)
    column_stats = {}
    for column in columns:
        values = arrow[column]
        column_stats[f"{column}_min"] = float(pa_compute.min(values).as_py())
        column_stats[f"{column}_max"] = float(pa_compute.max(values).as_py())
    append_s = 0.0
    for i in range(appends):
        part = source.filter(f"id >= {i * step} AND id < {(i + 1) * step}") if "id" in source.columns \
            else source.sample(1.0 / appends, seed=i)
        # Stats covering the whole data set keep every append in revision 1 (a narrower first
        # append would otherwise make later ones open new revisions, FORMAT §3.8).
        seconds, _ = timed(lambda: qbeast.write(part, str(q_dir), ",".join(columns),
                                                cube_size=cube_size, mode="append",
                                                column_stats=column_stats))
        append_s += seconds
        chunk = arrow.slice(i * step, step)
        write_deltalake(str(z_dir), chunk, mode="append")
        write_deltalake(str(c_dir), chunk, mode="append")
    logger.info("optimize: %d appends written (qbeast %.1fs)", appends, append_s)

    sizes_before = _file_sizes(str(q_dir))
    before, sample_before = _revision_stats(str(q_dir)), _sample_io(spark, str(q_dir))
    seconds, result = timed(lambda: optimize_table(spark, str(q_dir)))
    after, sample_after = _revision_stats(str(q_dir)), _sample_io(spark, str(q_dir))
    removed_files = sum(len(c.files_removed) for c in result.commits)
    removed_bytes = sum(sizes_before.get(p, 0) for c in result.commits for p in c.files_removed)
    sizes_after = _file_sizes(str(q_dir))
    added_bytes = sum(sizes_after.get(p, 0) for c in result.commits for p in c.files_added)
    qbeast_row = {
        "time_s": seconds, "files_removed": removed_files,
        "files_added": sum(len(c.files_added) for c in result.commits),
        "bytes_removed": removed_bytes, "bytes_added": added_bytes,
        "rewritten_ratio": added_bytes / before["bytes"] if before["bytes"] else None,
        "read_ratio": removed_bytes / before["bytes"] if before["bytes"] else None,
        "before": before, "after": after, "sample_before": sample_before,
        "sample_after": sample_after, "append_time_s": append_s,
    }

    z_bytes = _delta_bytes(str(z_dir))
    z_s, z_metrics = timed(lambda: DeltaTable(str(z_dir)).optimize.z_order(
        list(columns), target_size=max(64 * 1024, after["bytes"] // max(1, after["files"])),
        max_concurrent_tasks=2))
    c_bytes = _delta_bytes(str(c_dir))
    c_s, c_metrics = timed(lambda: DeltaTable(str(c_dir)).optimize.compact(max_concurrent_tasks=2))

    def _peer(metrics: dict[str, Any], table_bytes: int, secs: float) -> dict[str, Any]:
        import json

        added = json.loads(metrics.get("filesAdded") or "{}").get("totalSize", 0)
        removed = json.loads(metrics.get("filesRemoved") or "{}").get("totalSize", 0)
        return {"time_s": secs, "table_bytes": table_bytes, "bytes_added": added,
                "bytes_removed": removed, "files_added": metrics.get("numFilesAdded"),
                "files_removed": metrics.get("numFilesRemoved"),
                "rewritten_ratio": added / table_bytes if table_bytes else None,
                "read_ratio": removed / table_bytes if table_bytes else None}

    out = {"dataset": data.kind, "rows": data.rows, "appends": appends, "columns": list(columns),
           "cube_size": cube_size, "qbeast": qbeast_row,
           "delta z-order": _peer(z_metrics, z_bytes, z_s), "delta compact": _peer(c_metrics, c_bytes, c_s)}
    logger.info("optimize: qbeast %.1fs ratio=%s blocks %d->%d; z-order %.1fs; compact %.1fs",
                seconds, qbeast_row["rewritten_ratio"], before["blocks"], after["blocks"], z_s, c_s)
    return out
