"""optimize_table (FORMAT §8): one block per cube, unchanged samples, staging indexed.

Tables are built by several appends into one revision (so cubes hold several blocks); every
optimized table is re-checked from its files by ``write_checks.check_index`` (weights from
Spark's ``hash()``, cubes from the format core), and samples are compared row by row.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import qbeast
from qbeast.core.weight import fraction as weight_fraction
from qbeast.core.weight_bands import band_of
from qbeast.delta.log import DeltaLog
from qbeast.errors import InvalidOptionError
from qbeast.index.thresholds import files_to_lay_out
from qbeast.operations.convert import convert_to_qbeast
from qbeast.operations.optimize import OPTIMIZE_OPERATION, optimize_table
from qbeast.snapshot import NotAQbeastTableError, QbeastSnapshot

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index, check_weight_bands  # noqa: E402

pytestmark = pytest.mark.spark

FRACTIONS = (0.05, 0.3, 0.77)


def batch(spark, seed: int, n: int = 3000, offset: int = 0):
    """Rows whose indexed ranges are pinned (x in [0, 100], y in [0, 1000]): appends stay in the
    same revision and pile blocks onto the same cubes."""
    return spark.range(offset, offset + n).selectExpr(
        "id",
        f"case when id % {n} = 0 then 0.0 when id % {n} = 1 then 100.0 else rand({seed}) * 100 end as x",
        f"case when id % {n} = 0 then 0 when id % {n} = 1 then 1000 else cast(rand({seed + 1}) * 1000 as int) end as y",
    )


def samples(spark, path: str) -> dict[float, list[int]]:
    table = qbeast.QbeastTable.for_path(spark, path)
    return {f: sorted(r.id for r in table.sample(f).select("id").collect()) for f in FRACTIONS}


def blocks_per_cube(path: str, revision_id: int) -> dict[tuple[str, int], int]:
    """Blocks per cube and weight band of their ``minWeight``: a laid-out cube has one block per
    band it spans (one in all with ``spark.qbeast.index.weightBands=false``)."""
    status = QbeastSnapshot.load(path).index_status(revision_id)
    out: dict[tuple[str, int], int] = {}
    for c in status:
        for fb in c.blocks:
            key = (c.cube.string, band_of(fb.block.min_weight))
            out[key] = out.get(key, 0) + 1
    return out


def commit_actions(path: str, version: int) -> list[dict]:
    return [json.loads(x) for x in DeltaLog.for_path(path).read_commit(version).splitlines() if x.strip()]


@pytest.fixture(scope="module")
def appended_table(spark, tmp_path_factory):
    """A revision-1 table built by three appends (written once, copied per test)."""
    path = str(tmp_path_factory.mktemp("appended") / "t")
    for seed in (1, 11, 21):
        assert qbeast.write(batch(spark, seed, offset=seed * 10_000), path, "x,y", cube_size=300).revision_id == 1
    return path


@pytest.fixture
def table_copy(appended_table, tmp_path):
    import shutil

    target = tmp_path / "t"
    shutil.copytree(appended_table, target)
    return str(target)


def test_optimize_leaves_one_block_per_cube_and_band_and_the_same_samples(spark, table_copy):
    before_blocks = blocks_per_cube(table_copy, 1)
    assert max(before_blocks.values()) > 1  # the appends did spread cubes over several blocks
    before_samples = samples(spark, table_copy)
    before_files = set(QbeastSnapshot.load(table_copy).delta.files)

    result = optimize_table(spark, table_copy)

    (commit,) = result.commits
    assert commit.revision_id == 1 and commit.rows == 9000
    assert set(commit.files_removed) == before_files
    after_blocks = blocks_per_cube(table_copy, 1)
    assert set(after_blocks.values()) == {1}
    check_weight_bands(spark, table_copy)  # the bands of a cube hold disjoint weight ranges
    assert sum(c.element_count for c in QbeastSnapshot.load(table_copy).index_status(1)) == 9000
    assert samples(spark, table_copy) == before_samples
    assert check_index(spark, table_copy) == {1: 9000}
    lines = commit_actions(table_copy, commit.version)
    assert lines[0]["commitInfo"]["operation"] == OPTIMIZE_OPERATION
    assert all(line[k]["dataChange"] is False for line in lines for k in ("add", "remove") if k in line)
    assert not any("metaData" in line for line in lines)
    assert "replaced by" in str(result) and result.to_dict()["commits"][0]["rows"] == 9000
    deltalake = pytest.importorskip("deltalake", reason="delta-rs is the independent Delta reader")
    ids = deltalake.DeltaTable(table_copy).to_pyarrow_table().column("id").to_pylist()
    assert sorted(ids) == [i for seed in (1, 11, 21) for i in range(seed * 10_000, seed * 10_000 + 3000)]


def test_optimize_keeps_every_row_and_is_stable(spark, table_copy):
    ids = sorted(r.id for r in qbeast.QbeastTable.for_path(spark, table_copy).to_df().select("id").collect())
    optimize_table(spark, table_copy)
    first = {c: n for c, n in blocks_per_cube(table_copy, 1).items()}
    status = QbeastSnapshot.load(table_copy).index_status(1)
    counts = {c.cube.string: c.element_count for c in status}
    optimize_table(spark, table_copy)  # rewriting an optimized revision reproduces its layout
    assert blocks_per_cube(table_copy, 1) == first
    assert {c.cube.string: c.element_count for c in QbeastSnapshot.load(table_copy).index_status(1)} == counts
    assert sorted(r.id for r in qbeast.QbeastTable.for_path(spark, table_copy).to_df().select("id").collect()) == ids


def test_optimize_fraction_rewrites_only_the_files_a_small_sample_reads(spark, table_copy):
    snapshot = QbeastSnapshot.load(table_copy)
    expected = {f.path for f in snapshot.revision_files(1)
                if any(weight_fraction(b.min_weight) <= 0.1 for b in snapshot.blocks(f))}
    untouched = set(snapshot.delta.files) - expected
    assert expected and untouched
    before = samples(spark, table_copy)
    (commit,) = optimize_table(spark, table_copy, fraction=0.1).commits
    assert set(commit.files_removed) == expected
    assert untouched <= set(QbeastSnapshot.load(table_copy).delta.files)
    assert samples(spark, table_copy) == before
    check_index(spark, table_copy)


def test_optimize_given_files_and_revision(spark, tmp_path):
    path = str(tmp_path / "t")
    for seed in (1, 2):
        qbeast.write(batch(spark, seed, offset=seed * 10_000), path, "x,y", cube_size=300)
    # a wider range opens revision 2; its files must survive an optimize of revision 1
    wide = batch(spark, 3, offset=90_000).selectExpr("id", "x * 3 as x", "y")
    assert qbeast.write(wide, path).revision_id == 2
    # an append into revision 2 (inside its headroom) leaves cubes of it to lay out
    assert qbeast.write(batch(spark, 4, offset=95_000).selectExpr("id", "x * 2 as x", "y"), path).revision_id == 2
    snapshot = QbeastSnapshot.load(path)
    rev1 = [f.path for f in snapshot.revision_files(1)]
    rev2 = [f.path for f in snapshot.revision_files(2)]
    before = samples(spark, path)

    (commit,) = optimize_table(spark, path, revision_id=1).commits
    assert set(commit.files_removed) == set(rev1)
    after = QbeastSnapshot.load(path)
    assert sorted(f.path for f in after.revision_files(2)) == sorted(rev2)
    assert set(blocks_per_cube(path, 1).values()) == {1}
    assert samples(spark, path) == before

    chosen = rev2[:-1]
    needed = files_to_lay_out(QbeastSnapshot.load(path).index_status(2), set(chosen))
    assert needed  # the append reached cubes of these files
    (commit,) = optimize_table(spark, path, files=chosen).commits
    assert commit.revision_id == 2 and set(commit.files_removed) == needed
    remaining = {f.path for f in QbeastSnapshot.load(path).revision_files(2)}
    assert set(rev2) - needed <= remaining and not needed & remaining
    assert samples(spark, path) == before
    assert check_index(spark, path) == {1: 6000, 2: 6000}

    with pytest.raises(InvalidOptionError, match="not active files"):
        optimize_table(spark, path, files=["nope.parquet"])
    with pytest.raises(InvalidOptionError, match=r"revision 9 does not exist.*\[0, 1, 2\]"):
        optimize_table(spark, path, revision_id=9)


def test_convert_append_optimize_staging_gives_a_fully_indexed_table(spark, tmp_path):
    deltalake = pytest.importorskip("deltalake", reason="delta-rs makes the plain Delta append")
    root = tmp_path / "pq"
    root.mkdir()
    for part in range(3):
        ids = range(part * 1000, (part + 1) * 1000)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()),
                                 "x": pa.array([(i * 37) % 100 * 1.0 for i in ids]),
                                 "y": pa.array([(i * 91) % 1000 for i in ids], pa.int32())}),
                       root / f"part-{part}.parquet")
    path = str(root)
    convert_to_qbeast(spark, path, ["x", "y"], cube_size=400)
    deltalake.write_deltalake(path, pa.table({"id": pa.array(range(3000, 3500), pa.int64()),
                                              "x": pa.array([float(i % 100) for i in range(500)]),
                                              "y": pa.array([i % 1000 for i in range(500)], pa.int32())}),
                              mode="append")
    assert len(QbeastSnapshot.load(path).staging_files()) == 4
    ids = sorted(r.id for r in qbeast.QbeastTable.for_path(spark, path).to_df().select("id").collect())

    (commit,) = optimize_table(spark, path, revision_id=0).commits

    assert commit.revision_id == 0 and commit.target_revision_id == 1 and commit.rows == 3500
    snapshot = QbeastSnapshot.load(path)
    assert snapshot.staging_files() == [] and snapshot.latest_revision_id == 1
    assert snapshot.revision(0).is_staging and snapshot.revision(1).columns == ["x", "y"]
    assert snapshot.revision(1).desired_cube_size == 400
    assert check_index(spark, path) == {1: 3500}
    table = qbeast.QbeastTable.for_path(spark, path)
    assert sorted(r.id for r in table.to_df().select("id").collect()) == ids
    lines = commit_actions(path, commit.version)
    assert any("metaData" in line for line in lines)  # revision 1 is committed with the data
    assert all(line[k]["dataChange"] is False for line in lines for k in ("add", "remove") if k in line)

    # later Delta appends are staging again; optimize(0) adds them to revision 1
    deltalake.write_deltalake(path, pa.table({"id": pa.array([5000, 5001], pa.int64()), "x": [1.0, 2.0],
                                              "y": pa.array([3, 4], pa.int32())}), mode="append")
    (commit,) = optimize_table(spark, path, revision_id=0).commits
    assert commit.target_revision_id == 1 and QbeastSnapshot.load(path).staging_files() == []
    assert check_index(spark, path) == {1: 3502}


def test_staging_fraction_takes_the_oldest_files_first(spark, tmp_path):
    path = str(tmp_path / "t")
    qbeast.write(batch(spark, 1), path, "x,y", cube_size=300)
    deltalake = pytest.importorskip("deltalake", reason="delta-rs makes the plain Delta appends")
    for part in range(4):
        deltalake.write_deltalake(path, batch(spark, 50 + part, n=500, offset=50_000 + part * 1000).toArrow(),
                                  mode="append")
    staging = sorted(QbeastSnapshot.load(path).staging_files(), key=lambda f: f.modification_time)
    (commit,) = optimize_table(spark, path, revision_id=0, fraction=0.5).commits
    total = sum(f.size for f in staging)
    expected, size = [], 0
    for f in staging:  # oldest first until half the bytes, the crossing file included
        if expected and size >= 0.5 * total:
            break
        expected.append(f.path)
        size += f.size
    assert sorted(commit.files_removed) == sorted(expected)
    left = QbeastSnapshot.load(path).staging_files()
    assert sorted(f.path for f in left) == sorted(f.path for f in staging if f.path not in expected)
    assert commit.target_revision_id == 1
    assert check_index(spark, path)[1] == 3000 + 500 * len(expected)


def test_optimize_argument_errors(spark, tmp_path, appended_table):
    cases = [
        (dict(fraction=0), "fraction must be a number in \\(0, 1\\]"),
        (dict(fraction=1.5), "fraction"),
        (dict(fraction="0.5"), "fraction"),
        (dict(revision_id=-1), "revision_id must be an integer >= 0"),
        (dict(files=["a"], revision_id=1), "either files"),
        (dict(files="a.parquet"), "list of file paths"),
    ]
    for kwargs, message in cases:
        with pytest.raises(InvalidOptionError, match=message):
            optimize_table(spark, appended_table, **kwargs)
    plain = tmp_path / "plain"
    deltalake = pytest.importorskip("deltalake", reason="delta-rs writes the plain Delta table")
    deltalake.write_deltalake(str(plain), pa.table({"a": [1, 2]}))
    with pytest.raises(NotAQbeastTableError, match="convert"):
        optimize_table(spark, str(plain))


def test_optimize_a_table_written_by_qbeast_spark(spark, qbeast_fixtures, tmp_path):
    """The v0.7 fixture (linear + string histogram columns), written in one go by qbeast-spark, is
    already laid out (one block per cube at its threshold): optimize rewrites nothing and says
    so; sample sizes stay FORMAT §7.5's."""
    import shutil
    import stat

    path = tmp_path / "v07"
    shutil.copytree(qbeast_fixtures / "v07-ecommerce-300k", path)
    for folder in (path, path / "_delta_log"):
        folder.chmod(folder.stat().st_mode | stat.S_IWUSR)
    table = qbeast.QbeastTable.for_path(spark, str(path))

    def fingerprint(f: float) -> tuple[int, int]:
        row = table.sample(f).selectExpr("count(1) AS n", "sum(cast(hash(*) AS bigint)) AS h").first()
        return row["n"], row["h"]

    before = {f: fingerprint(f) for f in (0.01, 0.1, 0.5)}
    assert {f: n for f, (n, _) in before.items()} == {0.01: 3_096, 0.1: 30_303, 0.5: 150_924}
    assert set(blocks_per_cube(str(path), 1).values()) == {1}
    result = optimize_table(spark, str(path))
    assert result.commits == () and "already laid out" in str(result)
    assert {f: fingerprint(f) for f in (0.01, 0.1, 0.5)} == before
    # an append gives cubes a second block: optimize rewrites qbeast-spark's files of those cubes
    # (and only those), keeping every sampled row
    extra = table.to_df().where("user_id % 50 = 0").localCheckpoint()
    assert qbeast.write(extra, str(path)).revision_id == 1
    appended = {f: fingerprint(f) for f in (0.01, 0.1, 0.5)}
    (commit,) = optimize_table(spark, str(path)).commits
    assert commit.files_removed and not set(commit.files_removed) & set(QbeastSnapshot.load(str(path)).delta.files)
    assert set(blocks_per_cube(str(path), 1).values()) == {1}
    assert {f: fingerprint(f) for f in (0.01, 0.1, 0.5)} == appended


