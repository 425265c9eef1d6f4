"""Spark-written data files: block tally and flags against a scan of the files, footer stats, layout."""
from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest

import qbeast
from qbeast.core.cube_id import CubeId
from qbeast.core.weight import MAX_WEIGHT
from qbeast.snapshot import QbeastSnapshot
from qbeast.spark import settings
from qbeast.spark.file_access import FileAccess
from qbeast.spark.runtime import scoped_confs
from qbeast.index.assignment import build_write_plan
from qbeast.spark.write.assignment_udf import new_block_tally, new_flag_tally
from qbeast.spark.write.staging import partition_keys, write_plan_files

pytestmark = pytest.mark.spark


def _write_every_way(spark, tmp_path):
    """The same plan (three files) written with the tally + footers, with the tally + footers +
    non-finite flags from the UDF, and with the scan fallback; by two tasks (``partitionBy``) and,
    for the ``plain`` variants, by one task per file."""
    data = spark.range(0, 3000, numPartitions=3).selectExpr(
        "id", "cast(id % 97 as double) / 97 as x",
        "case when id % 11 = 0 then double('NaN') else id / 3.0 end as f",
        "case when id % 5 = 0 then null else repeat('s', cast(id % 40 as int)) end as s",
        "case when id % 97 < 20 and id % 13 = 0 then double('-inf') else cast(id as float) end as g",
    )
    from qbeast.core.revision import Revision
    from qbeast.core.transformations import LinearTransformation
    from qbeast.core.transformers import make_transformer
    from qbeast.core.types import QDataType

    root = CubeId.root(1)
    plan = build_write_plan(
        1, {root: -1_000_000_000, root.child(0): MAX_WEIGHT, root.child(1): MAX_WEIGHT},
        {root: 1000, root.child(0): 1000, root.child(1): 1000}, 1000)
    assert plan.file_count == 3
    revision = Revision(1, 0, "t", 1000, (make_transformer("x", "linear", QDataType.DOUBLE),),
                        (LinearTransformation.create(0.0, 1.0, QDataType.DOUBLE),))
    out = {}
    for name in ("tally", "flags", "scan", "plain flags", "plain scan"):
        folder = tmp_path / name.replace(" ", "-")
        folder.mkdir()
        tally = new_block_tally(spark) if "scan" not in name else None
        flags = new_flag_tally(spark) if "flags" in name else None
        tasks = 3 if "plain" in name else 2
        rows = write_plan_files(data, plan, str(folder), revision=revision, tasks=tasks,
                                tally=tally, flags=flags,
                                access=FileAccess.decide(spark, str(folder)))
        out[name] = (folder, rows)
        if flags is not None:
            assert set(flags.value.values()) == {2, 6}  # floats x, f, g: f everywhere, g in two files
    return out


def test_partition_keys_send_each_file_to_its_own_partition(spark):
    from pyspark.sql import functions as F

    for count in (1, 2, 7, 300):
        keys = partition_keys(count)
        rows = spark.createDataFrame([(k,) for k in keys], "k int").select(
            F.expr(f"pmod(hash(k), {count})").alias("p")).collect()
        assert [r["p"] for r in rows] == list(range(count))
        # and the shuffle itself: partition n holds exactly the key of file n
        placed = (spark.createDataFrame([(f, k) for f, k in enumerate(keys)], "f int, k int")
                  .repartition(count, "k").select("f", F.spark_partition_id().alias("p")).collect())
        assert sorted((r["f"], r["p"]) for r in placed) == [(f, f) for f in range(count)]


def test_files_sharing_a_task_are_described_by_a_scan(spark, tmp_path, monkeypatch, caplog):
    """Should Spark's hash partitioning ever differ from partition_keys, files end up sharing part
    files: the tally disagrees with the footers and the scan describes what was written."""
    from qbeast.spark.write import staging

    monkeypatch.setattr(staging, "partition_keys", lambda count: [0] * count)
    with caplog.at_level("INFO", logger="qbeast.spark.write.writer"):
        every = _write_every_way(spark, tmp_path)
    assert "describing the files by a scan" in caplog.text
    folder, rows = every["plain flags"]
    assert len(rows) == 1 and rows[0].num_records == 3000  # every row in the one task
    blocks = rows[0].blocks
    assert sum(b.element_count for b in blocks) == 3000 and len(blocks) == 3
    expected = {b.cube: b for _, r in [every["tally"]] for row in r for b in row.blocks}
    assert {b.cube: b for b in blocks} == expected  # same cubes, counts and min weights
    assert "g" not in json.loads(rows[0].stats)["minValues"]


