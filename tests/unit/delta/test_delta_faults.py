"""kill -9 at random moments of commits, checkpoints and vacuum of the log layer.

A child process appends small files through the log layer (a checkpoint every 3 versions,
vacuum with zero retention after every removal) until it is killed; after each kill the table
must read as its last commit: versions contiguous, every committed file present exactly once,
and the next child carries on. Pure Python, so many kills fit in a few seconds (the Spark writer
is killed in tests/spark/test_fault_matrix.py and, 50 times, by scripts/fault_matrix.py).
"""
from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qbeast.delta.log import DeltaLog

CHILD = r"""
import json, os, sys, time
import pyarrow as pa, pyarrow.parquet as pq
# pyarrow's first parquet write initializes for ~0.5 s; a long-running writer has paid that
pq.write_table(pa.table({"a": [1]}), pa.BufferOutputStream())
from qbeast.delta.actions import AddFile, Metadata
from qbeast.delta.log import DeltaLog
from qbeast.delta.vacuum import vacuum
path, start = sys.argv[1], int(sys.argv[2])
log = DeltaLog.for_path(path)
if not log.table_exists():
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
    log.start_transaction().update_metadata(Metadata.create(schema, configuration={
        "delta.checkpointInterval": "3", "delta.deletedFileRetentionDuration": "interval 0 seconds"})).commit("CREATE")
print("ready", flush=True)
n = start
while True:
    name = f"f{n}.parquet"
    with open(os.path.join(path, name), "wb") as handle:
        handle.write(b"x" * 100)
    tx = log.start_transaction()
    tx.add_actions(AddFile(name, {}, 100, 0, True, json.dumps({"numRecords": 1})))
    if n % 4 == 3:  # replace the oldest file now and then, so vacuum has work
        snap = tx.read_snapshot
        oldest = min(snap.files, key=lambda p: int(p[1:-8]))
        tx.mark_files_read([oldest]).add_actions(snap.files[oldest].remove())
    tx.commit("WRITE")
    if n % 4 == 3:
        vacuum(log, retention_hours=0, allow_short_retention=True)
    n += 1
"""


@pytest.mark.slow
def test_kill9_during_commits_checkpoints_and_vacuum(tmp_path: Path) -> None:
    path = tmp_path / "t"
    path.mkdir()
    rng = random.Random(11)
    start = 0
    for _ in range(12):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(start)],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait()
        log = DeltaLog.for_path(str(path))
        versions = sorted(int(p.name[:20]) for p in (path / "_delta_log").glob("*.json"))
        assert versions == list(range(len(versions)))
        snap = log.snapshot()
        assert snap.version == versions[-1]
        for add in snap.files.values():  # every active file exists: vacuum never took one
            assert Path(snap.file_path(add)).is_file(), add.path
        # files added minus files removed, over the whole history
        added, removed = set(), set()
        for v in versions:
            for line in (path / "_delta_log" / f"{v:020d}.json").read_text().splitlines():
                action = json.loads(line)
                added |= {action["add"]["path"]} if "add" in action else set()
                removed |= {action["remove"]["path"]} if "remove" in action else set()
        assert set(snap.files) == added - removed
        start = max((int(p.name[1:-8]) for p in path.glob("f*.parquet")), default=-1) + 1
    assert snap.version > 12 and snap.checkpoint_version is not None
