"""The engine on a real standalone cluster (master + worker processes on loopback).

The driver runs in its own process (one SparkContext per process) against ``spark://``; its
executors run a Python in which the installed engine is hidden, so every task that needs
``qbeast`` proves that the engine shipped itself. The results must equal the embedded run's.
"""
from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest
from s3_server import BUCKET

import qbeast
from qbeast.delta.log import DeltaLog
from qbeast.spark.bridge import jar_path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cluster_processes import master_status  # noqa: E402
from cluster_scenarios import (  # noqa: E402
    ROUND_TRIP_CUBE_SIZE,
    ROUND_TRIP_ROWS,
    assert_engine_was_shipped,
    driver_conf,
    deltalake_event_ids,
    events_frame,
    table_counts,
)
from sql_bridge_checks import problems  # noqa: E402 - tests/spark, on the path via cluster_scenarios
from write_checks import file_descriptions  # noqa: E402 - tests/spark, on the path via cluster_scenarios


def _completed_app_names(ui_port: int) -> list[str]:
    return [app.get("name") for app in master_status(ui_port).get("completedapps", [])]


@pytest.fixture(scope="module")
def cluster_application(standalone_cluster, run_scenario, cluster_dir, request) -> dict:
    """One driver application on the master for the engine's own checks: the round trip on a
    table of its own; with the bridge jar, the SQL bridge checks on the table the embedded run
    wrote; ``--object-store-write``'s steps on a fresh prefix of the test bucket (the driver has
    its AWS settings from the environment, the workers none); with the bridge jar, the reads of
    a table and a SQL bridge table written on the bucket here, embedded. One application for
    all of it saves two drivers and their executors; each test below checks its part."""
    table = cluster_dir / "standalone-table"
    extra = []
    if jar_path() is not None:
        bridge_path, _ = request.getfixturevalue("embedded_sql_bridge_report")
        extra = ["--then-sql-bridge", bridge_path]
    out: dict = {"table": table}
    with pytest.MonkeyPatch.context() as patch:
        out["bucket"], bucket_args = _embedded_bucket_tables(request, patch)
        result = run_scenario(
            "--master", standalone_cluster.url, "--table", str(table),
            "--rows", str(ROUND_TRIP_ROWS), "--cube-size", str(ROUND_TRIP_CUBE_SIZE), *extra,
            *bucket_args,
        )
    out.update(result)
    out["bucket"]["result"] = result["object_store"]
    return out


def _embedded_bucket_tables(request, patch: pytest.MonkeyPatch) -> tuple[dict, list[str]]:
    """Set the test bucket's AWS environment (on ``patch``), write the tables the cluster's
    driver reads there, embedded (with the bridge jar), and return what the bucket part of the
    application must equal and its arguments."""
    from s3_server import point_at_test_server
    from sql_bridge_checks import bridge_report, write_table

    spark = request.getfixturevalue("spark")
    request.getfixturevalue("embedded_bucket_baseline")  # built before the driver runs
    point_at_test_server(patch, request.getfixturevalue("moto_endpoint"))
    root = f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"
    run: dict = {"cluster_path": f"{root}/cluster"}
    args = ["--then-object-store-write", run["cluster_path"]]
    if jar_path() is not None:
        path, bridge_path = f"{root}/events", f"{root}/bridge"
        mirror = request.getfixturevalue("tmp_path_factory").mktemp("mirror")
        spark.conf.set("spark.qbeast.storage.mirrorDir", str(mirror))
        try:
            qbeast.write(events_frame(spark, ROUND_TRIP_ROWS), path,
                         columns_to_index=["user_id", "price"],
                         cube_size=ROUND_TRIP_CUBE_SIZE, mode="overwrite")
            run["embedded_counts"] = table_counts(spark, path)
            write_table(spark, bridge_path)
            run["embedded_report"] = bridge_report(spark, bridge_path, python_source=False)
        finally:
            spark.conf.unset("spark.qbeast.storage.mirrorDir")
        args += ["--then-read", path, "--bridge-table", bridge_path]
    return run, args


@pytest.fixture(scope="module")
def cluster_round_trip(cluster_application) -> dict:
    """The application's round trip (and SQL bridge report): its result at the top level."""
    return cluster_application


@pytest.fixture(scope="module")
def cluster_bucket_run(cluster_application) -> dict:
    """The application's bucket part: its result, its location and the embedded answers."""
    return cluster_application["bucket"]


