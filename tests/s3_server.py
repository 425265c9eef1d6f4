"""The S3-compatible test server's constants (the server itself is the ``moto_endpoint`` fixture
of tests/conftest.py): the bucket it holds and the credentials it accepts, and the one change
that makes moto arbitrate conditional writes as S3 does (:func:`make_puts_atomic`)."""
from __future__ import annotations

import socket
import threading
from pathlib import Path

BUCKET = "qbeast-tests"
CREDENTIALS = {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1"}


def aws_environment(endpoint: str) -> dict[str, str]:
    """The AWS environment variables that point the engine at the test server (what a user
    sets for an S3-compatible store)."""
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": CREDENTIALS["access_key_id"],
            "AWS_SECRET_ACCESS_KEY": CREDENTIALS["secret_access_key"],
            "AWS_REGION": CREDENTIALS["region"]}


def point_at_test_server(patch, endpoint: str) -> None:
    """Set :func:`aws_environment` on ``patch`` (a ``pytest.MonkeyPatch``), so the variables
    are restored when the patch is undone: what the ``s3_environment`` fixture sets, for
    fixtures of a wider scope that cannot take it."""
    for key, value in aws_environment(endpoint).items():
        patch.setenv(key, value)


#: where ``make hadoop-aws`` puts Hadoop's S3A connector (jvm/fetch_hadoop_aws.py)
HADOOP_AWS_DIR = Path(__file__).resolve().parents[1] / ".venv" / "hadoop-aws"

#: hadoop-aws 3.3.1 (the Apache build that PyPI carries) runs on the Hadoop 3.5 client of
#: Spark 4 only with these: Hadoop 3.5's defaults write durations with units ("60s") where 3.3.1
#: parses plain numbers, and name AWS SDK v2 credential providers that the v1 SDK it calls
#: lacks. A cluster whose hadoop-aws matches its Hadoop needs none of them.
_HADOOP_AWS_331_ON_HADOOP_35 = {
    "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    "fs.s3a.threads.keepalivetime": "60",
    "fs.s3a.connection.establish.timeout": "30000",
    "fs.s3a.connection.timeout": "200000",
    "fs.s3a.connection.ttl": "300000",
    "fs.s3a.connection.idle.time": "60000",
    "fs.s3a.connection.acquisition.timeout": "60000",
    "fs.s3a.connection.request.timeout": "0",
    "fs.s3a.multipart.purge.age": "86400",
}


def hadoop_aws_jars() -> list[str]:
    """The jars of Hadoop's S3A connector fetched by ``make hadoop-aws``; empty without them."""
    jars = sorted(str(p) for p in HADOOP_AWS_DIR.glob("*.jar"))
    return jars if len(jars) == 2 else []


def s3a_session_conf(endpoint: str, jars: list[str]) -> dict[str, str]:
    """Session settings of a driver whose executors and itself have hadoop-aws on their class
    path (a cluster with the jars installed on every node), with Hadoop's S3A client pointed at
    the test server through its own ``fs.s3a.*`` settings (what a cluster's core-site.xml
    holds; the executors get no AWS environment variable)."""
    classpath = ":".join(jars)
    hadoop = {
        "fs.s3a.endpoint": endpoint,
        "fs.s3a.access.key": CREDENTIALS["access_key_id"],
        "fs.s3a.secret.key": CREDENTIALS["secret_access_key"],
        "fs.s3a.endpoint.region": CREDENTIALS["region"],
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        **_HADOOP_AWS_331_ON_HADOOP_35,
    }
    return {"spark.driver.extraClassPath": classpath, "spark.executor.extraClassPath": classpath,
            **{f"spark.hadoop.{key}": value for key, value in hadoop.items()}}


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_put_lock = threading.Lock()


def make_puts_atomic() -> None:
    """Make moto's PutObject one atomic step, as it is on S3.

    moto (5.2) answers ``If-None-Match: *`` by looking the key up and then storing the object,
    with no lock between the two: two puts of the same new key that arrive together can both pass
    the check, and the later one silently replaces the earlier. On S3, GCS and Azure the
    condition and the write are one step, and the engine's commits rely on exactly that (the
    put of ``_delta_log/<version>.json`` decides who gets a version). Without this change a race
    of four appending processes could see two of them "win" one version and lose the other's
    rows, which is the emulator's fault, not something a real store does. The engine's process
    takes no part: the lock lives in the server (this test process) and only orders the
    server's own request threads. Applied once per process; idempotent."""
    from moto.s3.responses import S3Response

    if getattr(S3Response.put_object, "qbeast_atomic", False):
        return
    unguarded = S3Response.put_object

    def put_object(self):  # type: ignore[no-untyped-def]
        with _put_lock:
            return unguarded(self)

    put_object.qbeast_atomic = True  # type: ignore[attr-defined]
    S3Response.put_object = put_object  # type: ignore[method-assign]
