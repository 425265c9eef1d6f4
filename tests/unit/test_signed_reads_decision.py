"""Which sessions read object-store files by signed URL, and how a Connect client learns that its
server can (the server-side reads themselves: tests/cluster/test_qbeast_serve.py): the decision
:meth:`qbeast.spark.file_access.FileAccess.decide` makes, on stand-ins for sessions."""
from __future__ import annotations

from typing import Any

import pytest

from qbeast.spark import bridge, file_access
from qbeast.spark.file_access import FileAccess


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.asked: list[str] = []

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.append(key)
        return self.values.get(key, default)


class ConnectSession:
    """What the decision reads of a Spark Connect session: its type's module, id and conf."""

    def __init__(self, values: dict[str, str], session_id: str) -> None:
        self.conf = _Conf(values)
        self.session_id = session_id


ConnectSession.__module__ = "pyspark.sql.connect.session"


def test_sessions_built_with_the_jar_install_the_signed_url_file_system(monkeypatch, tmp_path):
    jar = tmp_path / "qbeast-bridge.jar"
    jar.write_bytes(b"")
    monkeypatch.setattr(bridge, "JAR_PATH", jar)
    conf = bridge.session_conf({"spark.master": "local[2]"})
    assert conf[bridge.SIGNED_FS_KEY] == bridge.SIGNED_FS_CLASS == "io.dbtqbeast.bridge.SignedUrlFileSystem"
    assert bridge.SIGNED_FS_KEY == f"spark.hadoop.fs.{file_access.SIGNED_SCHEME}.impl"
    # a user's own choice stays; a Connect client's settings and a session without the bridge
    # get nothing (the server's launch decides)
    assert bridge.session_conf({bridge.SIGNED_FS_KEY: "my.Fs"})[bridge.SIGNED_FS_KEY] == "my.Fs"
    assert bridge.SIGNED_FS_KEY not in bridge.session_conf({"spark.remote": "sc://h:1"})
    assert bridge.SIGNED_FS_KEY not in bridge.session_conf({bridge.SQL_BRIDGE_KEY: "false"})


@pytest.mark.parametrize(("server", "mode", "signed"), [
    ({bridge.SIGNED_FS_KEY: bridge.SIGNED_FS_CLASS}, None, True),  # qbeast serve
    ({}, None, False),  # a plain Connect server
    ({bridge.SIGNED_FS_KEY: "org.example.OtherFs"}, None, False),
    ({bridge.SIGNED_FS_KEY: bridge.SIGNED_FS_CLASS}, "copies", False),  # the user's choice
])
def test_a_connect_client_signs_only_for_a_server_that_reads_signed_urls(server, mode, signed):
    values = dict(server)
    if mode is not None:
        values["spark.qbeast.storage.bridgeFiles"] = mode
    session = ConnectSession(values, f"session-{len(values)}-{mode}-{signed}-{sorted(server.values())}")
    access = FileAccess.decide(session, "s3://bucket/t")
    assert access.files_mode == (mode or "signed")  # auto: never local copies
    assert access.signed_reads is signed
    # the server's tasks never see this client's disk: Arrow tasks, or signed URLs
    assert access.arrow_tasks and access.mode == ("signed" if signed else None)
    # asked once per client session, not on every decision
    FileAccess.decide(session, "s3://bucket/other")
    assert session.conf.asked.count(bridge.SIGNED_FS_KEY) <= 1


def test_a_connect_client_reads_no_object_store_through_hadoop():
    """A Connect client cannot see its server's class path: ``auto`` never means Hadoop there,
    and ``hadoop`` is refused, saying why and naming the setting."""
    from qbeast.errors import InvalidOptionError

    auto = ConnectSession({bridge.SIGNED_FS_KEY: bridge.SIGNED_FS_CLASS}, "session-hadoop-auto")
    assert file_access.hadoop_file_system(auto, "s3") is None
    access = FileAccess.decide(auto, "s3://bucket/t")
    assert (access.files_mode, access.hadoop) == ("signed", None)
    assert access.native_reads() is True
    refused = ConnectSession({"spark.qbeast.storage.bridgeFiles": "hadoop"}, "session-hadoop")
    access = FileAccess.decide(refused, "gs://bucket/t")  # the decision itself never raises
    assert access.mode is None
    with pytest.raises(InvalidOptionError, match="Spark Connect client cannot use its server's Hadoop"):
        access.native_reads()
    assert FileAccess.decide(refused, "/a/local/table").native_reads() is True


class _Context:
    def __init__(self, master: str) -> None:
        self.master = master
        self.applicationId = f"app-{master}"


class ClassicSession:
    """What the decision reads of a classic session: its conf and its context's master."""

    def __init__(self, values: dict[str, str], master: str) -> None:
        self.conf = _Conf(values)
        self.sparkContext = _Context(master)


@pytest.mark.parametrize(("master", "mode", "connector", "expected"), [
    ("local[2]", None, True, "copies"),  # measured faster than the connector, cold or warm
    ("local[2]", "hadoop", True, "hadoop"),  # the user's choice
    ("spark://h:7077", None, True, "hadoop"),
    ("spark://h:7077", None, False, "signed"),
    ("spark://h:7077", "signed", True, "signed"),
    ("local[2]", None, False, "copies"),
])
def test_auto_reads_through_a_hadoop_connector_only_where_tasks_run_elsewhere(
        monkeypatch, tmp_path, master, mode, connector, expected):
    """The connector's file system is looked up by the real call on a real session
    (tests/cluster/test_standalone_cluster.py, tests/spark/test_object_store_tables.py); here the
    rule that picks a mode from it, the master and the setting."""
    found = ("s3a", "org.apache.hadoop.fs.s3a.S3AFileSystem") if connector else None
    monkeypatch.setattr(file_access, "hadoop_file_system", lambda spark, scheme: found)
    monkeypatch.setattr(bridge, "bridge_active", lambda spark: False)  # no JVM behind the stand-in
    values = {"spark.qbeast.storage.mirrorDir": str(tmp_path)}  # named in the first log line
    if mode is not None:
        values["spark.qbeast.storage.bridgeFiles"] = mode
    session = ClassicSession(values, master)
    access = FileAccess.decide(session, "s3://b/t")
    assert access.files_mode == expected
    assert access.reads_local_copies() is (expected == "copies")
    assert access.arrow_tasks is (master != "local[2]")
    if expected == "hadoop":
        assert access.mode == "hadoop"
        assert access.hadoop_path("s3://b/t/x.parquet") == "s3a://b/t/x.parquet"
