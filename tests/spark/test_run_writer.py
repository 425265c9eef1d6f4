"""The bridge's run writer (``io.dbtqbeast.bridge.RunParquetFormat``) on its own: Spark's parquet
writer whose row groups end where a key column changes, with each run's rows and lowest tracked
value recorded in the footer. The engine's band pieces are one use of it (see
``test_write_band_row_groups.py``); here the key and the value mean nothing in particular."""
from __future__ import annotations

import glob
import json
import os

import pyarrow.parquet as pq
import pytest

from qbeast.spark.bridge import RUN_FOOTER_KEY_OPTION, run_parquet_format

pytestmark = pytest.mark.spark

KEY = "test.runs"


@pytest.fixture()
def runs_format(spark):
    found = run_parquet_format(spark)
    if found is None:
        pytest.skip("the bridge jar is not loaded in this session (built without a JDK)")
    return found


def _data(spark, rows=30_000):
    return spark.range(0, rows, numPartitions=3).selectExpr(
        "id", "cast(id as string) as s", "cast(id % 4 as int) as k", "cast(hash(id) as int) as w")


def _files(folder) -> list[str]:
    return sorted(glob.glob(os.path.join(str(folder), "**", "*.parquet"), recursive=True))


def _check_runs(path: str, expected: list[tuple[int, int, int]]) -> None:
    """The file's record lists ``(lowest w, rows)`` per key run, in key order, and every run
    starts a row group; the key and the tracked value are not written."""
    meta = pq.read_metadata(path)
    assert meta.schema.names == ["id", "s"]
    record = json.loads(meta.metadata[KEY.encode()])
    assert record == [[low, rows] for _, low, rows in expected]
    starts, at = set(), 0
    for i in range(meta.num_row_groups):
        starts.add(at)
        at += meta.row_group(i).num_rows
    run_starts, at = set(), 0
    for _, _, rows in expected:
        run_starts.add(at)
        at += rows
    assert at == meta.num_rows
    assert run_starts <= starts


def _expected(table) -> list[tuple[int, int, int]]:
    """Per key (increasing): the key, the lowest ``w``, the rows, from the source rows."""
    runs: dict[int, list[int]] = {}
    for k, w in zip(table["k"], table["w"]):
        runs.setdefault(k, []).append(w)
    return [(k, min(ws), len(ws)) for k, ws in sorted(runs.items())]


def test_each_task_writes_its_key_runs_as_row_groups(spark, runs_format, tmp_path):
    data = _data(spark).repartition(2, "id").sortWithinPartitions("k")
    data.write.format(runs_format).option(RUN_FOOTER_KEY_OPTION, KEY).save(str(tmp_path / "out"))
    files = _files(tmp_path / "out")
    assert len(files) == 2
    source = _data(spark).toArrow().to_pydict()
    for path in files:
        ids = pq.read_table(path, columns=["id"]).column("id").to_pylist()
        mine = set(ids)
        rows = [i for i, row_id in enumerate(source["id"]) if row_id in mine]
        _check_runs(path, _expected({c: [source[c][i] for i in rows] for c in ("k", "w")}))
        # rows keep the sorted order: keys never go back
        keys = [i % 4 for i in ids]
        assert keys == sorted(keys)


def test_a_run_above_the_block_size_spans_several_row_groups(spark, runs_format, tmp_path):
    """The size rule still applies inside a run; the record stays one entry per run."""
    data = _data(spark, 200_000).coalesce(1).sortWithinPartitions("k")
    (data.write.format(runs_format).option(RUN_FOOTER_KEY_OPTION, KEY)
     .option("parquet.block.size", 256 * 1024).save(str(tmp_path / "out")))
    (path,) = _files(tmp_path / "out")
    source = _data(spark, 200_000).toArrow().to_pydict()
    _check_runs(path, _expected(source))
    assert pq.read_metadata(path).num_row_groups > 4


def test_partitioned_runs_write_one_file_per_partition_value(spark, runs_format, tmp_path):
    data = (_data(spark).selectExpr("id", "s", "cast(id % 3 as int) as part", "k", "w")
            .repartition(2, "part").sortWithinPartitions("part", "k"))
    (data.write.format(runs_format).option(RUN_FOOTER_KEY_OPTION, KEY).partitionBy("part")
     .save(str(tmp_path / "out")))
    for part in range(3):
        (path,) = _files(tmp_path / "out" / f"part={part}")
        source = _data(spark).where(f"id % 3 = {part}").toArrow().to_pydict()
        _check_runs(path, _expected(source))


def test_the_writer_names_what_it_needs(spark, runs_format, tmp_path):
    with pytest.raises(Exception, match="runs.footerKey"):
        _data(spark).write.format(runs_format).save(str(tmp_path / "no-key"))
    with pytest.raises(Exception, match="last two columns are ints"):
        (_data(spark).selectExpr("id", "s", "k", "cast(w as long) as w").write.format(runs_format)
         .option(RUN_FOOTER_KEY_OPTION, KEY).save(str(tmp_path / "long")))
