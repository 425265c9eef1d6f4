"""The lazily built active-file map agrees with a plain JSON replay of the same log."""
from __future__ import annotations

from pathlib import Path

from delta_helpers import make_add
from qbeast.delta.log import DeltaLog


def test_checkpoint_overlay_equals_json_replay(new_table) -> None:
    log = new_table(configuration={"delta.checkpointInterval": "1000"})
    log.start_transaction().add_actions(
        [make_add(f"f{i}", i, {"revision": "1", "n": str(i)}) for i in range(20)]).commit("WRITE")
    log.checkpoint()  # version 1
    snap = log.snapshot()
    tx = log.start_transaction()
    tx.add_actions(snap.files["f3"].remove(), snap.files["f4"].remove(),
                   make_add("f5", 99, {"revision": "2"}),  # re-added over a checkpoint row
                   make_add("new", 7))
    tx.commit("WRITE")
    log.start_transaction().add_actions(log.snapshot().files["new"].remove(), make_add("f3", 1)).commit("WRITE")

    with_checkpoint = DeltaLog.for_path(log.table_path).snapshot()
    assert with_checkpoint.checkpoint_version == 1
    (Path(log.log_path) / f"{1:020d}.checkpoint.parquet").unlink()
    json_only = DeltaLog.for_path(log.table_path).snapshot()
    assert json_only.checkpoint_version is None

    def described(add) -> dict:
        # checkpoints record dataChange=false by convention; everything else must be equal
        return {k: v for k, v in add.to_json().items() if k != "dataChange"}

    files = with_checkpoint.files
    expected = {p: described(a) for p, a in json_only.files.items()}
    assert len(files) == len(expected) == 20  # a.parquet + f0..f19 - f4 (f3 and f5 back)
    assert sorted(files) == sorted(expected)
    assert {p: described(a) for p, a in files.items()} == expected
    assert [a.path for a in files.values()] == list(files)
    assert "f4" not in files and "new" not in files and "f3" in files
    assert files["f5"].tags == {"revision": "2"} and files["f7"].tags == {"revision": "1", "n": "7"}
    assert files.get("f4") is None
    assert with_checkpoint.num_records == json_only.num_records
    assert with_checkpoint.size_bytes == json_only.size_bytes


def test_single_lookup_does_not_need_the_other_files(new_table) -> None:
    log = new_table()
    log.start_transaction().add_actions([make_add(f"f{i}") for i in range(5)]).commit("WRITE")
    log.checkpoint()
    snap = DeltaLog.for_path(log.table_path).snapshot()
    base = snap.files._base
    assert base is not None and not base._objects
    assert snap.files["f2"].path == "f2"
    assert list(base._objects) == [base.index["f2"]]  # only the file asked for was built
    assert snap.files["f2"] is snap.files["f2"]
