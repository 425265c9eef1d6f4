"""File access for the transaction log, behind one small interface.

The commit protocol needs exactly one primitive beyond plain reads and writes: *put-if-absent*,
the atomic creation of a file that fails when the name already exists. Everything else in the
layer goes through :class:`Storage`, so an object-store backend only has to implement these
methods (with its own conditional-put) to make the whole log layer work there.

Paths given to a storage are absolute and use ``/`` as separator, in the storage's own form: a
plain path on the local file system, a canonical URI (``s3://bucket/key``) on an object store, so
that no path of one is taken for a path of the other. The ``resolve`` method turns a
user-supplied location into that form.
"""
from __future__ import annotations

import io
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from qbeast.errors import InvalidOptionError, QbeastError


@dataclass(frozen=True, slots=True)
class FileStat:
    """Size and modification time of a file; ``path`` and ``is_dir`` are filled by listings."""

    size: int
    mtime_ms: int
    path: str = ""
    is_dir: bool = False

    @property
    def name(self) -> str:
        """The last component of ``path``."""
        return self.path.rsplit("/", 1)[-1]


class Storage(ABC):
    """What the log layer needs from a file system or object store."""

    @abstractmethod
    def resolve(self, location: str) -> str:
        """Turn a user-supplied table location into this storage's absolute path form."""

    @abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """Whole content of a file; raises ``FileNotFoundError`` when it does not exist."""

    def read_range(self, path: str, start: int, length: int) -> bytes:
        """``length`` bytes from offset ``start`` (fewer at the end of the file): one ranged
        request on an object store, where reading a footer must not fetch the whole file."""
        return self.read_bytes(path)[start:start + max(0, length)]

    def open_input(self, path: str, size: int | None = None) -> io.RawIOBase | io.BufferedIOBase:
        """A seekable binary reader of the file for a reader that takes only parts of it (a
        parquet reader reading a footer and some column chunks). This default reads the whole
        file at once; an object store with ``size`` known reads large files by ranges."""
        return io.BytesIO(self.read_bytes(path))

    def for_tasks(self) -> Storage:
        """This storage as tasks in other processes and machines use it (pickled with them):
        settings this process found in its own environment travel inside it. Default: itself."""
        return self

    def signed_urls(self, paths: Sequence[str], seconds: int) -> list[str]:
        """HTTP(S) URLs that let their holder GET each file (ranges too) for ``seconds``, with
        no credentials of its own: how a reader that has no client for this storage (Spark's
        JVM without a Hadoop connector) reads its files. Only object stores sign URLs."""
        raise QbeastError(f"{type(self).__name__} cannot sign URLs: only object-store files "
                          "(s3://, gs://, abfss://) are read by signed URL")

    def download(self, path: str, local_file: str) -> int:
        """Copy a file to ``local_file`` (a local path, replaced atomically); its size."""
        data = self.read_bytes(path)
        _replace_local(local_file, data)
        return len(data)

    def upload(self, local_file: str, path: str) -> FileStat:
        """Copy a local file to ``path`` (replacing it as :meth:`write_bytes` does); the stat of
        the new file. Object stores stream it, in parts when it is large."""
        with open(local_file, "rb") as handle:
            self.write_bytes(path, handle.read())
        return self.stat(path)

    @abstractmethod
    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace a file so that readers see either the old or the new content."""

    @abstractmethod
    def put_if_absent(self, path: str, data: bytes) -> bool:
        """Atomically create ``path`` with ``data``; False (and nothing changed) if it exists.

        Readers must never observe a partially written file under ``path``.
        """

    @abstractmethod
    def list_dir(self, path: str) -> list[FileStat]:
        """Direct children of a directory (files and sub-directories); empty if it is missing."""

    def list_names(self, path: str) -> list[str]:
        """Names of the direct children of a directory; cheaper than ``list_dir`` on some stores."""
        return [stat.name for stat in self.list_dir(path)]

    def list_names_after(self, path: str, start_after: str) -> list[str]:
        """Names of the direct children of a directory that sort after ``start_after``: on an
        object store one listing that starts there (S3's ``start-after``), so that reading the
        end of a long ``_delta_log`` does not list all of it."""
        return sorted(name for name in self.list_names(path) if name > start_after)

    @abstractmethod
    def walk(self, path: str) -> Iterator[FileStat]:
        """Every file below a directory, recursively (directories themselves are not yielded)."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether a file or directory exists at ``path``."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Remove a file; a missing file is not an error (deletes are idempotent)."""

    @abstractmethod
    def stat(self, path: str) -> FileStat:
        """Size and modification time; raises ``FileNotFoundError`` when it does not exist."""

    @staticmethod
    def join(base: str, *parts: str) -> str:
        """Join path components with ``/`` (the separator of every supported storage)."""
        out = base.rstrip("/")
        for part in parts:
            out = f"{out}/{part.strip('/')}" if part else out
        return out


class RangedReader(io.RawIOBase):
    """A seekable reader that fetches only the byte ranges it is asked for
    (:meth:`Storage.read_range`): a parquet reader then costs its footer and the column chunks
    it reads, not the whole file."""

    def __init__(self, storage: Storage, path: str, size: int) -> None:
        super().__init__()
        self._storage, self._path, self._size, self._position = storage, path, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: Any) -> int:
        wanted = min(len(buffer), self._size - self._position)
        if wanted <= 0:
            return 0
        data = self._storage.read_range(self._path, self._position, wanted)
        buffer[:len(data)] = data
        self._position += len(data)
        return len(data)


def local_path(location: str) -> str:
    """The plain path a ``file:`` URI names (percent-decoded); any other text unchanged.

    Spark's catalog reports locations as ``file:/...`` URIs, users pass plain paths or URIs:
    this is the one place that turns the former into the latter.
    """
    if location[:5].lower() == "file:":
        return unquote(urlparse(location).path)
    return location


def file_uri(path: str) -> str:
    """The URI of a path (the inverse of :func:`local_path`); URIs are returned unchanged.

    The JVM opens files by URI: a plain local path becomes ``file:///...`` (percent-encoded).
    """
    return path if "://" in path or path.startswith("file:") else Path(path).as_uri()


class LocalStorage(Storage):
    """The local (POSIX) file system.

    Put-if-absent writes a hidden temporary file next to the target, then hard-links it to the
    target name: ``link`` fails with ``FileExistsError`` instead of replacing, and the target
    appears complete in one step. A crash before the link leaves only the temporary file, whose
    name no log reader considers.
    """

    def resolve(self, location: str) -> str:
        if not isinstance(location, (str, os.PathLike)):
            raise InvalidOptionError(
                f"table path must be a string or os.PathLike, got {type(location).__name__}"
            )
        text = os.fspath(location)
        if not text:
            raise InvalidOptionError("table path must not be empty")
        if "://" in text and text[:5].lower() != "file:":
            raise InvalidOptionError(
                f"table path {text!r} uses scheme {urlparse(text).scheme!r}; LocalStorage "
                "supports plain paths and file: URIs only"
            )
        text = local_path(text)
        return os.path.abspath(text).replace(os.sep, "/").rstrip("/") or "/"

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as handle:
            return handle.read()

    def read_range(self, path: str, start: int, length: int) -> bytes:
        with open(path, "rb") as handle:
            handle.seek(start)
            return handle.read(max(0, length))

    def write_bytes(self, path: str, data: bytes) -> None:
        tmp = self._temp_name(path)
        try:
            self._write_new(tmp, data)
            os.replace(tmp, path)
        except BaseException:
            _unlink_quietly(tmp)  # a full disk or a crash leaves no partial file behind
            raise

    def put_if_absent(self, path: str, data: bytes) -> bool:
        if os.path.exists(path):
            return False
        tmp = self._temp_name(path)
        try:
            self._write_new(tmp, data)
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            _unlink_quietly(tmp)
        return True

    def list_dir(self, path: str) -> list[FileStat]:
        try:
            entries = list(os.scandir(path))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for entry in entries:
            try:
                st = entry.stat()
            except FileNotFoundError:  # removed while listing
                continue
            out.append(
                FileStat(st.st_size, st.st_mtime_ns // 1_000_000, f"{path}/{entry.name}", entry.is_dir())
            )
        return out

    def list_names(self, path: str) -> list[str]:
        try:
            return os.listdir(path)
        except (FileNotFoundError, NotADirectoryError):
            return []

    def walk(self, path: str) -> Iterator[FileStat]:
        for child in self.list_dir(path):
            if child.is_dir:
                yield from self.walk(child.path)
            else:
                yield child

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def delete(self, path: str) -> None:
        _unlink_quietly(path)

    def stat(self, path: str) -> FileStat:
        st = os.stat(path)
        return FileStat(st.st_size, st.st_mtime_ns // 1_000_000, path, os.path.isdir(path))

    @staticmethod
    def _temp_name(path: str) -> str:
        directory, _, name = path.rpartition("/")
        return f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"

    @staticmethod
    def _write_new(path: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())


def _replace_local(local_file: str, data: bytes) -> None:
    tmp = f"{local_file}.{uuid.uuid4().hex}.part"
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, local_file)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
