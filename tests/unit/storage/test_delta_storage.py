"""LocalStorage: put-if-absent never replaces, listings, path resolution."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from qbeast.storage import LocalStorage
from qbeast.errors import InvalidOptionError


def test_put_if_absent_creates_once_and_never_replaces(tmp_path: Path) -> None:
    storage = LocalStorage()
    target = f"{tmp_path}/log/0.json"
    assert storage.put_if_absent(target, b"first") is True
    assert storage.put_if_absent(target, b"second") is False
    assert storage.read_bytes(target) == b"first"
    # the temporary files used to publish atomically are gone
    assert sorted(os.listdir(tmp_path / "log")) == ["0.json"]


def test_put_if_absent_loses_race_decided_at_link_time(tmp_path: Path, monkeypatch) -> None:
    storage = LocalStorage()
    target = f"{tmp_path}/v.json"
    real_link = os.link

    def link_after_rival(src: str, dst: str) -> None:
        Path(dst).write_bytes(b"rival")  # another writer publishes between our check and link
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link_after_rival)
    assert storage.put_if_absent(target, b"mine") is False
    assert Path(target).read_bytes() == b"rival"
    assert os.listdir(tmp_path) == ["v.json"]


def test_write_bytes_replaces_and_stat_lists(tmp_path: Path) -> None:
    storage = LocalStorage()
    path = f"{tmp_path}/a/b.bin"
    storage.write_bytes(path, b"12")
    storage.write_bytes(path, b"12345")
    assert storage.stat(path).size == 5
    (tmp_path / "a" / "sub").mkdir()
    (tmp_path / "a" / "sub" / "c.bin").write_bytes(b"x")
    names = {s.name: s.is_dir for s in storage.list_dir(f"{tmp_path}/a")}
    assert names == {"b.bin": False, "sub": True}
    assert sorted(s.name for s in storage.walk(f"{tmp_path}/a")) == ["b.bin", "c.bin"]
    assert storage.list_dir(f"{tmp_path}/missing") == []
    storage.delete(path)
    storage.delete(path)  # idempotent
    assert not storage.exists(path)
    with pytest.raises(FileNotFoundError):
        storage.read_bytes(path)


def test_resolve_accepts_paths_and_file_uris(tmp_path: Path) -> None:
    storage = LocalStorage()
    assert storage.resolve(str(tmp_path) + "/") == str(tmp_path)
    assert storage.resolve(f"file://{tmp_path}/x%20y") == f"{tmp_path}/x y"
    assert storage.resolve(f"file:{tmp_path}") == str(tmp_path)
    with pytest.raises(InvalidOptionError, match="s3"):
        storage.resolve("s3://bucket/table")
    with pytest.raises(InvalidOptionError, match="empty"):
        storage.resolve("")
