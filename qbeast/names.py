"""Catalog names of Qbeast tables, readable without Spark: ``<catalog folder>/qbeast_tables.json``.

The embedded catalog (a Derby database) can only be read by starting a Spark driver, and only by
one process at a time. Whoever registers a Qbeast table in that catalog (the dbt adapter) also
records ``schema.table -> location`` here, so ``qbeast describe analytics.events`` answers at once,
also while a dbt command holds the catalog. The file is a convenience copy: the catalog stays the
truth, and a table dropped with plain SQL may still be listed (describe then reads its folder).
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path

from qbeast.errors import InvalidOptionError

FILE_NAME = "qbeast_tables.json"
_lock = threading.Lock()


def _read(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write(path: Path, names: dict[str, str]) -> None:
    """Replace the file in one rename, so a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".qbeast_tables.", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        json.dump(dict(sorted(names.items())), handle, indent=1)
    os.replace(tmp, path)


def record(folder: str | os.PathLike, name: str, location: str) -> None:
    """Note that catalog table ``name`` (``schema.table``) is the Qbeast table at ``location``."""
    path = Path(folder) / FILE_NAME
    with _lock:
        names = _read(path)
        names[name.lower()] = location
        _write(path, names)


def forget(folder: str | os.PathLike, name: str) -> None:
    """Drop ``name`` from the file (its catalog table was dropped or replaced)."""
    path = Path(folder) / FILE_NAME
    with _lock:
        names = _read(path)
        if names.pop(name.lower(), None) is not None:
            _write(path, names)


def known(folder: str | os.PathLike) -> dict[str, str]:
    """Every recorded ``schema.table`` and its location."""
    return _read(Path(folder) / FILE_NAME)


def lookup(folder: str | os.PathLike, name: str) -> str:
    """The location of ``schema.table`` (or of a table name that is unique across schemas)."""
    names = known(folder)
    wanted = name.lower()
    if wanted in names:
        return names[wanted]
    if "." not in wanted:
        matches = sorted(n for n in names if n.split(".", 1)[-1] == wanted)
        if len(matches) == 1:
            return names[matches[0]]
        if matches:
            raise InvalidOptionError(
                f"table name {name!r} is ambiguous; allowed values: {', '.join(matches)}")
    listed = ", ".join(sorted(names)) or "none recorded yet (build a qbeast model first)"
    raise InvalidOptionError(
        f"no Qbeast table named {name!r} in {Path(folder) / FILE_NAME}; allowed values: {listed}"
    )


def find_catalog_folders(start: str | os.PathLike) -> list[Path]:
    """Folders holding a names file in the dbt project around ``start`` (it and its parents).

    The project is the nearest folder with a ``dbt_project.yml``; its catalog folder is any direct
    sub-folder with a names file (``.qbeast`` by default, whatever ``catalog_dir`` says).
    """
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        if (folder / "dbt_project.yml").is_file():
            return sorted(
                entry for entry in folder.iterdir()
                if entry.is_dir() and (entry / FILE_NAME).is_file()
            )
    return []
