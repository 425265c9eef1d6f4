"""The S3-compatible test server's constants (the server itself is the ``moto_endpoint`` fixture
of tests/conftest.py): the bucket it holds and the credentials it accepts, and the one change
that makes moto arbitrate conditional writes as S3 does (:func:`make_puts_atomic`)."""
from __future__ import annotations

import socket
import threading

BUCKET = "qbeast-tests"
CREDENTIALS = {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1"}


def aws_environment(endpoint: str) -> dict[str, str]:
    """The AWS environment variables that point the engine at the test server (what a user
    sets for an S3-compatible store)."""
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": CREDENTIALS["access_key_id"],
            "AWS_SECRET_ACCESS_KEY": CREDENTIALS["secret_access_key"],
            "AWS_REGION": CREDENTIALS["region"]}


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
