"""The whole log layer runs on any ``Storage``: here an in-memory one, as an object store would be."""
from __future__ import annotations

import threading
from collections.abc import Iterator

from delta_helpers import SCHEMA, make_add
from qbeast.delta.actions import Metadata
from qbeast.delta.log import DeltaLog
from qbeast.delta.storage import FileStat, Storage
from qbeast.delta.vacuum import vacuum


class MemoryStorage(Storage):
    """Files in a dict; put-if-absent under a lock, like an object store's conditional put."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, int]] = {}
        self.clock = 1_000_000
        self._lock = threading.Lock()

    def _now(self) -> int:
        self.clock += 1
        return self.clock

    def resolve(self, location: str) -> str:
        return "/" + location.removeprefix("mem://").strip("/")

    def read_bytes(self, path: str) -> bytes:
        try:
            return self.files[path][0]
        except KeyError:
            raise FileNotFoundError(path) from None

    def write_bytes(self, path: str, data: bytes) -> None:
        self.files[path] = (data, self._now())

    def put_if_absent(self, path: str, data: bytes) -> bool:
        with self._lock:
            if path in self.files:
                return False
            self.files[path] = (data, self._now())
            return True

    def list_dir(self, path: str) -> list[FileStat]:
        prefix = path.rstrip("/") + "/"
        children: dict[str, FileStat] = {}
        for name, (data, mtime) in self.files.items():
            if name.startswith(prefix):
                head, sep, _ = name[len(prefix):].partition("/")
                child = prefix + head
                children[child] = FileStat(0, 0, child, True) if sep else FileStat(len(data), mtime, child)
        return list(children.values())

    def walk(self, path: str) -> Iterator[FileStat]:
        prefix = path.rstrip("/") + "/"
        for name, (data, mtime) in list(self.files.items()):
            if name.startswith(prefix):
                yield FileStat(len(data), mtime, name)

    def exists(self, path: str) -> bool:
        return path in self.files or any(p.startswith(path.rstrip("/") + "/") for p in self.files)

    def delete(self, path: str) -> None:
        self.files.pop(path, None)

    def stat(self, path: str) -> FileStat:
        data, mtime = self.files[path]
        return FileStat(len(data), mtime, path)


def test_log_layer_on_an_in_memory_storage() -> None:
    storage = MemoryStorage()
    log = DeltaLog.for_path("mem://bucket/table", storage)
    assert log.table_path == "/bucket/table" and not log.table_exists()
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
    assert f"{log.log_path}/{4:020d}.checkpoint.parquet" in storage.files
    assert f"{log.log_path}/_last_checkpoint" in storage.files

    snap = DeltaLog.for_path("mem://bucket/table", storage).snapshot()
    assert snap.checkpoint_version == 4 and snap.num_files == 7 and snap.num_records == 18
    assert snap.files["a.parquet"].tags == {"revision": "1"}
    assert set(log.snapshot(2).files) == {"a.parquet", "f1.parquet", "f2.parquet"}
    assert [c.version for c in log.history(limit=2)] == [6, 5]
    assert log.snapshot(timestamp=log.snapshot(3).timestamp).version == 3

    storage.write_bytes(f"{log.table_path}/orphan.parquet", b"xx")
    storage.write_bytes(f"{log.table_path}/a.parquet", b"xx")
    result = vacuum(log, retention_hours=0, allow_short_retention=True, now=storage.clock + 10)
    assert result.files == [f"{log.table_path}/orphan.parquet"]
    assert f"{log.table_path}/a.parquet" in storage.files
    assert all(not p.startswith(f"{log.table_path}/orphan") for p in storage.files)
