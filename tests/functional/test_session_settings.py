"""Where the adapter puts the embedded catalog, and which Spark settings a connection asks for.

Pure functions, no Spark: these rules decide whether two dbt invocations see the same tables.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from dbt.adapters.qbeast.credentials import QbeastCredentials
from dbt.adapters.qbeast.errors import QbeastProfileError
from dbt.adapters.qbeast.session_settings import (
    catalog_path,
    connection_spark_conf,
    project_root_of,
)
from qbeast.errors import QbeastError


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


def test_embedded_catalog_defaults_point_inside_the_catalog_dir(tmp_path):
    conf = connection_spark_conf({}, tmp_path)
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "warehouse")
    url = conf["spark.hadoop.javax.jdo.option.ConnectionURL"]
    assert url == f"jdbc:derby:;databaseName={tmp_path / 'metastore_db'};create=true"
    java = conf["spark.driver.extraJavaOptions"].split()
    assert "-Duser.timezone=UTC" in java
    assert f"-Dderby.stream.error.file={tmp_path / 'derby.log'}" in java


def test_user_parameters_win_but_keep_the_utc_jvm(tmp_path):
    conf = connection_spark_conf(
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


@pytest.mark.parametrize("key", ["spark.hadoop.hive.metastore.uris", "spark.remote"])
def test_external_catalog_gets_no_embedded_derby(tmp_path, key):
    conf = connection_spark_conf({key: "thrift://metastore:9083"}, tmp_path)
    assert "spark.hadoop.javax.jdo.option.ConnectionURL" not in conf
    assert str(tmp_path) not in conf["spark.driver.extraJavaOptions"]


def test_profile_with_only_schema_is_a_session_profile():
    credentials = QbeastCredentials.from_dict({"schema": "analytics"})
    assert credentials.method == "session"
    assert credentials.type == "qbeast"
    assert credentials.catalog_dir == ".qbeast"


@pytest.mark.parametrize("method", ["thrift", "odbc", "bogus"])
def test_other_connection_methods_are_rejected_naming_the_allowed_value(method):
    with pytest.raises(QbeastProfileError) as raised:
        QbeastCredentials.from_dict({"schema": "analytics", "method": method})
    message = str(raised.value)
    assert f"method: {method}" in message and "allowed values: session" in message
    assert isinstance(raised.value, QbeastError)


def test_empty_catalog_dir_is_rejected():
    with pytest.raises(QbeastProfileError, match="catalog_dir"):
        QbeastCredentials.from_dict({"schema": "analytics", "catalog_dir": " "})
