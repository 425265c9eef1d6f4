"""Fixtures of the cluster tests: real Spark servers on loopback, each started once.

* ``standalone_cluster`` (per module): a standalone master and one worker (2 cores) started
  from this virtualenv's pyspark with ``spark-class``;
* ``connect_server`` (per module): a Spark Connect server (``spark-submit`` of its main class,
  local[2]);
* ``worker_python``: the Python every executor and the Connect server's workers run: this
  interpreter with the installed ``qbeast`` hidden, so a task only finds the engine if the engine
  shipped itself (as it must on a cluster where nobody installed it);
* ``embedded_round_trip`` / ``embedded_dbt_build`` / ``embedded_bucket_baseline`` /
  ``embedded_bucket_dbt_build``: the engine round trip, the example project, the bucket scenario
  and the example project on the bucket run on the shared local session, the baselines the
  cluster results are compared with.

Servers are stopped when their module is done and also when their start fails. The tests are
skipped (with the reason) only when no TCP port can be opened on 127.0.0.1.
"""
from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cluster_processes import (  # noqa: E402 - needs the path above
    ConnectServer,
    PortUnavailable,
    StandaloneCluster,
    driver_environment,
    free_loopback_port,
    python_without_installed_engine,
    run_driver,
    start_connect_server,
    start_standalone_cluster,
)

from cluster_dbt import SCHEMA, build_and_measure, copy_project, qbeast_target  # noqa: E402
from cluster_scenarios import (  # noqa: E402
    ROUND_TRIP_CUBE_SIZE,
    ROUND_TRIP_ROWS,
    embedded_bucket_run,
    engine_round_trip,
)

SCENARIO_SCRIPT = HERE / "cluster_scenarios.py"
DBT_SCRIPT = HERE / "cluster_dbt.py"


def pytest_collection_modifyitems(items):
    """Mark every test collected below this folder as a cluster test (selectable with -m), and
    slow: each starts a master, workers or a Connect server in other processes."""
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.cluster)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def cluster_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cluster")


@pytest.fixture(scope="session")
def loopback_ports() -> None:
    """Skip the cluster tests when the loopback interface cannot give a TCP port."""
    try:
        free_loopback_port()
    except PortUnavailable as exc:
        pytest.skip(f"cluster servers need TCP ports on 127.0.0.1: {exc}")


@pytest.fixture(scope="session")
def worker_python(cluster_dir: Path) -> str:
    from qbeast.spark.shipping import engine_package_dir

    return python_without_installed_engine(cluster_dir / "worker-python", engine_package_dir())


def _serve(start: Callable[[], Any], what: str) -> Iterator[Any]:
    """Start a server for the fixture's scope and always stop it; skip only if no port opens."""
    try:
        server = start()
    except PortUnavailable as exc:
        pytest.skip(f"{what} needs TCP ports on 127.0.0.1: {exc}")
    try:
        yield server
    finally:
        server.stop()


# The servers are module-scoped: each is used by one test module, and stopping it when that module
# is done gives its memory and CPU back to the rest of the suite (`make test` runs everything in
# one process).
@pytest.fixture(scope="module")
def standalone_cluster(loopback_ports, cluster_dir: Path, worker_python: str) -> Iterator[StandaloneCluster]:
    yield from _serve(lambda: start_standalone_cluster(cluster_dir / "standalone", worker_python),
                      "the standalone cluster")


@pytest.fixture(scope="module")
def connect_server(loopback_ports, cluster_dir: Path, worker_python: str) -> Iterator[ConnectServer]:
    yield from _serve(lambda: start_connect_server(cluster_dir / "connect", worker_python),
                      "the Spark Connect server")


@pytest.fixture(scope="session")
def run_scenario(cluster_dir: Path, worker_python: str):
    """Run cluster_scenarios.py in a driver process and return its JSON result."""

    def run(*args: str) -> dict[str, Any]:
        out, _ = run_driver([str(SCENARIO_SCRIPT), *args], driver_environment(worker_python), cluster_dir)
        return json.loads(out.strip().splitlines()[-1])

    return run