def test_round_trip_on_standalone_cluster_equals_embedded(
    standalone_cluster, cluster_round_trip, embedded_round_trip
):
    result, table = cluster_round_trip, cluster_round_trip["table"]

    assert result["session_type"] == "pyspark.sql.session"
    # the engine's session loads the JVM read bridge (the Python source where it was not built)
    assert result["sql_source"] == ("jvm" if jar_path() else "python")
    # The executors found qbeast only in the archive the driver shipped.
    assert_engine_was_shipped(result["worker_engine_origins"])
    # The application really ran on the cluster (the master lists it once the driver stopped).
    assert "qbeast-cluster-test" in _completed_app_names(standalone_cluster.ui_port)
    # Same rows, revisions, samples, filtered reads and optimize outcome as embedded.
    assert result["round_trip"] == embedded_round_trip
    # The table lives where the workers wrote it: on the shared file system, not in a work dir.
    assert (table / "_delta_log" / "00000000000000000000.json").is_file()
    assert not list(standalone_cluster.work_dir.rglob("*.parquet"))


@pytest.fixture(scope="module")
def standalone_builds(standalone_cluster, build_example_project, request) -> dict:
    """The example project built by one dbt driver process on the master: in the cluster's
    catalog, then (with the bridge jar) again in a schema of its own with the Qbeast models on
    the test bucket and a second run. One process for both saves a driver and an executor
    start; each test below checks its build."""
    conf = driver_conf(standalone_cluster.url, None)
    if jar_path() is None:
        return {"local": build_example_project("standalone", conf)}
    from s3_server import point_at_test_server

    root, _ = request.getfixturevalue("embedded_bucket_dbt_build")
    with pytest.MonkeyPatch.context() as patch:  # what the s3_environment fixture sets
        point_at_test_server(patch, request.getfixturevalue("moto_endpoint"))
        local, bucket = build_example_project("standalone", conf,
                                              then_location_root=f"{root}/cluster", then_runs=2)
    return {"local": local, "bucket": bucket, "bucket_root": f"{root}/cluster"}


def test_example_project_builds_on_standalone_cluster_like_embedded(standalone_builds,
                                                                    embedded_dbt_build):
    """`dbt build` with `spark.master: spark://...` in the profile: same models, rows, samples."""
    qbeast_models = {k: v for k, v in embedded_dbt_build.items() if v["materialized"] == "qbeast"}
    assert qbeast_models, f"the example project has no qbeast model: {embedded_dbt_build}"
    assert all(0 < m["sample_rows"] < m["rows"] for m in qbeast_models.values()), qbeast_models
    assert standalone_builds["local"] == embedded_dbt_build


@pytest.mark.objectstore
@pytest.mark.skipif(jar_path() is None, reason="the bridge jar is not built (no javac when `make` ran)")
def test_example_project_on_a_bucket_builds_and_merges_on_standalone_cluster_like_embedded(
        standalone_builds, s3_environment, embedded_bucket_dbt_build):
    """The example project with its Qbeast models at ``location_root: s3://...``, built and run
    a second time (the click stream's incremental merge) embedded and on the standalone master
    whose workers have no AWS setting: the same models, rows, revisions and samples. On the
    cluster the models write in Arrow tasks, the marts read the click stream in SQL by signed
    URL and the merge rewrites its files in tasks that upload them."""
    _, embedded = embedded_bucket_dbt_build
    assert standalone_builds["bucket"] == embedded
    assert DeltaLog.for_path(f"{standalone_builds['bucket_root']}/events").snapshot().version >= 1  # merged into


@pytest.mark.skipif(jar_path() is None, reason="the bridge jar is not built (no javac when `make` ran)")
def test_sql_through_the_bridge_on_standalone_cluster_equals_embedded(
    cluster_round_trip, embedded_sql_bridge_report
):
    """SQL over a catalog table on the cluster: native scans, the engine's files, the same rows.

    The driver reads the table the embedded run wrote (a layout depends on the partitioning, so
    a table written on the cluster has other files): every scan must open the same files and
    return the same rows as embedded.
    """
    _, embedded = embedded_sql_bridge_report
    report = cluster_round_trip["sql_bridge"]
    assert not problems(report), "\n".join(problems(report))
    assert report == embedded


@pytest.mark.objectstore
def test_an_s3_table_written_on_a_cluster_equals_the_embedded_write(
        standalone_cluster, cluster_bucket_run, s3_environment, embedded_bucket_baseline):
    """The same writes, row-level changes, optimize, and convert of a parquet folder then its
    indexing, on the bucket, embedded and from a driver on the standalone master whose workers
    have no AWS setting: Arrow tasks write and upload the new files, the changes, optimize and
    convert read the old ones by signed URL, the rewrite tasks upload theirs. The same files
    (rows, stats, blocks per file), the same counts, sample and change counts, read by
    deltalake too. Without signed reads a change is refused, naming what works."""
    embedded_path, embedded = embedded_bucket_baseline
    cluster_path, result = cluster_bucket_run["cluster_path"], cluster_bucket_run["result"]
    embedded_changes = embedded["row_level"]
    assert all(any(counts) for counts in embedded_changes["changes"].values()), embedded_changes
    assert result["worker_aws_variables"] == []
    for step in ("written", "counts", "row_level", "converted"):
        assert result[step] == embedded[step], step
    assert embedded["converted"]["rows"] == 6_000 and embedded["converted"]["revision_ids"] == [0, 1]
    assert file_descriptions(f"{cluster_path}-plain") == file_descriptions(f"{embedded_path}-plain")
    # with spark.qbeast.storage.bridgeFiles=copies the same driver reads in Arrow tasks and is
    # refused a change, before anything is written, with what works
    assert result["copies_rows"] == embedded_changes["counts"]["rows"]
    assert result["delete"].startswith(f"InvalidOptionError: {cluster_path}: ")  # the table
    assert "read through a Hadoop connector for s3://" in result["delete"]
    assert "or by signed URL" in result["delete"]
    assert standalone_cluster.url in result["delete"] and "bridgeFiles not 'copies'" in result["delete"]
    assert file_descriptions(cluster_path) == file_descriptions(embedded_path)
    assert deltalake_event_ids(cluster_path, s3_environment) == deltalake_event_ids(embedded_path, s3_environment)
    assert embedded_changes["changes"]["optimize_commits"] != [0]


