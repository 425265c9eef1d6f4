"""Weight bands as row groups (issue 20, the default ``spark.qbeast.index.weightBands=rowGroups``):
files as without bands (one block per cube), each file's rows in band pieces recorded in its
footer; a sample reads each file it needs only up to its last needed piece, through the Python
API and SQL, and gets exactly the rows with ``hash < Weight(f)``."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import qbeast
from qbeast.core.band_row_groups import PieceLayout
from qbeast.core.weight import weight_from_fraction
from qbeast.index.row_weights import spark_hash
from qbeast.index.thresholds import is_laid_out
from qbeast.snapshot import QbeastSnapshot
from qbeast.spark import settings
from qbeast.spark.bridge import bridge_active, prefix_scan
from qbeast.spark.read.dataframe import spark_schema
from qbeast.spark.catalog import create_table
from qbeast.spark.runtime import scoped_confs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index, check_weight_bands  # noqa: E402

pytestmark = pytest.mark.spark

ROWS = 40_000
CUBE = 1_000
FRACTIONS = (0.05, 0.1, 0.2, 0.5)


def _data(spark, n=ROWS, offset=0):
    return spark.range(offset, offset + n).selectExpr(
        "id", "rand(7) * 100 as a", "cast(rand(8) * 1000 as int) as b")


def _write(spark, path: str, layout: str, writer: str = "runs") -> None:
    """Write the test data with ``layout`` bands; band pieces by ``writer``.

    ``runs``: the bridge's run writer (a file's pieces as runs of one task's rows, the default
    where the jar is loaded); ``joined``: each piece a staging file, joined on the driver (the
    path of sessions without the jar, e.g. Spark Connect). Both are Spark's jobs: the write is
    kept off the driver-local path a first write this small would otherwise take
    (``tests/spark/test_write_local_append.py`` compares that one with them).
    """
    from qbeast.spark.write import staging

    with pytest.MonkeyPatch.context() as patch:
        if writer == "joined":
            patch.setattr(staging, "run_parquet_format", lambda spark: None)
        with scoped_confs(spark, {"spark.qbeast.index.weightBands": layout,
                                  settings.LOCAL_FIRST_WRITE_BYTES.key: "0"}):
            qbeast.write(_data(spark), path, "a,b", cube_size=CUBE)


@pytest.fixture(scope="module", params=["runs", "joined"])
def tables(request, spark, tmp_path_factory):
    """The table written with band row groups by either writer of the pieces, and without bands."""
    root = tmp_path_factory.mktemp(f"rowgroups-{request.param}")
    out = {"writer": request.param}
    for layout in ("rowGroups", "false"):
        _write(spark, str(root / layout), layout, request.param)
        out[layout] = str(root / layout)
    return out


def _file_layouts(path: str) -> list[tuple]:
    """Per file (sorted): its blocks and its piece record."""
    snapshot = QbeastSnapshot.load(path)
    files = []
    for add in snapshot.revision_files(1):
        record = PieceLayout.of(pq.read_metadata(os.path.join(path, add.path)))
        assert record is not None, add.path
        blocks = sorted((b.cube, b.min_weight, b.max_weight, b.element_count)
                        for b in snapshot.blocks(add))
        files.append((tuple(blocks), record.pieces))
    return sorted(files)


def test_both_piece_writers_write_the_same_files(spark, tables, tmp_path):
    """The run writer and the staged join give every file the same rows, blocks and pieces."""
    other = "joined" if tables["writer"] == "runs" else "runs"
    _write(spark, str(tmp_path / other), "rowGroups", other)
    assert _file_layouts(tables["rowGroups"]) == _file_layouts(str(tmp_path / other))


def test_run_written_files_described_by_a_scan_match_the_tally(spark, tmp_path, monkeypatch,
                                                                caplog):
    """Without the block tally (Spark Connect, or a task counted twice) the scan of the written
    files gives each run-written file the same blocks: one per cube, over all its pieces."""
    from qbeast.spark.write import steps as write_steps

    _write(spark, str(tmp_path / "tallied"), "rowGroups")
    monkeypatch.setattr(write_steps, "new_block_tally", lambda spark: None)
    with caplog.at_level("INFO", logger="qbeast.spark.write.writer"):
        _write(spark, str(tmp_path / "scanned"), "rowGroups")
    assert "describing the files by a scan" in caplog.text
    assert "row_group_runs=True" in caplog.text
    assert _file_layouts(str(tmp_path / "scanned")) == _file_layouts(str(tmp_path / "tallied"))


def test_the_run_writer_writes_one_staging_file_per_output_file(spark, tmp_path, caplog):
    """No piece is a file of its own: the staging write produces the published files."""
    with caplog.at_level("INFO", logger="qbeast.spark.write.writer"):
        _write(spark, str(tmp_path / "t"), "rowGroups")
    assert "row_group_runs=True" in caplog.text
    assert "band pieces joined" not in caplog.text
    assert len(QbeastSnapshot.load(str(tmp_path / "t")).revision_files(1)) > 1


def _pieces(path: str, add) -> tuple[PieceLayout, list[np.ndarray]]:
    """A file's piece record and the weights of the rows of each piece, read from the file."""
    parquet = pq.ParquetFile(os.path.join(path, add.path))
    layout = PieceLayout.of(parquet.metadata)
    assert layout is not None, add.path
    weights = []
    for i in range(parquet.num_row_groups):
        group = parquet.read_row_group(i, columns=["a", "b"])
        weights.append(spark_hash([group.column("a"), group.column("b")]).astype(np.int64))
    out, start, rows = [], 0, np.concatenate(weights)
    for piece in layout.pieces:
        out.append(rows[start:start + piece.rows])
        start += piece.rows
    assert start == len(rows)
    return layout, out


