"""Several OS processes committing to one table at the same moment."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from qbeast.delta.log import DeltaLog

PROCESSES = 4
COMMITS_EACH = 8

_WORKER = textwrap.dedent(
    """
    import sys, time
    from qbeast.delta.actions import AddFile
    from qbeast.delta.errors import ConcurrentModificationError
    from qbeast.delta.log import DeltaLog

    path, worker, mode, start_at, commits = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
    log = DeltaLog.for_path(path)
    base = log.snapshot(0)  # the version every worker read before racing
    while time.time() < start_at:  # line the processes up so that they really race
        time.sleep(0.001)
    for i in range(commits):
        if mode == "append":
            tx = log.start_transaction()
            tx.add_actions(AddFile(f"w{worker}-{i}.parquet", {}, 1, 1, True, '{"numRecords":1}'))
            tx.commit("WRITE", {"mode": "Append"}, blind_append=True)
        else:
            tx = log.start_transaction(base)
            tx.mark_files_read(["a.parquet"])
            tx.add_actions(base.files["a.parquet"].remove(), AddFile(f"w{worker}.parquet", {}, 1, 1))
            try:
                print("won", tx.commit("OPTIMIZE"))
            except ConcurrentModificationError as exc:
                print("lost", type(exc).__name__)
    """
)


def _run_workers(table: str, mode: str, commits: int) -> list[str]:
    start_at = time.time() + 1.5  # leaves time for every interpreter to start
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, table, str(w), mode, str(start_at), str(commits)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for w in range(PROCESSES)
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs.append(out.strip())
    return outputs


def test_racing_blind_appends_all_land_on_contiguous_versions(new_table) -> None:
    log = new_table()
    _run_workers(log.table_path, "append", COMMITS_EACH)
    total = PROCESSES * COMMITS_EACH
    commit_files = sorted(p.name for p in Path(log.log_path).glob("*.json"))
    assert commit_files == [f"{v:020d}.json" for v in range(total + 1)]
    seen = []
    for version in range(1, total + 1):
        lines = [json.loads(x) for x in log.read_commit(version).decode().splitlines()]
        adds = [x["add"]["path"] for x in lines if "add" in x]
        assert len(adds) == 1  # each commit published exactly once, none merged or lost
        seen.extend(adds)
    expected = {f"w{w}-{i}.parquet" for w in range(PROCESSES) for i in range(COMMITS_EACH)}
    assert sorted(seen) == sorted(expected)
    snap = DeltaLog.for_path(log.table_path).snapshot()
    assert set(snap.files) == expected | {"a.parquet"}
    assert snap.checkpoint_version == 30  # checkpoints were written along the way


def test_racing_conflicting_rewrites_one_wins_others_get_the_conflict(new_table) -> None:
    log = new_table()
    outputs = _run_workers(log.table_path, "rewrite", 1)
    winners = [o for o in outputs if o.startswith("won")]
    losers = [o for o in outputs if o.startswith("lost")]
    assert len(winners) == 1 and winners[0] == "won 1"
    assert losers == ["lost ConcurrentDeleteReadError"] * (PROCESSES - 1)
    snap = log.snapshot()
    assert snap.version == 1 and "a.parquet" not in snap.files and len(snap.files) == 1
