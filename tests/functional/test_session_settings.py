"""Where the adapter puts the embedded catalog, and which Spark settings a connection asks for.

Pure functions, no Spark: these rules decide whether two dbt invocations see the same tables.
"""
from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from dbt.adapters.qbeast.credentials import QbeastCredentials
from dbt.adapters.qbeast.errors import QbeastProfileError
from dbt.adapters.qbeast.session_settings import (
    LOG4J_CONFIG,
    catalog_path,
    connection_spark_conf,
    console_log_level,
    project_root_of,
    uses_embedded_metastore,
)
from qbeast.errors import QbeastError
from qbeast.spark.session import session_conf


def test_relative_catalog_dir_hangs_off_the_project_not_the_working_directory(tmp_path, monkeypatch):
    project = tmp_path / "project"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert catalog_path(".qbeast", project) == project / ".qbeast"
    assert catalog_path("sub/../cat", project) == project / "cat"


def test_absolute_catalog_dir_is_kept(tmp_path):
    assert catalog_path(str(tmp_path / "shared"), tmp_path / "project") == tmp_path / "shared"


def test_runtime_config_project_root_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = SimpleNamespace(project_root=str(tmp_path / "proj" / ".." / "proj"))
    assert project_root_of(config) == (tmp_path / "proj").resolve()


def test_profile_without_project_root_falls_back_to_dbt_project_dir_flag(tmp_path, monkeypatch):
    from dbt.flags import get_flags, set_flags

    previous = get_flags()
    set_flags(SimpleNamespace(PROJECT_DIR=str(tmp_path / "from_flag")))
    try:
        assert project_root_of(SimpleNamespace()) == tmp_path / "from_flag"
    finally:
        set_flags(previous)


def _driver_conf(*args):
    """What the adapter's driver starts with: the connection's settings in the engine's
    session (its defaults, the JVM options joined)."""
    return session_conf(connection_spark_conf(*args))


def test_embedded_catalog_defaults_point_inside_the_catalog_dir(tmp_path):
    conf = _driver_conf({}, tmp_path)
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "warehouse")
    url = conf["spark.hadoop.javax.jdo.option.ConnectionURL"]
    assert url == f"jdbc:derby:;databaseName={tmp_path / 'metastore_db'};create=true"
    java = conf["spark.driver.extraJavaOptions"].split()
    assert "-Duser.timezone=UTC" in java
    assert f"-Dderby.stream.error.file={tmp_path / 'derby.log'}" in java


def test_user_parameters_win_but_keep_the_utc_jvm(tmp_path):
    conf = _driver_conf(
        {
            "spark.sql.warehouse.dir": "/data/wh",
            "spark.driver.extraJavaOptions": "-Xss4m",
            "spark.sql.shuffle.partitions": 3,
        },
        tmp_path,
    )
    assert conf["spark.sql.warehouse.dir"] == "/data/wh"
    assert conf["spark.sql.shuffle.partitions"] == "3"
    java = conf["spark.driver.extraJavaOptions"].split()
    assert java[0] == "-Duser.timezone=UTC" and java[-1] == "-Xss4m"
    assert java.count("-Duser.timezone=UTC") == 1
    assert session_conf(conf) == conf  # the engine's overlay is idempotent


@pytest.mark.parametrize("key", ["spark.hadoop.hive.metastore.uris", "spark.remote"])
def test_external_catalog_gets_no_embedded_derby(tmp_path, key):
    conf = _driver_conf({key: "thrift://metastore:9083"}, tmp_path)
    assert "spark.hadoop.javax.jdo.option.ConnectionURL" not in conf
    assert "derby" not in conf["spark.driver.extraJavaOptions"]
    assert not uses_embedded_metastore({key: "x"}) and uses_embedded_metastore({"spark.master": "x"})


