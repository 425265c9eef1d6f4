"""The one line a failed store request becomes, read out of the client's real messages.

The texts are obstore's messages as the S3 test server (moto, with authentication on), Azure's
and GCS's XML and JSON error bodies and a closed port produced them; the end-to-end checks
against real servers are in tests/spark/test_store_errors.py.
"""
from __future__ import annotations

import pytest

from qbeast.storage.errors import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_SECONDS,
    read_failure,
    retry_limits,
)
from qbeast.errors import InvalidOptionError

S3_SIGNATURE = (
    "The operation lacked the necessary privileges to complete for path k: Error performing PUT "
    "http://127.0.0.1:45123/bucket-one/k in 3.4ms - Server returned non-2xx status code: 403 "
    'Forbidden: <?xml version="1.0" encoding="utf-8"?>\n<Error><Code>SignatureDoesNotMatch</Code>'
    "<Message>The request signature we calculated does not match the signature you provided. "
    "Check your key and signing method.</Message><RequestId>Ti</RequestId></Error>\n\nDebug "
    "source:\nPermissionDenied {\n    path: \"k\",\n    source: RetryError(\n        "
    "RetryErrorImpl {\n            method: PUT,\n            retries: 0,\n            "
    "max_retries: 10,\n            elapsed: 3.422829ms,\n")
SLOW_DOWN = (
    "Generic S3 error: Error performing GET http://127.0.0.1:1/b?list-type=2 in 1.2s, after 2 "
    "retries, max_retries: 2, retry_timeout: 180s - Server returned non-2xx status code: 503 "
    "Service Unavailable: <Error><Code>SlowDown</Code><Message>Please reduce your request "
    "rate.</Message></Error>\n\nDebug source:\n  retries: 2,\n  elapsed: 1.234s,\n")
REFUSED = ("Generic S3 error: Error performing GET http://127.0.0.1:9/b/k in 1.8s, after 10 "
           "retries - HTTP error: error sending request for url (http://127.0.0.1:9/b/k): client "
           "error (Connect): tcp connect error: Connection refused (os error 111)\n retries: 10,\n"
           " elapsed: 1.8s,")
AZURE_MISSING_CONTAINER = (
    "Object at location k not found: ... status code: 404 Not Found: <?xml version=\"1.0\"?>"
    "<Error><Code>ContainerNotFound</Code><Message>The specified container does not exist."
    "</Message></Error>")
GCS_JSON = ('Generic GCS error: ... status code: 403 Forbidden: {"error": {"code": 403, '
            '"errors": [{"reason": "forbidden"}], "message": "denied"}}')


def test_each_store_answer_gives_its_code_status_and_fix():
    signature = read_failure(S3_SIGNATURE)
    assert (signature.code, signature.status, signature.retries) == ("SignatureDoesNotMatch", 403, 0)
    line = signature.line("writing", "s3://bucket-one/k")
    assert line.startswith("SignatureDoesNotMatch (403) writing s3://bucket-one/k: The request "
                           "signature we calculated does not match")
    assert "check AWS_SECRET_ACCESS_KEY" in line and "\n" not in line

    slow = read_failure(SLOW_DOWN)
    assert (slow.code, slow.status, slow.retries) == ("SlowDown", 503, 2)
    assert slow.elapsed_seconds == pytest.approx(1.234)
    assert "(after 2 retries in 1.2s); the store throttled" in slow.line("listing", "s3://b/t")

    refused = read_failure(REFUSED)
    assert (refused.code, refused.status) == ("ConnectionRefused", None)
    assert "nothing listens at the store's endpoint" in refused.line("reading", "s3://b/k")

    azure = read_failure(AZURE_MISSING_CONTAINER)
    assert (azure.code, azure.status) == ("ContainerNotFound", 404)
    assert read_failure(GCS_JSON).code == "forbidden"  # GCS's JSON reason, no hint of ours
    bare = read_failure("Error performing HEAD ... status code: 404 Not Found")
    assert bare.code == "NotFound" and bare.line("reading", "s3://b/k") == \
        "NotFound (404) reading s3://b/k"


def test_retry_limits_come_from_options_then_the_environment(monkeypatch):
    monkeypatch.delenv("QBEAST_STORE_MAX_RETRIES", raising=False)
    monkeypatch.delenv("QBEAST_STORE_RETRY_TIMEOUT", raising=False)
    assert retry_limits({}) == (DEFAULT_MAX_RETRIES, DEFAULT_RETRY_SECONDS)
    monkeypatch.setenv("QBEAST_STORE_MAX_RETRIES", "3")
    monkeypatch.setenv("QBEAST_STORE_RETRY_TIMEOUT", "20")
    assert retry_limits({}) == (3, 20.0)
    assert retry_limits({"max_retries": 0, "retry_timeout": "1.5"}) == (0, 1.5)
    with pytest.raises(InvalidOptionError, match=r"max_retries \(or QBEAST_STORE_MAX_RETRIES\) "
                                                 r"= 'many' is not allowed; allowed values: an "
                                                 r"integer >= 0"):
        retry_limits({"max_retries": "many"})
    with pytest.raises(InvalidOptionError, match="a number of seconds >= 0"):
        retry_limits({"retry_timeout": -1})


def test_a_failure_says_whether_the_operation_had_committed():
    from qbeast.storage import ObjectStoreError
    from qbeast.delta.outcome import commit_outcome, record_commit

    with pytest.raises(ObjectStoreError) as before:
        with commit_outcome("s3://b/t"):
            raise ObjectStoreError("SlowDown (503) listing s3://b/t/_delta_log\nmore", "SlowDown")
    assert str(before.value) == ("SlowDown (503) listing s3://b/t/_delta_log; nothing was "
                                 "committed: s3://b/t is as it was\nmore")
    with pytest.raises(ObjectStoreError) as after:
        with commit_outcome("s3://b/t"):
            record_commit(4)
            with commit_outcome("s3://b/t"):  # an inner operation's note is the one kept
                record_commit(5)
                raise ObjectStoreError("AccessDenied (403) deleting s3://b/t/x", "AccessDenied")
    assert str(after.value) == ("AccessDenied (403) deleting s3://b/t/x; version 5 of s3://b/t "
                                "was committed before the failure")
    with pytest.raises(ObjectStoreError) as inner_only:
        with commit_outcome("s3://b/t"):
            record_commit(7)  # e.g. the schema append before a SQL write's row change
            with commit_outcome("s3://b/t"):  # the change itself commits nothing
                raise ObjectStoreError("SlowDown (503) reading s3://b/t/y", "SlowDown")
    assert str(inner_only.value) == ("SlowDown (503) reading s3://b/t/y; version 7 of s3://b/t "
                                     "was committed before the failure")
    record_commit(6)  # outside any operation: nothing to note, nothing fails
