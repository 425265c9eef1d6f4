"""convert_to_qbeast: parquet folders and Delta tables become Qbeast tables by metadata only (§9)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import qbeast
from qbeast.core.blocks import TagFormat
from qbeast.core.revision import Revision
from qbeast.delta.log import DeltaLog
from qbeast.errors import InvalidOptionError, QbeastError, UnsupportedTypeError
from qbeast.delta.stats import footer_stats
from qbeast.operations.convert import PartitionedTableError, convert_to_qbeast
from qbeast.operations.optimize import optimize_table
from qbeast.snapshot import QbeastSnapshot

pytestmark = pytest.mark.spark


def parquet_folder(root: Path, parts: int = 3, rows: int = 1000) -> dict[str, bytes]:
    """A flat folder of ``parts`` parquet files (ids, a float, a string); returns their bytes."""
    root.mkdir(parents=True)
    for p in range(parts):
        ids = list(range(p * rows, (p + 1) * rows))
        table = pa.table({
            "id": pa.array(ids, pa.int64()),
            "price": pa.array([(i % 97) * 1.5 for i in ids], pa.float64()),
            "brand": pa.array([f"b{i % 13:02d}" if i % 11 else None for i in ids], pa.string()),
        })
        pq.write_table(table, root / f"part-{p:05d}.parquet", row_group_size=400)
    (root / "_SUCCESS").write_text("")
    return {f.name: f.read_bytes() for f in root.iterdir()}


def test_parquet_folder_becomes_a_qbeast_table_in_one_commit(spark, tmp_path):
    root = tmp_path / "pq"
    before = parquet_folder(root)
    result = convert_to_qbeast(spark, str(root), ["id", "price"], cube_size=500)

    assert result.converted and result.source_format == "parquet" and result.version == 0
    assert result.file_count == 3 and result.columns == ("id", "price")
    assert {f.name: f.read_bytes() for f in root.iterdir() if f.is_file()} == before
    log = DeltaLog.for_path(str(root))
    assert log.latest_version() == 0
    snapshot = QbeastSnapshot.load(str(root))
    assert snapshot.is_qbeast and snapshot.latest_revision_id == 0
    staging = snapshot.latest_revision
    assert staging.is_staging and staging.columns == ["id", "price"]
    assert staging.desired_cube_size == 500 and staging.table_id == str(root)
    assert sorted(a.path for a in snapshot.files()) == [f"part-{p:05d}.parquet" for p in range(3)]
    assert all(a.tags is None for a in snapshot.files())
    assert {snapshot.decoded(a).format for a in snapshot.files()} == {TagFormat.STAGING}
    assert snapshot.delta.partition_columns == []
    assert [f["name"] for f in snapshot.delta.schema["fields"]] == ["id", "price", "brand"]
    # Statistics come from the footers: exact counts, id/brand bounds, no float bounds.
    first = json.loads(snapshot.delta.files["part-00000.parquet"].stats)
    assert first["numRecords"] == 1000
    assert first["minValues"] == {"id": 0, "brand": "b00"}
    assert first["maxValues"] == {"id": 999, "brand": "b12"}
    assert first["nullCount"] == {"id": 0, "price": 0, "brand": len([i for i in range(1000) if i % 11 == 0])}
    assert qbeast.QbeastTable.for_path(spark, str(root)).to_df().count() == 3000
    deltalake = pytest.importorskip("deltalake", reason="delta-rs is the independent Delta reader")
    read_back = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    assert sorted(read_back.column("id").to_pylist()) == list(range(3000))


def test_footer_stats_match_the_data(tmp_path):
    rows = 2500
    table = pa.table({"k": pa.array([(i * 7919) % 10007 for i in range(rows)], pa.int32()),
                      "s": pa.array([None if i % 5 == 0 else f"v{i % 300:03d}" for i in range(rows)])})
    pq.write_table(table, tmp_path / "f.parquet", row_group_size=700)
    stats = json.loads(footer_stats(pq.read_metadata(tmp_path / "f.parquet")))
    ks = table.column("k").to_pylist()
    ss = [s for s in table.column("s").to_pylist() if s is not None]
    assert stats == {"numRecords": rows, "minValues": {"k": min(ks), "s": min(ss)},
                     "maxValues": {"k": max(ks), "s": max(ss)}, "nullCount": {"k": 0, "s": rows // 5}}


def test_delta_table_gets_one_metadata_commit(spark, tmp_path):
    deltalake = pytest.importorskip("deltalake", reason="delta-rs writes the source Delta table")
    path = str(tmp_path / "delta")
    data = pa.table({"a": pa.array(range(100), pa.int64()), "b": pa.array([float(i) for i in range(100)])})
    deltalake.write_deltalake(path, data, configuration={"delta.appendOnly": "false"})
    deltalake.write_deltalake(path, data, mode="append")
    before = DeltaLog.for_path(path).snapshot()

    result = convert_to_qbeast(spark, path, "a,b", cube_size=50, source_format="DELTA")

    assert result.converted and result.source_format == "delta" and result.version == before.version + 1
    lines = [json.loads(x) for x in DeltaLog.for_path(path).read_commit(result.version).splitlines()]
    assert sorted(next(iter(x)) for x in lines) == ["commitInfo", "metaData"]
    assert lines[0]["commitInfo"]["operation"] == "SET TBLPROPERTIES"
    after = QbeastSnapshot.load(path)
    assert after.delta.files.keys() == before.files.keys()
    assert after.configuration["delta.appendOnly"] == "false"
    assert after.configuration["qbeast.lastRevisionID"] == "0"
    assert Revision.from_json(after.configuration["qbeast.revision.0"]).is_staging
    assert after.delta.metadata.id == before.metadata.id
    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 200


def test_already_qbeast_is_a_no_op(spark, tmp_path):
    root = tmp_path / "pq"
    parquet_folder(root, parts=1)
    convert_to_qbeast(spark, str(root), ["id"])
    again = convert_to_qbeast(spark, str(root), ["price"], source_format="parquet")
    assert not again.converted and again.version is None and again.source_format == "qbeast"
    assert "already a Qbeast table" in str(again)
    assert DeltaLog.for_path(str(root)).latest_version() == 0


def test_partitioned_sources_are_refused(spark, tmp_path):
    root = tmp_path / "hive"
    (root / "country=ES").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2]}), root / "country=ES" / "p.parquet")
    with pytest.raises(PartitionedTableError, match="country=ES"):
        convert_to_qbeast(spark, str(root), ["id"])
    assert not (root / "_delta_log").exists()

    deltalake = pytest.importorskip("deltalake", reason="delta-rs writes the partitioned Delta table")
    path = str(tmp_path / "pdelta")
    deltalake.write_deltalake(path, pa.table({"id": [1, 2], "p": ["x", "y"]}), partition_by=["p"])
    with pytest.raises(PartitionedTableError, match=r"partitioned by \['p'\]"):
        convert_to_qbeast(spark, path, ["id"])
    assert DeltaLog.for_path(path).latest_version() == 0


def test_bad_arguments(spark, tmp_path):
    root = tmp_path / "pq"
    parquet_folder(root, parts=1)
    pq.write_table(pa.table({"flag": [True]}), tmp_path / "flag.parquet")
    cases = [
        (dict(columns_to_index=["nope"]), InvalidOptionError, r"\['nope'\] are not columns.*'id'"),
        (dict(columns_to_index="id:linear"), InvalidOptionError, "plain column names"),
        (dict(columns_to_index=[]), InvalidOptionError, "non-empty list"),
        (dict(columns_to_index=["id", "id"]), InvalidOptionError, "more than once"),
        (dict(columns_to_index=["id"], source_format="csv"), InvalidOptionError, "'parquet', 'delta'"),
        (dict(columns_to_index=["id"], source_format="delta"), QbeastError, "no Delta log"),
        (dict(columns_to_index=["id"], cube_size=0), InvalidOptionError, "cube_size"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            convert_to_qbeast(spark, str(root), **kwargs)
    assert not (root / "_delta_log").exists()
    other = tmp_path / "flags"
    other.mkdir()
    os.replace(tmp_path / "flag.parquet", other / "flag.parquet")
    with pytest.raises(UnsupportedTypeError):
        convert_to_qbeast(spark, str(other), ["flag"])
    with pytest.raises(InvalidOptionError, match="is not a folder"):
        convert_to_qbeast(spark, str(tmp_path / "missing"), ["id"])
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pq.write_table(pa.table({"v": pa.array([1], pa.int64())}), mixed / "a.parquet")
    pq.write_table(pa.table({"v": pa.array(["x"])}), mixed / "b.parquet")
    with pytest.raises(InvalidOptionError, match="cannot read the parquet files"):
        convert_to_qbeast(spark, str(mixed), ["v"])
    assert not (mixed / "_delta_log").exists()
    with pytest.raises(InvalidOptionError, match="holds no parquet files"):
        (tmp_path / "empty").mkdir()
        convert_to_qbeast(spark, str(tmp_path / "empty"), ["id"])


def test_appends_after_convert(spark, tmp_path):
    deltalake = pytest.importorskip("deltalake", reason="delta-rs makes the plain Delta append")
    root = tmp_path / "pq"
    parquet_folder(root, parts=2)
    convert_to_qbeast(spark, str(root), ["id", "price"], cube_size=500)
    more = spark.range(5000, 6000).selectExpr("id", "cast(id % 97 as double) * 1.5 as price",
                                              "cast(null as string) as brand")
    result = qbeast.write(more, str(root))
    assert result.revision_id == 1
    snapshot = QbeastSnapshot.load(str(root))
    assert sorted(snapshot.revisions) == [0, 1] and snapshot.revision(0).is_staging
    assert snapshot.revision(1).columns == ["id", "price"]
    assert len(snapshot.staging_files()) == 2
    deltalake.write_deltalake(str(root), pa.table({
        "id": pa.array([9000], pa.int64()), "price": [1.0], "brand": pa.array(["x"], pa.string())}),
        mode="append")
    snapshot = QbeastSnapshot.load(str(root))
    assert len(snapshot.staging_files()) == 3 and snapshot.latest_revision_id == 1
    assert qbeast.QbeastTable.for_path(spark, str(root)).to_df().count() == 3001


def test_index_columns_match_case_insensitively_as_for_write(spark, tmp_path):
    """convert_to_qbeast looks indexed columns up with qbeast.write's rule (case-insensitive,
    the table's spelling recorded); the converted, then indexed, table samples and filters."""
    root = tmp_path / "pq"
    root.mkdir()
    for p in range(2):
        ids = list(range(p * 500, (p + 1) * 500))
        pq.write_table(pa.table({"user_id": pa.array(ids, pa.int64()),
                                 "Price": pa.array([(i % 50) * 2.0 for i in ids], pa.float64())}),
                       root / f"part-{p:05d}.parquet")
    with pytest.raises(InvalidOptionError, match=r"\['nope'\] are not columns of .*"
                                                 r"available columns: \['user_id', 'Price'\]"):
        convert_to_qbeast(spark, str(root), ["USER_ID", "nope"])
    assert not (root / "_delta_log").exists()

    result = convert_to_qbeast(spark, str(root), ["USER_ID", "price"], cube_size=200)
    assert result.columns == ("user_id", "Price")
    assert QbeastSnapshot.load(str(root)).latest_revision.columns == ["user_id", "Price"]

    optimize_table(spark, str(root), revision_id=0)  # index the staging files: revision 1
    table = qbeast.QbeastTable.for_path(spark, str(root))
    assert table.snapshot().latest_revision.columns == ["user_id", "Price"]
    assert table.to_df().count() == 1000
    filtered = table.to_df(filter="user_id < 100 AND Price >= 50")
    expected = {i for i in range(100) if (i % 50) * 2.0 >= 50}
    assert {r.user_id for r in filtered.collect()} == expected
    sampled = table.sample(0.3).count()
    assert 0 < sampled < 1000


