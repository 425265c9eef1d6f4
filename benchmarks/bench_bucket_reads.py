"""Benchmark: the ways Spark reads a Qbeast table on an S3-compatible store, side by side.

A session reaches an object-store table's data files in one of four ways
(docs/object-stores.md): **local copies** (``spark.qbeast.storage.bridgeFiles=copies``, the
``local[*]`` default without a connector: each file downloaded whole once, then read from the
local disk), **signed URLs** (``bridgeFiles=signed``, a cluster master's default without a
connector: Spark's parquet reader fetches ranges of each file from a URL the driver signed),
**Arrow tasks** (Spark Connect, or a cluster without the bridge jar: Python tasks read the files
through the storage layer and hand Spark Arrow batches) and **Hadoop's S3A connector**
(``bridgeFiles=hadoop``, what ``auto`` picks on a cluster with hadoop-aws on its class path; run when
``make hadoop-aws`` fetched it). This runs the same DataFrame reads each way on one table in
moto's S3 server on loopback, and reports time and GET requests as ratios to warm local copies
(a read from the local disk, the fastest a bucket table can be read here), plus cold copies (an
empty mirror: the download included).

The queries: a full scan (``count`` and ``sum`` over two columns), a 1% sample, and a filter on
an indexed column (about 5% of the rows). Rounds interleave the contenders; the medians count.

moto is a Python server on the same two cores as Spark, so every GET costs more CPU here than
against S3 and the request-heavy ways (signed URLs, Arrow tasks) look worse than they would on
a real store, while a real network's latency would cost them more per request than loopback
does. Read the ratios as an order, not as a forecast.

Usage: ``.venv/bin/python benchmarks/bench_bucket_reads.py [--rows N] [--cube-size C] [--rounds R]``
(the committed report: ``--rows 8000000 --cube-size 200000``); writes
``benchmarks/results/bucket_reads.md``.
"""
from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPORT = HERE / "results" / "bucket_reads.md"
sys.path.insert(0, str(HERE))

from bench_object_store import BUCKET, _start_server  # noqa: E402

logger = logging.getLogger("qbeast.benchmarks.bucket_reads")

MODES = ("copies, warm", "signed URLs", "Arrow tasks", "copies, cold")
HADOOP = "Hadoop s3a"
#: the bridgeFiles setting of each mode Spark's parquet reader runs
_SETTING = {"copies, warm": "copies", "copies, cold": "copies", "signed URLs": "signed",
            HADOOP: "hadoop"}
