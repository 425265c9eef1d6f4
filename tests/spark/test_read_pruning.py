"""Property tests of pruned and sampled reads on generated multi-revision tables.

The table has two revisions (an out-of-range append makes the second), several blocks per cube
(appends into the same revision) and a staging file appended by delta-rs (a plain Delta writer,
so the file carries no tags). For random boxes and fractions:

* the rows returned equal a full native scan with the same filter and weight range;
* every file holding a qualifying row is read (no loss);
* no file is read unless its index metadata allows a qualifying row: it is staging, or one of
  its blocks has a cube intersecting the box and a weight range meeting the sample's. That
  oracle is computed here by brute force over all blocks, independently of the OTree walk.
"""
from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import qbeast
from qbeast import QbeastTable
from qbeast.core import expressions as ex
from qbeast.core.cube_id import CubeId
from qbeast.core.weight import MAX_WEIGHT, weight_from_fraction

pytestmark = pytest.mark.spark

SCHEMA = "id BIGINT, x INT, y DOUBLE, d DATE, s STRING"
EPS = 1e-9


def _rows(rng: random.Random, start: int, n: int, x_range: tuple[int, int]) -> list[tuple]:
    base = dt.date(2020, 1, 1)
    out = []
    for i in range(start, start + n):
        x = None if rng.random() < 0.03 else rng.randint(*x_range)
        y = None if rng.random() < 0.03 else rng.random() ** 2  # skewed
        day = base + dt.timedelta(days=rng.randint(0, 700))
        out.append((i, x, y, day, f"s{rng.randint(0, 40)}"))
    return out


@pytest.fixture(scope="module")
def table_path(spark, tmp_path_factory):
    import deltalake

    path = str(tmp_path_factory.mktemp("pruning") / "events")
    rng = random.Random(20240611)
    first = spark.createDataFrame(_rows(rng, 0, 6000, (0, 999)), SCHEMA)
    qbeast.write(first, path, "x,y", cube_size=400)
    same_range = spark.createDataFrame(_rows(rng, 6000, 3000, (0, 999)), SCHEMA)
    qbeast.write(same_range, path)
    wider = spark.createDataFrame(_rows(rng, 9000, 2500, (500, 2500)), SCHEMA)
    qbeast.write(wider, path)
    staging = spark.createDataFrame(_rows(rng, 11500, 700, (0, 2500)), SCHEMA).toArrow()
    deltalake.write_deltalake(path, staging, mode="append")
    return path


@pytest.fixture(scope="module")
def reference(spark, table_path):
    """All rows with their weight and the file holding them (native scan of every file)."""
    snapshot = QbeastTable.for_path(spark, table_path).snapshot()
    paths = [snapshot.delta.file_path(a) for a in snapshot.delta.files.values()]
    df = (
        spark.read.schema(SCHEMA).parquet(*paths)
        .withColumn("_w", F.hash("x", "y"))
        .withColumn("_file", F.input_file_name())
    )
    return df.toArrow()


