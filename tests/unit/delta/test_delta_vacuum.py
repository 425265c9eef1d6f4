"""Vacuum keeps every file a version inside the retention window may need, deletes the rest."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from delta_helpers import make_add
from qbeast.delta.vacuum import vacuum
from qbeast.errors import InvalidOptionError

DAY = 86_400_000


def _touch(path: Path, mtime_ms: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * 10)
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))


def test_vacuum_deletes_only_unreferenced_old_files(new_table) -> None:
    log = new_table()
    root = Path(log.table_path)
    now = 100 * DAY
    old = now - 30 * DAY
    for name in ["a.parquet", "gone-long-ago.parquet", "gone-recently.parquet", "orphan.parquet",
                 "p=x%20y/enc.parquet", "_hidden/file", ".hidden", "_col=1/partition.parquet"]:
        _touch(root / name, old)
    _touch(root / "fresh-orphan.parquet", now - 1000)  # maybe an uncommitted write in progress
    tx = log.start_transaction()
    tx.add_actions(make_add("gone-long-ago.parquet"), make_add("gone-recently.parquet"),
                   make_add("p=x%2520y/enc.parquet"))
    tx.commit("WRITE")
    snap = log.snapshot()
    log.start_transaction().add_actions(
        snap.files["gone-long-ago.parquet"].remove(deletion_timestamp=now - 8 * DAY),
        snap.files["gone-recently.parquet"].remove(deletion_timestamp=now - 1 * DAY),
    ).commit("DELETE")
    log_files = sorted(os.listdir(log.log_path))

    dry = vacuum(log, dry_run=True, now=now)
    expected = sorted(str(root / n) for n in
                      ["gone-long-ago.parquet", "orphan.parquet", "_col=1/partition.parquet"])
    assert sorted(dry.files) == expected and dry.bytes == 30 and dry.dry_run
    assert (root / "orphan.parquet").exists()  # a dry run deletes nothing

    done = vacuum(log, now=now)
    assert sorted(done.files) == expected
    for name in expected:
        assert not Path(name).exists()
    for kept in ["a.parquet", "gone-recently.parquet", "p=x%20y/enc.parquet", "fresh-orphan.parquet",
                 "_hidden/file", ".hidden"]:
        assert (root / kept).exists(), kept
    assert sorted(os.listdir(log.log_path)) == log_files

    # a shorter window needs an explicit override, and then reaches the recent tombstone
    with pytest.raises(InvalidOptionError, match="allow_short_retention"):
        vacuum(log, retention_hours=1, now=now)
    short = vacuum(log, retention_hours=1, allow_short_retention=True, now=now)
    assert sorted(short.files) == [str(root / "gone-recently.parquet")]


def test_vacuum_follows_the_table_retention_property(new_table) -> None:
    log = new_table(configuration={"delta.deletedFileRetentionDuration": "interval 2 days"})
    root = Path(log.table_path)
    now = 100 * DAY
    _touch(root / "orphan.parquet", now - 3 * DAY)
    assert vacuum(log, dry_run=True, now=now).files == [str(root / "orphan.parquet")]
    assert vacuum(log, retention_hours=24 * 5, dry_run=True, now=now).files == []
    bad = new_table("bad", configuration={"delta.deletedFileRetentionDuration": "soon"})
    with pytest.raises(InvalidOptionError, match="interval <n> <unit>"):
        vacuum(bad, dry_run=True)
    with pytest.raises(InvalidOptionError, match="non-negative"):
        vacuum(log, retention_hours=-1)
