"""A store's refusals reach the user as one line: the store's code, where, the fix, and whether
anything was committed; the table is intact afterwards.

The store is moto's S3 server in its own process with request authentication on (IAM checks
every signature and key id, as S3 does), a loopback server that answers every request with
S3's 503 ``SlowDown``, and a port where nothing listens. Each failing call is a ``qbeast.write``
append to a table committed before; after each, the table is read with good credentials and
holds exactly its rows at its version.
"""
from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

import qbeast
from qbeast.delta.log import DeltaLog
from qbeast.errors import WriteFailedError
from qbeast.storage import ObjectStoreError
from s3_server import free_port

pytestmark = [pytest.mark.spark, pytest.mark.objectstore]

BUCKET = "guarded-bucket"
MOTO_SERVER = str(Path(sys.executable).with_name("moto_server"))


@pytest.fixture(scope="module")
def guarded_store():
    """moto's server checking every request's signature; its endpoint and a valid key."""
    import boto3

    port = free_port()
    # the first three requests (the IAM user, its key and its policy) need no signature
    server = subprocess.Popen([MOTO_SERVER, "-H", "127.0.0.1", "-p", str(port)],
                              env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("moto_server did not start")
                time.sleep(0.1)
        endpoint = f"http://127.0.0.1:{port}"
        iam = boto3.client("iam", endpoint_url=endpoint, aws_access_key_id="bootstrap",
                           aws_secret_access_key="bootstrap", region_name="us-east-1")
        iam.create_user(UserName="writer")
        key = iam.create_access_key(UserName="writer")["AccessKey"]
        iam.put_user_policy(UserName="writer", PolicyName="all", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key["AccessKeyId"],
                     aws_secret_access_key=key["SecretAccessKey"],
                     region_name="us-east-1").create_bucket(Bucket=BUCKET)
        yield {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
               "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"], "AWS_REGION": "us-east-1"}
    finally:
        server.terminate()
        server.wait(timeout=30)


class _SlowDown(http.server.BaseHTTPRequestHandler):
    """S3's throttling answer to every request."""

    body = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
            b"<Message>Please reduce your request rate.</Message></Error>")

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.send_response(503)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _answer

    def log_message(self, *args) -> None:  # quiet
        pass


@pytest.fixture
def table(spark, guarded_store, monkeypatch, tmp_path):
    """A table committed at version 0 with good credentials; its location and rows."""
    for name, value in guarded_store.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    spark.conf.set("spark.qbeast.storage.mirrorDir", str(tmp_path / "mirror"))
    location = f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"
    qbeast.write(spark.range(3000).selectExpr("id", "id % 7 as k"), location,
                 columns_to_index=["id", "k"], cube_size=1000)
    yield location
    spark.conf.unset("spark.qbeast.storage.mirrorDir")


def _intact(spark, location: str, env: dict[str, str]) -> None:
    """With good credentials: still version 0, exactly the rows written."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        assert DeltaLog.for_path(location).snapshot().version == 0
        rows = qbeast.QbeastTable.for_path(spark, location).to_df().collect()
        assert sorted(r["id"] for r in rows) == list(range(3000))
    finally:
        for k, v in saved.items():
            if v is not None:
                os.environ[k] = v


@pytest.mark.parametrize(("broken", "code"), [
    ({"AWS_SECRET_ACCESS_KEY": "not-the-secret"}, "SignatureDoesNotMatch (403)"),
    ({"AWS_ACCESS_KEY_ID": "AKIAUNKNOWNKEY000000"}, "InvalidAccessKeyId (403)"),
], ids=["wrong-secret", "unknown-key-id"])
def test_refused_credentials_name_the_stores_code_and_commit_nothing(
        spark, table, guarded_store, monkeypatch, broken, code):
    for name, value in broken.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ObjectStoreError) as refused:
        qbeast.write(spark.range(10).selectExpr("id", "id % 7 as k"), table)
    first = str(refused.value).splitlines()[0]
    assert first.startswith(f"{code} listing {table}/_delta_log"), first
    assert first.endswith(f"nothing was committed: {table} is as it was"), first
    assert ("AWS_SECRET_ACCESS_KEY" if "Signature" in code else "AWS_ACCESS_KEY_ID") in first
    assert "not-the-secret" not in str(refused.value)  # a secret never shows
    _intact(spark, table, guarded_store)


def test_a_missing_bucket_is_named_as_such(spark, table, guarded_store):
    elsewhere = f"s3://no-such-bucket-{uuid.uuid4().hex[:6]}/t"
    with pytest.raises(ObjectStoreError) as refused:
        qbeast.write(spark.range(10).selectExpr("id", "id % 7 as k"), elsewhere,
                     columns_to_index=["id"])
    first = str(refused.value).splitlines()[0]
    assert first.startswith("NoSuchBucket (404) listing "), first
    assert "create it, or fix the bucket" in first and "nothing was committed" in first
    assert refused.value.code == "NoSuchBucket"


def test_a_missing_data_file_is_named_by_its_key(spark, table, guarded_store, tmp_path):
    import boto3

    s3 = boto3.client("s3", endpoint_url=guarded_store["AWS_ENDPOINT_URL"],
                      aws_access_key_id=guarded_store["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=guarded_store["AWS_SECRET_ACCESS_KEY"],
                      region_name="us-east-1")
    prefix = table.removeprefix(f"s3://{BUCKET}/")
    data = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/")["Contents"]
            if o["Key"].endswith(".parquet")]
    s3.delete_object(Bucket=BUCKET, Key=data[0])  # deleted behind the table's back
    spark.conf.set("spark.qbeast.storage.mirrorDir", str(tmp_path / "cold"))  # no local copy
    with pytest.raises(Exception) as missing:  # noqa: PT011 - the read's own error type
        qbeast.QbeastTable.for_path(spark, table).to_df().count()
    assert f"NoSuchKey (404) reading s3://{BUCKET}/{data[0]}" in str(missing.value)
    assert "a data file removed outside its table's log" in str(missing.value)


def test_throttling_is_retried_to_the_limit_then_named(spark, table, guarded_store,
                                                        monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowDown)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("QBEAST_STORE_MAX_RETRIES", "2")
    try:
        with pytest.raises(ObjectStoreError) as throttled:
            qbeast.write(spark.range(10).selectExpr("id", "id % 7 as k"), table)
    finally:
        server.shutdown()
    first = str(throttled.value).splitlines()[0]
    assert first.startswith(f"SlowDown (503) listing {table}/_delta_log: Please reduce your "
                            "request rate (after 2 retries in "), first
    assert "raise QBEAST_STORE_MAX_RETRIES" in first and "nothing was committed" in first
    _intact(spark, table, guarded_store)


def test_a_dead_endpoint_is_named_and_commits_nothing(spark, table, guarded_store, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("QBEAST_STORE_MAX_RETRIES", "1")
    with pytest.raises((ObjectStoreError, WriteFailedError)) as dead:
        qbeast.write(spark.range(10).selectExpr("id", "id % 7 as k"), table)
    first = str(dead.value).splitlines()[0]
    assert first.startswith(f"ConnectionRefused listing {table}/_delta_log"), first
    assert "check AWS_ENDPOINT_URL" in first and "nothing was committed" in first
    _intact(spark, table, guarded_store)