def _file_key(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _candidate_files(snapshot, box: dict[str, tuple[float, float]] | None, hi: int) -> set[str]:
    """Files whose metadata admits a qualifying row (brute force over every block)."""
    out = set()
    for revision_id, files in snapshot.files_by_revision().items():
        if revision_id == 0:
            out.update(_file_key(a.path) for a in files)
            continue
        revision = snapshot.revisions[revision_id]
        coords = None
        if box is not None:
            coords = []
            for column, transformation in zip(revision.columns, revision.transformations):
                lo, hi_v = box.get(column, (None, None))
                c_lo = 0.0 if lo is None else transformation.transform(lo)
                c_hi = 1.0 if hi_v is None else transformation.transform(hi_v)
                coords.append((c_lo - EPS, c_hi + EPS))
        for add in files:
            for block in snapshot.blocks(add):
                if hi != MAX_WEIGHT and block.min_weight >= hi:
                    continue
                if coords is not None:
                    lows, highs = CubeId.from_string(revision.dimension_count, block.cube).bounds()
                    if any(c_hi < lo or c_lo > high for (c_lo, c_hi), lo, high in zip(coords, lows, highs)):
                        continue
                out.add(_file_key(add.path))
                break
    return out


def _expected(reference: pa.Table, box, hi: int) -> tuple[set[int], set[str]]:
    ids, files = set(), set()
    for row in reference.to_pylist():
        if hi != MAX_WEIGHT and not row["_w"] < hi:
            continue
        if box is not None:
            x, y = row["x"], row["y"]
            (x0, x1), (y0, y1) = box["x"], box["y"]
            if x is None or y is None or not (x0 <= x <= x1 and y0 <= y <= y1):
                continue
        ids.add(row["id"])
        files.add(_file_key(row["_file"]))
    return ids, files


def _check(df, snapshot, reference, box, fraction):
    hi = MAX_WEIGHT if fraction is None or fraction == 1.0 else weight_from_fraction(fraction)
    want_ids, needed = _expected(reference, box, hi)
    got_ids = [r["id"] for r in df.select("id").collect()]
    assert len(got_ids) == len(set(got_ids))
    assert set(got_ids) == want_ids
    read = {_file_key(p) for p in df.inputFiles()}
    assert needed <= read, "a file holding qualifying rows was skipped"
    assert read <= _candidate_files(snapshot, box, hi), "read a file the index rules out"
    return read


def test_table_has_revisions_blocks_and_staging(spark, table_path):
    snapshot = QbeastTable.for_path(spark, table_path).snapshot()
    by_revision = snapshot.files_by_revision()
    assert sorted(by_revision) == [0, 1, 2]
    assert len(by_revision[0]) >= 1
    status = snapshot.index_status(1)
    assert any(len(c.blocks) > 1 for c in status.cubes), "appends should add blocks to cubes"


@pytest.mark.parametrize("seed", range(6))
def test_random_boxes_and_fractions(spark, table_path, reference, seed):
    rng = random.Random(seed)
    table = QbeastTable.for_path(spark, table_path)
    snapshot = table.snapshot()
    total = len(snapshot.delta.files)
    for _ in range(3):
        x0 = rng.randint(0, 2400)
        x1 = x0 + rng.choice([5, 50, 300, 1500])
        y0 = rng.random()
        y1 = min(1.0, y0 + rng.choice([0.01, 0.1, 0.5]))
        box = {"x": (x0, x1), "y": (y0, y1)}
        fraction = rng.choice([None, 0.05, 0.2, 0.6, 1.0])
        sql = f"x BETWEEN {x0} AND {x1} AND y >= {y0!r} AND y <= {y1!r}"
        df = table.to_df(filter=sql) if fraction is None else table.sample(fraction, filter=sql)
        read = _check(df, snapshot, reference, box, fraction)
        assert len(read) <= total
        # the same box as a core expression prunes and filters identically
        expr = ex.And(
            ex.GreaterThanOrEqual("x", x0), ex.LessThanOrEqual("x", x1),
            ex.GreaterThanOrEqual("y", y0), ex.LessThanOrEqual("y", y1),
        )
        df2 = table.to_df(filter=expr) if fraction is None else table.sample(fraction, filter=expr)
        assert _check(df2, snapshot, reference, box, fraction) == read


@pytest.mark.parametrize("fraction", [0.0, 0.01, 0.1, 0.3, 0.7])
def test_samples_are_exact_and_prune(spark, table_path, reference, fraction):
    table = QbeastTable.for_path(spark, table_path)
    snapshot = table.snapshot()
    read = _check(table.sample(fraction), snapshot, reference, None, fraction)
    if fraction <= 0.1:
        assert len(read) < len(snapshot.delta.files)


def test_small_boxes_read_few_files(spark, table_path, reference):
    table = QbeastTable.for_path(spark, table_path)
    snapshot = table.snapshot()
    box = {"x": (100, 120), "y": (0.0, 0.05)}
    df = table.to_df(filter="x BETWEEN 100 AND 120 AND y BETWEEN 0.0 AND 0.05")
    read = _check(df, snapshot, reference, box, None)
    assert len(read) < len(snapshot.delta.files) / 2


def test_other_predicate_shapes_keep_every_row(spark, table_path):
    """OR, IN, IS NULL, NOT, dates and non-indexed columns: pruned result == full scan + filter."""
    table = QbeastTable.for_path(spark, table_path)
    full = table.to_df()
    total = len(full.inputFiles())
    for condition in [
        "x < 50 OR x > 2400",
        "x IN (3, 700, 2222) AND y < 0.5",
        "x IS NULL",
        "y IS NULL OR (x = 10 AND y > 0.2)",
        "NOT (x >= 30) AND y < 0.3",
        "d BETWEEN DATE '2020-03-01' AND DATE '2020-03-05'",
        "d >= '2021-11-01' AND x < 100",
        "s = 's7' AND x BETWEEN 10 AND 900",
        "abs(x) < 30 AND y < 0.01",
    ]:
        pruned = table.to_df(filter=condition)
        want = sorted(r["id"] for r in full.filter(condition).select("id").collect())
        assert sorted(r["id"] for r in pruned.select("id").collect()) == want, condition
        assert len(pruned.inputFiles()) <= total


def test_time_travel_reads_an_older_version(spark, table_path):
    table = QbeastTable.for_path(spark, table_path)
    assert table.to_df(version=0).count() == 6000
    assert table.to_df(version=1).count() == 9000
    assert table.sample(0.2, version=0).count() == (
        table.to_df(version=0).filter(F.hash("x", "y") < weight_from_fraction(0.2)).count()
    )


def test_bad_arguments_are_named(spark, table_path):
    table = QbeastTable.for_path(spark, table_path)
    with pytest.raises(qbeast.InvalidOptionError, match="fraction"):
        table.sample(1.5)
    with pytest.raises(qbeast.InvalidOptionError, match="filter"):
        table.to_df(filter=42)
    with pytest.raises(qbeast.InvalidOptionError, match="nope"):
        table.to_df(filter=ex.EqualTo("nope", 1))
    with pytest.raises(qbeast.InvalidOptionError, match="version"):
        table.to_df(version=-1)
