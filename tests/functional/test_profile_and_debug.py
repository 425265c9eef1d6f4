"""`dbt debug` on the example project, and what a broken qbeast profile tells the user."""
from __future__ import annotations

import os
import sys

import yaml

from dbt.adapters.qbeast.errors import QbeastProfileError

from .example_project import copy_example_project, invoke_dbt


def _profile(project_dir, **target):
    profiles = {"qbeast_demo": {"target": "local", "outputs": {"local": {"type": "qbeast", **target}}}}
    (project_dir / "profiles.yml").write_text(yaml.safe_dump(profiles))


def test_dbt_debug_reports_the_qbeast_adapter_and_connects(spark, tmp_path):
    project = copy_example_project(tmp_path / "demo")
    result, messages = invoke_dbt(["debug"], project)
    assert result.success, messages
    assert "adapter type: qbeast" in messages
    assert any("Connection test: [OK connection ok]" in m for m in messages), messages


def test_profile_with_only_type_and_schema_connects(spark, tmp_path):
    project = copy_example_project(tmp_path / "demo")
    _profile(project, schema="minimal_profile")
    result, messages = invoke_dbt(["debug"], project)
    assert result.success, messages
    assert any("method: session" in m for m in messages), messages


def test_unknown_method_is_a_clear_profile_error(tmp_path):
    project = copy_example_project(tmp_path / "demo")
    _profile(project, schema="broken", method="odbc")
    result, _ = invoke_dbt(["parse"], project)
    assert not result.success
    message = str(result.exception)
    assert 'Credentials in profile "qbeast_demo", target "local" invalid' in message
    assert "method: odbc" in message and "allowed values: session, connect, thrift" in message
    assert isinstance(result.exception.__cause__, QbeastProfileError)


def test_connect_method_needs_a_spark_connect_url(tmp_path):
    """`method: connect` takes the server's sc:// URL in `host` (e.g. `qbeast serve`'s)."""
    from dbt.adapters.qbeast.credentials import QbeastCredentials

    credentials = QbeastCredentials(method="connect", host="sc://127.0.0.1:15002", schema="s")
    assert credentials.server_side_parameters["spark.remote"] == "sc://127.0.0.1:15002"
    assert credentials._connection_keys() == ("method", "host", "schema")
    for host in ("sc://127.0.0.1:15002", "sc://127.0.0.1:15002/"):
        with_token = QbeastCredentials(method="connect", host=host, schema="s", token="a b/c;d")
        assert with_token.server_side_parameters["spark.remote"] == \
            "sc://127.0.0.1:15002/;x-qbeast-token=a%20b%2Fc%3Bd"
    with_params = QbeastCredentials(method="connect", host="sc://h:1/;user_id=me", schema="s",
                                    token="t")
    assert with_params.server_side_parameters["spark.remote"] == \
        "sc://h:1/;user_id=me;x-qbeast-token=t"
    project = copy_example_project(tmp_path / "demo")
    for host, says in (("localhost", "allowed values: sc://HOST:PORT"),
                       ("sc://", "allowed values: sc://HOST:PORT")):
        _profile(project, schema="broken", method="connect", host=host)
        result, _ = invoke_dbt(["parse"], project)
        assert not result.success and says in str(result.exception)
    _profile(project, schema="broken", method="connect", host="sc://a:1",
             server_side_parameters={"spark.remote": "sc://b:2"})
    result, _ = invoke_dbt(["parse"], project)
    assert not result.success and "disagree" in str(result.exception)


def test_connection_pins_python_workers_and_resolves_catalog_in_project(project):
    """The adapter fixture's connection: catalog under the project root, workers on this Python."""
    manager = project.adapter.connections
    assert manager.credentials.catalog_dir == os.path.join(project.project_root, ".qbeast")
    project.run_sql("select 1")
    assert os.environ["PYSPARK_PYTHON"] == sys.executable


def test_catalog_dir_that_is_a_file_is_a_clear_connection_error(spark, tmp_path):
    project = copy_example_project(tmp_path / "demo")
    (project / "not_a_folder").write_text("x")
    _profile(project, schema="broken", catalog_dir="not_a_folder")
    try:
        result, messages = invoke_dbt(["debug"], project)
    finally:
        from dbt.adapters.factory import reset_adapters

        reset_adapters()  # a failed `dbt debug` leaves its adapter registered for the next tests
    assert not result.success
    text = "\n".join(messages)
    assert f"catalog_dir {project / 'not_a_folder'} of the qbeast profile cannot be created" in text
    assert "[Errno" not in text


def test_dbt_version_lists_the_adapter():
    """`dbt --version` globs site-packages/dbt/adapters; `make install` links the adapter there."""
    import subprocess

    code = "from dbt.version import _get_dbt_plugins_info as p; print(dict(p()))"
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    from dbt.adapters.qbeast.__version__ import version

    assert f"'qbeast': '{version}'" in listed.stdout, listed.stdout + listed.stderr