def test_concurrent_removal_fails_the_optimize_and_drops_its_new_files(spark, table_copy, monkeypatch):
    from qbeast.delta.errors import ConcurrentDeleteReadError
    from qbeast.operations import optimize as optimize_module

    real_read = optimize_module._read_files
    victim = sorted(QbeastSnapshot.load(table_copy).delta.files)[0]

    def read_then_lose_a_file(spark_, snapshot, files):
        df = real_read(spark_, snapshot, files)
        log = DeltaLog.for_path(table_copy)  # another writer deletes a file optimize is rewriting
        log.start_transaction().add_actions(log.snapshot().files[victim].remove()).commit("DELETE")
        return df

    monkeypatch.setattr(optimize_module, "_read_files", read_then_lose_a_file)
    parquet_files = {p.name for p in Path(table_copy).glob("*.parquet")}
    with pytest.raises(ConcurrentDeleteReadError, match=victim):
        optimize_table(spark, table_copy)
    assert {p.name for p in Path(table_copy).glob("*.parquet")} == parquet_files
    assert DeltaLog.for_path(table_copy).latest_version() == 3  # 3 appends + the delete


def test_column_names_with_backticks_and_dots_are_quoted_everywhere(spark, tmp_path):
    """Every piece of SQL the engine builds quotes names through one rule (qbeast.core.sql):
    optimize's row weight and the filter of an expression read used to lack backtick escaping."""
    from qbeast.core import expressions as ex

    path = str(tmp_path / "t")
    odd = ["x`1", "y.2"]
    frame = lambda seed, offset: batch(spark, seed, 1500, offset).selectExpr(  # noqa: E731
        "id", "x as `x``1`", "y as `y.2`")
    qbeast.write(frame(1, 0), path, odd, cube_size=500)
    qbeast.write(frame(2, 1500), path, odd, mode="append")
    before = samples(spark, path)
    table = qbeast.QbeastTable.for_path(spark, path)
    assert sorted(table.indexed_columns()) == sorted(odd)
    result = optimize_table(spark, path)
    assert len(result.commits) == 1 and samples(spark, path) == before
    assert all(n == 1 for n in blocks_per_cube(path, 1).values())
    picked = table.to_df(filter=ex.And(ex.LessThan("x`1", 30.0), ex.GreaterThanOrEqual("y.2", 500)))
    expected = [r.id for r in table.to_df().collect() if r["x`1"] < 30 and r["y.2"] >= 500]
    assert sorted(r.id for r in picked.collect()) == sorted(expected) and expected
    assert "`x``1`" in table.sample_predicate(0.5)


