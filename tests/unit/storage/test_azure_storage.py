"""The object-store backend against Azure's storage emulator (Azurite) on loopback.

The same contract as the S3 tests (tests/unit/storage/test_object_storage.py), over Azure's blob
API through obstore's Azure client: Shared Key signatures, ``If-None-Match: *`` conditional puts
(Azurite answers 409 when the blob exists), listings. Locations are ``abfss://`` as a user of
ADLS Gen2 writes them; the endpoint comes from the emulator's environment variables only.
"""
from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from azure_server import root_location
from storage_contract import (check_file_transfers, check_log_layer, check_storage_contract,
                              race_put_if_absent)

from qbeast.storage import ObjectStorage, storage_for

pytestmark = pytest.mark.objectstore


@pytest.fixture
def root(azure_environment: Any) -> str:
    """A fresh prefix in the emulator's test container."""
    return root_location(uuid.uuid4().hex[:12])


def test_storage_contract_on_azure(root: str, tmp_path: Any) -> None:
    storage = storage_for(root)
    assert isinstance(storage, ObjectStorage) and storage.family == "azure"
    check_storage_contract(storage, storage.resolve(root))
    check_file_transfers(storage, storage.resolve(f"{root}/transfers"), str(tmp_path))


def test_log_layer_on_azure(root: str) -> None:
    check_log_layer(storage_for(root), f"{root}/table", lambda: int(time.time() * 1000) + 10_000)


def test_put_if_absent_race_on_azure_has_one_winner(root: str) -> None:
    """8 writers, each with its own client, put one commit file at the same moment: the
    emulator's conditional write lets exactly one in, and its bytes are the ones stored."""
    for trial in range(3):
        key = f"{ObjectStorage('azure').resolve(root)}/_delta_log/{trial:020d}.json"
        results = race_put_if_absent(lambda: storage_for(root), key, 8)
        winners = [w for w, won in results.items() if won]
        assert len(results) == 8 and len(winners) == 1, results
        assert storage_for(root).read_bytes(key) == f"writer {winners[0]} ".encode() * 5000
