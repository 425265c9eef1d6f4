"""The object-store backend against a real S3-compatible server: moto's, on loopback.

Each test session (each xdist worker) starts one moto server on a free port and talks to it over
HTTP, so every request goes through obstore's S3 client exactly as it would to AWS: signatures,
``If-None-Match: *`` conditional puts, delimiter listings. moto 5.x honours ``If-None-Match: *``
on PutObject (412 when the key exists) but checks and stores in two steps; the test server
makes each PutObject one atomic step, as on S3 (``s3_server.make_puts_atomic``). The race tests
below count winners through the server's answers only.
"""
from __future__ import annotations

import io
import json
import logging
import pickle
import re
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from delta_helpers import SCHEMA, make_add
from s3_server import BUCKET, CREDENTIALS, free_port
from storage_contract import (check_file_transfers, check_log_layer, check_storage_contract,
                              race_put_if_absent)

from qbeast.delta.actions import AddFile, Metadata
from qbeast.delta.errors import ConcurrentModificationError
from qbeast.delta.log import DeltaLog
from qbeast.storage import LocalStorage, ObjectStorage, ObjectStoreError, storage_for
from qbeast.storage.object_store import parse_location
from qbeast.errors import InvalidOptionError

pytestmark = pytest.mark.objectstore



@pytest.fixture
def options(moto_endpoint: str) -> dict[str, Any]:
    """Storage options for moto; ``allow_http`` is left out on purpose (the http endpoint implies it)."""
    return {"endpoint": moto_endpoint, **CREDENTIALS}


@pytest.fixture
def root() -> str:
    """A fresh prefix in the bucket, so tests sharing the server never see each other's objects."""
    return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"


# ---------------------------------------------------------------- the shared contract


def test_storage_contract_on_s3(options: dict[str, Any], root: str, tmp_path: Any) -> None:
    storage = storage_for(root, options)
    assert isinstance(storage, ObjectStorage)
    check_storage_contract(storage, storage.resolve(root))
    check_file_transfers(storage, storage.resolve(f"{root}/transfers"), str(tmp_path))


def test_log_layer_on_s3(options: dict[str, Any], root: str) -> None:
    check_log_layer(storage_for(root, options), f"{root}/table", lambda: int(time.time() * 1000) + 10_000)


# ---------------------------------------------------------------- locations and options


def test_locations_are_parsed_in_one_place() -> None:
    assert parse_location("s3://b/k/x/").path == "s3://b/k/x"
    assert parse_location("s3a://b/k") == parse_location("S3://b/k")  # Hadoop's name, same object
    assert parse_location("gs://b").path == "gs://b"
    az = parse_location("abfss://cont@acct.dfs.core.windows.net/t")
    assert (az.family, az.bucket, az.key) == ("azure", "cont@acct.dfs.core.windows.net", "t")
    storage = ObjectStorage("s3")
    assert storage.resolve("s3a://b/t") == storage.resolve("s3://b/t/") == "s3://b/t"
    assert storage.resolve("s3://b/t") == "s3://b/t" == storage.uri("s3a://b/t/")
    with pytest.raises(InvalidOptionError, match="not an object-store URI"):
        storage.resolve("/b/t")  # a plain path is a local folder, never an object
    with pytest.raises(InvalidOptionError, match="gs store, not s3"):
        storage.resolve("gs://b/t")
    assert DeltaLog.for_path("s3a://b/t").table_path == "s3://b/t"


