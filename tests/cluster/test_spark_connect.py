"""The engine through a Spark Connect server (``spark.remote = sc://127.0.0.1:PORT``).

The client runs in its own process (a Connect client switches pyspark into remote mode for the
whole process). The server's Python workers have the installed engine hidden, so the data
source, the sampling and the writer's UDFs work only because the client shipped the engine as a
session artifact.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cluster_processes import DriverFailed  # noqa: E402
from cluster_scenarios import ROUND_TRIP_CUBE_SIZE, ROUND_TRIP_ROWS  # noqa: E402

# What the writer did on Connect sessions when these tests were written (qbeast/spark/writer.py
# asked for ``data.rdd.getNumPartitions()`` and ``sparkContext.defaultParallelism``; the
# Connect-safe ``partition_count`` / ``default_parallelism`` of qbeast.spark.session replace
# them). While the writer still does it, the round trip reports an expected failure that names it.
KNOWN_WRITER_LIMITS = ("[NOT_IMPLEMENTED] rdd is not implemented", "JVM_ATTRIBUTE_NOT_SUPPORTED")


def _xfail_if_known_writer_limit(exc: DriverFailed) -> None:
    """Report the known writer limitation as an expected failure; anything else stays a failure."""
    text = str(exc)
    known = [limit for limit in KNOWN_WRITER_LIMITS if limit in text]
    if known and ("qbeast/spark/writer.py" in text or "qbeast.spark.writer" in text):
        pytest.xfail(f"qbeast.write uses RDD/SparkContext APIs Spark Connect lacks: {known[0]}")


def _assert_shipped(result: dict) -> None:
    origins = result["worker_engine_origins"]
    assert origins, "the probe job returned no row"
    assert all("qbeast-engine-" in o and o.endswith(".zip/qbeast/__init__.py") for o in origins), origins


def test_connect_reads_samples_and_filters_like_embedded(connect_server, run_scenario, cluster_dir,
                                                        embedded_round_trip):
    """A table written embedded, read through Connect: API reads and the qbeast data source."""
    result = run_scenario("--remote", connect_server.url, "--read-only",
                          "--table", str(cluster_dir / "embedded-table"))

    assert result["session_type"] == "pyspark.sql.connect.session"
    _assert_shipped(result)
    assert result["counts"] == embedded_round_trip["after_optimize"]
    # The Connect-safe helpers see the server's local[2] driver and an explicit partitioning.
    assert result["capabilities"] == {"default_parallelism": 2, "three_partitions": 3}


def test_round_trip_through_connect_equals_embedded(connect_server, run_scenario, cluster_dir,
                                                    embedded_round_trip):
    try:
        result = run_scenario(
            "--remote", connect_server.url, "--table", str(cluster_dir / "connect-table"),
            "--rows", str(ROUND_TRIP_ROWS), "--cube-size", str(ROUND_TRIP_CUBE_SIZE),
        )
    except DriverFailed as exc:
        _xfail_if_known_writer_limit(exc)
        raise
    assert result["session_type"] == "pyspark.sql.connect.session"
    _assert_shipped(result)
    assert result["round_trip"] == embedded_round_trip


def test_example_project_builds_through_connect_like_embedded(connect_server, build_example_project,
                                                              embedded_dbt_build):
    """`dbt build` with `spark.remote: sc://...` in the profile: same models, rows, samples."""
    try:
        built = build_example_project("connect", {"spark.remote": connect_server.url})
    except DriverFailed as exc:
        _xfail_if_known_writer_limit(exc)
        raise
    assert built == embedded_dbt_build
