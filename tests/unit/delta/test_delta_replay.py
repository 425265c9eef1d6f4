"""Log replay over hand-written commits: reconciliation, checkpoints, time travel, history, errors."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from qbeast.delta.errors import CorruptLogError, NotADeltaTableError, VersionNotFoundError
from qbeast.delta.log import DeltaLog
from qbeast.errors import InvalidOptionError

from delta_helpers import SCHEMA, make_add, write_log_lines

META = {"metaData": {"id": "t-1", "format": {"provider": "parquet", "options": {}},
                     "schemaString": SCHEMA, "partitionColumns": [], "configuration": {"a": "1"},
                     "createdTime": 1}}
PROTO = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
T0 = 1_700_000_000_000


def _add(path: str, rows: int = 1, **extra) -> dict:
    body = make_add(path, rows).to_json()
    body.update(extra)
    return {"add": body}


def _remove(path: str, ts: int = T0) -> dict:
    return {"remove": {"path": path, "deletionTimestamp": ts, "dataChange": True}}


@pytest.fixture
def history_table(tmp_path: Path) -> Path:
    """v0 create a,b ; v1 add c ; v2 remove a, metadata change ; v3 re-add a, txn ; v4 remove b."""
    t = tmp_path / "t"
    write_log_lines(t, 0, [{"commitInfo": {"timestamp": T0, "operation": "CREATE"}}, PROTO, META,
                           _add("a"), _add("b", 2)], T0)
    write_log_lines(t, 1, [_add("c", 3), {"commitInfo": {"timestamp": T0 + 1000, "operation": "WRITE"}}],
                    T0 + 1000)
    meta2 = json.loads(json.dumps(META))
    meta2["metaData"]["configuration"] = {"a": "2"}
    write_log_lines(t, 2, [_remove("a"), meta2], T0 + 2000)
    write_log_lines(t, 3, [_add("a", 10, tags={"revision": "1"}),
                           {"txn": {"appId": "app", "version": 7}}], T0 + 3000)
    write_log_lines(t, 4, [_remove("b"), {"txn": {"appId": "app", "version": 8}}], T0 + 4000)
    return t


def test_replay_reconciles_adds_and_removes(history_table: Path) -> None:
    log = DeltaLog.for_path(str(history_table))
    expected = {0: {"a", "b"}, 1: {"a", "b", "c"}, 2: {"b", "c"}, 3: {"a", "b", "c"}, 4: {"a", "c"}}
    for version, files in expected.items():
        snap = log.snapshot(version)
        assert set(snap.files) == files, version
    latest = log.snapshot()
    assert latest.version == 4
    assert latest.configuration == {"a": "2"}
    assert latest.files["a"].tags == {"revision": "1"} and latest.files["a"].num_records == 10
    assert latest.num_records == 13 and latest.txn_version("app") == 8
    assert log.snapshot(3).txn_version("app") == 7 and log.snapshot(2).txn_version("app") is None
    assert set(latest.tombstones) == {"b"}  # "a" was re-added, so it is no longer a tombstone
    assert log.snapshot(1).configuration == {"a": "1"}


def test_time_travel_by_timestamp_uses_commit_times(history_table: Path) -> None:
    log = DeltaLog.for_path(str(history_table))
    assert log.snapshot(timestamp=T0 + 2500).version == 2
    assert log.snapshot(timestamp=T0 + 3000).version == 3
    assert log.snapshot(timestamp="2100-01-01T00:00:00Z").version == 4
    assert log.snapshot(version=2).timestamp == T0 + 2000
    with pytest.raises(VersionNotFoundError, match="earliest available version 0"):
        log.snapshot(timestamp=T0 - 1)
    with pytest.raises(VersionNotFoundError, match="latest version is 4"):
        log.snapshot(version=9)
    with pytest.raises(InvalidOptionError, match="not both"):
        log.snapshot(version=1, timestamp=T0)
    with pytest.raises(InvalidOptionError, match="ISO 8601"):
        log.snapshot(timestamp="yesterday")


def test_commit_timestamps_are_made_monotonic(history_table: Path) -> None:
    # version 3's file claims to be older than version 2's: it must still sort after it
    path = history_table / "_delta_log" / f"{3:020d}.json"
    os.utime(path, ns=(T0 * 1_000_000, T0 * 1_000_000))
    log = DeltaLog.for_path(str(history_table))
    assert log.snapshot(3).timestamp == T0 + 2001
    assert log.snapshot(timestamp=T0 + 2000).version == 2


def test_history_newest_first_with_versions(history_table: Path) -> None:
    log = DeltaLog.for_path(str(history_table))
    infos = log.history()
    assert [i.version for i in infos] == [4, 3, 2, 1, 0]
    assert infos[3].operation == "WRITE"  # commitInfo not on the first line is still found
    assert infos[0].operation is None and infos[0].timestamp == T0 + 4000  # no commitInfo: file time
    assert [i.version for i in log.history(limit=2)] == [4, 3]


def test_checkpoint_is_preferred_and_enough_without_older_commits(history_table: Path) -> None:
    log = DeltaLog.for_path(str(history_table))
    before = log.snapshot()
    log.checkpoint(version=3)
    for v in range(0, 4):
        (history_table / "_delta_log" / f"{v:020d}.json").unlink()
    after = DeltaLog.for_path(str(history_table)).snapshot()
    assert after.checkpoint_version == 3
    assert set(after.files) == set(before.files)
    assert after.files["a"].tags == {"revision": "1"}
    assert after.txn_version("app") == 8 and after.configuration == {"a": "2"}
    with pytest.raises(VersionNotFoundError, match="earliest available version is 3"):
        log.snapshot(version=2)


def test_multi_part_checkpoint_is_read_as_one(history_table: Path) -> None:
    log = DeltaLog.for_path(str(history_table))
    written = log.checkpoint(version=4, parts=3)
    assert [Path(p).name for p in written] == [
        f"{4:020d}.checkpoint.{i:010d}.{3:010d}.parquet" for i in (1, 2, 3)
    ]
    hint = json.loads((history_table / "_delta_log" / "_last_checkpoint").read_text())
    assert hint["version"] == 4 and hint["parts"] == 3 and hint["numOfAddFiles"] == 2
    rows = sum(pq.read_metadata(p).num_rows for p in written)
    assert rows == hint["size"]
    snap = DeltaLog.for_path(str(history_table)).snapshot()
    assert snap.checkpoint_version == 4 and set(snap.files) == {"a", "c"}
    # an incomplete multi-part checkpoint is ignored: replay falls back to the JSON commits
    Path(written[1]).unlink()
    snap = DeltaLog.for_path(str(history_table)).snapshot()
    assert snap.checkpoint_version is None and set(snap.files) == {"a", "c"}


def test_not_a_table_and_corrupt_logs(tmp_path: Path, history_table: Path) -> None:
    with pytest.raises(NotADeltaTableError, match="does not exist"):
        DeltaLog.for_path(str(tmp_path / "nope")).snapshot()
    (tmp_path / "plain").mkdir()
    with pytest.raises(NotADeltaTableError, match="no _delta_log"):
        DeltaLog.for_path(str(tmp_path / "plain")).snapshot()
    (tmp_path / "plain" / "_delta_log").mkdir()
    with pytest.raises(NotADeltaTableError, match="no commit"):
        DeltaLog.for_path(str(tmp_path / "plain")).snapshot()
    assert not DeltaLog.for_path(str(tmp_path / "plain")).table_exists()

    (history_table / "_delta_log" / f"{2:020d}.json").unlink()
    with pytest.raises(CorruptLogError, match=r"missing commit file\(s\) for version\(s\) \[2\]"):
        DeltaLog.for_path(str(history_table)).snapshot()
    assert DeltaLog.for_path(str(history_table)).snapshot(1).version == 1

    (history_table / "_delta_log" / f"{1:020d}.json").write_text('{"add": {"path": "x"\n')
    with pytest.raises(CorruptLogError, match=r"00000000000000000001\.json line 1"):
        DeltaLog.for_path(str(history_table)).snapshot(1)


def test_missing_metadata_is_corrupt(tmp_path: Path) -> None:
    write_log_lines(tmp_path / "t", 0, [PROTO, _add("a")])
    with pytest.raises(CorruptLogError, match="no metaData"):
        DeltaLog.for_path(str(tmp_path / "t")).snapshot()


def test_other_log_files_are_ignored(history_table: Path) -> None:
    log_dir = history_table / "_delta_log"
    (log_dir / f".{5:020d}.json.abc.tmp").write_text("garbage")
    (log_dir / f"{4:020d}.crc").write_text("garbage")
    (log_dir / f"{4:020d}.checkpoint.0a1b2c3d-0000-0000-0000-000000000000.json").write_text("{}")
    assert DeltaLog.for_path(str(history_table)).snapshot().version == 4


def test_last_checkpoint_hint_picks_among_checkpoints_of_one_version(history_table: Path, caplog) -> None:
    log = DeltaLog.for_path(str(history_table))
    single = log.checkpoint(version=4)
    parts = log.checkpoint(version=4, parts=2)  # _last_checkpoint now describes the 2-part set
    Path(single[0]).write_bytes(b"not parquet")
    snap = DeltaLog.for_path(str(history_table)).snapshot()
    assert snap.checkpoint_version == 4 and set(snap.files) == {"a", "c"}
    assert "skipping unreadable checkpoint" not in caplog.text  # the hinted set was read first
    # without a usable hint the corrupt single file is tried, skipped, and the parts are used
    (history_table / "_delta_log" / "_last_checkpoint").unlink()
    snap = DeltaLog.for_path(str(history_table)).snapshot()
    assert snap.checkpoint_version == 4 and set(snap.files) == {"a", "c"}
    assert "skipping unreadable checkpoint" in caplog.text and single[0] in caplog.text
    for path in parts:
        Path(path).unlink()
    snap = DeltaLog.for_path(str(history_table)).snapshot()  # only JSON commits left usable
    assert snap.checkpoint_version is None and set(snap.files) == {"a", "c"}


def test_in_commit_timestamps_drive_time_travel_from_their_enablement(tmp_path: Path) -> None:
    t = tmp_path / "ict"
    file_time = T0 + 50_000  # file times all say "later" than the in-commit timestamps
    write_log_lines(t, 0, [{"commitInfo": {"timestamp": T0}}, PROTO, META, _add("a")], T0)
    write_log_lines(t, 1, [_add("b")], T0 + 1000)
    ict_meta = json.loads(json.dumps(META))
    ict_meta["metaData"]["configuration"] = {
        "delta.enableInCommitTimestamps": "true",
        "delta.inCommitTimestampEnablementVersion": "2",
        "delta.inCommitTimestampEnablementTimestamp": str(T0 + 2000),
    }
    write_log_lines(t, 2, [{"commitInfo": {"inCommitTimestamp": T0 + 2000, "timestamp": T0 + 2000}},
                           ict_meta, _add("c")], file_time)
    for v, ict in ((3, T0 + 3000), (4, T0 + 4000), (5, T0 + 5000)):
        write_log_lines(t, v, [{"commitInfo": {"inCommitTimestamp": ict, "timestamp": ict}},
                               _add(f"f{v}")], file_time)
    log = DeltaLog.for_path(str(t))
    assert log.snapshot(4).timestamp == T0 + 4000
    assert log.snapshot(1).timestamp == T0 + 1000  # before enablement: the file time
    assert log.snapshot(timestamp=T0 + 3500).version == 3
    assert log.snapshot(timestamp=T0 + 5000).version == 5
    assert log.snapshot(timestamp=T0 + 1500).version == 1
    log.checkpoint(version=4)
    assert DeltaLog.for_path(str(t)).snapshot(4).timestamp == T0 + 4000  # read from the commit
