"""The whole log layer runs on any ``Storage``: an in-memory one (as an object store would be) and
the local disk; tests/unit/storage/test_object_storage.py runs the same checks on S3."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from storage_contract import check_file_transfers, check_log_layer, check_storage_contract

from qbeast.storage import FileStat, LocalStorage, Storage


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
        if path in self.files:
            data, mtime = self.files[path]
            return FileStat(len(data), mtime, path)
        if self.exists(path):
            return FileStat(0, 0, path, True)
        raise FileNotFoundError(path)


def _memory() -> tuple[Storage, str, Callable[[], int]]:
    storage = MemoryStorage()
    return storage, "mem://bucket/table", lambda: storage.clock + 10


def _local(tmp_path: Path) -> tuple[Storage, str, Callable[[], int]]:
    return LocalStorage(), str(tmp_path / "table"), lambda: int(time.time() * 1000) + 10_000


@pytest.mark.parametrize("backend", ["memory", "local"])
def test_storage_contract(backend: str, tmp_path: Path) -> None:
    storage, location, _ = _memory() if backend == "memory" else _local(tmp_path)
    check_storage_contract(storage, storage.resolve(location))
    local = tmp_path / "local"
    local.mkdir()
    check_file_transfers(storage, storage.resolve(location + "/transfers"), str(local))


@pytest.mark.parametrize("backend", ["memory", "local"])
def test_log_layer_on_any_storage(backend: str, tmp_path: Path) -> None:
    storage, location, now_ms = _memory() if backend == "memory" else _local(tmp_path)
    check_log_layer(storage, location, now_ms)
    if isinstance(storage, MemoryStorage):  # nothing of the vacuumed file is left, not even a marker
        assert all(not p.startswith(f"{storage.resolve(location)}/orphan") for p in storage.files)