def test_convert_commits_with_properties(spark, tmp_path):
    """Both kinds of convert record the caller's user metadata and application transaction in
    their one commit; a cancelled callback stops them before it, leaving no Delta log behind."""
    from qbeast import CommitProperties
    from qbeast.errors import WriteCancelled
    from qbeast.operations.maintenance import table_history

    root = tmp_path / "pq"
    parquet_folder(root, parts=2)
    with pytest.raises(WriteCancelled):
        convert_to_qbeast(spark, str(root), ["id"], commit_properties=CommitProperties(cancelled=lambda: True))
    assert not DeltaLog.for_path(str(root)).table_exists()
    props = CommitProperties(user_metadata="onboarding", app_id="convert-job", app_version=1)
    result = convert_to_qbeast(spark, str(root), ["id"], commit_properties=props)
    assert result.converted and table_history(str(root))[0].user_metadata == "onboarding"
    assert QbeastSnapshot.load(str(root)).delta.txn_version("convert-job") == 1

    deltalake = pytest.importorskip("deltalake", reason="delta-rs writes the source Delta table")
    path = str(tmp_path / "delta")
    deltalake.write_deltalake(path, pa.table({"a": pa.array(range(50), pa.int64())}))
    done = convert_to_qbeast(spark, path, "a", commit_properties=CommitProperties(
        user_metadata="from-delta", app_id="convert-job", app_version=2))
    assert done.version == 1 and table_history(path)[0].user_metadata == "from-delta"
    assert QbeastSnapshot.load(path).delta.txn_version("convert-job") == 2