def test_optimize_rewrites_only_what_is_not_laid_out(spark, tmp_path):
    """A fresh write is laid out: optimize rewrites nothing and says so (issue 20). After an
    append it rewrites the files :func:`files_to_lay_out` names (the cubes the append reached
    and, below a lowered threshold, their subtrees), leaving one block per cube; then nothing."""
    path = str(tmp_path / "t")
    qbeast.write(batch(spark, 1, n=6000), path, "x,y", cube_size=500)
    version = DeltaLog.for_path(path).snapshot().version
    fresh = optimize_table(spark, path)
    assert fresh.commits == () and DeltaLog.for_path(path).snapshot().version == version
    assert "already laid out" in str(fresh) and "nothing to rewrite" in str(fresh)

    # an append of rows in one corner reaches the root and that corner's cubes only
    corner = batch(spark, 2, n=800, offset=10_000).selectExpr("id", "x / 4 as x", "cast(y / 4 as int) as y")
    qbeast.write(corner, path)
    before = samples(spark, path)
    needed = files_to_lay_out(QbeastSnapshot.load(path).index_status(1))
    (commit,) = optimize_table(spark, path).commits
    assert set(commit.files_removed) == needed
    assert set(blocks_per_cube(path, 1).values()) == {1}
    assert samples(spark, path) == before
    assert check_index(spark, path) == {1: 6800}
    assert optimize_table(spark, path).commits == ()