@pytest.mark.parametrize(("location", "message"), [
    ("hdfs://nn/t", r"scheme 'hdfs'; supported: plain paths, file:, s3://, s3a://, gs://, abfss://"),
    ("s3:///key", "names no bucket"),
    ("s3a://", "names no bucket"),
    ("gs://b/a//c", "empty path segment"),
    ("abfss://container/t", "abfss://<container>@<account>.dfs.core.windows.net"),
])
def test_bad_locations_are_refused_with_the_supported_form(location: str, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        DeltaLog.for_path(location)


def test_local_paths_keep_their_storage_and_refuse_store_options(tmp_path: Any) -> None:
    assert type(storage_for(str(tmp_path))) is LocalStorage
    assert type(storage_for(f"file://{tmp_path}")) is LocalStorage
    assert DeltaLog.for_path(f"file://{tmp_path}/a%20b").table_path == f"{tmp_path}/a b"
    with pytest.raises(InvalidOptionError, match="object stores only"):
        storage_for(str(tmp_path), {"endpoint": "http://x"})


def test_credentials_and_endpoint_from_the_aws_environment(moto_endpoint: str, root: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT", "AWS_ALLOW_HTTP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)  # http://: allow_http is implied
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing-token")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    storage = storage_for(root)
    storage.write_bytes(f"{storage.resolve(root)}/env.txt", b"ok")
    # explicit options win over the environment: a wrong endpoint fails, deltalake's spelling works
    assert storage_for(root, {"AWS_ENDPOINT_URL": moto_endpoint}).read_bytes(
        f"{storage.resolve(root)}/env.txt") == b"ok"
    broken = storage_for(root, {"endpoint": "http://127.0.0.1:9", "timeout": "2s",
                                "connect_timeout": "1s", "max_retries": 2})
    # an unreachable store is one line naming what happened, where, and what to check; the
    # retries stop at the limit the options set
    with pytest.raises(ObjectStoreError) as refused:
        broken.read_bytes(f"{storage.resolve(root)}/env.txt")
    assert refused.value.code == "ConnectionRefused"
    line = str(refused.value).splitlines()[0]
    assert re.match(r"ConnectionRefused reading s3://\S+/env\.txt \(after 2 retries in [\d.]+s\); "
                    r"nothing listens at the store's endpoint: check AWS_ENDPOINT_URL", line), line


_AWS_VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT", "AWS_ALLOW_HTTP",
                  "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
                  "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE")