QUERIES = {
    "full scan: count, sum(price), max(user_id)": (None, None),
    "1% sample: count": (0.01, None),
    "filter user_id < 500: count": (None, "user_id < 500"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cube-size", type=int, default=100_000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    server, endpoint, counter = _start_server()
    import qbeast
    from pyspark.sql import functions as F
    from s3_server import hadoop_aws_jars, s3a_session_conf  # tests/, on the path (above)

    from qbeast.spark.read.arrow_tasks import tasks_dataframe
    from qbeast.spark.read.dataframe import spark_schema

    jars = hadoop_aws_jars()
    modes = MODES + ((HADOOP,) if jars else ())
    if not jars:
        logger.warning("no hadoop-aws jars (make hadoop-aws): the S3A connector is not measured")
    mirror = tempfile.mkdtemp(prefix="qbeast-bench-mirror-")
    spark = qbeast.get_or_create_session({"spark.qbeast.storage.mirrorDir": mirror,
                                          "spark.sql.shuffle.partitions": "4",
                                          "spark.driver.memory": "6g",
                                          **(s3a_session_conf(endpoint, jars) if jars else {})},
                                         master="local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    path = f"s3://{BUCKET}/reads"
    events = spark.range(0, args.rows).selectExpr(
        "id", "cast(rand(7) * 10000 as int) as user_id", "round(rand(8) * 500, 2) as price",
        "concat('device-', cast(rand(9) * 50 as int)) as device")
    written = qbeast.write(events, path, columns_to_index="user_id,price", cube_size=args.cube_size)
    table = qbeast.QbeastTable.for_path(spark, path)
    files_dir = Path(mirror) / "files"

    def result_of(df: Any, full: bool) -> tuple:
        if full:
            row = df.agg(F.count("*"), F.sum(F.round(F.col("price") * 100).cast("long")),
                         F.max("user_id")).first()
            return (row[0], row[1], row[2])
        return (df.count(),)

    def api_read(mode: str, fraction: float | None, where: str | None) -> Callable[[], tuple]:
        def run() -> tuple:
            spark.conf.set("spark.qbeast.storage.bridgeFiles", _SETTING[mode])
            if mode == "copies, cold":
                shutil.rmtree(files_dir, ignore_errors=True)
            df = table.sample(fraction) if fraction else table.to_df(filter=where)
            return result_of(df, fraction is None and where is None)
        return run

    def arrow_read(fraction: float | None, where: str | None) -> tuple:
        plan = table.read_plan(fraction=fraction, filter=where)
        df = tasks_dataframe(spark, plan, spark_schema(plan))
        if where:
            df = df.filter(where)
        # the tasks apply the sample's weight range themselves
        return result_of(df, fraction is None and where is None)

    rows: list[dict[str, Any]] = []
    for query, (fraction, where) in QUERIES.items():
        cases: dict[str, Callable[[], tuple]] = {
            mode: (api_read(mode, fraction, where) if mode != "Arrow tasks"
                   else (lambda f=fraction, w=where: arrow_read(f, w)))
            for mode in modes}
        answers = {mode: case() for mode, case in cases.items()}  # warm-up, and the same answer?
        assert len(set(answers.values())) == 1, answers
        times: dict[str, list[float]] = {m: [] for m in modes}
        gets: dict[str, int] = {}
        for round_ in range(args.rounds):
            order = list(modes[round_ % len(modes):] + modes[:round_ % len(modes)])
            for mode in order:
                started = time.perf_counter()
                requests = counter.measure(cases[mode])
                times[mode].append(time.perf_counter() - started)
                gets[mode] = requests.get("get", 0)
        medians = {m: statistics.median(t) for m, t in times.items()}
        rows.append({"query": query, "answer": answers[MODES[0]], "medians": medians, "gets": gets,
                     "files": len(table.read_plan(fraction=fraction, filter=where).files)})
        logger.warning("%s: %s", query, {m: round(v, 2) for m, v in medians.items()})
    spark.conf.unset("spark.qbeast.storage.bridgeFiles")
    server.stop()

    lines = [
        "# Reading a bucket table: local copies, signed URLs, Arrow tasks and Hadoop's S3A connector",
        "",
        f"`benchmarks/bench_bucket_reads.py`, {time.strftime('%Y-%m-%d')}, `local[2]` on 2 cores, "
        f"moto's S3 server on loopback. Table: {args.rows:,} rows (id, user_id, price, device), "
        f"{written.file_count} files, indexed on user_id and price. Each cell: median of "
        f"{args.rounds} interleaved rounds as a ratio to warm local copies, then the GET "
        f"requests of one read (at the server). All {len(modes)} ways returned the same answer."
        + (" Hadoop s3a: hadoop-aws 3.3.1 with the AWS SDK 1.11.901 on the driver's class "
           "path (make hadoop-aws)." if jars else " Hadoop s3a not run: no hadoop-aws jars."),
        "",
        "| query | files read | " + " | ".join(modes) + " |",
        "|---|---|" + "---|" * len(modes),
    ]
    for row in rows:
        base = row["medians"][MODES[0]]
        cells = [f"{row['medians'][m] / base:.2f}x ({row['medians'][m]:.2f} s, {row['gets'][m]} GET)"
                 for m in modes]
        lines.append(f"| {row['query']} | {row['files']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Plainly: warm local copies are the fastest way to read a bucket table here, and the "
        "`local[*]` default keeps them. Signed URLs are what a cluster master reads by (its "
        "executors see no copies); Arrow tasks are what Spark Connect and clusters without the "
        "bridge jar read by. See the module docstring for why moto on the same cores skews the "
        "request-heavy ways.",
        "",
    ]
    if jars:
        to_copies = [r["medians"][HADOOP] / r["medians"][MODES[0]] for r in rows]
        to_signed = [r["medians"][HADOOP] / r["medians"]["signed URLs"] for r in rows]
        lines[-1:-1] = [
            "Hadoop's S3A connector (what `auto` picks on a cluster with hadoop-aws on its class "
            f"path; `local[*]` keeps copies, which this shows faster) "
            f"took {min(to_copies):.2f}-{max(to_copies):.2f}x the time of warm copies and "
            f"{min(to_signed):.2f}-{max(to_signed):.2f}x that of signed URLs on these queries.",
            ""]
    REPORT.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