@pytest.mark.objectstore
def test_an_s3_table_on_a_cluster_with_hadoop_aws_is_read_through_it_like_embedded(
        standalone_cluster, run_scenario, s3_environment, embedded_bucket_baseline, hadoop_aws,
        tmp_path):
    """A cluster whose driver and executors have Hadoop's S3A connector (hadoop-aws and the AWS
    SDK on their class paths, the store in ``fs.s3a.*`` settings, no AWS variable on the
    workers): ``bridgeFiles=auto`` reads through it. The same writes, row-level changes,
    optimize and convert as embedded give the same files, counts, samples and change counts;
    Spark's parquet reader opened ``s3a://`` paths, the driver copied no file and signed no
    URL; deltalake reads the same rows. ``bridgeFiles=copies`` still reads in Arrow tasks and
    refuses a change."""
    from s3_server import s3a_session_conf

    embedded_path, embedded = embedded_bucket_baseline
    cluster_path = f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}/hadoop"
    conf = {**s3a_session_conf(s3_environment, hadoop_aws),
            "spark.qbeast.storage.mirrorDir": str(tmp_path / "mirror")}
    result = run_scenario("--master", standalone_cluster.url, "--object-store-write",
                          "--table", cluster_path, "--conf-json", json.dumps(conf))
    assert result["worker_aws_variables"] == []
    assert result["native_reads"] is True and result["signed_reads"] is True  # the bridge is loaded
    for step in ("written", "counts", "row_level", "converted"):
        assert result[step] == embedded[step], step
    # read through the connector: s3a:// paths of the table's files, no local copy, no signing
    bucket_prefix = f"s3a://{BUCKET}/{cluster_path.split('/', 3)[3]}/"
    assert result["opened_files"] and all(f.startswith(bucket_prefix) and f.endswith(".parquet")
                                          for f in result["opened_files"]), result["opened_files"]
    assert result["mirror_copies"] == 0
    assert file_descriptions(f"{cluster_path}-plain") == file_descriptions(f"{embedded_path}-plain")
    assert file_descriptions(cluster_path) == file_descriptions(embedded_path)
    assert deltalake_event_ids(cluster_path, s3_environment) == deltalake_event_ids(embedded_path, s3_environment)
    # the user's choice of copies wins over the connector: Arrow tasks, and a change refused
    assert result["copies_rows"] == embedded["row_level"]["counts"]["rows"]
    assert result["delete"].startswith(f"InvalidOptionError: {cluster_path}: ")
    assert "bridgeFiles not 'copies'" in result["delete"]


@pytest.mark.objectstore
@pytest.mark.skipif(jar_path() is None, reason="the bridge jar is not built (no javac when `make` ran)")
def test_s3_tables_read_on_a_cluster_like_embedded(cluster_bucket_run):
    """Tables on the bucket, written here, read by a driver on the standalone master whose
    workers have no AWS setting and no Hadoop connector for s3:

    * the DataFrame API and the ``qbeast_python`` source give the embedded counts and sample;
    * SQL through the JVM read bridge passes every SQL bridge check (pruning per filter kind,
      samples, native scans, rows equal to the engine's and to plain parquet) with the embedded
      report: Spark's parquet reader on the workers reads the files by signed URL, where the
      embedded session reads local copies.
    """
    embedded, embedded_report = cluster_bucket_run["embedded_counts"], cluster_bucket_run["embedded_report"]
    assert not problems(embedded_report), problems(embedded_report)
    result = cluster_bucket_run["result"]["read"]
    assert result["worker_aws_variables"] == []  # the driver has them (s3_environment), the workers not
    assert result["counts"] == embedded
    assert 0 < embedded["sample_rows"] < embedded["rows"] == ROUND_TRIP_ROWS
    assert result["sql_bridge"] == embedded_report
    assert result["opened_files"] and all(f.startswith("qbeasthttp://signed/")
                                          for f in result["opened_files"])
