"""Revision merge (issue 20): optimize re-indexes the rows of older revisions into the latest one.

A key that grows with every append (dates, ids) opens revisions as it outgrows the indexed range.
Each revision is a separate tree, and a small one's shallow cubes hold rows of every weight, so
samples read more than they need. ``optimize(merge_revisions=True)``, and the default maintenance
``optimize(max_rewrite_ratio=r)`` within its budget, move those rows into the latest revision:
every row stays, every sample returns exactly the same rows, and the OTree invariants hold.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import qbeast
from qbeast.errors import InvalidOptionError
from qbeast.index.thresholds import is_laid_out
from qbeast.operations.tiering import Placement, appended_since_layout, received_since_layout
from qbeast.snapshot import QbeastSnapshot

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index, check_weight_bands  # noqa: E402

pytestmark = pytest.mark.spark

CUBE = 1_000
FRACTIONS = (0.05, 0.1, 0.3, 0.7)


def _day(spark, day: int, rows: int, first_id: int | None = None):
    """``rows`` rows whose key ``t`` lies in [100 * day, 100 * day + 100): a growing key."""
    start = day * 100_000 if first_id is None else first_id
    return spark.range(start, start + rows).selectExpr(
        "id", f"{100 * day} + rand({day}) * 100 as t", f"cast(rand({day + 50}) * 1000 as int) as b")


def _grown_table(spark, path: str, days: list[tuple[int, int]]) -> None:
    for i, (day, rows) in enumerate(days):
        qbeast.write(_day(spark, day, rows), path, "t,b", cube_size=CUBE,
                     mode="overwrite" if i == 0 else "append")


def _rows_and_samples(spark, path: str) -> tuple[list[int], dict[float, list[int]]]:
    table = qbeast.QbeastTable.for_path(spark, path)
    rows = sorted(r.id for r in table.to_df().select("id").collect())
    samples = {f: sorted(r.id for r in table.sample(f).select("id").collect()) for f in FRACTIONS}
    return rows, samples


def _live(path: str) -> list[int]:
    return sorted(rid for rid, files in QbeastSnapshot.load(path).files_by_revision().items() if files)


def test_merging_revisions_keeps_every_row_and_every_sample(spark, tmp_path):
    path = str(tmp_path / "t")
    # days 0, 1 and 8: the key outgrows the range (with headroom) twice -> three revisions
    _grown_table(spark, path, [(0, 6_000), (1, 6_000), (8, 6_000)])
    assert _live(path) == [1, 2, 3]
    before = _rows_and_samples(spark, path)

    result = qbeast.QbeastTable.for_path(spark, path).optimize(merge_revisions=True)

    merge = result.commits[0]
    assert merge.merged_revisions == (1, 2) and merge.target_revision_id == 3
    assert "merged into revision 3" in str(result)
    assert _live(path) == [3]
    assert _rows_and_samples(spark, path) == before
    assert check_index(spark, path) == {3: 18_000}
    snapshot = QbeastSnapshot.load(path)
    assert is_laid_out(snapshot.index_status(3))  # merged, then laid out
    check_weight_bands(spark, path)  # blocks of a cube (if several) hold disjoint weight ranges
    # the merge and the layout are metadata-only changes for Delta readers
    history = qbeast.QbeastTable.for_path(spark, path).history(limit=2)
    assert [e.operation for e in history] == ["OPTIMIZE", "OPTIMIZE"]


def test_default_maintenance_merges_small_old_revisions_within_its_budget(spark, tmp_path):
    path = str(tmp_path / "t")
    _grown_table(spark, path, [(0, 12_000)])
    # rows over days 0 and 1: they grow the range (revision 2, as large as revision 1) and lie
    # over revision 1's rows, so a query there reads the levels of both trees (about 6 files)
    # where one tree of their rows has 4
    wide = spark.range(12_000, 24_000).selectExpr("id", "rand(5) * 200 as t",
                                                  "cast(rand(6) * 1000 as int) as b")
    qbeast.write(wide, path, "t,b")
    assert _live(path) == [1, 2]
    before = _rows_and_samples(spark, path)
    result = qbeast.QbeastTable.for_path(spark, path).optimize(max_rewrite_ratio=2.0)
    assert result.commits[0].merged_revisions == (1,)
    assert _live(path) == [2]
    assert _rows_and_samples(spark, path) == before
    assert check_index(spark, path) == {2: 24_000}


def _day_range(day: int) -> str:
    return f"t >= {100 * day} and t < {100 * day + 100}"


def test_appends_along_a_growing_key_are_left_in_place(spark, tmp_path):
    """A daily model's appends: each lies in a range no other file touches. The default
    maintenance rewrites nothing (a layout would spread each day over a file per tree level),
    headroom keeps the revisions few, a day's range reads that day's file, and samples read a
    prefix of each file, about the bytes they need."""
    from qbeast.operations.tiering import Placement

    path = str(tmp_path / "t")
    table = qbeast.QbeastTable.for_path(spark, path)
    days = 12
    written = []
    for day in range(days):
        appended = qbeast.write(_day(spark, day, 3_000), path, "t,b", cube_size=CUBE,
                                mode="overwrite" if day == 0 else "append")
        written.append(set(appended.files))
        result = table.optimize(max_rewrite_ratio=2.0)
        assert not result.commits, result
    assert "in place" in str(result)
    snapshot = QbeastSnapshot.load(path)
    assert len(_live(path)) <= 4  # log2(12) = 3.6: headroom opens a revision per 4x growth
    placement = Placement.of(snapshot)
    assert not placement.misplaced(f.path for f in snapshot.files())
    for day in (0, 5, days - 1):  # the files that day's append wrote, and no other
        plan = table.read_plan(filter=_day_range(day))
        assert {os.path.basename(p) for p in plan.paths} == written[day], day
    total = sum(f.size for f in snapshot.files())
    # every file here is written on the driver (3,000 rows each) by pyarrow, whose smallest
    # band row groups carry about 100 bytes more than parquet-mr's: 1.27x at 10% (1.25x with
    # the first day's file from Spark's writer); a sample reading whole files would need 10x
    for f in (0.1, 0.2, 0.5):
        assert table.read_plan(fraction=f).selected_bytes <= 1.3 * f * total, f
    rows, samples = _rows_and_samples(spark, path)
    assert rows == sorted(r.id for d in range(days) for r in _day(spark, d, 3_000).collect())
    # asked for explicitly, the layout still runs, and keeps every row and sample
    laid = table.optimize()
    assert laid.commits and _rows_and_samples(spark, path) == (rows, samples)


def test_appends_over_rows_already_there_count_for_the_layout(spark, tmp_path):
    """Late rows spread over every earlier day lie over the other files: those count for the
    layout budget, while the days in place do not (the note says how many bytes stay)."""
    path = str(tmp_path / "t")
    space = {"t_min": 0.0, "t_max": 1000.0, "b_min": 0, "b_max": 1000}
    qbeast.write(_day(spark, 0, 3_000), path, "t,b", cube_size=CUBE, column_stats=space)
    table = qbeast.QbeastTable.for_path(spark, path)
    for day in range(1, 6):
        qbeast.write(_day(spark, day, 3_000), path, "t,b")
    deferred = table.optimize(max_rewrite_ratio=2.0)
    assert not deferred.commits and "nothing to lay out" in str(deferred)
    late = spark.range(100_000, 103_000).selectExpr("id", "rand(3) * 600 as t",
                                                   "cast(rand(4) * 1000 as int) as b")
    qbeast.write(late, path, "t,b")
    small = table.optimize(max_rewrite_ratio=2.0)
    assert not small.commits and "more bytes appended are in place" in str(small)
    before = _rows_and_samples(spark, path)
    qbeast.write(late.selectExpr("id + 10000 as id", "t", "b"), path, "t,b")
    qbeast.write(late.selectExpr("id + 20000 as id", "t", "b"), path, "t,b")
    laid = table.optimize(max_rewrite_ratio=2.0)
    assert laid.commits and "laying out" in str(laid)
    assert is_laid_out(QbeastSnapshot.load(path).index_status(1))
    rows, samples = _rows_and_samples(spark, path)
    assert set(before[0]) <= set(rows) and len(rows) == 18_000 + 9_000
    for f, ids in before[1].items():
        assert set(ids) <= set(samples[f])


def test_an_append_as_large_as_the_table_over_its_keys_is_misplaced(spark, tmp_path):
    """The same keys written again lie over every level of the tree already there: a spot of an
    appended file meets the table's files and the append's own, about twice what a laid-out tree
    of all the rows gives, so every appended file is misplaced and the layout brings the files a
    point query reads back down."""
    path = str(tmp_path / "t")
    qbeast.write(spark.range(8_000), path, "id", cube_size=100)
    first = {f.path for f in QbeastSnapshot.load(path).files()}
    qbeast.write(spark.range(8_000), path, "id", mode="append")
    snapshot = QbeastSnapshot.load(path)
    appended = {f.path for f in snapshot.files()} - first
    placement = Placement.of(snapshot)
    assert appended and placement.misplaced(appended) == appended
    table = qbeast.QbeastTable.for_path(spark, path)

    points = range(0, 8_000, 97)

    def point_files() -> float:
        return sum(len(table.read_plan(filter=f"id = {i}").files) for i in points) / len(points)

    before = point_files()
    laid = table.optimize()
    assert laid.commits and is_laid_out(QbeastSnapshot.load(path).index_status(1))
    assert point_files() < 0.7 * before
    assert table.to_df().count() == 16_000


def test_a_large_closed_revision_hands_over_only_what_it_received(spark, tmp_path):
    path = str(tmp_path / "t")
    table = qbeast.QbeastTable.for_path(spark, path)
    _grown_table(spark, path, [(0, 12_000)])
    # rows inside revision 1's range, twice: appended to it over its tree, not laid out
    for first_id in (50_000, 60_000):
        qbeast.write(_day(spark, 0, 2_000, first_id=first_id).where("t > 1 and t < 99"), path, "t,b")
    qbeast.write(_day(spark, 2, 2_000), path, "t,b")  # opens revision 2, far smaller
    assert _live(path) == [1, 2]
    received = received_since_layout(QbeastSnapshot.load(path), 1)
    assert received.paths and received.only_appends
    before = _rows_and_samples(spark, path)

    result = table.optimize(max_rewrite_ratio=2.0)

    assert any("merge deferred" in n for n in result.notes)  # 12k+ rows > 2 x 2k rows
    moved = result.commits[0]
    assert moved.merged_revisions == (1,) and set(moved.files_removed) == set(received.paths)
    snapshot = QbeastSnapshot.load(path)
    assert is_laid_out(snapshot.index_status(1))  # what stays is the laid-out tree
    assert appended_since_layout(snapshot, 1) == 0
    # revision 2 received the moved files, but only appends pay for its layout: moved rows are
    # indexed with its thresholds and bands already, and counting them made every move pay for
    # a second rewrite of the whole revision
    into = received_since_layout(snapshot, 2)
    moved_in = set(moved.files_added)
    assert moved_in and moved_in <= set(into.paths) and into.bytes > 0
    assert into.appended_bytes == appended_since_layout(snapshot, 2) == 0
    assert len(result.commits) == 1 and any("revision 2: layout deferred" in n for n in result.notes)
    assert _rows_and_samples(spark, path) == before
    rows = check_index(spark, path)
    assert sum(rows.values()) == len(before[0]) and set(rows) == {1, 2}
    # a laid-out closed revision costs nothing more
    again = table.optimize(max_rewrite_ratio=2.0)
    assert all(c.revision_id != 1 for c in again.commits)


def test_the_layout_budget_reads_the_log_back_to_the_last_layout_only(spark, tmp_path, monkeypatch):
    from qbeast.delta.log import DeltaLog

    path = str(tmp_path / "t")
    space = {"t_min": 0.0, "t_max": 1000.0, "b_min": 0, "b_max": 1000}
    qbeast.write(_day(spark, 0, 4_000), path, "t,b", cube_size=CUBE, column_stats=space)
    for day in range(1, 4):
        qbeast.write(_day(spark, day, 1_000), path, "t,b")
    table = qbeast.QbeastTable.for_path(spark, path)
    laid = table.optimize()
    layout_version = laid.versions[0]
    appended = 0
    for day in range(4, 7):
        result = qbeast.write(_day(spark, day, 500), path, "t,b")
        files = DeltaLog.for_path(path).snapshot().files
        appended += sum(files[p].size for p in result.files)
    snapshot = QbeastSnapshot.load(path)
    read: list[int] = []
    original = DeltaLog.read_commit

    def recording(self, version):
        read.append(version)
        return original(self, version)

    monkeypatch.setattr(DeltaLog, "read_commit", recording)
    assert appended_since_layout(snapshot, 1) == appended
    assert sorted(read) == list(range(layout_version, snapshot.version + 1))
    read.clear()
    # with a budget to reach, the walk stops as soon as it is reached
    assert appended_since_layout(snapshot, 1, enough=1) > 0
    assert read == [snapshot.version]


def test_merge_options_are_checked(spark, tmp_path):
    path = str(tmp_path / "t")
    _grown_table(spark, path, [(0, 500)])
    table = qbeast.QbeastTable.for_path(spark, path)
    with pytest.raises(InvalidOptionError, match="merge_revisions"):
        table.optimize(merge_revisions="yes")
    with pytest.raises(InvalidOptionError, match="cannot be combined with files, revision_id"):
        table.optimize(revision_id=1, merge_revisions=True)
    with pytest.raises(InvalidOptionError, match="cannot be combined"):
        table.optimize(fraction=0.5, max_rewrite_ratio=2.0)
    # a table with one revision: nothing to merge, and it says why nothing was rewritten
    result = table.optimize(merge_revisions=True)
    assert not result.commits and "already laid out" in str(result)
