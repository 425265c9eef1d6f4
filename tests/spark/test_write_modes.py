"""``qbeast.write`` modes, revisions, idempotency, schema checks and argument errors."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import qbeast
from qbeast.core.revision import LAST_REVISION_KEY, revision_key, staging_revision
from qbeast.delta.actions import AddFile, Metadata
from qbeast.delta.log import DeltaLog
from qbeast.errors import InvalidOptionError, QbeastError, UnsupportedTypeError
from qbeast.snapshot import QbeastSnapshot

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import active_paths, check_index  # noqa: E402

pytestmark = pytest.mark.spark


def _df(spark, n=3000, offset=0, scale=1.0):
    return spark.range(offset, offset + n).selectExpr(
        "id", f"rand(7) * {scale} as x", "cast(id % 97 as int) as y", "concat('s', id) as s"
    )


def _rows(spark, path):
    return sorted(tuple(r) for r in spark.read.parquet(*active_paths(path)).collect())


def _commit(path, version):
    text = Path(path, "_delta_log", f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_new_table_has_staging_revision_zero_and_revision_one(spark, tmp_path):
    path = str(tmp_path / "t")
    result = qbeast.write(_df(spark), path, ["x", "y:hashing"], cube_size=500)
    snapshot = QbeastSnapshot.load(path)
    assert (result.version, result.revision_id, result.rows) == (0, 1, 3000)
    assert snapshot.configuration[LAST_REVISION_KEY] == "1"
    assert snapshot.revisions[0].is_staging
    assert snapshot.revisions[0].timestamp == snapshot.revisions[1].timestamp - 1
    assert [t.type_name for t in snapshot.revisions[1].column_transformers] == ["linear", "hashing"]
    actions = _commit(path, 0)
    assert actions[0]["commitInfo"]["operation"] == "WRITE"
    assert actions[0]["commitInfo"]["operationParameters"]["mode"] == "Append"
    adds = [a["add"] for a in actions if "add" in a]
    assert all(a["path"].endswith(".parquet") and "/" not in a["path"] for a in adds)
    assert all(a["tags"]["revision"] == "1" for a in adds)
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 3000
    assert _rows(spark, path) == sorted(tuple(r) for r in _df(spark).collect())


def test_same_revision_append_commits_no_metadata(spark, tmp_path):
    path = str(tmp_path / "t")
    stats = {"x_min": 0.0, "x_max": 10.0, "y_min": 0, "y_max": 100}
    qbeast.write(_df(spark, scale=10.0), path, "x,y", cube_size=400, column_stats=stats)
    result = qbeast.write(_df(spark, 2000, offset=3000, scale=10.0), path)
    assert result.revision_id == 1 and result.version == 1
    assert not any("metaData" in a for a in _commit(path, 1))
    assert check_index(spark, path) == {1: 5000}


def test_an_append_of_no_rows_commits_nothing_unless_it_changes_something(spark, tmp_path):
    """A daily incremental run with no new rows must not add an empty version to the log; an
    empty append that adds a column, or records an application transaction, still commits."""
    path = str(tmp_path / "t")
    qbeast.write(_df(spark, 800), path, "x,y", cube_size=400)
    log = DeltaLog.for_path(path)
    nothing = qbeast.write(_df(spark).where("id < 0"), path)
    assert nothing.version is None and nothing.files == () and nothing.rows == 0
    assert nothing.revision_id == 1
    assert log.snapshot().version == 0 and not Path(path, "_delta_log", f"{1:020d}.json").exists()

    widened = _df(spark).where("id < 0").selectExpr("*", "1 as extra")
    added = qbeast.write(widened, path, merge_schema=True)
    assert added.version == 1
    assert "extra" in [f["name"] for f in QbeastSnapshot.load(path).delta.schema["fields"]]
    recorded = qbeast.write(widened, path, txn_app_id="daily", txn_version=7)
    assert recorded.version == 2 and QbeastSnapshot.load(path).delta.txn_version("daily") == 7
    assert len(_rows(spark, path)) == 800

def test_cube_size_or_transformer_change_opens_a_revision(spark, tmp_path):
    path = str(tmp_path / "t")
    qbeast.write(_df(spark), path, "x,y", cube_size=500)
    assert qbeast.write(_df(spark, 500), path, "x,y", cube_size=300).revision_id == 2
    assert qbeast.write(_df(spark, 500), path, "x,y:hashing").revision_id == 3
    snapshot = QbeastSnapshot.load(path)
    assert snapshot.revisions[3].desired_cube_size == 300
    assert sorted(snapshot.revisions) == [0, 1, 2, 3]
    with pytest.raises(InvalidOptionError, match="overwrite"):
        qbeast.write(_df(spark, 10), path, "y,x")


def test_overwrite_removes_files_and_restarts_revision_ids(spark, tmp_path):
    path = str(tmp_path / "t")
    qbeast.write(_df(spark), path, "x,y", cube_size=500)
    qbeast.write(_df(spark, 100), path, "x,y", cube_size=200)
    old_files = set(QbeastSnapshot.load(path).delta.files)
    result = qbeast.write(_df(spark, 1500, offset=10), path, "y,s", cube_size=700, mode="overwrite")
    snapshot = QbeastSnapshot.load(path)
    assert result.revision_id == 1 and sorted(snapshot.revisions) == [0, 1]
    assert snapshot.latest_revision.columns == ["y", "s"]
    assert not old_files & set(snapshot.delta.files)
    removes = [a["remove"] for a in _commit(path, result.version) if "remove" in a]
    assert {r["path"] for r in removes} == old_files and all(r["dataChange"] for r in removes)
    assert len(_rows(spark, path)) == 1500


def test_empty_dataframe_creates_revision_zero_then_append_revision_one(spark, tmp_path):
    path = str(tmp_path / "t")
    empty = _df(spark).where("id < 0")
    result = qbeast.write(empty, path, "x,y", cube_size=100)
    snapshot = QbeastSnapshot.load(path)
    assert result.files == () and result.revision_id == 0
    assert snapshot.configuration[LAST_REVISION_KEY] == "0"
    assert snapshot.revisions[0].transformations == () and not snapshot.revisions[0].is_staging
    nothing = qbeast.write(empty, path)
    assert nothing.files == () and nothing.revision_id == 0
    result = qbeast.write(_df(spark, 1000), path)
    assert result.revision_id == 1
    assert check_index(spark, path) == {1: 1000}


def test_append_to_converted_table_indexes_into_revision_one(spark, tmp_path):
    path = str(tmp_path / "t")
    os.makedirs(path)
    _df(spark, 400).write.parquet(str(tmp_path / "plain"))
    # a converted table: plain files without tags plus the staging revision 0 (FORMAT §9)
    log = DeltaLog.for_path(path)
    txn = log.start_transaction(None)
    schema = _df(spark).schema.json()
    staging = staging_revision(path, ["x", "y"], 800, 1)
    txn.update_metadata(Metadata.create(schema, [], {
        LAST_REVISION_KEY: "0", revision_key(0): staging.to_json()}))
    for name in os.listdir(tmp_path / "plain"):
        if name.endswith(".parquet"):
            os.rename(tmp_path / "plain" / name, Path(path) / name)
            size = (Path(path) / name).stat().st_size
            txn.add_actions(AddFile(name, {}, size, 0))
    txn.commit("CONVERT")
    result = qbeast.write(_df(spark, 2000, offset=400), path, "x,y")
    snapshot = QbeastSnapshot.load(path)
    assert result.revision_id == 1
    assert snapshot.revisions[0] == staging  # kept as it was
    assert len(snapshot.staging_files()) >= 1
    assert len(_rows(spark, path)) == 2400
    assert check_index(spark, path) == {1: 2000}


def test_plain_delta_table_needs_conversion_or_overwrite(spark, tmp_path):
    path = str(tmp_path / "t")
    log = DeltaLog.for_path(path)
    os.makedirs(path)
    log.start_transaction(None).update_metadata(Metadata.create(_df(spark).schema.json())).commit("CREATE")
    with pytest.raises(InvalidOptionError, match="convert_to_qbeast"):
        qbeast.write(_df(spark, 10), path, "x")
    assert qbeast.write(_df(spark, 10), path, "x", mode="overwrite").revision_id == 1


def test_idempotent_writes_with_txn(spark, tmp_path):
    path = str(tmp_path / "t")
    first = qbeast.write(_df(spark, 500), path, "x", cube_size=100, txn_app_id="app", txn_version=3)
    again = qbeast.write(_df(spark, 500), path, "x", txn_app_id="app", txn_version=3)
    older = qbeast.write(_df(spark, 500), path, "x", txn_app_id="app", txn_version=2)
    assert again.skipped and older.skipped and again.version == first.version == 0
    newer = qbeast.write(_df(spark, 500, offset=500), path, "x", txn_app_id="app", txn_version=4)
    assert not newer.skipped and newer.version == 1
    assert QbeastSnapshot.load(path).delta.txn_version("app") == 4
    assert len(_rows(spark, path)) == 1000


def test_schema_checks_on_append(spark, tmp_path):
    path = str(tmp_path / "t")
    qbeast.write(_df(spark, 300), path, "x", cube_size=100)
    wider = _df(spark, 100).selectExpr("*", "id * 2 as extra")
    with pytest.raises(InvalidOptionError, match="merge_schema"):
        qbeast.write(wider, path)
    retyped = _df(spark, 100).selectExpr("id", "x", "cast(y as string) as y", "s")
    with pytest.raises(InvalidOptionError, match="'y' has type string"):
        qbeast.write(retyped, path)
    merged = qbeast.write(wider, path, merge_schema=True)
    fields = [f["name"] for f in QbeastSnapshot.load(path).delta.schema["fields"]]
    assert fields == ["id", "x", "y", "s", "extra"]
    narrower = _df(spark, 50, offset=5000).select("s", "x")  # missing columns are written as nulls
    qbeast.write(narrower, path)
    rows = spark.read.schema(_df(spark).selectExpr("*", "id * 2 as extra").schema).parquet(
        *active_paths(path))
    assert rows.count() == 450 and rows.where("id is null").count() == 50
    assert merged.revision_id == 1


def test_bad_arguments_fail_before_writing(spark, tmp_path):
    path = str(tmp_path / "t")
    df = _df(spark, 10).selectExpr("*", "id % 2 = 0 as flag")
    cases = [
        (dict(columns_to_index="nope"), InvalidOptionError, "'nope' is not in the data"),
        (dict(columns_to_index="flag"), UnsupportedTypeError, "flag"),
        (dict(columns_to_index="x:quantile"), InvalidOptionError, "valid types"),
        (dict(columns_to_index="x", mode="upsert"), InvalidOptionError, "append"),
        (dict(columns_to_index="x", cube_size=0), InvalidOptionError, "cube_size"),
        (dict(columns_to_index="x", txn_app_id="a"), InvalidOptionError, "txn_version"),
        (dict(columns_to_index="x", colour="red"), InvalidOptionError, "allowed options"),
        (dict(columns_to_index="x", estimation_sample_rows=-1), InvalidOptionError,
         "estimation_sample_rows must be an integer >= 0"),
        (dict(columns_to_index="x", estimation_sample_rows=True), InvalidOptionError,
         "estimation_sample_rows"),
        (dict(), InvalidOptionError, "columns_to_index is required"),
        (dict(columns_to_index="x", column_stats={"z_min": 1}), InvalidOptionError, "z_min"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            qbeast.write(df, path, **kwargs)
        assert not os.path.exists(os.path.join(path, "_delta_log"))
    with pytest.raises(InvalidOptionError, match="_qbeast_weight"):
        qbeast.write(df.selectExpr("*", "1 as _qbeast_weight"), path, "x")
    with pytest.raises(UnsupportedTypeError, match="timestamp_ntz"):
        qbeast.write(df.selectExpr("*", "localtimestamp() as t"), path, "x")
    assert issubclass(UnsupportedTypeError, QbeastError)


def test_failed_write_leaves_the_previous_version_intact(spark, tmp_path):
    path = str(tmp_path / "t")
    qbeast.write(_df(spark, 800), path, "x", cube_size=100)
    before = QbeastSnapshot.load(path)
    # the bad value sits in a column the stats and estimation passes never read: the failure
    # happens while the files are written
    bad = _df(spark, 800, offset=800).selectExpr(
        "id", "x", "y", "case when id = 1500 then raise_error('boom') else s end as s")
    with pytest.raises(Exception, match="boom"):
        qbeast.write(bad, path)
    after = QbeastSnapshot.load(path)
    assert after.version == before.version
    assert len(_rows(spark, path)) == 800


def test_input_smaller_than_a_cube_is_one_root_leaf(spark, tmp_path):
    path = str(tmp_path / "t")
    result = qbeast.write(_df(spark, 700), path, "x,y", cube_size=1000)
    assert (result.file_count, result.blocks, result.rows) == (1, 1, 700)
    snapshot = QbeastSnapshot.load(path)
    (block,) = snapshot.blocks(next(snapshot.files()))
    assert (block.cube, block.max_weight, block.element_count) == ("", 2**31 - 1, 700)
    assert check_index(spark, path) == {1: 700}


def test_single_value_then_more_values_and_odd_column_names(spark, tmp_path):
    path = str(tmp_path / "t")
    one = spark.range(0, 300).selectExpr("id", "5 as `odd name`", "cast(null as double) as `n``ull`")
    first = qbeast.write(one, path, ["odd name", "n`ull"], cube_size=100)
    revision = QbeastSnapshot.load(path).revisions[1]
    assert [type(t).__name__ for t in revision.transformations] == [
        "IdentityTransformation", "IdentityTransformation"]
    more = spark.range(300, 600).selectExpr(
        "id", "cast(id % 9 as int) as `odd name`",
        "case when id % 2 = 0 then cast(id * 0.5 as double) end as `n``ull`")
    second = qbeast.write(more, path)
    revision = QbeastSnapshot.load(path).revisions[2]
    assert (first.revision_id, second.revision_id) == (1, 2)
    assert [type(t).__name__ for t in revision.transformations] == [
        "LinearTransformation", "LinearTransformation"]
    assert check_index(spark, path) == {1: 300, 2: 300}


def test_conflicting_overwrite_deletes_the_new_files(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from qbeast.delta.errors import ConcurrentAppendError
    from qbeast.rebase import PlannedCommit
    from qbeast.spark.write.table_state import TableState
    from qbeast.commit import CommitProperties
    from qbeast.spark.write.writer import _commit

    path = str(tmp_path / "t")
    qbeast.write(_df(spark, 300), path, "x", cube_size=100)
    stale = TableState.load(path)
    qbeast.write(_df(spark, 300), path)  # a concurrent append: the overwrite did not see it
    orphan = Path(path, "orphan.parquet")
    pq.write_table(pa.table({"id": [1]}), orphan)
    add = AddFile("orphan.parquet", {}, orphan.stat().st_size, 0)
    plan = PlannedCommit(stale.latest_revision, False, [add],
                         schema_string=json.dumps(stale.schema), data_schema=stale.schema)
    with pytest.raises(ConcurrentAppendError):
        _commit(stale, plan, mode="overwrite", properties=CommitProperties())
    assert not orphan.exists()
    assert QbeastSnapshot.load(path).version == 1


def test_a_merge_that_adds_a_column_casts_the_shared_columns_to_the_tables_types(spark, tmp_path):
    """A row change with merge_schema whose data holds a table column in another type (a
    snapshot's timestamp into a date column, here a long into an int): the new column is
    committed first, then the change casts as it does without new columns; the rows exact."""
    from qbeast.operations.table_write import WriteRequest, write_rows

    path = str(tmp_path / "t")
    qbeast.write(_df(spark, 300), path, "x", cube_size=100)
    changed = _df(spark, 100, offset=250).selectExpr("id", "x", "cast(y as long) as y", "s",
                                                     "'new' as extra")
    summary = write_rows(spark, changed, path, WriteRequest(mode="merge", on=("id",), merge_schema=True))
    assert (summary.rows_updated, summary.rows_inserted) == (50, 50)
    schema = QbeastSnapshot.load(path).delta.schema["fields"]
    assert [(f["name"], f["type"]) for f in schema] == [
        ("id", "long"), ("x", "double"), ("y", "integer"), ("s", "string"), ("extra", "string")]
    rows = {r.id: (r.y, r.extra) for r in qbeast.QbeastTable.for_path(spark, path).to_df().collect()}
    assert rows == {i: (i % 97, "new" if i >= 250 else None) for i in range(350)}
