"""upgrade_format: pre-0.6 flat tags and replicated sets -> current blocks (FORMAT §5.2, §5.3)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from qbeast.core.blocks import TagFormat
from qbeast.delta.log import DeltaLog
from qbeast.errors import FormatError, InvalidOptionError
from qbeast.operations.upgrade import UPGRADE_OPERATION, upgrade_format
from qbeast.snapshot import NotAQbeastTableError, QbeastSnapshot

from operations_helpers import REVISION_1

REPLICATED_STATES = {"REPLICATED", "ANNOUNCED"}


def legacy(cube: str, state: str, count: int, lo: int, hi: int) -> dict[str, str]:
    return {"state": state, "cube": cube, "revision": "1", "elementCount": str(count),
            "minWeight": str(lo), "maxWeight": str(hi)}


def expected_tags(old: dict[str, str]) -> dict[str, str]:
    """The migration rule written out literally, independently of the code under test."""
    block = {"cubeId": old["cube"], "minWeight": int(old["minWeight"]),
             "maxWeight": int(old["maxWeight"]), "elementCount": int(old["elementCount"]),
             "replicated": old["state"] in REPLICATED_STATES}
    return {"revision": old["revision"], "blocks": json.dumps([block], separators=(",", ":"))}


LEGACY_FILES = [
    (range(0, 40), legacy("", "REPLICATED", 40, -2147483648, -1000000000)),
    (range(40, 70), legacy("A", "ANNOUNCED", 30, -999999999, 2147483647)),
    (range(70, 100), legacy("g", "FLOODED", 30, -900000000, 2147483647)),
]
LEGACY_CONFIG = {
    "qbeast.lastRevisionID": "1",
    "qbeast.revision.1": REVISION_1,
    "qbeast.replicatedSet.1": '[""]',
    "qbeast.replicatedSet.2": "[]",
    "delta.checkpointInterval": "10",
}


@pytest.fixture
def legacy_table(make_table):
    return make_table(LEGACY_FILES, LEGACY_CONFIG)


def commit_lines(log: DeltaLog, version: int) -> list[dict]:
    return [json.loads(line) for line in log.read_commit(version).splitlines() if line.strip()]


def test_upgrade_rewrites_flat_tags_and_drops_replicated_sets(legacy_table):
    before = QbeastSnapshot.load(legacy_table.table_path)
    old_tags = {p: dict(a.tags) for p, a in before.delta.files.items()}
    result = upgrade_format(legacy_table.table_path)

    assert result.version == 1 and result.file_count == 3
    assert result.removed_properties == ("qbeast.replicatedSet.1", "qbeast.replicatedSet.2")
    after = QbeastSnapshot.load(legacy_table.table_path)
    assert set(after.delta.files) == set(old_tags)
    for path, add in after.delta.files.items():
        assert add.tags == expected_tags(old_tags[path])
        assert add.data_change is False
        assert add.size == before.delta.files[path].size
        assert add.stats == before.delta.files[path].stats
    config = after.configuration
    assert not [k for k in config if k.startswith("qbeast.replicatedSet.")]
    assert {k: v for k, v in config.items()} == {
        k: v for k, v in LEGACY_CONFIG.items() if not k.startswith("qbeast.replicatedSet.")
    }
    assert not after.needs_upgrade
    # The current reader now sees the real cube structure instead of empty root blocks.
    status = after.index_status(1)
    assert [(str(c.cube), c.element_count) for c in status] == [("", 40), ("A", 30), ("g", 30)]
    assert status.get(next(iter(status)).cube).max_weight == -1000000000


def test_upgrade_commit_re_adds_each_file_without_removing_it(legacy_table):
    upgrade_format(legacy_table.table_path)
    lines = commit_lines(legacy_table, 1)
    kinds = [next(iter(line)) for line in lines]
    assert sorted(kinds) == ["add", "add", "add", "commitInfo", "metaData"]
    adds = [line["add"] for line in lines if "add" in line]
    assert sorted(a["path"] for a in adds) == sorted(legacy_table.snapshot(0).files)
    assert all(a["dataChange"] is False for a in adds)
    assert lines[0]["commitInfo"]["operation"] == UPGRADE_OPERATION
    # No tombstone: vacuum must never see the re-tagged files as removed.
    assert legacy_table.snapshot().tombstones == {}


def test_upgrade_leaves_the_parquet_files_untouched(legacy_table):
    table = Path(legacy_table.table_path)
    data = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in table.glob("*.parquet")}
    upgrade_format(legacy_table.table_path)
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in table.glob("*.parquet")} == data


def test_upgrade_is_idempotent(legacy_table):
    first = upgrade_format(legacy_table.table_path)
    second = upgrade_format(legacy_table.table_path)
    assert first.needed and not second.needed
    assert second.version is None and second.read_version == first.version
    assert DeltaLog.for_path(legacy_table.table_path).latest_version() == first.version
    assert "nothing to upgrade" in str(second)


def test_dry_run_reports_changes_and_writes_nothing(legacy_table):
    log_dir = Path(legacy_table.table_path) / "_delta_log"
    listing = sorted(os.listdir(log_dir))
    dry = upgrade_format(legacy_table.table_path, dry_run=True)
    assert sorted(os.listdir(log_dir)) == listing
    assert dry.dry_run and dry.version is None
    assert {c.path: c.new_tags for c in dry.changes} == {
        p: expected_tags(a.tags) for p, a in legacy_table.snapshot().files.items()
    }
    assert "would upgrade" in str(dry) and "qbeast.replicatedSet.1" in str(dry)
    real = upgrade_format(legacy_table.table_path)
    assert real.to_dict()["changes"] == dry.to_dict()["changes"]


def test_upgrade_keeps_current_and_staging_files(make_table):
    current = {"revision": "1", "blocks": '[{"cubeId":"","minWeight":-5,"maxWeight":2147483647,'
                                          '"elementCount":10}]'}
    log = make_table(
        [(range(0, 10), current), (range(10, 20), None), (range(20, 30), legacy("", "FLOODED", 10, 1, 7))],
        {"qbeast.lastRevisionID": "1", "qbeast.revision.1": REVISION_1},
    )
    result = upgrade_format(log.table_path)
    assert result.file_count == 1 and result.removed_properties == ()
    lines = commit_lines(log, 1)
    assert [line["add"]["tags"] for line in lines if "add" in line] == [
        expected_tags(legacy("", "FLOODED", 10, 1, 7))]
    assert not any("metaData" in line for line in lines)


def test_blocks_keyed_cube_are_rekeyed(make_table):
    old = {"revision": "1", "blocks": '[{"cube":"","minWeight":-5,"maxWeight":2147483647,'
                                      '"elementCount":10}]'}
    log = make_table([(range(0, 10), old)], {"qbeast.lastRevisionID": "1", "qbeast.revision.1": REVISION_1})
    upgrade_format(log.table_path)
    (add,) = log.snapshot().files.values()
    assert json.loads(add.tags["blocks"]) == [
        {"cubeId": "", "minWeight": -5, "maxWeight": 2147483647, "elementCount": 10, "replicated": False}]


def test_upgrade_errors(make_table, tmp_path):
    plain = make_table([(range(0, 5), None)], {}, name="plain")
    with pytest.raises(NotAQbeastTableError, match="no Qbeast metadata"):
        upgrade_format(plain.table_path)
    broken = make_table([(range(0, 5), legacy("", "MELTED", 5, 0, 1))],
                        {"qbeast.lastRevisionID": "1", "qbeast.revision.1": REVISION_1}, name="broken")
    with pytest.raises(FormatError, match="MELTED"):
        upgrade_format(broken.table_path)
    with pytest.raises(InvalidOptionError, match="dry_run must be true or false"):
        upgrade_format(broken.table_path, dry_run="false")
    with pytest.raises(InvalidOptionError, match="path"):
        upgrade_format("")


def test_delta_readers_see_the_same_rows_after_upgrade(legacy_table, duckdb_delta):
    deltalake = pytest.importorskip("deltalake", reason="delta-rs is the interop peer")

    def rows_deltalake() -> list[int]:
        return sorted(deltalake.DeltaTable(legacy_table.table_path).to_pyarrow_table()["id"].to_pylist())

    def rows_duckdb() -> list[int]:
        query = f"SELECT id FROM delta_scan('{legacy_table.table_path}') ORDER BY id"
        return [r[0] for r in duckdb_delta.execute(query).fetchall()]

    assert rows_deltalake() == rows_duckdb() == list(range(100))
    upgrade_format(legacy_table.table_path)
    assert deltalake.DeltaTable(legacy_table.table_path).version() == 1
    assert rows_deltalake() == rows_duckdb() == list(range(100))


# -- real pre-0.6 logs written by qbeast-spark ---------------------------------------------------


@pytest.mark.parametrize(
    "name", ["pre06-logs-test-table", "pre06-logs-with-remove", "pre06-logs-with-checkpoint"]
)
def test_fixture_logs_upgrade_exactly_as_the_rule_says(copy_fixture_log, name):
    table = copy_fixture_log(name)
    before = DeltaLog.for_path(str(table)).snapshot()
    old = {p: dict(a.tags) for p, a in before.files.items()}
    assert old and all("state" in t for t in old.values())

    result = upgrade_format(str(table))

    assert result.version == before.version + 1
    after = QbeastSnapshot.load(str(table))
    assert {p: a.tags for p, a in after.delta.files.items()} == {
        p: expected_tags(t) for p, t in old.items()}
    assert {after.decoded(a).format for a in after.files()} == {TagFormat.REPLICATED_FLAG}
    assert after.configuration == before.configuration  # these logs hold no replicated sets
    status = after.index_status(1)
    assert sum(c.element_count for c in status) == sum(int(t["elementCount"]) for t in old.values())
    assert not upgrade_format(str(table)).needed


def test_current_fixture_needs_no_upgrade(copy_fixture_log):
    table = copy_fixture_log("v07-ecommerce-300k")
    result = upgrade_format(str(table), dry_run=True)
    assert not result.needed and result.changes == ()


def test_a_file_removed_meanwhile_is_not_resurrected(legacy_table, monkeypatch):
    from qbeast.delta.errors import ConcurrentDeleteReadError
    from qbeast.operations import upgrade as upgrade_module

    victim = sorted(legacy_table.snapshot().files)[0]
    real = upgrade_module.upgraded_tags
    calls = []

    def tags_while_another_writer_deletes(tags):
        if not calls:  # after the upgrade read its snapshot, another writer removes a file
            log = DeltaLog.for_path(legacy_table.table_path)
            log.start_transaction().add_actions(log.snapshot().files[victim].remove()).commit("DELETE")
        calls.append(tags)
        return real(tags)

    monkeypatch.setattr(upgrade_module, "upgraded_tags", tags_while_another_writer_deletes)
    with pytest.raises(ConcurrentDeleteReadError, match=victim):
        upgrade_format(legacy_table.table_path)
    assert victim not in legacy_table.snapshot().files and legacy_table.latest_version() == 1
