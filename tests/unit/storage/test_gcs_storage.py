"""The object-store backend against a GCS emulator (fake-gcs-server) on loopback.

Through obstore's GCS client as a user points it at an emulator (``GOOGLE_SERVICE_ACCOUNT``, a
service account file naming the server): ranged reads, streamed
downloads, listings (with and without a start offset), deletes, and the log layer reading a
table's log (checkpoint, time travel, history) and vacuuming it on ``gs://``.

Writes are the emulator's gap: it rejects the XML API's object PUT that object_store sends for
every write, and it ignores ``ifGenerationMatch=0``. Objects are seeded through its JSON upload
API instead, and the commit tests are an expected failure that names the cause (see
tests/gcs_server.py); they start to pass, and so fail as unexpected passes, when an emulator
version takes the PUT.
"""
from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from delta_helpers import SCHEMA, make_add
from gcs_server import root_location
from storage_contract import (check_listings_and_deletes, check_log_layer, check_reads,
                              check_storage_contract, race_put_if_absent)

from qbeast.delta.actions import Metadata
from qbeast.delta.log import DeltaLog
from qbeast.storage import LocalStorage, ObjectStorage, ObjectStoreError, request_counts, storage_for
from qbeast.delta.vacuum import vacuum

pytestmark = pytest.mark.objectstore

#: why the write tests fail on this emulator (fake-gcs-server 1.54, tests/gcs_server.py)
EMULATOR_REFUSES_WRITES = (
    "fake-gcs-server answers object_store's XML API PUT (and multipart POST ?uploads) with 400 "
    "'invalid uploadType', so no write reaches it; its JSON upload API also ignores "
    "ifGenerationMatch=0")


@pytest.fixture
def root(gcs_environment: Any) -> str:
    """A fresh prefix in the emulator's test bucket."""
    return root_location(uuid.uuid4().hex[:12])


def test_reads_listings_and_deletes_on_gcs(root: str, gcs_environment: Any, tmp_path: Path) -> None:
    storage = storage_for(root)
    assert isinstance(storage, ObjectStorage) and storage.family == "gs"
    for key, data in (("log/0.json", b"first"), ("a/b.bin", b"12345"), ("a/sub/c.bin", b"x")):
        gcs_environment.upload(f"{root}/{key}", data)
    assert storage.read_bytes(f"{root}/log/0.json") == b"first"
    check_listings_and_deletes(storage, storage.resolve(root))

    payload = bytes(range(256)) * 4096  # 1 MiB, not one repeated byte: offsets are checked
    gcs_environment.upload(f"{root}/data/file.bin", payload)
    check_reads(storage, f"{root}/data/file.bin", payload, str(tmp_path))


def test_gcs_settings_given_as_options_instead_of_the_environment(fake_gcs: Any,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The service account as storage options, with no ``GOOGLE_*`` variable set: a file path in
    obstore's spelling, or the file's JSON itself in deltalake's upper-case spelling."""
    for key in fake_gcs.environment():
        monkeypatch.delenv(key, raising=False)
    location = root_location(f"{uuid.uuid4().hex[:12]}/x.bin")
    fake_gcs.upload(location, b"seen")
    by_path = {"google_service_account": str(fake_gcs.service_account)}
    by_value = {"GOOGLE_SERVICE_ACCOUNT_KEY": fake_gcs.service_account.read_text()}
    for options in (by_path, by_value):
        assert ObjectStorage("gs", options).read_bytes(location) == b"seen"


def _local_table(folder: Path) -> DeltaLog:
    """A table whose log has a checkpoint at version 4, commits after it and a data file
    nothing references, written on the local disk (the emulator takes no Delta writes)."""
    log = DeltaLog.for_path(str(folder), LocalStorage())
    tx = log.start_transaction()
    tx.update_metadata(Metadata.create(SCHEMA, configuration={"delta.checkpointInterval": "4"}))
    tx.add_actions(make_add("a.parquet", 2, {"revision": "1"}))
    tx.commit("CREATE TABLE")
    for i in range(1, 7):
        log.start_transaction().add_actions(make_add(f"f{i}.parquet", i)).commit("WRITE", blind_append=True)
    for name in ("a.parquet", "orphan.parquet"):
        (folder / name).write_bytes(b"xx")
    return log


def test_log_layer_reads_and_vacuums_a_table_on_gcs(root: str, gcs_environment: Any,
                                                    tmp_path: Path) -> None:
    """The latest snapshot comes from ``_last_checkpoint``, the checkpoint and one listing that
    starts after it; time travel, history and vacuum work on the bucket's copy of the log."""
    local = _local_table(tmp_path / "table")
    gcs_environment.upload_tree(tmp_path / "table", f"{root}/table")
    log = DeltaLog.for_path(f"{root}/table")
    before = request_counts()
    snap = log.snapshot()
    spent = {k: v - before.get(k, 0) for k, v in request_counts().items()}
    expected = local.snapshot()
    assert (snap.version, snap.checkpoint_version, snap.num_files, snap.num_records) == \
        (expected.version, 4, expected.num_files, expected.num_records) == (6, 4, 7, 23)
    assert snap.files["a.parquet"].tags == {"revision": "1"}
    assert spent.get("list", 0) == 1, spent  # one listing from the checkpoint on, not the log
    assert set(log.snapshot(2).files) == {"a.parquet", "f1.parquet", "f2.parquet"}
    assert [c.version for c in log.history(limit=2)] == [6, 5]

    result = vacuum(log, retention_hours=0, allow_short_retention=True,
                    now=int(time.time() * 1000) + 10_000)
    orphan = f"{log.table_path}/orphan.parquet"
    assert result.files == [orphan]
    storage = storage_for(root)
    assert storage.exists(f"{log.table_path}/a.parquet") and not storage.exists(orphan)


@pytest.mark.xfail(strict=True, raises=ObjectStoreError, reason=EMULATOR_REFUSES_WRITES)
def test_storage_contract_and_commits_on_gcs(root: str) -> None:
    """What the Azure and S3 tests run (tests/unit/storage/test_azure_storage.py); expected to
    fail on the emulator's refusal of the first PUT, with the store's reason in the error."""
    storage = storage_for(root)
    check_storage_contract(storage, storage.resolve(root))
    check_log_layer(storage, f"{root}/table", lambda: int(time.time() * 1000) + 10_000)


@pytest.mark.xfail(strict=True, raises=ObjectStoreError, reason=EMULATOR_REFUSES_WRITES)
def test_put_if_absent_race_on_gcs_has_one_winner(root: str) -> None:
    """8 writers, each with its own client, put one commit file at the same moment: exactly
    one may win. Expected to fail while the emulator refuses the writes."""
    key = f"{root}/_delta_log/{0:020d}.json"
    results = race_put_if_absent(lambda: storage_for(root), key, 8)
    winners = [w for w, won in results.items() if won]
    assert len(results) == 8 and len(winners) == 1, results
    assert storage_for(root).read_bytes(key) == f"writer {winners[0]} ".encode() * 5000
