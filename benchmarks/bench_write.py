"""Benchmark: ``qbeast.write`` against plain ``df.write.parquet`` on the same generated DataFrame.

Why: an indexing write reads its input three times (stats, estimation, write), moves the indexed
columns through Python and shuffles every row by file, so its cost must be tracked against the
cheapest way Spark can persist the same data. The script writes one generated DataFrame per size
with both methods (after a warm-up that starts the JVM and the Python workers), and reports in
``benchmarks/results/write.md``:

* the time ratio qbeast / parquet per size (goal: <= 1.5);
* a second baseline, the **shuffle floor**: the same rows hash-partitioned by the indexed columns
  into as many files as qbeast wrote, then written by Spark's parquet writer. It is what moving
  every row to the task that writes its file costs — a price any layout that groups rows into
  files by cube pays (qbeast-spark's writer repartitions by cube too) — before any indexing work,
  so qbeast / floor is the overhead of the index itself;
* how each method's time grows from one size to the next (linear growth = the size factor).

Hand-written sections of an existing report (from its first ``## `` heading on) are kept.

Usage: ``.venv/bin/python benchmarks/bench_write.py [--quick] [--sizes 1000000,4000000,16000000]
[--cube-size N] [--columns a,b]``. Not part of the test suite.
"""
from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from measure import interleaved, median  # noqa: E402

FULL_SIZES = (1_000_000, 4_000_000, 16_000_000)
QUICK_SIZES = (100_000, 400_000, 1_600_000)


def generated(spark, rows: int):
    """A DataFrame with numeric, string, date and timestamp columns, cheap to regenerate."""
    return spark.range(0, rows, numPartitions=max(2, rows // 1_000_000)).selectExpr(
        "id",
        "rand(1) * 1000 as price",
        "cast(rand(2) * 100000 as int) as user_id",
        "concat('brand-', cast(cast(rand(3) * 500 as int) as string)) as brand",
        "date_add(date'2020-01-01', cast(rand(4) * 1500 as int)) as day",
        "timestamp_micros(1600000000000000 + cast(rand(5) * 1e14 as bigint)) as ts",
    )


def run(sizes, cube_size: int, columns: str, out: Path, repeat: int = 3) -> list[dict]:
    from pyspark.sql import functions as F

    import qbeast
    from qbeast.spark.session import get_or_create_session

    spark = get_or_create_session(
        {"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "8"},
        master="local[2]", app_name="bench-write",
    )
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="bench-write-"))
    try:
        warm = generated(spark, 50_000)
        warm.write.mode("overwrite").parquet(str(work / "warm-parquet"))
        qbeast.write(warm, str(work / "warm-qbeast"), columns, cube_size=5_000, mode="overwrite")
        results = []
        for rows in sizes:
            df = generated(spark, rows)
            dirs = {name: work / f"{name}-{rows}" for name in ("parquet", "qbeast", "floor")}
            written: list = []

            def floor():
                # as many files as qbeast's last write produced (qbeast runs before the floor in
                # the first round, and the rotation never puts the floor first before that)
                files = len(written[-1].files)
                (df.repartition(files, *[F.col(c) for c in columns.split(",")])
                 .write.mode("overwrite").parquet(str(dirs["floor"])))

            runs = interleaved({  # the order rotates between rounds so drift hits all alike
                "parquet": lambda: df.write.mode("overwrite").parquet(str(dirs["parquet"])),
                "qbeast": lambda: written.append(qbeast.write(
                    df, str(dirs["qbeast"]), columns, cube_size=cube_size, mode="overwrite")),
                "floor": floor,
            }, repeat, warmup=False)
            times = {name: median(values) for name, values in runs.items()}
            files = len(written[-1].files)  # active files (overwrites leave the old ones on disk)
            results.append({"rows": rows, **times, "files": files})
            print(f"rows={rows:>11,} parquet={times['parquet']:7.2f}s floor={times['floor']:7.2f}s "
                  f"qbeast={times['qbeast']:7.2f}s ratio={times['qbeast'] / times['parquet']:5.2f} "
                  f"files={files}", flush=True)
            for folder in dirs.values():
                shutil.rmtree(folder, ignore_errors=True)
        write_report(out, results, cube_size, columns, repeat)
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_report(out: Path, results: list[dict], cube_size: int, columns: str, repeat: int) -> None:
    lines = [
        "# Write benchmark: qbeast.write vs df.write.parquet",
        "",
        f"Run {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC on {platform.node()} "
        f"({os.cpu_count()} cores, Spark local[2]); indexed columns `{columns}`, "
        f"cube size {cube_size:,}; medians of {repeat} alternating runs per size, load average "
        f"{os.getloadavg()[0]:.1f} at the end. Generated by `benchmarks/bench_write.py`.",
        "",
        "| rows | parquet (s) | shuffle floor (s) | qbeast (s) | qbeast/parquet | floor/parquet "
        "| qbeast/floor | qbeast files |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['rows']:,} | {r['parquet']:.2f} | {r['floor']:.2f} | {r['qbeast']:.2f} | "
            f"{r['qbeast'] / r['parquet']:.2f} | {r['floor'] / r['parquet']:.2f} | "
            f"{r['qbeast'] / r['floor']:.2f} | {r['files']} |"
        )
    lines += [
        "",
        "The shuffle floor is the same DataFrame hash-partitioned by the indexed columns into as "
        "many files as qbeast wrote, then written by Spark's parquet writer: the cost of moving "
        "every row to the task that writes its file, which any layout grouping rows into files by "
        "cube pays, before any indexing work.",
    ]
    lines += [
        "",
        "Growth between consecutive sizes (time ratio; linear growth equals the size factor):",
        "",
        "| from → to | size factor | parquet growth | qbeast growth |",
        "|---|---:|---:|---:|",
    ]
    for a, b in zip(results, results[1:]):
        lines.append(
            f"| {a['rows']:,} → {b['rows']:,} | {b['rows'] / a['rows']:.1f} | "
            f"{b['parquet'] / a['parquet']:.2f} | {b['qbeast'] / a['qbeast']:.2f} |"
        )
    lines += ["", "Goal: ratio <= 1.5 and growth close to the size factor.", ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    kept = ""
    if out.exists():  # hand-written analysis below the generated part survives a re-run
        previous = out.read_text()
        start = previous.find("\n## ")
        kept = previous[start + 1:] if start >= 0 else ""
    out.write_text("\n".join(lines) + ("\n" + kept if kept else ""))
    print(f"report written to {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}")
    parser.add_argument("--sizes", help="comma-separated row counts (overrides --quick)")
    parser.add_argument("--cube-size", type=int, default=100_000)
    parser.add_argument("--columns", default="price,user_id")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size and method (medians)")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "write.md"))
    args = parser.parse_args(argv)
    sizes = (
        tuple(int(s) for s in args.sizes.split(","))
        if args.sizes else (QUICK_SIZES if args.quick else FULL_SIZES)
    )
    logging.basicConfig(level=logging.WARNING)
    run(sizes, args.cube_size, args.columns, Path(args.out), args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
