"""Re-planning a commit that lost a race (qbeast.rebase), on real logs and without Spark.

The races are made deterministic: the transaction builder handed to ``commit_with_retries`` lets
a competitor commit first, exactly as another process would between a write's planning and its
commit. What is checked is what lands in the log (tags, revision ids, configuration) and on disk
(the new files are deleted whenever nothing was committed).
"""
from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from qbeast.core.blocks import Block, encode_tags
from qbeast.core.revision import Revision, revision_key, updated_configuration
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.delta.actions import AddFile, Metadata
from qbeast.delta.errors import ConcurrentDeleteReadError, MetadataChangedError
from qbeast.delta.log import DeltaLog
from qbeast.delta.transaction import Transaction
from qbeast.rebase import PlannedCommit, WriteConflictError, commit_with_retries, metadata_for
from qbeast.snapshot import QbeastSnapshot

SCHEMA = {"type": "struct", "fields": [
    {"name": "x", "type": "integer", "nullable": True, "metadata": {}},
]}


def _revision(revision_id: int, low: int, high: int) -> Revision:
    return Revision.from_json_obj({
        "revisionID": revision_id, "timestamp": 1700000000000 + revision_id, "tableID": "t",
        "desiredCubeSize": 100,
        "columnTransformers": [{"className": "io.qbeast.core.transform.LinearTransformer",
                                "columnName": "x", "dataType": "IntegerDataType"}],
        "transformations": [{"className": "io.qbeast.core.transform.LinearTransformation",
                             "minNumber": low, "maxNumber": high, "nullValue": low,
                             "orderedDataType": "IntegerDataType"}],
    })


def _data_file(table: Path, name: str, revision_id: int) -> AddFile:
    (table / name).write_bytes(b"not read by these tests")
    tags = encode_tags(revision_id, [Block("", MIN_WEIGHT, MAX_WEIGHT, 10)])
    return AddFile(name, {}, 23, 0, True, json.dumps({"numRecords": 10}), tags)


def _commit_revision(table: Path, revision: Revision, name: str) -> None:
    """Another writer's whole commit: ``name`` indexed into ``revision``, opened if it is new."""
    log = DeltaLog.for_path(str(table))
    txn = log.start_transaction()
    snapshot = QbeastSnapshot.load_if_exists(str(table))
    config = dict(snapshot.configuration) if snapshot is not None else {}
    if revision_key(revision.revision_id) not in config:
        config = updated_configuration(config, revision)
        if snapshot is None:
            txn.update_metadata(Metadata.create(json.dumps(SCHEMA), [], config))
        else:
            txn.update_metadata(dataclasses.replace(snapshot.delta.metadata, configuration=config))
    txn.add_actions(_data_file(table, name, revision.revision_id))
    txn.commit("WRITE")


def _builder(competitors: list[Callable[[], None]]):
    """A transaction builder that first lets the next competitor (if any) commit."""
    def build(plan: PlannedCommit, snapshot: QbeastSnapshot | None) -> Transaction:
        if competitors:
            competitors.pop(0)()
        assert snapshot is not None
        txn = snapshot.delta.log.start_transaction(snapshot.delta)
        metadata = metadata_for(plan, snapshot, lambda s, c: Metadata.create(s, [], c))
        if metadata is not None:
            txn.update_metadata(metadata)
        txn.mark_files_read(f.path for f in plan.removes)
        txn.add_actions([f.remove() for f in plan.removes])
        return txn
    return build


@pytest.fixture()
def table(tmp_path: Path) -> Path:
    _commit_revision(tmp_path, _revision(1, 0, 10), "first.parquet")  # version 0, revision 1
    return tmp_path


def _plan(table: Path, revision: Revision, opens: bool, name: str = "mine.parquet") -> PlannedCommit:
    return PlannedCommit(revision, opens, [_data_file(table, name, revision.revision_id)],
                         data_schema=SCHEMA, read_version=0)


def test_a_revision_opened_under_our_id_makes_us_retag_to_the_next_id(table: Path, caplog) -> None:
    ours = _revision(2, 0, 100)
    planned = _plan(table, ours, opens=True)
    snapshot = QbeastSnapshot.load(str(table))
    theirs = _revision(2, -50, 10)  # another writer opened "revision 2" with other bounds
    with caplog.at_level(logging.INFO, logger="qbeast.rebase"):
        version, committed = commit_with_retries(
            str(table), planned, snapshot,
            _builder([lambda: _commit_revision(table, theirs, "theirs.parquet")]),
            what="write", operation="WRITE", parameters={"mode": "Append"})
    assert version == 2 and committed.revision is not None and committed.revision.revision_id == 3
    assert "retry 1 of" in caplog.text and "re-tagging 1 file(s)" in caplog.text
    snap = QbeastSnapshot.load(str(table))
    assert snap.latest_revision_id == 3 and sorted(snap.revisions) == [0, 1, 2, 3]
    assert snap.revision_of(snap.delta.files["mine.parquet"]) == 3
    assert snap.revision_of(snap.delta.files["theirs.parquet"]) == 2
    # each revision keeps its own space: the re-tagged one is ours, the winner's is theirs
    assert snap.revisions[3].to_json_obj()["transformations"] == ours.to_json_obj()["transformations"]
    assert snap.revisions[2].to_json_obj()["transformations"] == theirs.to_json_obj()["transformations"]