def test_the_layout_keeps_the_index_with_one_block_per_cube(spark, tables):
    path = tables["rowGroups"]
    assert check_index(spark, path) == {1: ROWS}
    assert check_weight_bands(spark, path) == 0  # no cube split over files
    snapshot = QbeastSnapshot.load(path)
    cubes = [b.cube for add in snapshot.revision_files(1) for b in snapshot.blocks(add)]
    assert len(cubes) == len(set(cubes))
    # the rollup of the unbanded layout: as many files, so box queries open as many
    assert len(snapshot.revision_files(1)) == len(QbeastSnapshot.load(tables["false"]).revision_files(1))


def test_every_file_records_its_pieces_in_increasing_weight_order(tables):
    path = tables["rowGroups"]
    snapshot = QbeastSnapshot.load(path)
    split = 0
    for add in snapshot.revision_files(1):
        layout, weights = _pieces(path, add)
        split += len(layout.pieces) > 1
        # piece boundaries are row group boundaries
        ends = np.cumsum(layout.group_rows)
        assert set(np.cumsum([p.rows for p in layout.pieces])) <= set(ends.tolist())
        for piece, w in zip(layout.pieces, weights):
            assert int(w.min()) == piece.min_weight
        for lighter, heavier in zip(weights, weights[1:]):
            assert lighter.max() < heavier.min()
        blocks = snapshot.blocks(add)
        assert min(b.min_weight for b in blocks if b.element_count) == layout.pieces[0].min_weight
        assert sum(b.element_count for b in blocks) == sum(p.rows for p in layout.pieces)
    assert split > 0


def _rows_read(path: str, plan) -> int:
    """Rows in the row groups a plan's prefixes (or whole files) hold."""
    total = 0
    for planned in plan.files:
        meta = pq.read_metadata(planned.path)
        layout = PieceLayout.of(meta)
        if planned.read_size is None or layout is None:
            total += meta.num_rows
            continue
        total += sum(rows for end, rows in zip(layout.group_ends, layout.group_rows)
                     if end <= planned.read_size)
    return total


@pytest.mark.parametrize("f", FRACTIONS)
def test_samples_read_a_prefix_about_the_rows_they_need(spark, tables, f):
    banded = qbeast.QbeastTable.for_path(spark, tables["rowGroups"]).read_plan(fraction=f)
    plain = qbeast.QbeastTable.for_path(spark, tables["false"]).read_plan(fraction=f)
    rows = _rows_read(tables["rowGroups"], banded)
    assert rows <= 1.2 * f * ROWS, (f, rows)
    assert rows < _rows_read(tables["false"], plain)
    assert banded.selected_bytes < plain.selected_bytes
    if f < 0.5:
        assert banded.prefix_reads


def test_a_prefix_scan_reads_only_the_row_groups_of_its_length(spark, tables):
    path = tables["rowGroups"]
    plan = qbeast.QbeastTable.for_path(spark, path).read_plan(fraction=0.1)
    partial = [f for f in plan.files if f.read_size is not None]
    assert partial
    for planned in partial:
        meta = pq.read_metadata(planned.path)
        layout = PieceLayout.of(meta)
        expected = sum(r for e, r in zip(layout.group_ends, layout.group_rows) if e <= planned.read_size)
        df = prefix_scan(spark, [(planned.path, planned.read_size, planned.modification_time)],
                         spark_schema(plan))
        if df is None:
            pytest.skip("the bridge jar is not loaded: files are read whole")
        assert 0 < df.count() == expected < meta.num_rows


@pytest.mark.parametrize("f", (0.05, 0.2))
def test_samples_are_exact_through_the_api_and_sql(spark, tables, f):
    from pyspark.sql import functions as F

    path = tables["rowGroups"]
    bound = weight_from_fraction(f)
    expected = sorted(r.id for r in spark.read.parquet(path).where(F.hash("a", "b") < bound)
                      .select("id").collect())
    table = qbeast.QbeastTable.for_path(spark, path)
    assert sorted(r.id for r in table.sample(f).select("id").collect()) == expected
    if bridge_active(spark):
        create_table(spark, "row_group_bands", path, replace=True)
        got = spark.sql(f"select id from row_group_bands TABLESAMPLE ({f * 100} PERCENT)").collect()
        assert sorted(r.id for r in got) == expected


