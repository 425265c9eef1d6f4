"""A local copy of remote files that never change, so that a local reader can open them.

Spark's parquet reader opens files through Hadoop, and a plain ``pip install pyspark`` has no
Hadoop connector for S3, GCS or Azure. The data files of a Delta table are immutable (a new
version writes new names, it never rewrites a file), so a copy of one taken once stays right for
as long as the name exists: the mirror downloads each file the first time a read needs it and
hands the local path to the reader afterwards. A copy is named by the remote location; when the
caller knows the file's size (the log records it), a copy of another size (a file replaced under
the same name, which no Delta writer does) is fetched again rather than served stale.

The mirror is bounded (``max_bytes``): after a fetch it removes the least recently used copies
until the total fits again, never one that was used in the last ``keep_seconds`` (a Spark job
may still be opening it). Copies are written under a temporary name and renamed, so concurrent
readers (threads or processes sharing the folder) see a whole file or none.

Nothing here knows Delta or Spark: locations, sizes and a :class:`Storage`.
"""
from __future__ import annotations

import hashlib
import logging
import os
import stat
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from qbeast.storage.base import Storage

logger = logging.getLogger(__name__)

#: concurrent downloads of one fetch (object stores serve many requests in parallel)
_DOWNLOAD_THREADS = 8


class MirrorFolderError(OSError):
    """The folder for local copies cannot be used safely (another user's, or not a folder)."""


def default_root() -> str:
    """The user's own folder for local copies: ``$XDG_CACHE_HOME/qbeast/mirror`` (or
    ``~/.cache/qbeast/mirror``) where the home is writable, else ``qbeast-mirror-<uid>`` in the
    system's temporary folder (made owner-only by :func:`private_folder`).

    Why not one name in ``/tmp`` per user name: a folder there can be made by anyone before the
    user's first run (and is shared by every process that runs under that name across
    containers); a cache in the home is the user's by construction.
    """
    home = os.path.expanduser("~")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    if os.path.isabs(cache) and os.path.isdir(home) and os.access(home, os.W_OK):
        return os.path.join(cache, "qbeast", "mirror")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), f"qbeast-mirror-{uid}")


def private_folder(path: str, *, setting: str, tighten: bool) -> str:
    """Create ``path`` owner-only (0700) if it is missing and check that this user owns it.

    ``tighten`` (the default folder) also removes group and other permissions from a folder
    that has them; a folder the user named in ``setting`` keeps the permissions it was given.
    A folder of another user, or a link or file in its place, is refused naming ``setting``:
    copies read from it would be whatever that user put there.
    """
    path = os.path.abspath(path)
    try:
        if not os.path.lexists(path):
            os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        raise MirrorFolderError(
            f"the folder for local copies of object-store files, {path}, cannot be created "
            f"({exc.strerror}); choose another with {setting}") from None
    uid = os.getuid() if hasattr(os, "getuid") else info.st_uid
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
        what = "is not a folder" if not stat.S_ISDIR(info.st_mode) else \
            f"belongs to another user (uid {info.st_uid}, this process runs as {uid})"
        raise MirrorFolderError(
            f"the folder for local copies of object-store files, {path}, {what}; remove it or "
            f"choose a folder of your own with {setting}")
    if tighten and info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


@dataclass(frozen=True, slots=True)
class Fetched:
    """What one :meth:`LocalMirror.fetch` did: files asked for, downloaded, bytes downloaded."""

    files: int
    downloaded: int
    bytes: int


class LocalMirror:
    """Local copies of remote immutable files under ``root``, at most ``max_bytes`` in total."""

    def __init__(self, root: str, max_bytes: int, keep_seconds: float = 600.0) -> None:
        self.root = os.path.abspath(root)
        self.max_bytes = max_bytes
        self.keep_seconds = keep_seconds
        self.files_dir = os.path.join(self.root, "files")
        self.last = Fetched(0, 0, 0)

    def local_path(self, location: str) -> str:
        """Where the copy of ``location`` lives."""
        digest = hashlib.sha256(location.encode()).hexdigest()
        name = location.rstrip("/").rsplit("/", 1)[-1][-80:]
        return os.path.join(self.files_dir, digest[:2], f"{digest[2:34]}-{name}")

    def fetch(self, storage: Storage, files: Sequence[tuple[str, int | None]]) -> list[str]:
        """The local copies of ``files`` (location, size), downloading those not copied yet.

        A copy whose size differs from the expected one (an interrupted download from an older
        version, a file replaced under its name) is fetched again; a download that still does
        not have the expected size is an error naming the file, never a short read later.
        """
        started = time.perf_counter()
        paths = [self.local_path(location) for location, _ in files]
        missing = [(location, size, path) for (location, size), path in zip(files, paths)
                   if not _has_size(path, size)]
        absent = {path for _, _, path in missing}
        now = time.time()
        for path in paths:
            if path not in absent:
                _touch(path, now)

        def download(item: tuple[str, int | None, str]) -> int:
            location, size, path = item
            os.makedirs(os.path.dirname(path), exist_ok=True)
            got = storage.download(location, path)
            if size is not None and got != size:
                os.unlink(path)
                raise OSError(f"{location}: downloaded {got} bytes, the table records {size}")
            return got

        downloaded = 0
        if missing:
            with ThreadPoolExecutor(max_workers=min(_DOWNLOAD_THREADS, len(missing))) as pool:
                downloaded = sum(pool.map(download, missing))
            logger.info("mirror: %d of %d files downloaded (%d bytes) into %s in %.2fs",
                        len(missing), len(files), downloaded, self.files_dir,
                        time.perf_counter() - started)
            self.evict(keep=set(paths))
        self.last = Fetched(len(files), len(missing), downloaded)
        return paths

    def adopt(self, local_file: str, location: str) -> None:
        """Take ``local_file`` (just uploaded to ``location``) as its copy: a read right after
        a write needs no download. The file is moved, not copied."""
        path = self.local_path(location)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.replace(local_file, path)

    def evict(self, keep: frozenset[str] | set[str] = frozenset()) -> int:
        """Remove least recently used copies until the mirror fits ``max_bytes``; bytes freed.

        Copies in ``keep`` and copies used within ``keep_seconds`` stay, even over the bound.
        """
        entries = []
        total = 0
        for folder, _, names in os.walk(self.files_dir):
            for name in names:
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path)
                except FileNotFoundError:
                    continue
                total += st.st_size
                entries.append((st.st_mtime, st.st_size, path))
        freed = 0
        if total <= self.max_bytes:
            return 0
        cutoff = time.time() - self.keep_seconds
        for mtime, size, path in sorted(entries):
            if total - freed <= self.max_bytes:
                break
            if path in keep or mtime > cutoff:
                continue
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            freed += size
        if freed:
            logger.info("mirror: evicted %d bytes from %s", freed, self.files_dir)
        return freed


def _has_size(path: str, size: int | None) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    return size is None or st.st_size == size


def _touch(path: str, now: float) -> None:
    """Mark a copy as used now (its mtime is the mirror's recency)."""
    try:
        os.utime(path, (now, now))
    except FileNotFoundError:
        pass
