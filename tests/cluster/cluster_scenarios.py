"""The engine round trip that must give the same answers embedded, on a cluster and via Connect.

``engine_round_trip`` runs on any session: the cluster tests call it in the pytest process on the
shared local session (the embedded baseline) and, through ``python cluster_scenarios.py``, in a
separate driver process whose session points at a standalone master or a Spark Connect server
(a process can hold only one SparkContext, and a Connect client switches pyspark into its remote
mode for the whole process). The driver process prints one JSON document with the results.

Functions that run inside Spark tasks are nested (pickled by value): the executors can import the
engine (it ships itself) but not this test module.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

# the SQL bridge checks are shared with tests/spark (same report embedded and on a cluster)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark"))

#: Size of the round trip: enough rows for several cubes and files, small enough to stay quick.
ROUND_TRIP_ROWS = 20000
ROUND_TRIP_CUBE_SIZE = 2000
#: Sample fraction whose row count is compared across modes.
SAMPLE_FRACTION = 0.1
#: A filter on an indexed column (prunes files) whose row count is compared across modes.
RANGE_FILTER = "user_id < 500"


def events_frame(spark: Any, rows: int, offset: int = 0) -> Any:
    """``rows`` synthetic events, every column a pure function of the row id (Spark's hash)."""
    from pyspark.sql import functions as F

    ids = spark.range(offset, offset + rows)
    return ids.select(
        F.col("id").alias("event_id"),
        F.pmod(F.hash(F.col("id"), F.lit("user")), F.lit(5000)).alias("user_id"),
        (F.pmod(F.hash(F.col("id"), F.lit("price")), F.lit(100000)) / F.lit(100.0)).alias("price"),
        F.element_at(
            F.array(F.lit("mobile"), F.lit("desktop"), F.lit("tablet")),
            (F.pmod(F.hash(F.col("id"), F.lit("device")), F.lit(3)) + 1).cast("int"),
        ).alias("device"),
    )


def sql_bridge_report(spark: Any, path: str) -> dict[str, Any]:
    """Every SQL bridge check on the table the embedded run wrote at ``path`` (same files)."""
    from sql_bridge_checks import bridge_report

    return bridge_report(spark, path)


def object_store_read(spark: Any, path: str, bridge_table: str | None,
                      remote: str | None) -> dict[str, Any]:
    """Counts of the bucket table at ``path``, seen from this driver, and the SQL bridge checks
    on ``bridge_table`` with the files Spark's parquet reader opened."""
    result: dict[str, Any] = {"worker_aws_variables": worker_aws_variables(spark)}
    # through Connect the data source plans in the server, which has no store settings here:
    # the DataFrame API alone (planned by this client)
    result["counts"] = table_counts(spark, path, source_name=None if remote else "qbeast_python")
    if bridge_table:
        from sql_bridge_checks import bridge_report

        # the embedded baseline runs without the Python source (see bridge_report)
        result["sql_bridge"] = bridge_report(spark, bridge_table, python_source=False)
        result["opened_files"] = spark.read.format("qbeast").load(path).inputFiles()
    return result


def object_store_write(spark: Any, path: str, rows: int, cube_size: int, remote: str | None,
                       then_read: str | None, bridge_table: str | None) -> dict[str, Any]:
    """``--object-store-write``: write and append to the s3:// table at ``path``, read it, change
    rows, optimize and convert where this driver's reads are native; then, without signed reads,
    the error a change gets; then (``then_read``) :func:`object_store_read` on another table."""
    import qbeast
    from qbeast.spark.file_access import FileAccess

    bridge_files = spark.conf.get("spark.qbeast.storage.bridgeFiles", None)
    result: dict[str, Any] = {"worker_aws_variables": worker_aws_variables(spark)}
    result["written"] = write_and_append(spark, path, rows, cube_size)
    result["counts"] = table_counts(spark, path, source_name=None if remote else "qbeast_python")
    access = FileAccess.decide(spark, path)
    result["signed_reads"] = access.signed_reads
    result["native_reads"] = access.native_reads()
    table = qbeast.QbeastTable.for_path(spark, path)
    if result["native_reads"]:
        result["row_level"] = row_level_changes(spark, path, rows)
        result["converted"] = convert_and_index(spark, f"{path}-plain")
        # how Spark's parquet reader opened the files, and whether the driver copied any
        result["opened_files"] = list(table.to_df().inputFiles())
        result["mirror_copies"] = sum(
            len(names) for _, _, names in os.walk(access.mirror().files_dir))
        # then without signed reads: reads fall back to Arrow tasks
        spark.conf.set("spark.qbeast.storage.bridgeFiles", "copies")
        result["copies_rows"] = table.to_df().count()
    try:  # without signed reads a change is refused, with what works
        table.delete(RANGE_FILTER)
        result["delete"] = "deleted"
    except qbeast.QbeastError as exc:
        result["delete"] = f"{type(exc).__name__}: {exc}"
    if then_read:  # a second check in the same application (see --then-read)
        if bridge_files is None:
            spark.conf.unset("spark.qbeast.storage.bridgeFiles")
        else:
            spark.conf.set("spark.qbeast.storage.bridgeFiles", bridge_files)
        result["read"] = object_store_read(spark, then_read, bridge_table, remote)
    return result


def table_counts(spark: Any, path: str, source_name: str | None = "qbeast") -> dict[str, int]:
    """Full, sampled and filtered row counts (API and data source ``source_name``; None: API
    only) and a sample checksum."""
    import qbeast
    from pyspark.sql import functions as F

    table = qbeast.QbeastTable.for_path(spark, path)
    sample = table.sample(SAMPLE_FRACTION)
    checksum = sample.agg(F.sum("event_id").alias("s")).first()["s"]
    counts = {
        "rows": table.to_df().count(),
        "sample_rows": sample.count(),
        "sample_id_sum": int(checksum or 0),
        "filtered_rows": table.to_df(filter=RANGE_FILTER).count(),
    }
    if source_name is not None:
        qbeast.register(spark)
        source = spark.read.format(source_name).load(path)
        counts["source_rows"] = source.count()
        counts["source_filtered_rows"] = source.filter(RANGE_FILTER).count()
    return counts


def write_and_append(spark: Any, path: str, rows: int, cube_size: int) -> dict[str, list[int]]:
    """The round trip's two writes (an indexed overwrite, then an append of a quarter more)."""
    import qbeast

    first = qbeast.write(events_frame(spark, rows), path, columns_to_index=["user_id", "price"],
                         cube_size=cube_size, mode="overwrite")
    second = qbeast.write(events_frame(spark, rows // 4, offset=rows), path)
    return {"rows": [first.rows, second.rows], "versions": [first.version, second.version]}


def row_level_changes(spark: Any, path: str, rows: int) -> dict[str, Any]:
    """A delete, an update in place, an update that moves rows (an indexed column changes), a
    key merge with updates and inserts, a delete+insert and an optimize (the latest revision) on
    the table :func:`write_and_append` wrote; each change's counts and the table's counts after
    all of them."""
    import qbeast
    from qbeast.operations.optimize import optimize_table

    table = qbeast.QbeastTable.for_path(spark, path)

    def counts(result: Any) -> list[int]:
        return [result.rows_deleted, result.rows_updated, result.rows_inserted]

    source = events_frame(spark, 300, offset=rows - 100).selectExpr(
        "event_id", "user_id", "price * 2 as price", "'merged' as device")
    replaced = events_frame(spark, 50, offset=rows // 2).selectExpr(
        "event_id", "user_id", "price", "'replaced' as device")
    done = {
        "delete": counts(table.delete(RANGE_FILTER)),
        "update_in_place": counts(table.update("user_id between 1000 and 1200",
                                               set={"device": "'updated'"})),
        "update_moving": counts(table.update("user_id between 2000 and 2100",
                                             set={"price": "price / 2"})),
        "merge": counts(table.merge(source, on=["event_id"])),
        "delete_insert": counts(table.delete_insert(replaced, on=["event_id"])),
        "optimize_commits": [len(optimize_table(spark, path).commits)],
    }
    devices = {r["device"]: r["n"] for r in table.to_df().groupBy("device").count()
               .withColumnRenamed("count", "n").collect()}
    return {"changes": done, "devices": devices, "counts": table_counts(spark, path, source_name=None)}


def convert_and_index(spark: Any, folder: str) -> dict[str, Any]:
    """A plain parquet folder written at ``folder`` (an object-store location; three files made
    with pyarrow, the same bytes every time), converted to Qbeast and its files indexed by
    optimize; what came out."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    import qbeast
    from qbeast.storage import storage_for

    storage = storage_for(folder)
    for part in range(3):
        ids = list(range(part * 2_000, (part + 1) * 2_000))
        buffer = io.BytesIO()
        pq.write_table(pa.table({"id": ids, "k": [i * 7919 % 101 for i in ids]}), buffer)
        storage.write_bytes(f"{folder}/part-{part}.parquet", buffer.getvalue())
    converted = qbeast.convert_to_qbeast(spark, folder, ["id", "k"], cube_size=1_000)
    table = qbeast.QbeastTable.for_path(spark, folder)
    table.optimize(revision_id=0)  # the converted (staging) files indexed into revision 1
    return {"converted": [converted.version, converted.file_count],
            "revision_ids": table.revision_ids(),
            "rows": table.to_df().count(),
            "sample_rows": table.sample(SAMPLE_FRACTION).count(),
            "k_3_rows": table.to_df(filter="k = 3").count()}


def embedded_bucket_run(spark: Any, path: str, mirror: Path, changes: bool = True,
                        source_name: str | None = None) -> dict[str, Any]:
    """What ``--object-store-write`` does, run on the test's own ``local[*]`` session at the
    bucket location ``path`` (local copies under ``mirror``): the baseline a remote driver must
    equal. ``changes`` adds the row-level changes, optimize and the convert of ``path-plain``."""
    spark.conf.set("spark.qbeast.storage.mirrorDir", str(mirror))
    try:
        out: dict[str, Any] = {
            "written": write_and_append(spark, path, ROUND_TRIP_ROWS, ROUND_TRIP_CUBE_SIZE),
            "counts": table_counts(spark, path, source_name=source_name)}
        from write_checks import file_descriptions  # tests/spark, on the path (above)

        out["files_after_writes"] = len(file_descriptions(path))
        if changes:
            out["row_level"] = row_level_changes(spark, path, ROUND_TRIP_ROWS)
            out["converted"] = convert_and_index(spark, f"{path}-plain")
    finally:
        spark.conf.unset("spark.qbeast.storage.mirrorDir")
    return out


def api_counts(counts: dict[str, int]) -> dict[str, int]:
    """:func:`table_counts` without the data source's counts (what a Connect client reports)."""
    return {key: value for key, value in counts.items() if not key.startswith("source_")}


def deltalake_event_ids(path: str, endpoint: str) -> list[int]:
    """The ``event_id`` values of the table at ``path`` on the test bucket, as deltalake reads
    them (an independent reader of what the engine wrote)."""
    from deltalake import DeltaTable
    from s3_server import aws_environment

    options = {**aws_environment(endpoint), "AWS_ALLOW_HTTP": "true"}
    ids = DeltaTable(path, storage_options=options).to_pyarrow_table(columns=["event_id"])
    return sorted(ids.column("event_id").to_pylist())


def local_copy(path: str, target: Path) -> str:
    """Download every object of the bucket table at ``path`` into the folder ``target`` (for
    checks that read a table folder on disk); the folder."""
    from qbeast.storage import storage_for

    storage = storage_for(path)
    prefix = storage.resolve(path).rstrip("/") + "/"
    for stat in storage.walk(path):
        file = target / stat.path[len(prefix):]
        file.parent.mkdir(parents=True, exist_ok=True)
        storage.download(stat.path, str(file))
    return str(target)


def engine_round_trip(spark: Any, path: str, rows: int, cube_size: int) -> dict[str, Any]:
    """Write (create + append), read, sample, filter and optimize the table at ``path``."""
    import qbeast
    from qbeast.operations.optimize import optimize_table

    first = qbeast.write(events_frame(spark, rows), path, columns_to_index=["user_id", "price"],
                         cube_size=cube_size, mode="overwrite")
    second = qbeast.write(events_frame(spark, rows // 4, offset=rows), path)
    table = qbeast.QbeastTable.for_path(spark, path)
    before = table_counts(spark, path)
    optimized = optimize_table(spark, path)
    after = table_counts(spark, path)
    return {
        "written_rows": [first.rows, second.rows],
        "revision_ids": table.revision_ids(),
        "latest_revision_id": table.latest_revision_id(),
        "indexed_columns": table.indexed_columns(),
        "before_optimize": before,
        "after_optimize": after,
        "optimize_commits": len(optimized.commits),
        "versions": [first.version, second.version, table.snapshot().version],
    }


def worker_engine_origins(spark: Any, tasks: int = 4) -> list[str]:
    """Where the Python workers of ``spark``'s tasks import ``qbeast`` from (distinct paths)."""

    def origin(batches):  # nested: pickled by value, runs on the executors
        import pyarrow as pa

        import qbeast

        for _ in batches:
            yield pa.RecordBatch.from_pydict({"origin": [qbeast.__file__]})

    frame = spark.range(0, tasks * 10, 1, tasks)
    return sorted(r["origin"] for r in frame.mapInArrow(origin, "origin string").distinct().collect())


def worker_aws_variables(spark: Any, tasks: int = 2) -> list[str]:
    """Names of the ``AWS_*`` environment variables the executors' Python workers see."""

    def names(batches):  # nested: pickled by value, runs on the executors
        import os

        import pyarrow as pa

        for _ in batches:
            yield pa.RecordBatch.from_pydict({"name": [k for k in os.environ if k.startswith("AWS_")]})

    frame = spark.range(0, tasks * 10, 1, tasks)
    return sorted({r["name"] for r in frame.mapInArrow(names, "name string").collect()})


def session_capabilities(spark: Any) -> dict[str, int]:
    """What the classic/Connect helpers of qbeast.spark.session report for this session."""
    from qbeast.spark.runtime import default_parallelism, partition_count

    return {
        "default_parallelism": default_parallelism(spark),
        "three_partitions": partition_count(spark.range(0, 100, 1, 3)),
    }


def assert_engine_was_shipped(origins: list[str]) -> None:
    """Every probed worker imported ``qbeast`` from the archive the engine ships, nowhere else."""
    assert origins, "the probe job returned no row"
    assert all("qbeast-engine-" in o and o.endswith(".zip/qbeast/__init__.py") for o in origins), origins


def driver_conf(master: str | None, remote: str | None) -> dict[str, str]:
    """Session settings of the driver process for a standalone master or a Connect server."""
    if remote:
        return {"spark.remote": remote, "spark.sql.shuffle.partitions": "4"}
    return {
        "spark.master": master or "local[2]",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "1g",
        "spark.executor.memory": "768m",
        "spark.executor.cores": "2",
        "spark.cores.max": "2",
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "2",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="engine round trip in a driver process")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--master", help="spark://host:port of a standalone master")
    target.add_argument("--remote", help="sc://host:port of a Spark Connect server")
    parser.add_argument("--table", required=True, help="table folder (visible to the workers)")
    parser.add_argument("--rows", type=int, default=ROUND_TRIP_ROWS, help="rows of the first write")
    parser.add_argument("--cube-size", type=int, default=ROUND_TRIP_CUBE_SIZE)
    parser.add_argument("--read-only", action="store_true",
                        help="only read the existing table (no write, no optimize)")
    parser.add_argument("--sql-bridge", action="store_true",
                        help="report the SQL bridge checks on the table at --table")
    parser.add_argument("--object-store-write", action="store_true",
                        help="write and append to --table (an s3:// location), read it, change "
                             "rows and optimize (on a master; through Connect: the error a delete "
                             "gets)")
    parser.add_argument("--object-store-read", action="store_true",
                        help="read the s3:// table at --table (API and qbeast_python source) and "
                             "run the SQL bridge checks on the one at --bridge-table")
    parser.add_argument("--bridge-table", help="an s3:// table written by sql_bridge_checks")
    # A second check in the same driver saves an application start (a driver and, on a master,
    # an executor per worker) where a test run needs both on one cluster.
    parser.add_argument("--then-read", metavar="TABLE",
                        help="after --object-store-write (or --then-object-store-write): "
                             "--object-store-read's checks on TABLE "
                             "(and --bridge-table), reported under 'read'")
    parser.add_argument("--then-sql-bridge", metavar="TABLE",
                        help="after the round trip: --sql-bridge's report on TABLE")
    parser.add_argument("--then-object-store-write", metavar="TABLE",
                        help="after the round trip (and --then-sql-bridge): --object-store-write's "
                             "steps on TABLE (and --then-read's), reported under 'object_store'")
    parser.add_argument("--conf-json", default="{}",
                        help="more session settings, a JSON object (e.g. a Hadoop connector's)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from qbeast.spark.session import get_or_create_session

    started = time.monotonic()
    conf = {**driver_conf(args.master, args.remote), **json.loads(args.conf_json)}
    spark = get_or_create_session(conf, app_name="qbeast-cluster-test")
    result: dict[str, Any] = {
        "session_type": type(spark).__module__,
        "seconds": {"session": round(time.monotonic() - started, 1)},
    }
    try:
        result["worker_engine_origins"] = worker_engine_origins(spark)
        import qbeast

        result["sql_source"] = qbeast.register(spark)  # jvm (the bridge) or python (fallback)
        if args.object_store_write:
            result.update(object_store_write(spark, args.table, args.rows, args.cube_size,
                                             args.remote, args.then_read, args.bridge_table))
        elif args.object_store_read:
            result.update(object_store_read(spark, args.table, args.bridge_table, args.remote))
        elif args.sql_bridge:
            result["sql_bridge"] = sql_bridge_report(spark, args.table)
        elif args.read_only:
            result["counts"] = table_counts(spark, args.table)
            result["capabilities"] = session_capabilities(spark)
        else:
            result["round_trip"] = engine_round_trip(spark, args.table, args.rows, args.cube_size)
            if args.then_sql_bridge:
                result["sql_bridge"] = sql_bridge_report(spark, args.then_sql_bridge)
            if args.then_object_store_write:
                result["object_store"] = object_store_write(
                    spark, args.then_object_store_write, args.rows, args.cube_size, args.remote,
                    args.then_read, args.bridge_table)
    finally:
        spark.stop()
    result["seconds"]["total"] = round(time.monotonic() - started, 1)
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
