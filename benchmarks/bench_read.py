"""Benchmark: how much a Qbeast read touches, against plain parquet and a Z-ordered Delta table.

One generated table (uniform ``x``, ``y`` in [0, 1), an int, a timestamp and a ~40-byte string
payload) is stored three ways in the same run:

* Qbeast, indexed on ``x,y`` (``qbeast.write``);
* plain parquet (Spark's writer, same number of files as the Qbeast table);
* Delta written by delta-rs and Z-ordered on ``x,y`` (``DeltaTable.optimize.z_order``).

For samples f in {0.01, 0.1, 0.5} and for random 2-D boxes of 1% and 10% of the space, it reports
files and bytes each layout must read. Qbeast: the files of its read plan (what ``df.inputFiles()``
shows). Parquet: every file (a sample or a filter has no file-level index; Spark opens every file
and can only skip row groups inside). Z-order: the files whose Delta min/max stats overlap the box
(data skipping as Delta readers do it); a sample reads every file (no weights).

It also times a full scan through the ``qbeast`` SQL data source (pyarrow in Python workers)
against Spark's native parquet scan of the same files, aggregating over every column so that the
native scan cannot skip columns. Runs alternate and the medians are compared.

Goals: bytes read <= 1.3·f of the table at f = 0.1; fewer files than Z-order for box queries;
data source full scan <= 1.5x the native scan.

Usage: ``.venv/bin/python benchmarks/bench_read.py [--quick] [--rows N] [--repeat N]``; writes
``benchmarks/results/read.md``. Tables are kept in ``benchmarks/.data/read-<rows>/`` (git-ignored)
and reused when present (``--rebuild`` to regenerate).
"""
from __future__ import annotations

import argparse
import logging
import math
import platform
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPORT = HERE / "results" / "read.md"
FULL_ROWS = 10_000_000
QUICK_ROWS = 1_000_000
FRACTIONS = (0.01, 0.1, 0.5)
SELECTIVITIES = (0.01, 0.1)
BOXES_PER_SELECTIVITY = 8

logger = logging.getLogger("qbeast.benchmarks.read")


def _session():
    from qbeast.spark.session import get_or_create_session

    return get_or_create_session(
        {"spark.driver.memory": "3g", "spark.sql.shuffle.partitions": "16"},
        app_name="qbeast-bench-read",
    )