def test_driver_logs_to_the_catalog_folder_and_the_console_stays_quiet(tmp_path):
    java = connection_spark_conf({}, tmp_path)["spark.driver.extraJavaOptions"].split()
    assert f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}" in java and LOG4J_CONFIG.is_file()
    assert f"-Dqbeast.log.file={tmp_path / 'spark.log'}" in java
    assert "-Dqbeast.log.consoleLevel=fatal" in java and "-Dqbeast.log.rootLevel=warn" in java
    loud = connection_spark_conf({}, tmp_path, "info")["spark.driver.extraJavaOptions"]
    assert "-Dqbeast.log.consoleLevel=info" in loud and "-Dqbeast.log.rootLevel=info" in loud
    # a profile with its own log4j configuration keeps it
    own = connection_spark_conf({"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=x"},
                                tmp_path)["spark.driver.extraJavaOptions"]
    assert "qbeast.log" not in own and own.endswith("-Dlog4j2.configurationFile=x")
    assert console_log_level(debug=False, environ={}) == "fatal"
    assert console_log_level(debug=True, environ={}) == "warn"
    assert console_log_level(debug=True, environ={"QBEAST_SPARK_LOG_LEVEL": " INFO "}) == "info"
    assert console_log_level(debug=False, environ={"QBEAST_SPARK_LOG_LEVEL": "loud"}) == "fatal"


@pytest.mark.slow
def test_embedded_catalog_holder_sees_another_process_lock(tmp_path):
    """Derby holds a POSIX lock on metastore_db/dbex.lck; another process's lock is reported."""
    from qbeast import EmbeddedCatalog

    def embedded_catalog_holder(folder):
        return EmbeddedCatalog(folder).derby_holder()

    assert embedded_catalog_holder(tmp_path) is None  # no catalog yet
    lock_file = tmp_path / "metastore_db" / "dbex.lck"
    lock_file.parent.mkdir()
    lock_file.write_text("x")
    assert embedded_catalog_holder(tmp_path) is None  # left behind by a finished process
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         f"fd = os.open({str(lock_file)!r}, os.O_RDWR)\n"
         "fcntl.lockf(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert embedded_catalog_holder(tmp_path) == lock_file
        assert embedded_catalog_holder(tmp_path) == lock_file  # testing did not take the lock
    finally:
        holder.kill()
        holder.wait()
    assert embedded_catalog_holder(tmp_path) is None


def test_profile_with_only_schema_is_a_session_profile():
    credentials = QbeastCredentials.from_dict({"schema": "analytics"})
    assert credentials.method == "session"
    assert credentials.type == "qbeast"
    assert credentials.catalog_dir == ".qbeast"


@pytest.mark.parametrize("method", ["http", "odbc", "bogus"])
def test_other_connection_methods_are_rejected_naming_the_allowed_value(method):
    with pytest.raises(QbeastProfileError) as raised:
        QbeastCredentials.from_dict({"schema": "analytics", "method": method})
    message = str(raised.value)
    assert f"method: {method}" in message and "allowed values: session" in message
    assert isinstance(raised.value, QbeastError)


def test_thrift_method_takes_host_port_and_user_as_dbt_spark():
    """`method: thrift` reaches `qbeast serve`'s Thrift port; password and auth (the server's
    shared secret, Hive's CUSTOM authentication) pass through to PyHive as dbt-spark's do."""
    credentials = QbeastCredentials.from_dict({"schema": "analytics", "method": "thrift",
                                               "host": "127.0.0.1", "port": 10001, "user": "dbt",
                                               "password": "s3cret", "auth": "CUSTOM"})
    assert (credentials.method, credentials.host, credentials.port) == ("thrift", "127.0.0.1", 10001)
    assert (credentials.user, credentials.password, credentials.auth) == ("dbt", "s3cret", "CUSTOM")
    assert "password" not in credentials._connection_keys()  # never shown by dbt debug
    with pytest.raises(QbeastProfileError, match="`method: thrift` needs `host:`.*127.0.0.1"):
        QbeastCredentials.from_dict({"schema": "s", "method": "thrift", "host": "sc://h:1", "port": 1})
    with pytest.raises(QbeastProfileError, match="`method: thrift` needs `port:`.*1-65535"):
        QbeastCredentials.from_dict({"schema": "s", "method": "thrift", "host": "h", "port": 0})


def test_empty_catalog_dir_is_rejected():
    with pytest.raises(QbeastProfileError, match="catalog_dir"):
        QbeastCredentials.from_dict({"schema": "analytics", "catalog_dir": " "})