@pytest.fixture(scope="session")
def build_example_project(cluster_dir: Path, worker_python: str):
    """Build a copy of the example project in a driver process on one profile target.

    ``build(name, server_side_parameters)`` returns the models it built (see cluster_dbt.py);
    ``measure_remote`` (a Spark Connect URL) is where a build without a Spark session in its
    process (``method: thrift``) reads what it built. With ``then_location_root`` the same
    process then builds the project again in a schema of its own with the Qbeast models there
    (``then_runs`` runs), and ``build`` returns both builds' models.
    """

    def build(name: str, server_side_parameters: dict[str, str] | None = None,
              measure_remote: str | None = None, location_root: str | None = None,
              runs: int = 1, then_location_root: str | None = None, then_runs: int = 1,
              **fields: Any) -> Any:
        targets = {name: qbeast_target(server_side_parameters, **fields)}
        extra = ["--measure-remote", measure_remote] if measure_remote else []
        if location_root:
            extra += ["--location-root", location_root]
        if then_location_root:
            targets[f"{name}-then"] = qbeast_target(server_side_parameters,
                                                    **{**fields, "schema": f"{SCHEMA}_then"})
            extra += ["--then-target", f"{name}-then", "--then-location-root", then_location_root,
                      "--then-runs", str(then_runs)]
        project = copy_project(cluster_dir / f"dbt-{name}", targets)
        out, _ = run_driver([str(DBT_SCRIPT), "--project-dir", str(project), "--target", name,
                             "--runs", str(runs), *extra], driver_environment(worker_python),
                            project)
        result = json.loads(out.strip().splitlines()[-1])
        return (result["models"], result["then"]) if then_location_root else result["models"]

    return build


@pytest.fixture(scope="session")
def embedded_dbt_build(spark, cluster_dir: Path) -> dict[str, Any]:
    """The example project built in this process on the shared local session (the baseline)."""
    from qbeast.spark.runtime import restored_confs
    from qbeast.spark.session import ENGINE_DEFAULTS

    project = copy_project(cluster_dir / "dbt-embedded", {"embedded": qbeast_target()})
    # The adapter re-applies the engine's runtime defaults to the shared session (e.g. 8 shuffle
    # partitions); put back what the rest of the test run expects.
    with restored_confs(spark, [key for key in ENGINE_DEFAULTS if spark.conf.isModifiable(key)]):
        return build_and_measure(project, "embedded", lambda: spark)


@pytest.fixture(scope="session")
def embedded_bucket_baseline(spark, moto_endpoint: str, tmp_path_factory) -> tuple[str, dict[str, Any]]:
    """``--object-store-write``'s steps (writes, counts with the ``qbeast`` source, row-level
    changes, optimize, convert) run once on the shared local session at a fresh prefix of the
    test bucket: its location and results, which every remote driver's run must equal."""
    from s3_server import BUCKET, point_at_test_server

    path = f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}/embedded"
    with pytest.MonkeyPatch.context() as patch:  # what the s3_environment fixture sets
        point_at_test_server(patch, moto_endpoint)
        return path, embedded_bucket_run(spark, path, tmp_path_factory.mktemp("baseline-mirror"),
                                         source_name="qbeast")


@pytest.fixture(scope="session")
def embedded_bucket_dbt_build(spark, cluster_dir: Path, moto_endpoint: str,
                              tmp_path_factory) -> tuple[str, dict[str, Any]]:
    """The example project with its Qbeast models at a fresh prefix of the test bucket, built
    and run a second time (the click stream's incremental merge) on the shared local session:
    the prefix, and the models as measured (the baseline of the remote bucket builds)."""
    from cluster_dbt import put_qbeast_models_at
    from s3_server import BUCKET, point_at_test_server

    from qbeast.spark.runtime import restored_confs
    from qbeast.spark.session import ENGINE_DEFAULTS

    root = f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"
    project = copy_project(cluster_dir / "dbt-bucket-embedded", {"embedded": qbeast_target()})
    put_qbeast_models_at(project, f"{root}/embedded")
    with pytest.MonkeyPatch.context() as patch:
        point_at_test_server(patch, moto_endpoint)
        spark.conf.set("spark.qbeast.storage.mirrorDir", str(tmp_path_factory.mktemp("dbt-mirror")))
        try:
            with restored_confs(spark, [key for key in ENGINE_DEFAULTS if spark.conf.isModifiable(key)]):
                built = build_and_measure(project, "embedded", lambda: spark, runs=2)
        finally:
            spark.conf.unset("spark.qbeast.storage.mirrorDir")
    qbeast_models = {k: v for k, v in built.items() if v["materialized"] == "qbeast"}
    assert qbeast_models and all(0 < m["sample_rows"] < m["rows"] for m in qbeast_models.values())
    return root, built


@pytest.fixture(scope="session")
def embedded_round_trip(spark, cluster_dir: Path) -> dict[str, Any]:
    """The round trip on the shared local session: what every other setup must reproduce."""
    return engine_round_trip(spark, str(cluster_dir / "embedded-table"), ROUND_TRIP_ROWS,
                             ROUND_TRIP_CUBE_SIZE)


@pytest.fixture(scope="session")
def embedded_sql_bridge_report(sql_bridge_report) -> tuple[str, dict[str, Any]]:
    """(table, report) of the SQL bridge checks on the shared local session: the baseline."""
    return sql_bridge_report
