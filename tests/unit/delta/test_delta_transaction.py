"""Commits: file contents, validation, conflict detection and rebase, checkpoints, crash safety."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from delta_helpers import SCHEMA, make_add
from qbeast import __version__
from qbeast.delta.actions import Metadata, Protocol
from qbeast.delta.errors import (
    AppendOnlyTableError,
    ConcurrentAppendError,
    ConcurrentDeleteReadError,
    ConcurrentModificationError,
    ConcurrentTransactionError,
    DeltaError,
    MetadataChangedError,
    ProtocolChangedError,
)
from qbeast.delta.log import DeltaLog
from qbeast.storage import LocalStorage
from qbeast.errors import InvalidOptionError


def _lines(log: DeltaLog, version: int) -> list[dict]:
    return [json.loads(line) for line in log.read_commit(version).decode().splitlines()]


def test_new_table_commit_has_the_actions_readers_expect(tmp_path: Path) -> None:
    log = DeltaLog.for_path(str(tmp_path / "t"))
    assert not log.table_exists()
    tx = log.start_transaction()
    tx.update_metadata(Metadata.create(SCHEMA, configuration={"k": "v"}))
    tx.add_actions([make_add("x.parquet", 5, {"revision": "1", "blocks": "[]"})])
    tx.set_transaction("app", 3)
    assert tx.commit("WRITE", {"mode": "Append", "partitionBy": []}, metrics={"numFiles": 1}) == 0
    lines = _lines(log, 0)
    assert list(lines[0]) == ["commitInfo"]
    info = lines[0]["commitInfo"]
    assert info["operation"] == "WRITE" and info["engineInfo"] == f"dbt-qbeast/{__version__}"
    assert info["operationParameters"] == {"mode": "Append", "partitionBy": "[]"}
    assert info["operationMetrics"] == {"numFiles": "1"} and info["timestamp"] > 0
    assert lines[1] == {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    md = lines[2]["metaData"]
    assert md["format"] == {"provider": "parquet", "options": {}} and md["configuration"] == {"k": "v"}
    assert md["schemaString"] == SCHEMA and md["partitionColumns"] == [] and md["createdTime"] > 0
    assert lines[3]["txn"]["appId"] == "app" and lines[3]["txn"]["version"] == 3
    add = lines[4]["add"]
    assert add["tags"] == {"revision": "1", "blocks": "[]"} and json.loads(add["stats"])["numRecords"] == 5
    assert set(add) == {"path", "partitionValues", "size", "modificationTime", "dataChange", "stats", "tags"}
    assert log.snapshot().txn_version("app") == 3


def test_invalid_transactions_are_refused(tmp_path: Path, new_table) -> None:
    log = DeltaLog.for_path(str(tmp_path / "fresh"))
    with pytest.raises(InvalidOptionError, match="needs a Metadata"):
        log.start_transaction().add_actions(make_add("a")).commit("WRITE")
    with pytest.raises(InvalidOptionError, match="partition column"):
        log.start_transaction().update_metadata(Metadata.create(SCHEMA, ["nope"]))
    with pytest.raises(InvalidOptionError, match="struct schema"):
        log.start_transaction().update_metadata(Metadata.create('{"type": "long"}'))
    table = new_table()
    snap = table.snapshot()
    with pytest.raises(InvalidOptionError, match="blind_append"):
        table.start_transaction().add_actions(snap.files["a.parquet"].remove()).commit("DELETE", blind_append=True)
    with pytest.raises(InvalidOptionError, match="added twice"):
        table.start_transaction().add_actions(make_add("b"), make_add("b")).commit("WRITE")
    with pytest.raises(InvalidOptionError, match="downgraded"):
        table.start_transaction().update_protocol(Protocol(1, 1))
    with pytest.raises(InvalidOptionError, match="AddFile, RemoveFile"):
        table.start_transaction().add_actions("a.parquet")
    tx = table.start_transaction().add_actions(make_add("c"))
    tx.commit("WRITE")
    with pytest.raises(DeltaError, match="already committed"):
        tx.commit("WRITE")


def test_append_only_tables_refuse_removing_data(new_table) -> None:
    log = new_table(configuration={"delta.appendOnly": "true"})
    add = log.snapshot().files["a.parquet"]
    with pytest.raises(AppendOnlyTableError, match="delta.appendOnly"):
        log.start_transaction().add_actions(add.remove()).commit("DELETE")
    # a rewrite that does not change data (optimize) is allowed
    tx = log.start_transaction().add_actions(add.remove(data_change=False), make_add("b"))
    assert tx.commit("OPTIMIZE") == 1


def test_blind_appends_rebase_over_each_other(new_table) -> None:
    log = new_table()
    base = log.snapshot()
    first = log.start_transaction(base).add_actions(make_add("b"))
    second = log.start_transaction(base).add_actions(make_add("c"))
    assert first.commit("WRITE", blind_append=True) == 1
    assert second.commit("WRITE", blind_append=True) == 2
    assert second.attempts == 2
    assert set(log.snapshot().files) == {"a.parquet", "b", "c"}
    assert _lines(log, 2)[0]["commitInfo"]["readVersion"] == 0


@pytest.mark.parametrize(
    ("winner", "loser", "error"),
    [
        # winner removes a file the loser read
        (lambda tx, s: tx.add_actions(s.files["a.parquet"].remove()),
         lambda tx, s: tx.mark_files_read(["a.parquet"]).add_actions(make_add("x")),
         ConcurrentDeleteReadError),
        # both remove the same file
        (lambda tx, s: tx.add_actions(s.files["a.parquet"].remove()),
         lambda tx, s: tx.add_actions(s.files["a.parquet"].remove()),
         ConcurrentDeleteReadError),
        (lambda tx, s: tx.update_metadata(Metadata(s.metadata.id, SCHEMA, [], {"x": "1"})),
         lambda tx, s: tx.add_actions(make_add("x")),
         MetadataChangedError),
        (lambda tx, s: tx.update_protocol(Protocol(1, 3)),
         lambda tx, s: tx.add_actions(make_add("x")),
         ProtocolChangedError),
        (lambda tx, s: tx.set_transaction("app", 1),
         lambda tx, s: tx.set_transaction("app", 1).add_actions(make_add("x")),
         ConcurrentTransactionError),
        (lambda tx, s: tx.add_actions(make_add("w")),
         lambda tx, s: tx.mark_table_read().add_actions(s.files["a.parquet"].remove()),
         ConcurrentAppendError),
    ],
    ids=["delete-read", "delete-delete", "metadata", "protocol", "txn", "append"],
)
def test_conflicting_commits_fail_with_specific_error(new_table, winner, loser, error) -> None:
    log = new_table()
    base = log.snapshot()
    tx_w = log.start_transaction(base)
    winner(tx_w, base)
    assert tx_w.commit("WINNER") == 1
    tx_l = log.start_transaction(base)
    loser(tx_l, base)
    with pytest.raises(error, match="version 1"):
        tx_l.commit("LOSER")
    assert log.snapshot().version == 1  # the loser left nothing behind


def test_non_conflicting_reader_rebases(new_table) -> None:
    log = new_table()
    log.start_transaction().add_actions(make_add("b")).commit("WRITE")
    base = log.snapshot()
    tx_w = log.start_transaction(base).add_actions(base.files["b"].remove())
    tx_w.commit("DELETE")
    # the loser only read a.parquet, which the winner left alone
    tx_l = log.start_transaction(base).mark_files_read(["a.parquet"]).add_actions(make_add("c"))
    assert tx_l.commit("WRITE") == 3
    assert set(log.snapshot().files) == {"a.parquet", "c"}


def test_concurrent_table_creation_loses_with_metadata_error(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    a = DeltaLog.for_path(path).start_transaction()
    b = DeltaLog.for_path(path).start_transaction()
    for tx in (a, b):
        tx.update_metadata(Metadata.create(SCHEMA))
    assert a.commit("CREATE TABLE") == 0
    with pytest.raises(MetadataChangedError, match="created the table .*version 0"):
        b.commit("CREATE TABLE")


class _AlwaysLosing(LocalStorage):
    """A storage on which every publish finds its name taken by a (simulated) blind append."""

    def __init__(self, log_path: str) -> None:
        self.log_path = log_path

    def put_if_absent(self, path: str, data: bytes) -> bool:
        name = path.rsplit("/", 1)[-1]
        rival = {"add": make_add(f"rival-{name}").to_json()}
        super().put_if_absent(path, (json.dumps(rival) + "\n").encode())
        return False


def test_gives_up_after_bounded_retries(new_table) -> None:
    log = new_table()
    losing_log = DeltaLog(log.table_path, _AlwaysLosing(log.log_path))
    tx = losing_log.start_transaction()
    tx.max_retries = 3
    tx.add_actions(make_add("mine"))
    with pytest.raises(ConcurrentModificationError, match="gave up after 4 attempts"):
        tx.commit("WRITE", blind_append=True)
    assert "mine" not in log.snapshot().files and log.snapshot().version == 4


def test_checkpoints_every_interval_with_tags(new_table) -> None:
    log = new_table(configuration={"delta.checkpointInterval": "3"})
    for i in range(1, 7):
        log.start_transaction().add_actions(make_add(f"f{i}", tags={"revision": str(i)})).commit(
            "WRITE", blind_append=True)
    names = sorted(p.name for p in Path(log.log_path).iterdir() if "checkpoint" in p.name)
    assert names == [f"{3:020d}.checkpoint.parquet", f"{6:020d}.checkpoint.parquet", "_last_checkpoint"]
    snap = DeltaLog.for_path(log.table_path).snapshot()
    assert snap.checkpoint_version == 6
    assert snap.files["f4"].tags == {"revision": "4"}


def test_default_interval_is_ten_and_bad_interval_is_reported(new_table) -> None:
    log = new_table()
    for i in range(1, 11):
        log.start_transaction().add_actions(make_add(f"f{i}")).commit("WRITE", blind_append=True)
    assert (Path(log.log_path) / f"{10:020d}.checkpoint.parquet").exists()
    assert not (Path(log.log_path) / f"{9:020d}.checkpoint.parquet").exists()
    with pytest.raises(InvalidOptionError, match="delta.checkpointInterval='often'"):
        new_table("bad", configuration={"delta.checkpointInterval": "often"})
    assert not DeltaLog.for_path(str(Path(log.table_path).parent / "bad")).table_exists()


def test_crash_between_write_and_publish_leaves_no_version(new_table) -> None:
    log = new_table()
    script = textwrap.dedent(
        f"""
        import os
        from qbeast.delta.actions import AddFile
        from qbeast.delta.log import DeltaLog
        def crash(src, dst):
            os._exit(17)  # the process dies after writing the temp file, before publishing
        os.link = crash
        tx = DeltaLog.for_path({log.table_path!r}).start_transaction()
        tx.add_actions(AddFile("crash.parquet", {{}}, 1, 1))
        tx.commit("WRITE")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 17, result.stderr
    leftovers = [p.name for p in Path(log.log_path).iterdir()]
    assert any(name.endswith(".tmp") for name in leftovers)  # the write did happen...
    snap = DeltaLog.for_path(log.table_path).snapshot()
    assert snap.version == 0 and "crash.parquet" not in snap.files  # ...but is not visible
    assert log.start_transaction().add_actions(make_add("next")).commit("WRITE") == 1
