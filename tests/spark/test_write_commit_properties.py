"""One qbeast.CommitProperties for how every write commits: user metadata, an idempotent
transaction, retries after a lost race, cancellation; the loose keyword arguments of
qbeast.write are shorthands folded into it."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import qbeast
from qbeast import CommitProperties
from qbeast.delta.actions import AddFile
from qbeast.delta.errors import MetadataChangedError
from qbeast.errors import InvalidOptionError, WriteCancelled
from qbeast.operations.maintenance import table_history
from qbeast.operations.optimize import optimize_table
from qbeast.snapshot import QbeastSnapshot

pytestmark = pytest.mark.spark


def _df(spark, n=400, offset=0):
    return spark.range(offset, offset + n).selectExpr("id", "cast(id % 37 as double) as x")


def test_user_metadata_and_idempotent_transaction_from_the_object(spark, tmp_path):
    path = str(tmp_path / "t")
    props = CommitProperties(user_metadata="run=1", app_id="etl", app_version=5)
    first = qbeast.write(_df(spark), path, "id,x", cube_size=100, commit_properties=props)
    assert not first.skipped
    assert table_history(path)[0].user_metadata == "run=1"
    assert QbeastSnapshot.load(path).delta.txn_version("etl") == 5
    again = qbeast.write(_df(spark), path, commit_properties=CommitProperties(app_id="etl",
                                                                               app_version=5))
    assert again.skipped and again.version == first.version
    # the shorthands mean the same, and may complete the object where it is silent
    newer = qbeast.write(_df(spark, offset=400), path, commit_properties=CommitProperties(
        user_metadata="run=2"), txn_app_id="etl", txn_version=6)
    assert not newer.skipped and table_history(path)[0].user_metadata == "run=2"
    assert QbeastSnapshot.load(path).delta.txn_version("etl") == 6


def test_shorthand_errors_name_the_shorthand(spark, tmp_path):
    path = str(tmp_path / "t")
    with pytest.raises(InvalidOptionError, match="txn_app_id and txn_version must be given together"):
        qbeast.write(_df(spark), path, "id", txn_version=1)
    with pytest.raises(InvalidOptionError, match="txn_version must be an integer >= 0") as raised:
        qbeast.write(_df(spark), path, "id", txn_app_id="a", txn_version=-1)
    assert raised.value.option == "txn_version"
    with pytest.raises(InvalidOptionError, match="app_id and app_version must be given together"):
        CommitProperties(app_version=1)
    with pytest.raises(InvalidOptionError, match="given both as keyword arguments and in commit_properties"):
        qbeast.write(_df(spark), path, "id", commit_properties=CommitProperties(user_metadata="a"),
                     user_metadata="b")
    with pytest.raises(InvalidOptionError, match="commit_properties must be a qbeast.CommitProperties"):
        qbeast.write(_df(spark), path, "id", commit_properties={"user_metadata": "a"})


def test_cancelled_from_the_object(spark, tmp_path):
    path = str(tmp_path / "t")
    with pytest.raises(WriteCancelled, match="cancelled before writing files"):
        qbeast.write(_df(spark), path, "id", commit_properties=CommitProperties(cancelled=lambda: True))
    assert not QbeastSnapshot.load_if_exists(path)


def test_max_retries_zero_fails_a_raced_append_instead_of_replanning(spark, tmp_path):
    from qbeast.rebase import PlannedCommit
    from qbeast.spark.write.table_state import TableState
    from qbeast.spark.write.writer import _commit

    path = str(tmp_path / "t")
    qbeast.write(_df(spark), path, "id,x", cube_size=100)
    stale = TableState.load(path)
    # a concurrent append outside the indexed space opens revision 2: a metadata change
    assert qbeast.write(_df(spark, offset=100_000), path).revision_id == 2

    def planned() -> PlannedCommit:
        orphan = Path(path, f"orphan-{len(list(Path(path).glob('orphan-*')))}.parquet")
        pq.write_table(pa.table({"id": [1], "x": [1.0]}), orphan)
        add = AddFile(orphan.name, {}, orphan.stat().st_size, 0, True, None,
                      {"revision": str(stale.latest_revision_id)})
        return PlannedCommit(stale.latest_revision, False, [add], data_schema=stale.schema,
                             read_version=stale.snapshot.version)

    with pytest.raises(MetadataChangedError):
        _commit(stale, planned(), mode="append", properties=CommitProperties(max_retries=0))
    assert QbeastSnapshot.load(path).version == 1
    assert not Path(path, "orphan-0.parquet").exists()  # the new file is deleted
    # with retries the same plan is re-planned on the new version and commits
    version, _ = _commit(stale, planned(), mode="append", properties=CommitProperties())
    assert version == 2


def test_optimize_commits_with_properties(spark, tmp_path):
    path = str(tmp_path / "t")
    for offset in range(0, 1200, 400):
        qbeast.write(_df(spark, offset=offset), path, "id,x", cube_size=100)
    props = CommitProperties(user_metadata="nightly", app_id="maint", app_version=1)
    result = optimize_table(spark, path, commit_properties=props)
    assert result.commits
    entry = table_history(path)[0]
    assert entry.operation == "OPTIMIZE" and entry.user_metadata == "nightly"
    assert QbeastSnapshot.load(path).delta.txn_version("maint") == 1
    # the same application version again: already done, nothing rewritten
    again = optimize_table(spark, path, commit_properties=props)
    assert again.commits == () and QbeastSnapshot.load(path).version == result.versions[-1]
    with pytest.raises(WriteCancelled):
        optimize_table(spark, path, merge_revisions=True,
                       commit_properties=CommitProperties(cancelled=lambda: True))
    assert json.loads(json.dumps(result.to_dict()))["commits"]
