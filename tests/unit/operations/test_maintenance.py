"""vacuum_table and table_history: the log layer's rules behind validated, printable results."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from qbeast.delta.actions import now_ms
from qbeast.errors import InvalidOptionError, QbeastError
from qbeast.operations.maintenance import table_history, vacuum_table
from qbeast.operations.upgrade import upgrade_format

from operations_helpers import REVISION_1

HOUR_MS = 3_600_000


def age(path: Path, hours: float) -> None:
    """Set a file's modification time ``hours`` in the past."""
    stamp = time.time() - hours * 3600
    os.utime(path, (stamp, stamp))


@pytest.fixture
def table_with_removed_file(make_table):
    log = make_table([(range(0, 10), None), (range(10, 20), None)])
    table = Path(log.table_path)
    removed, kept = sorted(log.snapshot().files)
    for name in (removed, kept):
        age(table / name, 400)
    old_removal = log.snapshot().files[removed].remove(deletion_timestamp=now_ms() - 200 * HOUR_MS)
    log.start_transaction().add_actions(old_removal).commit("DELETE")
    return log, removed, kept


def test_vacuum_deletes_only_files_removed_before_the_retention(table_with_removed_file):
    log, removed, kept = table_with_removed_file
    table = Path(log.table_path)
    size = (table / removed).stat().st_size
    report = vacuum_table(log.table_path)
    assert report.files == (removed,) and report.bytes == size and not report.dry_run
    assert not (table / removed).exists() and (table / kept).exists()
    assert report.retention_hours == 168
    assert f"deleted 1 file(s), {size} bytes" in str(report)
    assert vacuum_table(log.table_path).files == ()


def test_vacuum_keeps_files_removed_inside_the_retention(table_with_removed_file):
    log, removed, _ = table_with_removed_file
    report = vacuum_table(log.table_path, retention_hours=300)
    assert report.files == () and (Path(log.table_path) / removed).exists()


def test_vacuum_dry_run_lists_without_deleting(table_with_removed_file):
    log, removed, _ = table_with_removed_file
    report = vacuum_table(log.table_path, dry_run=True)
    assert report.files == (removed,) and report.dry_run
    assert (Path(log.table_path) / removed).exists()
    assert "would delete 1 file(s)" in str(report)
    assert json.loads(json.dumps(report.to_dict()))["files"] == [removed]


def test_vacuum_removes_abandoned_staging_folders_only_after_the_retention(table_with_removed_file):
    """A write that died leaves _qbeast_staging_*; vacuum clears it once all its files are old."""
    log, removed, kept = table_with_removed_file
    table = Path(log.table_path)
    abandoned = table / "_qbeast_staging_dead" / "_qbeast_file=0"
    running = table / "_qbeast_staging_live" / "_qbeast_file=0"
    for folder, hours in ((abandoned, 400), (running, 400)):
        folder.mkdir(parents=True)
        (folder / "part-0.parquet").write_bytes(b"x" * 10)
        age(folder / "part-0.parquet", hours)
    (running / "part-1.parquet").write_bytes(b"y" * 5)  # written a moment ago: a write in progress
    dry = vacuum_table(log.table_path, dry_run=True)
    assert set(dry.files) == {removed, "_qbeast_staging_dead/_qbeast_file=0/part-0.parquet"}
    assert (abandoned / "part-0.parquet").exists()
    report = vacuum_table(log.table_path)
    assert set(report.files) == set(dry.files)
    assert report.bytes == dry.bytes
    assert not (table / "_qbeast_staging_dead").exists()
    assert sorted(p.name for p in running.iterdir()) == ["part-0.parquet", "part-1.parquet"]
    assert (table / kept).exists()


def test_vacuum_default_retention_from_the_table_property(make_table):
    log = make_table([(range(0, 10), None), (range(10, 20), None)],
                     {"delta.deletedFileRetentionDuration": "interval 300 hours"})
    removed = sorted(log.snapshot().files)[0]
    age(Path(log.table_path) / removed, 400)
    log.start_transaction().add_actions(
        log.snapshot().files[removed].remove(deletion_timestamp=now_ms() - 200 * HOUR_MS)
    ).commit("DELETE")
    report = vacuum_table(log.table_path, retention_hours=None)
    assert report.retention_hours == 300 and report.files == ()
    with pytest.raises(InvalidOptionError, match="shorter than the table's 300 hours"):
        vacuum_table(log.table_path)


def test_vacuum_short_retention_needs_explicit_consent(table_with_removed_file):
    log, removed, _ = table_with_removed_file
    with pytest.raises(InvalidOptionError, match="allow_short_retention"):
        vacuum_table(log.table_path, retention_hours=1)
    report = vacuum_table(log.table_path, retention_hours=1, allow_short_retention=True)
    assert report.files == (removed,)


@pytest.mark.parametrize("bad", [-1, "168", True, float("nan")])
def test_vacuum_rejects_bad_retention(table_with_removed_file, bad):
    log, _, _ = table_with_removed_file
    with pytest.raises(InvalidOptionError, match="retention_hours"):
        vacuum_table(log.table_path, retention_hours=bad)


def test_history_lists_commits_newest_first(make_table):
    log = make_table([(range(0, 10), {"state": "FLOODED", "cube": "", "revision": "1",
                                      "elementCount": "10", "minWeight": "0", "maxWeight": "9"})],
                     {"qbeast.lastRevisionID": "1", "qbeast.revision.1": REVISION_1})
    upgrade_format(log.table_path)
    history = table_history(log.table_path)
    assert [e.version for e in history] == [1, 0]
    assert [e.operation for e in history] == ["UPGRADE QBEAST FORMAT", "WRITE"]
    newest = history[0]
    assert newest.parameters == {"removedProperties": [], "retaggedFiles": "1"}
    assert newest.metrics == {"numRetaggedFiles": "1", "numRemovedProperties": "0"}
    assert newest.engine.startswith("dbt-qbeast/")
    assert abs(newest.timestamp - now_ms()) < 60_000 and newest.time.endswith("Z")
    assert [e.version for e in table_history(log.table_path, limit=1)] == [1]
    text = str(history)
    assert "UPGRADE QBEAST FORMAT" in text and "WRITE" in text and "mode=Append" in text
    as_dict = json.loads(json.dumps(history.to_dict()))
    assert [e["operation"] for e in as_dict["entries"]] == ["UPGRADE QBEAST FORMAT", "WRITE"]


def test_history_errors(tmp_path, make_table):
    log = make_table([(range(0, 3), None)])
    with pytest.raises(InvalidOptionError, match="limit"):
        table_history(log.table_path, limit=0)
    with pytest.raises(QbeastError, match="not a Delta table"):
        table_history(str(tmp_path / "missing"))
