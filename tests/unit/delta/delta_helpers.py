"""Helpers for the transaction log unit tests: tiny tables built action by action."""
from __future__ import annotations

import json
import os
from pathlib import Path

from qbeast.delta.actions import AddFile

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


def make_add(path: str, rows: int = 1, tags: dict[str, str] | None = None, **pv: str) -> AddFile:
    """An AddFile with plausible stats (the data file itself is not needed by the log layer)."""
    return AddFile(path, dict(pv), 100 + rows, 1_700_000_000_000, True,
                   json.dumps({"numRecords": rows}), tags)


def write_log_lines(table: Path, version: int, lines: list[dict], mtime_ms: int | None = None) -> Path:
    """Write a commit file by hand, exactly as another Delta writer would."""
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    path = log / f"{version:020d}.json"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    if mtime_ms is not None:
        os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return path