def test_tally_flags_and_scan_describe_files_identically(spark, tmp_path, caplog):
    with caplog.at_level("INFO", logger="qbeast.spark.write.writer"):
        every = _write_every_way(spark, tmp_path)
    assert caplog.text.count("one_file_per_task=True") == 2  # the two plain variants
    assert caplog.text.count("one_file_per_task=False") == 3
    for name, (folder, rows) in every.items():
        assert sorted(os.listdir(folder)) == sorted(r.path for r in rows), name  # no staging left
        for row in rows:
            footer = pq.ParquetFile(folder / row.path).metadata
            assert footer.num_rows == row.num_records
    described = {
        name: sorted((r.file_id, r.num_records, json.loads(r.stats),
                      [[b.cube, b.min_weight, b.max_weight, b.element_count] for b in r.blocks])
                     for r in rows)
        for name, (_, rows) in every.items()
    }
    assert described["tally"] == described["scan"] == described["flags"]
    assert described["plain flags"] == described["plain scan"] == described["tally"]
    assert len(described["tally"]) == 3
    for _, _, stats, _ in described["tally"]:
        assert "f" not in stats["minValues"]  # NaN: no bounds
        assert "s" not in stats["maxValues"] and len(stats["minValues"]["s"]) <= 32
    assert sum(stats["nullCount"]["s"] for _, _, stats, _ in described["tally"]) == 600
    # -inf only in the rows of x < 0.2: the file of the upper child keeps its bounds of g
    bounded_g = [stats["minValues"].get("g") for _, _, stats, _ in described["tally"]]
    assert sum(b is None for b in bounded_g) == 2 and min(b for b in bounded_g if b) > 0
    total = sum(n for _, n, _, _ in described["tally"])
    assert total == 3000
    blocks = [b for _, _, _, bl in described["tally"] for b in bl]
    assert sum(b[3] for b in blocks) == 3000
    assert {b[2] for b in blocks} <= {-1_000_000_000, MAX_WEIGHT}


@pytest.mark.parametrize("first_write_bytes", ["0", str(settings.LOCAL_FIRST_WRITE_BYTES.default)],
                         ids=["spark", "driver"])
def test_files_are_nullable_micros_and_only_user_columns(spark, tmp_path, first_write_bytes):
    """Spark's writer and the driver's pyarrow one (a first write this small) alike."""
    df = spark.range(0, 500).selectExpr(
        "id", "timestamp_micros(1600000000000123 + id) as ts", "cast(id as decimal(10, 2)) as d")
    assert not df.schema["id"].nullable
    path = str(tmp_path / "t")
    with scoped_confs(spark, {settings.LOCAL_FIRST_WRITE_BYTES.key: first_write_bytes}):
        result = qbeast.write(df, path, "id", cube_size=100)
    snapshot = QbeastSnapshot.load(path)
    assert sorted(os.listdir(path)) == sorted(result.files + ("_delta_log",))
    for add in snapshot.delta.files.values():
        schema = pq.read_schema(os.path.join(path, add.path))
        assert schema.names == ["id", "ts", "d"]
        assert all(f.nullable for f in schema)
        assert str(schema.field("ts").type) == "timestamp[us, tz=UTC]"
        kinds = pq.ParquetFile(os.path.join(path, add.path)).schema.column(1).physical_type
        assert kinds == "INT64"  # TIMESTAMP_MICROS, not the legacy INT96
    back = spark.read.parquet(*[os.path.join(path, f) for f in result.files])
    assert sorted(back.collect()) == sorted(df.collect())


def test_a_staging_write_the_driver_cannot_see_fails_and_commits_nothing(spark, tmp_path, monkeypatch):
    """Executors writing to a disk the driver does not see (a cluster without a shared file
    system) leave the driver's staging folder empty: the write fails naming the requirement and
    the table keeps its version, instead of committing no files for the rows it counted."""
    from qbeast.delta.log import DeltaLog
    from qbeast.errors import QbeastError
    from qbeast.spark.write import staging

    path = str(tmp_path / "t")
    qbeast.write(spark.range(100), path, "id")
    monkeypatch.setattr(staging, "_write_staged", lambda *args, **kwargs: None)  # written elsewhere
    monkeypatch.setattr(staging, "run_parquet_format", lambda spark: None)
    spark.conf.set(settings.LOCAL_ROWS.key, "0")  # the Spark jobs write (not the driver)
    try:
        with pytest.raises(QbeastError, match="staging write produced no file in .*executors must write where the driver reads"):
            qbeast.write(spark.range(100, 200), path)
    finally:
        spark.conf.unset(settings.LOCAL_ROWS.key)
    assert DeltaLog.for_path(path).snapshot().version == 0
    assert spark.read.format("qbeast").load(path).count() == 100
