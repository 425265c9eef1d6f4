"""The local mirror of immutable remote files (qbeast/delta/mirror.py), with the local disk as the
"remote" storage: what is fetched, what is served again, what is evicted."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from qbeast.delta.mirror import LocalMirror
from qbeast.delta.storage import LocalStorage


def _remote(tmp_path: Path, name: str, size: int) -> str:
    path = tmp_path / "remote" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))
    return str(path)


def test_files_are_fetched_once_and_a_copy_of_another_size_is_fetched_again(tmp_path: Path) -> None:
    storage = LocalStorage()
    mirror = LocalMirror(str(tmp_path / "mirror"), max_bytes=10**9)
    a, b = _remote(tmp_path, "a.parquet", 100), _remote(tmp_path, "b.parquet", 200)
    paths = mirror.fetch(storage, [(a, 100), (b, 200)])
    assert [Path(p).read_bytes() for p in paths] == [Path(a).read_bytes(), Path(b).read_bytes()]
    assert (mirror.last.downloaded, mirror.last.bytes) == (2, 300)
    assert mirror.fetch(storage, [(a, 100), (b, None)]) == paths and mirror.last.downloaded == 0
    Path(a).write_bytes(os.urandom(150))  # replaced under its name (no Delta writer does this)
    again = mirror.fetch(storage, [(a, 150)])
    assert again == paths[:1] and Path(again[0]).read_bytes() == Path(a).read_bytes()
    with pytest.raises(OSError, match="downloaded 150 bytes, the table records 999"):
        mirror.fetch(storage, [(_remote(tmp_path, "c.parquet", 150), 999)])
    with pytest.raises(FileNotFoundError):
        mirror.fetch(storage, [(str(tmp_path / "remote" / "missing.parquet"), None)])
    leftovers = [n for _, _, names in os.walk(mirror.files_dir) for n in names if n.endswith(".part")]
    assert leftovers == []  # failed downloads leave no partial copy


def test_eviction_removes_least_recently_used_copies_but_not_recent_or_needed_ones(tmp_path: Path) -> None:
    storage = LocalStorage()
    mirror = LocalMirror(str(tmp_path / "mirror"), max_bytes=250, keep_seconds=0)
    files = [_remote(tmp_path, f"f{i}.parquet", 100) for i in range(3)]
    first = mirror.fetch(storage, [(files[0], 100)])[0]
    second = mirror.fetch(storage, [(files[1], 100)])[0]
    old = time.time() - 3600
    os.utime(first, (old, old))
    os.utime(second, (old + 60, old + 60))
    mirror.fetch(storage, [(files[2], 100)])  # 300 bytes > 250: the oldest copy goes
    assert not os.path.exists(first) and os.path.exists(second)
    recent = LocalMirror(str(tmp_path / "mirror"), max_bytes=0, keep_seconds=600)
    assert recent.evict() == 100  # only the copy untouched for an hour; the fresh one stays
    assert not os.path.exists(second)
    kept = mirror.fetch(storage, [(files[2], 100)])[0]
    assert mirror.evict(keep={kept}) == 0 and os.path.exists(kept)


def test_a_just_uploaded_file_is_adopted_as_its_copy(tmp_path: Path) -> None:
    mirror = LocalMirror(str(tmp_path / "mirror"), max_bytes=10**9)
    local = tmp_path / "staged.parquet"
    local.write_bytes(b"written here")
    mirror.adopt(str(local), "s3://bucket/t/x.parquet")
    assert not local.exists()
    copy = mirror.local_path("s3://bucket/t/x.parquet")
    assert Path(copy).read_bytes() == b"written here"
    assert mirror.fetch(LocalStorage(), [("s3://bucket/t/x.parquet", 12)]) == [copy]  # no request
