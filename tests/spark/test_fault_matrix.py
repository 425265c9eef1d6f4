"""The fault matrix of ``scripts/fault_matrix.py`` at CI size.

The script runs the same scenarios at full size (4 processes x 25 appends, 50 kills) and writes
``docs/fault-matrix.md``; here each runs small enough for ``make test``. Concurrent writers are
threads of this process sharing its Spark session (each write still reads, plans and commits on
its own; the races are the commit races), except for ``kill -9``, which needs a process.
"""
from __future__ import annotations

import errno
import sys
import threading
from pathlib import Path

import pytest

import qbeast
from qbeast.errors import WriteFailedError
from qbeast.snapshot import QbeastSnapshot

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import fault_matrix as fm  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.mark.slow
def test_concurrent_appends_opening_revisions_all_commit(spark, tmp_path):
    path = str(tmp_path / "t")
    fm.create_table(spark, path, rows=200)
    writers, appends = 2, 2
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for b in range(appends):
                qbeast.write(fm.batch_df(spark, w, b, rows=200), path)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert fm.check_contiguous(path) == 1 + writers * appends
    fm.check_whole_batches(spark, path, fm.expected_batches(writers, appends) | {"99-0"}, rows=200)
    fm.check_samples_exact(spark, path)
    assert len(QbeastSnapshot.load(path).revisions) > 2  # batches opened revisions meanwhile


@pytest.mark.slow
def test_kill9_during_writes_leaves_the_last_commit(spark, tmp_path):
    figures = fm.scenario_kill9(spark, tmp_path, kills=1, rows=200, seed=3)
    assert figures["kills"] == 1  # many more kills: the log-level test and the script
    assert figures["batches committed"] >= 1  # the run before the kill committed its write


@pytest.mark.slow
def test_convert_while_delta_rs_appends(spark, tmp_path):
    pytest.importorskip("deltalake", reason="delta-rs is the concurrent appender here")
    figures = fm.scenario_convert_and_append(spark, tmp_path, appends=15)
    assert figures["versions"] == 17  # 1 + 15 appends + the conversion, none lost


@pytest.mark.slow
def test_full_disk_and_read_only_folder(spark, tmp_path):
    reason = fm.can_mount_tmpfs(tmp_path)
    if reason is not None:
        pytest.skip(f"{reason}; the injected ENOSPC test below still runs")
    disk = fm.scenario_full_disk(spark, tmp_path, size="5m", big_rows=150_000)
    assert "No space left on device" in disk["error"]
    read_only = fm.scenario_read_only_folder(spark, tmp_path)
    assert "Read-only file system" in read_only["error"]


def test_commit_on_a_full_disk_injected(spark, tmp_path, monkeypatch):
    """ENOSPC from the storage when the commit file is written: clear error, nothing changed."""
    from qbeast.storage import LocalStorage

    path = str(tmp_path / "t")
    fm.create_table(spark, path, rows=200)

    def full(self, target, data):
        raise OSError(errno.ENOSPC, "No space left on device", target)

    monkeypatch.setattr(LocalStorage, "_write_new", full)
    with pytest.raises(WriteFailedError, match=r"00000000000000000001\.json: No space left.*version 0"):
        qbeast.write(fm.batch_df(spark, 1, 0, rows=200), path)
    monkeypatch.undo()
    assert QbeastSnapshot.load(path).version == 0
    assert fm.unreferenced_files(path) == []  # the written data files were deleted
    assert not [p for p in Path(path, "_delta_log").iterdir() if p.name.startswith(".")]
    qbeast.write(fm.batch_df(spark, 1, 0, rows=200), path)
    fm.check_whole_batches(spark, path, {"99-0", "1-0"}, rows=200)


def test_corrupt_and_truncated_log_files(tmp_path):
    figures = fm.scenario_corrupt_log(tmp_path)
    assert figures["corrupt checkpoint"].startswith("recovered")
