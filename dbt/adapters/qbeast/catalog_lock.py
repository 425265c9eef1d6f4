"""One process at a time on an embedded catalog, decided before a Spark driver starts.

The embedded catalog is a Derby database, which admits one process. Derby's own lock
(``metastore_db/dbex.lck``) only exists once a driver has opened the database, seconds after
the process started, so two dbt commands started together both found it free, both started a
driver, and the second failed after a minute and a half with Hive's traces. Each process
therefore takes an exclusive OS lock on a file of the catalog folder before it starts its
driver and keeps it until it exits (the OS releases it even after a crash): the second process
learns at once that the catalog is taken. A process that does not take this lock (a notebook,
an older dbt-qbeast) is still seen through Derby's lock.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Dict, Optional

from dbt.adapters.qbeast.session_settings import embedded_catalog_holder

#: The lock file inside the catalog folder; it holds the pid of the process that has it.
LOCK_FILE = ".qbeast-catalog.lock"

_guard = threading.Lock()
_held: Dict[Path, int] = {}


def hold(catalog: Path) -> Optional[Path]:
    """Take this process's lock on ``catalog`` (kept until the process exits).

    Returns None when this process has the catalog to itself (now or already), else the lock
    file another process holds (ours, or Derby's).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: Derby's own error will have to do
        return None
    catalog = catalog.resolve()
    with _guard:
        if catalog in _held:
            return None
        lock_file = catalog / LOCK_FILE
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return lock_file
        derby = embedded_catalog_holder(catalog)
        if derby is not None:
            os.close(fd)  # releases ours
            return derby
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        _held[catalog] = fd
        return None


def holder_pid(lock_file: Path) -> Optional[int]:
    """The pid written in one of our lock files (None for Derby's, or when unreadable)."""
    if lock_file.name != LOCK_FILE:
        return None
    try:
        text = lock_file.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