def test_other_readers_read_every_row(tables):
    path = tables["rowGroups"]
    snapshot = QbeastSnapshot.load(path)
    ids = pa.concat_arrays([pq.read_table(os.path.join(path, a.path), columns=["id"]).column("id")
                            .combine_chunks() for a in snapshot.revision_files(1)])
    assert sorted(ids.to_pylist()) == list(range(ROWS))


def test_optimize_of_a_row_group_write_has_nothing_to_do(spark, tables):
    path = tables["rowGroups"]
    assert is_laid_out(QbeastSnapshot.load(path).index_status(1))
    result = qbeast.QbeastTable.for_path(spark, path).optimize()
    assert not result.commits and "already laid out" in str(result)


def test_appends_and_their_layout_keep_pieces_and_samples(spark, tmp_path):
    path = str(tmp_path / "t")
    space = {"a_min": 0.0, "a_max": 100.0, "b_min": 0, "b_max": 1000}
    qbeast.write(_data(spark, 20_000), path, "a,b", cube_size=CUBE, column_stats=space)
    qbeast.write(_data(spark, 5_000, offset=20_000), path, "a,b")
    table = qbeast.QbeastTable.for_path(spark, path)
    expected = {f: sorted(r.id for r in table.sample(f).select("id").collect()) for f in (0.1, 0.3)}
    result = table.optimize()
    assert result.commits
    snapshot = QbeastSnapshot.load(path)
    assert is_laid_out(snapshot.index_status(1))
    assert check_index(spark, path) == {1: 25_000}
    for add in snapshot.revision_files(1):
        _pieces(path, add)  # every file of the layout has a matching record
    table = qbeast.QbeastTable.for_path(spark, path)
    assert {f: sorted(r.id for r in table.sample(f).select("id").collect()) for f in (0.1, 0.3)} == expected
    assert sorted(r.id for r in table.to_df().select("id").collect()) == list(range(25_000))


def test_row_level_rewrites_keep_each_file_in_its_pieces(spark, tmp_path):
    """A delete (and an update that leaves the indexed columns) rewrites the files it touches
    with pyarrow: the remaining rows stay in their old pieces, recorded in the new footer, so
    samples still read a prefix of those files and still return exactly the light rows."""
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    qbeast.write(_data(spark), path, "a,b", cube_size=CUBE)
    table = qbeast.QbeastTable.for_path(spark, path)
    before = {a.path for a in QbeastSnapshot.load(path).revision_files(1)}
    assert table.delete("id % 3 = 0").version is not None
    table.update("id % 3 = 1", set={"id": "id + 1000000"})
    snapshot = QbeastSnapshot.load(path)
    rewritten = [a for a in snapshot.revision_files(1) if a.path not in before]
    assert rewritten
    split = 0
    for add in rewritten:
        layout, weights = _pieces(path, add)  # a record that matches the rows of each piece
        split += len(layout.pieces) > 1
        for piece, w in zip(layout.pieces, weights):
            assert int(w.min()) == piece.min_weight
        for lighter, heavier in zip(weights, weights[1:]):
            assert lighter.max() < heavier.min()
    assert split > 0
    assert check_index(spark, path) == {1: ROWS - len(range(0, ROWS, 3))}
    table = qbeast.QbeastTable.for_path(spark, path)
    plan = table.read_plan(fraction=0.1)
    assert {f.path for f in plan.files if f.read_size is not None} & {
        os.path.join(path, a.path) for a in rewritten}
    bound = weight_from_fraction(0.1)
    expected = sorted(r.id for r in table.to_df().where(F.hash("a", "b") < bound).select("id").collect())
    assert sorted(r.id for r in table.sample(0.1).select("id").collect()) == expected


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="open files are listed in /proc (Linux)")
def test_a_failed_join_leaves_no_open_file_in_the_jvm(spark, tmp_path):
    """parquet-mr's writer is aborted when a piece cannot be appended: the error reaches the
    caller, and the driver JVM keeps no stream open on the half-written target."""
    from qbeast.core.band_row_groups import Piece
    from qbeast.spark.write.row_groups import join_pieces

    part = str(tmp_path / "piece-0.parquet")
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64())}), part)
    target = str(tmp_path / "joined.parquet")
    missing = str(tmp_path / "missing.parquet")
    with pytest.raises(Exception, match="missing.parquet"):
        join_pieces(spark, [part, missing], target, [Piece(0, 10), Piece(5, 10)])
    jvm_pid = spark._jvm.java.lang.ProcessHandle.current().pid()  # noqa: SLF001
    fds = Path(f"/proc/{jvm_pid}/fd")
    open_files = {os.readlink(fds / fd) for fd in os.listdir(fds) if (fds / fd).is_symlink()}
    assert target not in open_files
    if os.path.exists(target):  # what was copied has no footer: no reader takes it for a file
        with pytest.raises(pa.ArrowInvalid):
            pq.read_metadata(target)