def _source_df(spark, rows: int):
    from pyspark.sql import functions as F

    return spark.range(rows, numPartitions=max(2, rows // 500_000)).select(
        F.col("id"),
        F.rand(11).alias("x"),
        F.rand(23).alias("y"),
        (F.rand(5) * 1000).cast("int").alias("k"),
        (F.lit(1_700_000_000) + F.col("id")).cast("timestamp").alias("ts"),
        F.sha1(F.col("id").cast("string")).alias("payload"),
    )


def build(spark, data: Path, rows: int, cube_size: int) -> dict[str, str]:
    """Write the three layouts (skipped when already present)."""
    import deltalake
    import pyarrow.dataset as ds

    import qbeast

    paths = {"qbeast": str(data / "qbeast"), "parquet": str(data / "parquet"), "zorder": str(data / "zorder")}
    if (data / "done").exists():
        return paths
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    started = time.perf_counter()
    result = qbeast.write(_source_df(spark, rows), paths["qbeast"], "x,y", cube_size=cube_size)
    n_files = len(result.files)
    logger.info("qbeast write: %d files in %.1fs", n_files, time.perf_counter() - started)
    started = time.perf_counter()
    # microsecond timestamps (not INT96) so that delta-rs can take the same files' data as is
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    _source_df(spark, rows).repartition(n_files).write.parquet(paths["parquet"])
    logger.info("parquet write in %.1fs", time.perf_counter() - started)
    started = time.perf_counter()
    dataset = ds.dataset(paths["parquet"], format="parquet")
    deltalake.write_deltalake(paths["zorder"], dataset.scanner().to_reader())
    table = deltalake.DeltaTable(paths["zorder"])
    target = max(1, sum(f.stat().st_size for f in Path(paths["parquet"]).glob("*.parquet")) // n_files)
    table.optimize.z_order(["x", "y"], target_size=int(target))
    table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    logger.info("delta-rs z-order in %.1fs", time.perf_counter() - started)
    (data / "done").write_text("ok")
    return paths


def _zorder_files(path: str) -> list[dict]:
    import deltalake

    import pyarrow as pa

    actions = pa.table(deltalake.DeltaTable(path).get_add_actions(flatten=True)).to_pylist()
    return [
        {
            "size": a["size_bytes"],
            "x": (a.get("min.x"), a.get("max.x")),
            "y": (a.get("min.y"), a.get("max.y")),
        }
        for a in actions
    ]


def _boxes(selectivity: float, count: int, seed: int) -> list[tuple[float, float, float, float]]:
    rng = random.Random(seed)
    side = math.sqrt(selectivity)
    out = []
    for _ in range(count):
        x0, y0 = rng.uniform(0, 1 - side), rng.uniform(0, 1 - side)
        out.append((x0, x0 + side, y0, y0 + side))
    return out


def measure_files(spark, paths: dict[str, str]) -> tuple[list[tuple], dict[str, int]]:
    """Rows of (case, layout, files, bytes) and the table sizes."""
    from qbeast import QbeastTable

    table = QbeastTable.for_path(spark, paths["qbeast"])
    full_plan = table.read_plan()
    parquet_files = list(Path(paths["parquet"]).glob("*.parquet"))
    parquet_bytes = sum(f.stat().st_size for f in parquet_files)
    zorder = _zorder_files(paths["zorder"])
    zorder_bytes = sum(f["size"] for f in zorder)
    totals = {
        "qbeast_files": full_plan.total_files, "qbeast_bytes": full_plan.total_bytes,
        "parquet_files": len(parquet_files), "parquet_bytes": parquet_bytes,
        "zorder_files": len(zorder), "zorder_bytes": zorder_bytes,
    }
    rows: list[tuple] = []
    for fraction in FRACTIONS:
        plan = table.read_plan(fraction=fraction)
        rows.append((f"sample {fraction}", len(plan.files), plan.selected_bytes,
                     len(parquet_files), parquet_bytes, len(zorder), zorder_bytes))
    for selectivity in SELECTIVITIES:
        q_files, q_bytes, z_files, z_bytes = [], [], [], []
        for x0, x1, y0, y1 in _boxes(selectivity, BOXES_PER_SELECTIVITY, seed=int(selectivity * 1000)):
            condition = f"x >= {x0!r} AND x <= {x1!r} AND y >= {y0!r} AND y <= {y1!r}"
            plan = table.read_plan(filter=condition)
            q_files.append(len(plan.files))
            q_bytes.append(plan.selected_bytes)
            hit = [
                f for f in zorder
                if f["x"][0] is None or (f["x"][0] <= x1 and f["x"][1] >= x0 and f["y"][0] <= y1 and f["y"][1] >= y0)
            ]
            z_files.append(len(hit))
            z_bytes.append(sum(f["size"] for f in hit))
        rows.append((f"box {selectivity:.0%} (mean of {BOXES_PER_SELECTIVITY})",
                     statistics.mean(q_files), statistics.mean(q_bytes),
                     len(parquet_files), parquet_bytes,
                     statistics.mean(z_files), statistics.mean(z_bytes)))
    return rows, totals


def time_scans(spark, paths: dict[str, str], repeat: int) -> tuple[float, float]:
    """Median seconds of a full scan via the qbeast source and via native parquet (alternating)."""
    from qbeast import QbeastTable
    from qbeast.spark.read.dataframe import spark_schema
    from qbeast.spark.sql.sources import register

    register(spark)
    plan = QbeastTable.for_path(spark, paths["qbeast"]).read_plan()
    schema = spark_schema(plan)

    def checksum(df) -> int:
        return df.selectExpr("sum(hash(*)) AS s", "count(*) AS n").first()["n"]

    source_times, native_times = [], []
    checksum(spark.read.format("qbeast").load(paths["qbeast"]))  # warm-up
    checksum(spark.read.schema(schema).parquet(*plan.paths))
    for _ in range(repeat):
        started = time.perf_counter()
        n_source = checksum(spark.read.format("qbeast").load(paths["qbeast"]))
        source_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        n_native = checksum(spark.read.schema(schema).parquet(*plan.paths))
        native_times.append(time.perf_counter() - started)
        if n_source != n_native:
            raise RuntimeError(f"row counts differ: source {n_source}, native {n_native}")
    return statistics.median(source_times), statistics.median(native_times)


def _mb(value: float) -> str:
    return f"{value / 1e6:.1f}"


def write_report(rows_count: int, rows: list[tuple], totals: dict, scan: tuple[float, float], out: Path) -> str:
    lines = [
        "# Reading: files and bytes touched, and the SQL data source's scan speed",
        "",
        f"Table: {rows_count:,} generated rows (uniform `x`, `y`; int, timestamp, 40-char payload), "
        "written three ways in the same run by `benchmarks/bench_read.py`: Qbeast indexed on `x,y`; "
        "plain parquet with the same number of files; Delta written by delta-rs and Z-ordered on "
        "`x,y`. Sizes: "
        f"Qbeast {totals['qbeast_files']} files / {_mb(totals['qbeast_bytes'])} MB, parquet "
        f"{totals['parquet_files']} / {_mb(totals['parquet_bytes'])} MB, Z-order "
        f"{totals['zorder_files']} / {_mb(totals['zorder_bytes'])} MB.",
        "",
        "Qbeast: files of the read plan (= `df.inputFiles()`). Parquet: every file (no file-level "
        "index; Spark opens them all). Z-order: files whose Delta min/max stats overlap the box; "
        "a sample has to read every file. Boxes: random squares covering 1% / 10% of the space.",
        "",
        "| case | Qbeast files | Qbeast MB | Qbeast bytes / table | parquet files | parquet MB | Z-order files | Z-order MB | files Qbeast / Z-order |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    checks = []
    for case, q_files, q_bytes, p_files, p_bytes, z_files, z_bytes in rows:
        share = q_bytes / totals["qbeast_bytes"]
        ratio = q_files / z_files if z_files else float("nan")
        lines.append(
            f"| {case} | {q_files:g} | {_mb(q_bytes)} | {share:.3f} | {p_files} | {_mb(p_bytes)} | "
            f"{z_files:g} | {_mb(z_bytes)} | {ratio:.2f} |"
        )
        if case == "sample 0.1":
            checks.append(("bytes read at f = 0.1 <= 1.3 x 0.1 of the table", share / 0.1, share <= 0.13))
        if case.startswith("box"):
            checks.append((f"{case}: fewer files than Z-order", ratio, q_files < z_files))
    source, native = scan
    checks.append(("qbeast SQL source full scan <= 1.5x native parquet scan", source / native, source <= 1.5 * native))
    lines += [
        "",
        "Full scan (aggregate over every column, median of alternating runs):",
        "",
        "| reader | seconds | ratio to native |",
        "|---|---|---|",
        f"| `spark.read.format(\"qbeast\")` (Python source, pyarrow) | {source:.2f} | {source / native:.2f} |",
        f"| `spark.read.parquet(<same files>)` (native) | {native:.2f} | 1.00 |",
        "",
        "| goal | ratio | met |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {ratio:.2f} | {'yes' if ok else '**no**'} |" for name, ratio, ok in checks]
    lines += ["", f"Python {platform.python_version()}; {platform.machine()}; {_cpu_note()}"]
    text = "\n".join(lines) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return text


def _cpu_note() -> str:
    import os

    return f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end of the run"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,} rows instead of {FULL_ROWS:,}")
    parser.add_argument("--rows", type=int, help="row count (overrides --quick)")
    parser.add_argument("--repeat", type=int, default=3, help="timed scan runs per reader")
    parser.add_argument("--rebuild", action="store_true", help="regenerate the tables")
    parser.add_argument("--out", default=str(REPORT))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    rows_count = args.rows or (QUICK_ROWS if args.quick else FULL_ROWS)
    data = HERE / ".data" / f"read-{rows_count}"
    if args.rebuild:
        shutil.rmtree(data, ignore_errors=True)
    spark = _session()
    paths = build(spark, data, rows_count, cube_size=max(1000, rows_count // 200))
    rows, totals = measure_files(spark, paths)
    scan = time_scans(spark, paths, args.repeat)
    print(write_report(rows_count, rows, totals, scan, Path(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
