"""What every ``Storage`` must do, as checks run on each backend (local disk, memory, S3 on moto).

Test modules call these with a fresh storage and a root location; keeping the checks here means
every backend is held to the same contract instead of each test file growing its own copy.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from delta_helpers import SCHEMA, make_add

from qbeast.delta.actions import Metadata
from qbeast.delta.log import DeltaLog
from qbeast.storage import Storage
from qbeast.delta.vacuum import vacuum


def check_storage_contract(storage: Storage, root: str) -> None:
    """Put-if-absent, replace, listings, stat, exists and idempotent delete under ``root``
    (a resolved path of ``storage`` where nothing exists yet)."""
    commit = storage.join(root, "log", "0.json")
    assert storage.put_if_absent(commit, b"first") is True
    assert storage.put_if_absent(commit, b"second") is False
    assert storage.read_bytes(commit) == b"first"

    a = storage.join(root, "a")
    path = storage.join(a, "b.bin")
    storage.write_bytes(path, b"12")
    storage.write_bytes(path, b"12345")
    assert storage.read_bytes(path) == b"12345"
    storage.write_bytes(storage.join(a, "sub", "c.bin"), b"x")
    check_listings_and_deletes(storage, root)
    assert storage.put_if_absent(path, b"again") is True


def check_listings_and_deletes(storage: Storage, root: str) -> None:
    """Listings, stat, exists and idempotent delete of the tree ``root/log/0.json``,
    ``root/a/b.bin`` (5 bytes) and ``root/a/sub/c.bin`` (1 byte), however it was written;
    ``root/a/b.bin`` is deleted."""
    commit = storage.join(root, "log", "0.json")
    a = storage.join(root, "a")
    path = storage.join(a, "b.bin")
    stat = storage.stat(path)
    assert (stat.size, stat.path, stat.is_dir) == (5, path, False) and stat.mtime_ms > 0
    children = {s.name: (s.is_dir, s.path) for s in storage.list_dir(a)}
    assert children == {"b.bin": (False, path), "sub": (True, storage.join(a, "sub"))}
    assert sorted(storage.list_names(a)) == ["b.bin", "sub"]
    # what a snapshot load lists after a checkpoint: only names sorting after the given one
    assert "b.bin" in storage.list_names_after(a, "a.bin")
    assert "b.bin" not in storage.list_names_after(a, "b.bin")
    assert storage.list_names_after(a, "a.bin") == ["b.bin", "sub"]  # subfolders too, sorted
    assert storage.list_names_after(a, "sub") == []
    walked = sorted((s.path, s.size, s.is_dir) for s in storage.walk(a))
    assert walked == [(path, 5, False), (storage.join(a, "sub", "c.bin"), 1, False)]

    missing = storage.join(root, "missing")
    assert storage.list_dir(missing) == [] and list(storage.walk(missing)) == []
    assert storage.exists(a) and storage.stat(a).is_dir and storage.exists(commit)
    assert not storage.exists(missing) and not storage.exists(storage.join(root, "a", "b"))

    storage.delete(path)
    storage.delete(path)  # idempotent
    assert not storage.exists(path)
    with pytest.raises(FileNotFoundError):
        storage.read_bytes(path)
    with pytest.raises(FileNotFoundError):
        storage.stat(path)


def check_file_transfers(storage: Storage, root: str, local_dir: str) -> None:
    """Ranged reads, downloads and uploads between ``storage`` (under ``root``, empty) and the
    local folder ``local_dir``: what reading footers and publishing data files rely on."""
    import os

    payload = bytes(range(256)) * 4096  # 1 MiB, not one repeated byte: offsets are checked
    source = os.path.join(local_dir, "source.bin")
    with open(source, "wb") as handle:
        handle.write(payload)
    target = storage.join(root, "data", "file.bin")
    stat = storage.upload(source, target)
    assert (stat.size, stat.path) == (len(payload), target) and stat.mtime_ms > 0
    check_reads(storage, target, payload, local_dir)
    assert sorted(os.listdir(local_dir)) == ["copy.bin", "source.bin"]  # no partial file left


def check_reads(storage: Storage, target: str, payload: bytes, local_dir: str) -> None:
    """Ranged reads and a streamed download of ``target`` (holding ``payload``, at least 2,000
    bytes) into ``local_dir``; missing objects are
    ``FileNotFoundError`` and leave no partial file."""
    import os

    root = target.rsplit("/", 1)[0]
    assert storage.read_range(target, 0, 4) == payload[:4]
    assert storage.read_range(target, len(payload) - 8, 8) == payload[-8:]
    assert storage.read_range(target, 1000, 300) == payload[1000:1300]
    assert storage.read_range(target, len(payload) - 3, 100) == payload[-3:]  # short at the end
    assert storage.read_range(target, 5, 0) == b""
    copy = os.path.join(local_dir, "copy.bin")
    assert storage.download(target, copy) == len(payload)
    with open(copy, "rb") as handle:
        assert handle.read() == payload
    with pytest.raises(FileNotFoundError):
        storage.download(storage.join(root, "missing.bin"), os.path.join(local_dir, "x"))
    assert not os.path.exists(os.path.join(local_dir, "x"))
    with pytest.raises(FileNotFoundError):
        storage.read_range(storage.join(root, "missing.bin"), 0, 4)


def check_log_layer(storage: Storage, location: str, now_ms: Callable[[], int]) -> None:
    """The whole log layer on ``storage``: commits, rebase over blind appends, checkpoints,
    time travel, history and vacuum, for a table at ``location`` (nothing there yet).

    ``now_ms`` is the storage's clock in epoch ms (vacuum compares it with file mtimes)."""
    log = DeltaLog.for_path(location, storage)
    assert log.table_path == storage.resolve(location) and not log.table_exists()
    tx = log.start_transaction()
    tx.update_metadata(Metadata.create(SCHEMA, configuration={"delta.checkpointInterval": "4"}))
    tx.add_actions(make_add("a.parquet", 2, {"revision": "1"}))
    assert tx.commit("CREATE TABLE") == 0
    stale = log.snapshot()
    for i in range(1, 6):
        log.start_transaction().add_actions(make_add(f"f{i}.parquet", i)).commit("WRITE", blind_append=True)
    # a writer based on version 0 rebases over five blind appends
    late = log.start_transaction(stale).add_actions(make_add("late.parquet")).commit("WRITE", blind_append=True)
    assert late == 6
    assert storage.exists(f"{log.log_path}/{4:020d}.checkpoint.parquet")
    assert storage.exists(f"{log.log_path}/_last_checkpoint")

    snap = DeltaLog.for_path(location, storage).snapshot()
    assert snap.checkpoint_version == 4 and snap.num_files == 7 and snap.num_records == 18
    assert snap.files["a.parquet"].tags == {"revision": "1"}
    assert set(log.snapshot(2).files) == {"a.parquet", "f1.parquet", "f2.parquet"}
    assert [c.version for c in log.history(limit=2)] == [6, 5]
    assert log.snapshot(timestamp=log.snapshot(3).timestamp).version == 3

    orphan = f"{log.table_path}/orphan.parquet"
    storage.write_bytes(orphan, b"xx")
    storage.write_bytes(f"{log.table_path}/a.parquet", b"xx")
    result = vacuum(log, retention_hours=0, allow_short_retention=True, now=now_ms())
    assert result.files == [orphan]
    assert storage.exists(f"{log.table_path}/a.parquet") and not storage.exists(orphan)


def race_put_if_absent(new_storage: Callable[[], Storage], key: str, writers: int) -> dict[int, bool]:
    """``writers`` threads, each with its own client (``new_storage()``, as separate writers
    have), put ``key`` at the same moment; what each was told. The payload names the writer, so
    the caller can check that the stored bytes are the winner's. A writer's error is raised here,
    once every writer is done."""
    barrier = threading.Barrier(writers)
    results: dict[int, bool] = {}
    errors: list[BaseException] = []

    def put(writer: int) -> None:
        storage = new_storage()
        barrier.wait()
        try:
            results[writer] = storage.put_if_absent(key, f"writer {writer} ".encode() * 5000)
        except Exception as exc:  # raised in the caller's thread below
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results