def test_files_of_an_existing_revision_commit_unchanged_after_a_new_revision(table: Path) -> None:
    planned = _plan(table, _revision(1, 0, 10), opens=False)
    version, committed = commit_with_retries(
        str(table), planned, QbeastSnapshot.load(str(table)),
        _builder([lambda: _commit_revision(table, _revision(2, 0, 99), "theirs.parquet")]),
        what="write", operation="WRITE", parameters={})
    assert version == 2 and committed.adds == planned.adds
    snap = QbeastSnapshot.load(str(table))
    assert snap.latest_revision_id == 2 and snap.revision_of(snap.delta.files["mine.parquet"]) == 1


def test_gives_up_after_the_bounded_retries_and_deletes_the_new_files(table: Path) -> None:
    planned = _plan(table, _revision(2, 0, 100), opens=True)
    competitors = [lambda i=i: _commit_revision(table, _revision(2 + i, 0, 50 + i), f"t{i}.parquet")
                   for i in range(3)]
    with pytest.raises(MetadataChangedError, match="lost the commit race 3 times.*gave up after 2"):
        commit_with_retries(str(table), planned, QbeastSnapshot.load(str(table)),
                            _builder(competitors), what="write", operation="WRITE",
                            parameters={}, max_retries=2)
    assert not (table / "mine.parquet").exists()
    assert QbeastSnapshot.load(str(table)).version == 3  # only the competitors' commits


def test_no_retry_reraises_the_race_as_it_is(table: Path) -> None:
    planned = _plan(table, _revision(2, 0, 100), opens=True)
    with pytest.raises(MetadataChangedError) as raised:
        commit_with_retries(str(table), planned, QbeastSnapshot.load(str(table)),
                            _builder([lambda: _commit_revision(table, _revision(2, 0, 7), "t.parquet")]),
                            what="write", operation="WRITE", parameters={}, max_retries=0)
    assert "gave up" not in str(raised.value)
    assert not (table / "mine.parquet").exists()


def test_rewritten_files_removed_meanwhile_are_a_true_conflict(table: Path) -> None:
    snapshot = QbeastSnapshot.load(str(table))
    first = snapshot.delta.files["first.parquet"]
    planned = dataclasses.replace(_plan(table, _revision(1, 0, 10), opens=False), removes=[first])

    def remove_it_and_open_a_revision() -> None:
        log = DeltaLog.for_path(str(table))
        current = QbeastSnapshot.load(str(table))
        txn = log.start_transaction()
        txn.update_metadata(dataclasses.replace(
            current.delta.metadata,
            configuration=updated_configuration(current.configuration, _revision(2, 0, 5))))
        txn.add_actions(first.remove())
        txn.commit("OPTIMIZE")

    with pytest.raises(ConcurrentDeleteReadError, match="first.parquet .* was removed by another"):
        commit_with_retries(str(table), planned, snapshot, _builder([remove_it_and_open_a_revision]),
                            what="optimize", operation="OPTIMIZE", parameters={})
    assert not (table / "mine.parquet").exists()


def test_a_revision_replaced_under_files_indexed_into_it_is_a_true_conflict(table: Path) -> None:
    planned = _plan(table, _revision(1, 0, 10), opens=False)

    def overwrite_with_other_revision_one() -> None:
        log = DeltaLog.for_path(str(table))
        current = QbeastSnapshot.load(str(table))
        txn = log.start_transaction()
        txn.mark_table_read()
        txn.add_actions(*[f.remove() for f in current.delta.files.values()])
        txn.update_metadata(dataclasses.replace(
            current.delta.metadata,
            configuration=updated_configuration({}, _revision(1, 100, 200))))
        txn.commit("WRITE")

    with pytest.raises(WriteConflictError, match="revision 1 .* was replaced"):
        commit_with_retries(str(table), planned, QbeastSnapshot.load(str(table)),
                            _builder([overwrite_with_other_revision_one]),
                            what="write", operation="WRITE", parameters={})
    assert not (table / "mine.parquet").exists()


def test_metadata_for_an_operation_that_never_creates_a_table(table: Path) -> None:
    """Optimize and row-level changes give no new-table factory: an unchanged plan needs no
    metadata, a plan opening a revision updates the table's, and a missing table is refused."""
    snapshot = QbeastSnapshot.load(str(table))
    unchanged = PlannedCommit(revision=None, opens_revision=False, adds=[], schema_string=None,
                              data_schema=SCHEMA, read_version=snapshot.version)
    assert metadata_for(unchanged, snapshot) is None
    opening = dataclasses.replace(unchanged, revision=_revision(2, 0, 20), opens_revision=True)
    updated = metadata_for(opening, snapshot)
    assert updated is not None and updated.id == snapshot.delta.metadata.id
    assert "qbeast.revision.2" in updated.configuration
    with pytest.raises(AssertionError, match="never creates one"):
        metadata_for(dataclasses.replace(opening, schema_string=json.dumps(SCHEMA)), None)
