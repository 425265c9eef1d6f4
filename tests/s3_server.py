"""The S3-compatible test server's constants (the server itself is the ``moto_endpoint`` fixture
of tests/conftest.py): the bucket it holds and the credentials it accepts."""
from __future__ import annotations

import socket

BUCKET = "qbeast-tests"
CREDENTIALS = {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1"}


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
