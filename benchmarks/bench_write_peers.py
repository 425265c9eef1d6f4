"""Write throughput: ``qbeast.write`` against Spark's parquet writer and ``deltalake`` + Z-order.

Why these peers: a user who wants fewer files read per query would otherwise either write plain
parquet (cheapest, no layout) or a Delta table clustered by ``deltalake``'s Z-order optimize
(a write followed by a full rewrite). All three consume the same generated parquet chunks:
Spark reads them for ``df.write.parquet`` and ``qbeast.write``; ``deltalake`` streams them with
pyarrow. Each round writes into a fresh folder; contenders alternate within a round.

``benchmarks/bench_write.py`` (the writer's own benchmark) compares against parquet on a
Spark-generated frame; this module adds the Delta peer and the row counts of the report.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from datasets import Dataset
from measure import fresh_dir, interleaved, median, timed

logger = logging.getLogger("qbeast.benchmarks.write")


def write_parquet(spark, data: Dataset, out: Path, rows_per_file: int | None = None) -> None:
    """Spark's native parquet write of the data set (``maxRecordsPerFile`` when given)."""
    writer = data.spark_df(spark).write.mode("overwrite")
    if rows_per_file:
        writer = writer.option("maxRecordsPerFile", rows_per_file)
    writer.parquet(str(out))


def write_qbeast(spark, data: Dataset, out: Path, columns: tuple[str, ...], cube_size: int):
    import qbeast

    return qbeast.write(data.spark_df(spark), str(out), ",".join(columns), cube_size=cube_size,
                        mode="overwrite")


def write_delta(data: Dataset, out: Path) -> None:
    """``deltalake`` write of the data set, streamed batch by batch (no full load in memory)."""
    from deltalake import write_deltalake

    write_deltalake(str(out), data.arrow_dataset().scanner().to_reader(), mode="overwrite")


def zorder_delta(out: Path, columns: tuple[str, ...], target_size: int) -> dict[str, Any]:
    """``deltalake``'s Z-order optimize on ``columns``, files of about ``target_size`` bytes."""
    from deltalake import DeltaTable

    return DeltaTable(str(out)).optimize.z_order(list(columns), target_size=target_size,
                                                 max_concurrent_tasks=2)


def run(spark, data: Dataset, warm: Dataset, columns: tuple[str, ...], cube_size: int,
        zorder_target: int, repeat: int, scaling: list[Dataset]) -> dict[str, Any]:
    """Peer comparison on ``data`` (``repeat`` interleaved rounds) and qbeast scaling over sizes.

    The last round's tables are kept (their paths are returned) for the sampling and SQL
    benchmarks, which then read exactly what was measured here.
    """
    logger.info("write: warm-up on %d rows", warm.rows)
    write_parquet(spark, warm, fresh_dir("warm-parquet"))
    # The warm-up rows are few enough for the driver-local write; the measured writes are not,
    # so the warm-up runs Spark's write jobs (the path measured), not the driver's.
    local_first_write = "spark.qbeast.write.localFirstWriteBytes"
    spark.conf.set(local_first_write, "0")
    try:
        write_qbeast(spark, warm, fresh_dir("warm-qbeast"), columns, max(1000, warm.rows // 20))
    finally:
        spark.conf.unset(local_first_write)
    write_delta(warm, fresh_dir("warm-delta"))

    paths = {"parquet": fresh_dir(f"write-parquet-{data.kind}"),
             "qbeast": fresh_dir(f"write-qbeast-{data.kind}"),
             "delta": fresh_dir(f"write-delta-{data.kind}")}
    times: dict[str, list[float]] = {"parquet": [], "qbeast": [], "delta write": [],
                                     "delta z-order": [], "delta write + z-order": []}
    zorder_metrics: dict[str, Any] = {}
    qbeast_result = None
    for round_ in range(repeat):
        order = ["parquet", "qbeast", "delta"]
        shift = round_ % 3
        for name in order[shift:] + order[:shift]:
            out = fresh_dir(paths[name].name)
            if name == "parquet":
                seconds, _ = timed(lambda: write_parquet(spark, data, out))
                times["parquet"].append(seconds)
            elif name == "qbeast":
                seconds, qbeast_result = timed(lambda: write_qbeast(spark, data, out, columns, cube_size))
                times["qbeast"].append(seconds)
            else:
                w, _ = timed(lambda: write_delta(data, out))
                z, zorder_metrics = timed(lambda: zorder_delta(out, columns, zorder_target))
                times["delta write"].append(w)
                times["delta z-order"].append(z)
                times["delta write + z-order"].append(w + z)
        logger.info("write: round %d/%d rows=%d %s", round_ + 1, repeat, data.rows,
                    {k: round(v[-1], 2) for k, v in times.items()})

    medians = {k: median(v) for k, v in times.items()}
    peers = [{"writer": k, "median_s": s, "rows_per_s": data.rows / s,
              "ratio_vs_parquet": s / medians["parquet"], "times": times[k]}
             for k, s in medians.items()]

    scaling_rows = []
    for ds in scaling:
        results: list[Any] = []
        runs = interleaved({
            "parquet": lambda: write_parquet(spark, ds, fresh_dir("scaling-parquet")),
            "qbeast": lambda: results.append(write_qbeast(
                spark, ds, fresh_dir("scaling-qbeast"), ds.range_columns, cube_size)),
        }, repeat, warmup=False)
        p_runs, q_runs = runs["parquet"], runs["qbeast"]
        result = results[-1]
        q_s, p_s = median(q_runs), median(p_runs)
        scaling_rows.append({"rows": ds.rows, "qbeast_s": q_s, "parquet_s": p_s,
                             "qbeast_rows_per_s": ds.rows / q_s, "parquet_rows_per_s": ds.rows / p_s,
                             "files": len(result.files), "qbeast_times": q_runs,
                             "parquet_times": p_runs})
        logger.info("write scaling: rows=%d qbeast=%.1fs parquet=%.1fs files=%d", ds.rows, q_s, p_s,
                    len(result.files))
    return {
        "dataset": data.kind, "rows": data.rows, "columns": list(columns), "cube_size": cube_size,
        "zorder_target_bytes": zorder_target, "repeat": repeat, "peers": peers,
        "qbeast_files": len(qbeast_result.files) if qbeast_result else None,
        "zorder_files_added": zorder_metrics.get("numFilesAdded"),
        "scaling": scaling_rows, "scaling_dataset": scaling[0].kind if scaling else None,
        "scaling_columns": list(scaling[0].range_columns) if scaling else [],
        "paths": {k: str(v) for k, v in paths.items()},
    }
