"""The engine through a Spark Connect server (``spark.remote = sc://127.0.0.1:PORT``).

The client runs in its own process (a Connect client switches pyspark into remote mode for the
whole process). The server's Python workers have the installed engine hidden, so the data
source, the sampling and the writer's UDFs work only because the client shipped the engine as a
session artifact. The writer has no RDD or SparkContext there; its results must still equal the
embedded run's.
"""
from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from s3_server import BUCKET

import qbeast
from qbeast.delta.log import DeltaLog

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cluster_scenarios import (  # noqa: E402
    api_counts,
    ROUND_TRIP_CUBE_SIZE,
    ROUND_TRIP_ROWS,
    assert_engine_was_shipped,
    events_frame,
    local_copy,
    table_counts,
)
from write_checks import check_index, file_descriptions  # noqa: E402 - tests/spark, on the path via cluster_scenarios


def test_connect_reads_samples_and_filters_like_embedded(connect_server, run_scenario, cluster_dir,
                                                        embedded_round_trip):
    """A table written embedded, read through Connect: API reads and the qbeast data source."""
    result = run_scenario("--remote", connect_server.url, "--read-only",
                          "--table", str(cluster_dir / "embedded-table"))

    assert result["session_type"] == "pyspark.sql.connect.session"
    # no planner can run in the server's driver: `qbeast` is the Python data source there
    assert result["sql_source"] == "python"
    assert_engine_was_shipped(result["worker_engine_origins"])
    assert result["counts"] == embedded_round_trip["after_optimize"]
    # The Connect-safe helpers see the server's local[2] driver and an explicit partitioning.
    assert result["capabilities"] == {"default_parallelism": 2, "three_partitions": 3}


def test_round_trip_through_connect_equals_embedded(connect_server, run_scenario, cluster_dir,
                                                    embedded_round_trip):
    """Write, append, row-level changes and optimize through Connect, in a folder whose name holds
    Spark glob characters: without accumulators the writer describes its files by scanning the
    staging folder inside the table folder, which must be escaped like every other scan."""
    result = run_scenario(
        "--remote", connect_server.url, "--table", str(cluster_dir / "connect[table]*"),
        "--rows", str(ROUND_TRIP_ROWS), "--cube-size", str(ROUND_TRIP_CUBE_SIZE),
    )
    assert result["session_type"] == "pyspark.sql.connect.session"
    assert_engine_was_shipped(result["worker_engine_origins"])
    assert result["round_trip"] == embedded_round_trip


def test_example_project_builds_through_connect_like_embedded(connect_server, build_example_project,
                                                              embedded_dbt_build):
    """`dbt build` with `spark.remote: sc://...` in the profile: same models, rows, samples."""
    built = build_example_project("connect", {"spark.remote": connect_server.url})
    assert built == embedded_dbt_build


@pytest.mark.objectstore
def test_an_s3_table_written_through_connect_equals_the_embedded_write(
        spark, connect_server, run_scenario, s3_environment, embedded_bucket_baseline, tmp_path):
    """The same two writes to the bucket, embedded and from a Connect client: the server's tasks
    (no AWS setting there) write and upload files holding a valid index with the embedded
    counts and sample; a delete is refused, naming what the server lacks."""
    embedded = embedded_bucket_baseline[1]
    connect_path = f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}/connect"
    result = run_scenario("--remote", connect_server.url, "--object-store-write", "--table", connect_path)
    assert result["worker_aws_variables"] == []
    assert result["written"] == embedded["written"]
    assert result["counts"] == api_counts(embedded["counts"])
    # the estimation runs through Connect over other partitions than embedded, so the cube
    # thresholds may differ (the round trip compares counts only): the files the server's tasks
    # uploaded must hold a valid index (checked on a copy of the bucket's objects)
    check_index(spark, local_copy(connect_path, tmp_path / "copy"))
    assert len(file_descriptions(connect_path)) == embedded["files_after_writes"]
    assert result["delete"].startswith(f"InvalidOptionError: {connect_path}: ")  # the table
    # a server started without the bridge's signed-URL file system cannot read what the
    # client would sign: the message names the server that can
    assert result["signed_reads"] is False
    assert "through Spark Connect need a server that reads their files by signed URL" in result["delete"]
    assert "`qbeast serve`" in result["delete"]
    assert "spark.hadoop.fs.qbeasthttp.impl=io.dbtqbeast.bridge.SignedUrlFileSystem" in result["delete"]
    assert DeltaLog.for_path(connect_path).snapshot().version == 1


@pytest.mark.objectstore
def test_an_s3_table_reads_through_connect_like_embedded(spark, connect_server, run_scenario,
                                                        s3_environment, tmp_path):
    """A table on the bucket read by a Connect client: the client plans with its AWS settings,
    the server's tasks (no AWS setting there) read the files with the settings they carry."""
    spark.conf.set("spark.qbeast.storage.mirrorDir", str(tmp_path / "mirror"))
    try:
        path = f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}/events"
        qbeast.write(events_frame(spark, ROUND_TRIP_ROWS), path, columns_to_index=["user_id", "price"],
                     cube_size=ROUND_TRIP_CUBE_SIZE, mode="overwrite")
        embedded = table_counts(spark, path, source_name=None)
    finally:
        spark.conf.unset("spark.qbeast.storage.mirrorDir")
    result = run_scenario("--remote", connect_server.url, "--object-store-read", "--table", path)
    assert result["session_type"] == "pyspark.sql.connect.session"
    assert result["worker_aws_variables"] == []
    assert result["counts"] == embedded
    assert 0 < embedded["sample_rows"] < embedded["rows"] == ROUND_TRIP_ROWS