def test_credentials_and_endpoint_from_the_shared_aws_files(moto_endpoint: str, root: str, tmp_path: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """No AWS variable but the files' locations and the profile: ~/.aws/config and credentials."""
    from qbeast.storage import set_session_settings

    for name in _AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    set_session_settings("s3", {})
    config, credentials = tmp_path / "config", tmp_path / "credentials"
    config.write_text(f"[default]\nregion = eu-west-3\n\n[profile lake]\nregion = us-east-1\n"
                      f"endpoint_url = {moto_endpoint}\n")
    credentials.write_text("[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n"
                           "[lake]\naws_access_key_id = testing\naws_secret_access_key = testing\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_PROFILE", "lake")
    storage = storage_for(root)
    target = f"{storage.resolve(root)}/files.txt"
    storage.write_bytes(target, b"from the shared files")
    assert storage.read_bytes(target) == b"from the shared files"
    # the environment wins over the files, setting by setting
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    with pytest.raises(ObjectStoreError):
        storage_for(root, {"timeout": "2s", "connect_timeout": "1s"}).read_bytes(target)


def test_s3_settings_are_layered_options_environment_session_files(tmp_path: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from qbeast.storage import aws_config
    from qbeast.storage import set_session_settings

    for name in _AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    credentials = tmp_path / "credentials"
    credentials.write_text("[default]\naws_access_key_id = file-id\naws_secret_access_key = file-secret\n"
                           "aws_session_token = file-token\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "missing"))
    hadoop = aws_config.from_hadoop({"fs.s3a.access.key": "hadoop-id", "fs.s3a.secret.key": "hadoop-secret",
                                     "fs.s3a.endpoint": "minio:9000", "fs.s3a.connection.ssl.enabled": "false",
                                     "fs.s3a.path.style.access": "true", "fs.s3a.endpoint.region": "eu-west-1"})
    assert hadoop == {"access_key_id": "hadoop-id", "secret_access_key": "hadoop-secret",
                      "endpoint": "http://minio:9000", "region": "eu-west-1",
                      "virtual_hosted_style_request": "false"}
    assert aws_config.from_hadoop({"fs.s3a.secret.key": "alone"}) == {}  # never half a credential
    try:
        set_session_settings("s3", hadoop)
        # the session's key replaces the file's whole credential (no file token beside it)
        config = ObjectStorage("s3")._config
        assert (config["access_key_id"], config["secret_access_key"]) == ("hadoop-id", "hadoop-secret")
        assert "session_token" not in config and config["endpoint"] == "http://minio:9000"
        assert ObjectStorage("s3")._client.get("allow_http") is True  # implied by http://
        # the environment wins over the session; options over both
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-id")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
        monkeypatch.setenv("AWS_REGION", "ap-south-1")
        config = ObjectStorage("s3")._config
        assert not {"access_key_id", "secret_access_key", "region"} & set(config)  # obstore reads env
        config = ObjectStorage("s3", {"AWS_ENDPOINT_URL": "http://other:1"})._config
        assert config.get("aws_endpoint_url") == "http://other:1" and "endpoint" not in config
        set_session_settings("s3", {})
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        config = ObjectStorage("s3")._config
        assert (config["access_key_id"], config["session_token"]) == ("file-id", "file-token")
    finally:
        set_session_settings("s3", {})


_READ_IN_A_CLEAN_PROCESS = (
    "import pickle, sys; storage = pickle.loads(sys.stdin.buffer.read()); "
    "sys.stdout.buffer.write(storage.read_bytes(sys.argv[1]))"
)


def _read_elsewhere(storage: Any, path: str, home: Any) -> subprocess.CompletedProcess:
    """Unpickle ``storage`` in a process without any AWS variable or file (an executor on another
    machine) and read ``path`` there."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = str(home)  # no ~/.aws there
    return subprocess.run([sys.executable, "-c", _READ_IN_A_CLEAN_PROCESS, path], env=env,
                          input=pickle.dumps(storage), capture_output=True, timeout=60)


def test_a_store_for_tasks_carries_the_settings_this_process_found(moto_endpoint: str, root: str,
                                                                   tmp_path: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """What Arrow tasks on a cluster get: the driver's environment travels inside the store,
    below explicit options; a store pickled as it is would not reach the server there."""
    from qbeast.storage import set_session_settings

    for name in _AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    set_session_settings("s3", {})
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    storage = storage_for(root, {"timeout": "5s", "connect_timeout": "2s"})
    target = f"{storage.resolve(root)}/for-tasks.txt"
    storage.write_bytes(target, b"read on an executor")
    elsewhere = _read_elsewhere(storage.for_tasks(), target, tmp_path)
    assert elsewhere.returncode == 0, elsewhere.stderr.decode()[-2000:]
    assert elsewhere.stdout == b"read on an executor"
    assert _read_elsewhere(storage, target, tmp_path).returncode != 0  # no settings there
    # explicit options keep winning over the environment they travel with
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    explicit = storage_for(root, {"aws_endpoint_url": moto_endpoint}).for_tasks()
    assert _read_elsewhere(explicit, target, tmp_path).stdout == b"read on an executor"
    # the session's settings (a Spark session's fs.s3a.*) travel the same way
    for name in _AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    try:
        set_session_settings("s3", {"endpoint": moto_endpoint, "access_key_id": "testing",
                                    "secret_access_key": "testing", "region": "us-east-1"})
        from_session = storage_for(root).for_tasks()
    finally:
        set_session_settings("s3", {})
    assert _read_elsewhere(from_session, target, tmp_path).stdout == b"read on an executor"
    local = LocalStorage()
    assert local.for_tasks() is local  # a local disk has nothing to carry


def test_unknown_option_is_an_option_error(options: dict[str, Any], root: str) -> None:
    with pytest.raises(InvalidOptionError, match="not known to the s3 store"):
        storage_for(root, {**options, "no_such_setting": "1"}).exists(parse_location(root).path)


# ---------------------------------------------------------------- put-if-absent


def test_put_if_absent_race_of_threads_has_one_winner(options: dict[str, Any], root: str) -> None:
    for trial in range(5):
        key = f"{ObjectStorage('s3').resolve(root)}/race/{trial:020d}.json"
        results = race_put_if_absent(lambda: storage_for(root, options), key, 8)
        winners = [w for w, won in results.items() if won]
        assert len(results) == 8 and len(winners) == 1, results
        content = storage_for(root, options).read_bytes(key)
        assert content == f"writer {winners[0]} ".encode() * 5000


_PUT_WORKER = textwrap.dedent(
    """
    import sys, time
    from qbeast.storage import storage_for
    endpoint, root, key, writer, start_at = sys.argv[1:6]
    storage = storage_for(root, {"endpoint": endpoint, "access_key_id": "testing",
                                 "secret_access_key": "testing", "region": "us-east-1"})
    while time.time() < float(start_at):
        time.sleep(0.001)
    print(storage.put_if_absent(key, f"process {writer}".encode()))
    """
)


def test_put_if_absent_race_of_processes_has_one_winner(moto_endpoint: str, options: dict[str, Any],
                                                        root: str) -> None:
    key = f"{ObjectStorage('s3').resolve(root)}/00000000000000000000.json"
    start_at = str(time.time() + 2.0)
    procs = [subprocess.Popen([sys.executable, "-c", _PUT_WORKER, moto_endpoint, root, key, str(w), start_at],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(2)]
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outs.append(out.strip())
    assert sorted(outs) == ["False", "True"]
    assert storage_for(root, options).read_bytes(key) == f"process {outs.index('True')}".encode()


def _refusing_server() -> tuple[Any, str]:
    """moto's S3 app behind a gate that answers 501 Not Implemented to conditional PUTs, as an
    S3-compatible server without ``If-None-Match`` support does; it shares moto's buckets."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    moto_app = DomainDispatcherApplication(create_backend_app)

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        if environ["REQUEST_METHOD"] == "PUT" and environ.get("HTTP_IF_NONE_MATCH"):
            start_response("501 Not Implemented", [("Content-Type", "application/xml")])
            return [b"<Error><Code>NotImplemented</Code><Message>A header you provided implies "
                    b"functionality that is not implemented</Message></Error>"]
        return moto_app(environ, start_response)

    server = make_server("127.0.0.1", free_port(), app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}"


def test_store_without_conditional_writes_is_refused_unless_single_writer(
        moto_endpoint: str, root: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("QBEAST_S3_SINGLE_WRITER", raising=False)
    server, endpoint = _refusing_server()
    try:
        # a 5xx answer is retried with backoff before it counts (13 s under the default limits);
        # one retry shows the same refusal
        options = {"endpoint": endpoint, **CREDENTIALS, "max_retries": "1"}
        location = f"{root}/table"
        with pytest.raises(InvalidOptionError, match="refuses conditional writes") as info:
            _create_table(DeltaLog.for_path(location, options=options))
        assert "single_writer=true" in str(info.value) and "QBEAST_S3_SINGLE_WRITER=true" in str(info.value)
        assert not storage_for(location, options).exists(f"{parse_location(location).path}/_delta_log")

        with caplog.at_level(logging.WARNING, logger="qbeast.storage.object_store"):
            log = DeltaLog.for_path(location, options={**options, "single_writer": "true"})
            _create_table(log)
            assert log.start_transaction().add_actions(make_add("b.parquet")).commit("WRITE", blind_append=True) == 1
        assert sum("check followed by a put" in r.getMessage() for r in caplog.records) == 1
        assert log.storage.put_if_absent(f"{log.log_path}/{1:020d}.json", b"x") is False

        monkeypatch.setenv("QBEAST_S3_SINGLE_WRITER", "true")  # the environment says the same
        assert DeltaLog.for_path(location, options=options).start_transaction().add_actions(
            make_add("c.parquet")).commit("WRITE", blind_append=True) == 2
    finally:
        server.shutdown()


# ---------------------------------------------------------------- a Delta log on s3://


def _create_table(log: DeltaLog) -> None:
    tx = log.start_transaction()
    tx.update_metadata(Metadata.create(SCHEMA))
    tx.add_actions(make_add("a.parquet"))
    assert tx.commit("CREATE TABLE") == 0


def test_delta_log_on_s3_conflicting_commit_loses(options: dict[str, Any], root: str) -> None:
    location = f"{root}/table"
    log = DeltaLog.for_path(location, options=options)
    _create_table(log)
    assert log.start_transaction().add_actions(make_add("b.parquet", 3)).commit("WRITE", blind_append=True) == 1
    base = DeltaLog.for_path(location, options=options).snapshot()
    assert (base.version, base.num_files, base.num_records) == (1, 2, 4)

    def rewrite(name: str) -> Any:
        tx = DeltaLog.for_path(location, options=options).start_transaction(base)
        tx.mark_files_read(["a.parquet"])
        return tx.add_actions(base.files["a.parquet"].remove(), make_add(name))

    first, second = rewrite("x.parquet"), rewrite("y.parquet")
    assert first.commit("OPTIMIZE") == 2
    with pytest.raises(ConcurrentModificationError):
        second.commit("OPTIMIZE")
    assert set(log.snapshot().files) == {"b.parquet", "x.parquet"}


def _deltalake_options(endpoint: str) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true", "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}


def test_deltalake_reads_the_table_the_engine_wrote(moto_endpoint: str, options: dict[str, Any],
                                                    root: str) -> None:
    deltalake = pytest.importorskip("deltalake")
    location = f"{root}/engine"
    log = DeltaLog.for_path(location, options=options)
    for version, ids in enumerate(([1, 2, 3], [4, 5])):
        data = pa.table({"id": pa.array(ids, pa.int64()), "part": pa.array(["p"] * len(ids))})
        sink = io.BytesIO()
        pq.write_table(data, sink)
        name = f"part-{version}.parquet"
        log.storage.write_bytes(f"{log.table_path}/{name}", sink.getvalue())
        tx = log.start_transaction()
        if version == 0:
            tx.update_metadata(Metadata.create(SCHEMA))
        tx.add_actions(AddFile(name, {}, len(sink.getvalue()), int(time.time() * 1000), True,
                               json.dumps({"numRecords": len(ids)})))
        assert tx.commit("WRITE", blind_append=version > 0) == version
    table = deltalake.DeltaTable(location,
                                 storage_options=_deltalake_options(moto_endpoint))
    assert table.version() == 1
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 4, 5]


def test_engine_reads_the_table_deltalake_wrote(moto_endpoint: str, options: dict[str, Any], root: str) -> None:
    deltalake = pytest.importorskip("deltalake")
    location = f"{root}/peer"
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    deltalake.write_deltalake(location, data, storage_options=_deltalake_options(moto_endpoint))
    deltalake.write_deltalake(location, data, mode="append", storage_options=_deltalake_options(moto_endpoint))
    snap = DeltaLog.for_path(location.replace("s3://", "s3a://", 1), options=options).snapshot()
    assert (snap.version, snap.num_files, snap.num_records) == (1, 2, 6)
    storage = storage_for(location, options)
    for name in snap.files:
        assert storage.exists(f"{storage.resolve(location)}/{name}")


def test_gcs_and_azure_stores_are_built_by_the_same_class() -> None:
    """Built without a request (obstore connects lazily): bucket, container and account land
    where the location puts them."""
    azure = storage_for("abfss://cont@acct.dfs.core.windows.net/t", {"account_key": "a2V5"})
    assert isinstance(azure, ObjectStorage)
    built = azure._store(parse_location("abfss://cont@acct.dfs.core.windows.net/t").bucket)
    assert 'container_name="cont"' in repr(built) and 'account_name="acct"' in repr(built)
    gcs = storage_for("gs://bkt/t")
    assert isinstance(gcs, ObjectStorage) and 'bucket="bkt"' in repr(gcs._store("bkt"))


def _log_of_appends(storage: Any, location: str, commits: int, interval: int) -> DeltaLog:
    """A table of ``commits`` commits adding ``f<i>.parquet`` each, checkpoints every ``interval``."""
    log = DeltaLog.for_path(location, storage)
    tx = log.start_transaction()
    tx.update_metadata(Metadata.create(SCHEMA, configuration={"delta.checkpointInterval": str(interval)}))
    tx.add_actions(make_add("f0.parquet"))
    tx.commit("CREATE TABLE")
    for i in range(1, commits):
        log.start_transaction().add_actions(make_add(f"f{i}.parquet")).commit("WRITE", blind_append=True)
    return log


def test_a_snapshot_load_lists_the_log_from_the_last_checkpoint(options: dict[str, Any], root: str) -> None:
    """After 25 commits (checkpoints every 10), loading the latest snapshot costs one listing that
    starts at checkpoint 20, the hint, the checkpoint and the 4 commits after it: never a listing
    of the whole ``_delta_log``. The result is the snapshot a full listing gives."""
    from qbeast.storage import request_counts

    storage = storage_for(root, options)
    log = _log_of_appends(storage, f"{root}/t", 25, 10)
    before = request_counts()
    snapshot = DeltaLog.for_path(f"{root}/t", storage).snapshot()
    after = request_counts()
    made = {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}
    assert made == {"list": 1, "get": 1 + 1 + 4}, made
    assert (snapshot.version, snapshot.checkpoint_version) == (24, 20)
    full = log._build(log.list_log(), 24)  # the whole log listed, replayed the usual way
    assert set(snapshot.files) == set(full.files) == {f"f{i}.parquet" for i in range(25)}
    assert snapshot.timestamp == full.timestamp


def test_a_stale_or_broken_checkpoint_hint_falls_back_to_the_full_listing(options: dict[str, Any],
                                                                         root: str) -> None:
    storage = storage_for(root, options)
    log = _log_of_appends(storage, f"{root}/t", 12, 5)
    storage.write_bytes(f"{log.log_path}/{10:020d}.checkpoint.parquet", b"not parquet")
    snapshot = DeltaLog.for_path(f"{root}/t", storage).snapshot()  # checkpoint 5 and commits 6..11
    assert (snapshot.version, snapshot.checkpoint_version) == (11, 5)
    assert set(snapshot.files) == {f"f{i}.parquet" for i in range(12)}
    storage.write_bytes(f"{log.log_path}/_last_checkpoint", b'{"version": 40, "size": 1}')
    assert DeltaLog.for_path(f"{root}/t", storage).snapshot().version == 11  # a hint past the end


def test_a_large_checkpoint_is_read_by_ranges(options: dict[str, Any], root: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint at least ``RANGED_READ_BYTES`` large (the size comes from
    ``_last_checkpoint``) is read by ranges: a snapshot load fetches its footer and the columns
    it reads (the paths of the files, not their statistics), and the statistics come later,
    when asked for, from the same file. The snapshot is the one a whole read gives."""
    storage = storage_for(root, options)
    log = DeltaLog.for_path(f"{root}/t", storage)
    tx = log.start_transaction()
    tx.update_metadata(Metadata.create(SCHEMA))
    def stats(i: int) -> str:  # statistics that do not compress away: most of the checkpoint
        return json.dumps({"numRecords": 7, "minValues": {"id": uuid.uuid5(uuid.NAMESPACE_OID, str(i)).hex * 20}})

    tx.add_actions(*[AddFile(f"f{i}.parquet", {}, 1000 + i, 1_700_000_000_000, True, stats(i), None)
                     for i in range(6000)])
    tx.commit("WRITE")
    log.checkpoint()
    checkpoint = f"{log.log_path}/{0:020d}.checkpoint.parquet"
    size = storage.stat(checkpoint).size

    fetched: dict[str, int] = {"whole": 0, "ranged": 0}
    read_bytes, read_range = storage.read_bytes, storage.read_range

    def whole(path: str) -> bytes:
        data = read_bytes(path)
        fetched["whole"] += len(data) if path == checkpoint else 0
        return data

    def ranged(path: str, start: int, length: int) -> bytes:
        data = read_range(path, start, length)
        fetched["ranged"] += len(data) if path == checkpoint else 0
        return data

    monkeypatch.setattr(storage, "read_bytes", whole)
    monkeypatch.setattr(storage, "read_range", ranged)
    monkeypatch.setattr(ObjectStorage, "RANGED_READ_BYTES", size)  # this checkpoint is "large"
    snapshot = DeltaLog.for_path(f"{root}/t", storage).snapshot()
    assert snapshot.checkpoint_version == 0
    assert fetched["whole"] == 0 and 0 < fetched["ranged"] < size / 3, (fetched, size)
    assert set(snapshot.files) == {f"f{i}.parquet" for i in range(6000)}
    assert snapshot.files["f17.parquet"].stats == stats(17)  # the rest of the add column, on demand
    assert snapshot.num_records == 7 * 6000

    monkeypatch.setattr(ObjectStorage, "RANGED_READ_BYTES", size + 1)  # small: one whole read
    fetched.update(whole=0, ranged=0)
    again = DeltaLog.for_path(f"{root}/t", storage).snapshot()
    assert fetched == {"whole": size, "ranged": 0}
    assert set(again.files) == set(snapshot.files)


def test_signed_urls_let_a_plain_http_client_read_ranges(options: dict[str, Any], root: str,
                                                         tmp_path: Any) -> None:
    """A signed URL carries its own authorisation: a client with no credentials (urllib) GETs
    the object and any range of it. Several files are signed in one call, each URL for its own
    object (keys with a space and a percent sign too); a local path cannot be signed."""
    import urllib.request

    from qbeast.errors import QbeastError

    storage = storage_for(root, options)
    data = {f"{root}/a b%.bin": bytes(range(256)) * 40, f"{root}/dir/c.bin": b"0123456789"}
    for path, content in data.items():
        storage.write_bytes(path, content)
    urls = storage.signed_urls(list(data), 120)
    assert len(urls) == 2 and all("X-Amz-Signature=" in u and "X-Amz-Expires=120" in u for u in urls)
    for url, content in zip(urls, data.values()):
        with urllib.request.urlopen(url) as whole:
            assert whole.read() == content
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Range": "bytes=3-6"})) as part:
            assert part.status == 206 and part.read() == content[3:7]
    with pytest.raises(QbeastError, match="LocalStorage cannot sign URLs"):
        LocalStorage().signed_urls([str(tmp_path / "x")], 60)


@pytest.mark.parametrize("token", [None, "FwoGZXIvYXdzEXAMPLETOKEN/+="])
def test_s3_signed_urls_carry_the_signature_botocore_computes(monkeypatch: pytest.MonkeyPatch,
                                                              token: str | None) -> None:
    """The test server does not check signatures, so a URL it serves proves nothing about AWS.
    botocore, the AWS SDK's own SigV4 signer, is an independent implementation: for the same
    object, credentials, region, time and lifetime it must compute the same query signature
    (keys needing percent-encoding and a session token included), which is what S3 checks."""
    from datetime import datetime
    from urllib.parse import parse_qs, urlsplit

    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    key, secret, region = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "eu-west-3"
    options = {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": region}
    if token is not None:
        options["AWS_SESSION_TOKEN"] = token
    storage = storage_for("s3://lake-bucket/t", options)
    paths = ["s3://lake-bucket/t/part=a b/x+y%z.parquet", "s3://lake-bucket/t/plain.parquet"]
    for url in storage.signed_urls(paths, 900):
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        assert parts.scheme == "https" and "lake-bucket" in url and query["X-Amz-Expires"] == ["900"]
        assert query.get("X-Amz-Security-Token") == ([token] if token else None)
        signed_at = datetime.strptime(query["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ")
        monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda at=signed_at: at)
        request = AWSRequest(method="GET", url=f"{parts.scheme}://{parts.netloc}{parts.path}")
        botocore.auth.S3SigV4QueryAuth(Credentials(key, secret, token), "s3", region,
                                       expires=900).add_auth(request)
        expected = parse_qs(urlsplit(request.url).query)
        assert query["X-Amz-Credential"] == expected["X-Amz-Credential"]
        assert query["X-Amz-SignedHeaders"] == expected["X-Amz-SignedHeaders"]
        assert query["X-Amz-Signature"] == expected["X-Amz-Signature"], url
