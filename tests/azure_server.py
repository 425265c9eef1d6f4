"""Azurite, Microsoft's Azure Storage emulator (npm package ``azurite``), as the tests' Azure.

``make test`` installs it with npm into ``.venv/azurite`` (``make azurite``). The tests start its
blob service on a free loopback port with its data in a temporary folder, create one container
with a Shared Key request (the emulator's published development account), and point obstore at
it the way a user points any Azure client at the emulator: ``AZURE_STORAGE_USE_EMULATOR=true``
and ``AZURITE_BLOB_STORAGE_URL``. Locations are ``abfss://<container>@devstoreaccount1...``.
"""
from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
import os
import shutil
import urllib.request
from pathlib import Path

from loopback_process import LoopbackProcess

REPO_ROOT = Path(__file__).resolve().parents[1]
#: the emulator's one account and its key, published in Azure's documentation for local use
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")
CONTAINER = "qbeast-tests"
API_VERSION = "2021-08-06"


def azurite_blob_command() -> str | None:
    """The ``azurite-blob`` executable: ``$QBEAST_AZURITE``, the one ``make azurite`` installs,
    or one on the PATH; None when there is none."""
    candidates = [os.environ.get("QBEAST_AZURITE"),
                  str(REPO_ROOT / ".venv" / "azurite" / "node_modules" / ".bin" / "azurite-blob"),
                  shutil.which("azurite-blob")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def root_location(prefix: str) -> str:
    """An ``abfss://`` location in the test container."""
    return f"abfss://{CONTAINER}@{ACCOUNT}.dfs.core.windows.net/{prefix}"


def _signed_put(url: str, resource: str) -> int:
    """A bodiless PUT signed with the account's Shared Key (what creating a container takes)."""
    date = email.utils.formatdate(usegmt=True)
    headers = f"x-ms-date:{date}\nx-ms-version:{API_VERSION}\n"
    to_sign = "PUT\n" + "\n" * 11 + headers + resource
    key = base64.b64decode(ACCOUNT_KEY)
    signature = base64.b64encode(hmac.new(key, to_sign.encode(), hashlib.sha256).digest()).decode()
    request = urllib.request.Request(url, method="PUT", headers={
        "x-ms-date": date, "x-ms-version": API_VERSION, "Content-Length": "0",
        "Authorization": f"SharedKey {ACCOUNT}:{signature}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return int(answer.status)


class Azurite(LoopbackProcess):
    """One Azurite blob service on loopback, with the test container created."""

    def __init__(self, command: str, data_dir: Path, port: int) -> None:
        super().__init__("azurite", [command, "--blobHost", "127.0.0.1", "--blobPort", str(port),
                                     "--location", str(data_dir), "--silent", "--skipApiVersionCheck"],
                         data_dir / "azurite.log", port)
        _signed_put(f"{self.endpoint}/{ACCOUNT}/{CONTAINER}?restype=container",
                    f"/{ACCOUNT}/{ACCOUNT}/{CONTAINER}\nrestype:container")

    def environment(self) -> dict[str, str]:
        """What a user sets to reach the emulator with any Azure client."""
        return {"AZURE_STORAGE_USE_EMULATOR": "true", "AZURITE_BLOB_STORAGE_URL": self.endpoint}

    def deltalake_options(self) -> dict[str, str]:
        return {"azure_storage_use_emulator": "true", "azure_storage_account_name": ACCOUNT}
