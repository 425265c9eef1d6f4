"""The local mirror of immutable remote files (qbeast/storage/mirror.py), with the local disk as the
"remote" storage: what is fetched, what is served again, what is evicted."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from qbeast.storage.mirror import LocalMirror
from qbeast.storage import LocalStorage


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


# --- the folder of local copies: the user's own, owner-only --------------------------------

SETTING = "spark.qbeast.storage.mirrorDir"


def test_the_default_folder_is_in_the_users_cache_and_owner_only(tmp_path, monkeypatch):
    from qbeast.storage.mirror import default_root, private_folder

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_root() == str(tmp_path / ".cache" / "qbeast" / "mirror")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = default_root()
    assert root == str(tmp_path / "xdg" / "qbeast" / "mirror")
    assert private_folder(root, setting=SETTING, tighten=True) == root
    assert os.stat(root).st_mode & 0o777 == 0o700
    os.chmod(root, 0o755)  # loosened by someone: the default folder is made owner-only again
    private_folder(root, setting=SETTING, tighten=True)
    assert os.stat(root).st_mode & 0o777 == 0o700
    named = tmp_path / "shared-by-choice"
    named.mkdir(mode=0o750)
    os.chmod(named, 0o750)
    private_folder(str(named), setting=SETTING, tighten=False)  # a named folder keeps its mode
    assert os.stat(named).st_mode & 0o777 == 0o750


def test_without_a_writable_home_the_folder_is_named_by_uid(tmp_path, monkeypatch):
    import tempfile

    from qbeast.storage.mirror import default_root

    monkeypatch.setenv("HOME", str(tmp_path / "missing"))
    assert default_root() == os.path.join(tempfile.gettempdir(), f"qbeast-mirror-{os.getuid()}")


def test_a_file_in_place_of_the_folder_is_refused_naming_the_setting(tmp_path):
    from qbeast.storage.mirror import MirrorFolderError, private_folder

    (tmp_path / "f").write_text("x")
    with pytest.raises(MirrorFolderError, match=f"is not a folder.*{SETTING}"):
        private_folder(str(tmp_path / "f"), setting=SETTING, tighten=True)
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(MirrorFolderError, match="is not a folder"):
        private_folder(str(link), setting=SETTING, tighten=True)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="needs root to own a folder as another user and start a process as one")
def test_two_users_never_share_a_folder_and_anothers_folder_is_refused(tmp_path, monkeypatch):
    """A process of another user (nobody, uid 65534, no writable home) gets a folder of its own,
    owner-only; a folder that user made where ours would be is refused, not used."""
    import shutil

    from qbeast.storage.mirror import MirrorFolderError, default_root, private_folder

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    ours = private_folder(default_root(), setting=SETTING, tighten=True)
    # the other user's process: a fork that drops to nobody (the interpreter's own folder may
    # be closed to that user, so no new interpreter is started)
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked process
        code = 1
        try:
            os.close(reader)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.environ.update({"HOME": "/nonexistent", "XDG_CACHE_HOME": ""})
            os.write(writer, private_folder(default_root(), setting="s", tighten=True).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        theirs = pipe.read()
    assert os.waitpid(child, 0)[1] == 0
    assert theirs != ours and theirs.endswith("qbeast-mirror-65534")
    info = os.stat(theirs)
    assert (info.st_uid, info.st_mode & 0o777) == (65534, 0o700)
    shutil.rmtree(theirs)

    squatted = tmp_path / "squatted"
    squatted.mkdir()
    os.chown(squatted, 65534, 65534)
    with pytest.raises(MirrorFolderError, match=f"belongs to another user.*{SETTING}"):
        private_folder(str(squatted), setting=SETTING, tighten=True)
