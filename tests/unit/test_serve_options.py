"""``qbeast serve``'s driver settings, built without starting anything."""
from __future__ import annotations

from pathlib import Path

import pytest

from qbeast.errors import InvalidOptionError
from qbeast.spark.embedded_catalog import EmbeddedCatalog
from qbeast.serve.server import TOKEN_AUTHENTICATION_CLASS, TOKEN_INTERCEPTOR_CLASS, ServeOptions


def test_user_java_options_and_class_path_join_the_servers_own(tmp_path: Path) -> None:
    catalog = EmbeddedCatalog.at(str(tmp_path / "catalog"))
    options = ServeOptions(catalog, host="0.0.0.0", token="x" * 20, conf={
        "spark.driver.extraJavaOptions": "-Xss8m", "spark.driver.extraClassPath": "/opt/extra.jar",
        "spark.driver.memory": "2g"})
    options.check()
    conf = options.spark_conf()
    java = conf["spark.driver.extraJavaOptions"].split()
    assert java[-1] == "-Xss8m"  # the user's option, after the server's
    assert f"-Dderby.system.home={catalog.folder}" in java
    assert f"-Dhive.server2.custom.authentication.class={TOKEN_AUTHENTICATION_CLASS}" in java
    assert conf["spark.driver.extraClassPath"].endswith(":/opt/extra.jar")
    assert conf["spark.driver.memory"] == "2g"
    assert conf["spark.connect.grpc.interceptor.classes"] == TOKEN_INTERCEPTOR_CLASS
    assert conf["spark.hadoop.hive.server2.authentication"] == "CUSTOM"
    assert "x" * 20 not in repr(options) and "x" * 20 not in str(conf)  # the secret stays out


def test_a_server_without_token_has_no_authentication_settings(tmp_path: Path) -> None:
    conf = ServeOptions(EmbeddedCatalog.at(str(tmp_path / "catalog"))).spark_conf()
    assert "spark.connect.grpc.interceptor.classes" not in conf
    assert "spark.hadoop.hive.server2.authentication" not in conf


@pytest.mark.parametrize(("host", "token", "message"), [
    ("0.0.0.0", None, "lets other machines connect, and they must authenticate"),
    ("10.1.2.3", None, "--token-file FILE or the environment variable QBEAST_SERVE_TOKEN"),
    ("127.0.0.1", "short", "the server token has 5 characters"),
])
def test_off_loopback_needs_a_token_of_sixteen_characters(tmp_path: Path, host: str,
                                                         token: str | None, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        ServeOptions(EmbeddedCatalog.at(str(tmp_path / "c")), host=host, token=token).check()


def test_the_token_comes_from_the_file_then_the_environment(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from qbeast.cli import serve_token

    monkeypatch.delenv("QBEAST_SERVE_TOKEN", raising=False)
    assert serve_token(None) is None
    monkeypatch.setenv("QBEAST_SERVE_TOKEN", " from-the-environment ")
    assert serve_token(None) == "from-the-environment"
    secret = tmp_path / "token"
    secret.write_text("from-the-file\nignored second line\n")
    assert serve_token(str(secret)) == "from-the-file"  # the file wins
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(InvalidOptionError, match="is empty"):
        serve_token(str(tmp_path / "empty"))
    with pytest.raises(InvalidOptionError, match="cannot read it"):
        serve_token(str(tmp_path / "missing"))


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "0.0.0.0"])
def test_sparks_own_sockets_bind_to_the_servers_host_and_rpc_is_authenticated(
        tmp_path: Path, host: str) -> None:
    options = ServeOptions(EmbeddedCatalog.at(str(tmp_path / "c")), host=host,
                           token=None if host != "0.0.0.0" else "y" * 20)
    options.check()
    conf = options.spark_conf()
    assert conf["spark.driver.bindAddress"] == host
    # a wildcard is no address to advertise: Spark then names the machine's own
    assert conf.get("spark.driver.host") == (None if host == "0.0.0.0" else host)
    assert conf["spark.authenticate"] == "true" and conf["spark.ui.enabled"] == "false"
    assert not any("secret" in key for key in conf)  # Spark generates it inside the JVM
    assert options.process_environment() == ({} if host == "0.0.0.0"
                                             else {"SPARK_LOCAL_IP": host})


def test_a_cluster_master_off_loopback_needs_the_clusters_rpc_secret(tmp_path: Path) -> None:
    catalog = EmbeddedCatalog.at(str(tmp_path / "c"))
    remote = ServeOptions(catalog, host="0.0.0.0", token="z" * 20, master="spark://m:7077")
    assert "spark.authenticate" not in remote.spark_conf()  # the cluster's secret, not ours
    with pytest.raises(InvalidOptionError, match="leaves the driver's own RPC port open without "
                                                 "authentication.*spark.authenticate=true"):
        remote.check()
    ServeOptions(catalog, host="0.0.0.0", token="z" * 20, master="spark://m:7077",
                 conf={"spark.authenticate": "true"}).check()
    ServeOptions(catalog, master="spark://m:7077").check()  # loopback: nobody else reaches it
