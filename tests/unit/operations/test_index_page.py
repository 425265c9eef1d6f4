"""The index picture and its HTML page, without Spark: the model against the block tags, the
explanation's reasons, and the page opened in a real headless browser (Debian's chromium).

The large case writes only a Delta log (10,000 cubes described by the AddFile tags of 100 files
that are never opened): drawing reads the log, not the data.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from browser import dump_dom, elements, png_colours, requires_chromium

from qbeast.cli import main
from qbeast.core.cube_id import CubeId
from qbeast.core.weight import MAX_WEIGHT, fraction
from qbeast.delta.actions import AddFile, Metadata
from qbeast.delta.log import DeltaLog
from qbeast.errors import InvalidOptionError
from qbeast.operations.explain import explain_read
from qbeast.operations.index_page import DRAW_BUDGET, show_index, write_page
from qbeast.operations.index_picture import picture_of_snapshot, table_picture
from qbeast.snapshot import QbeastSnapshot

from operations_helpers import REVISION_1, SCHEMA


def blocks_tag(*blocks: tuple[str, int, int, int]) -> dict[str, str]:
    return {"revision": "1", "blocks": json.dumps(
        [{"cubeId": c, "minWeight": lo, "maxWeight": hi, "elementCount": n} for c, lo, hi, n in blocks])}


@pytest.fixture
def small_table(make_table) -> str:
    # root in two files (thresholds -1e9 and -1.5e9); A and gA leaves, g inner; a staging file
    log = make_table(
        [
            (range(0, 140), blocks_tag(("", -2147483000, -1000000000, 100), ("A", -900, MAX_WEIGHT, 40))),
            (range(140, 175), blocks_tag(("g", -999999999, 0, 30), ("gA", 5, MAX_WEIGHT, 5))),
            (range(175, 195), blocks_tag(("", -2147483000, -1500000000, 20))),
            (range(195, 205), None),
        ],
        {"qbeast.lastRevisionID": "1", "qbeast.revision.1": REVISION_1},
    )
    return log.table_path


def test_the_picture_holds_every_cube_file_and_depth_of_the_tags(small_table):
    snapshot = QbeastSnapshot.load(small_table)
    picture = picture_of_snapshot(snapshot)
    staging, revision = picture.revisions
    assert (staging.revision_id, staging.staging, staging.cubes, staging.rows) == (0, True, (), 10)
    assert [f.rows for f in staging.files] == [10]
    status = snapshot.index_status(1)
    assert picture.cube_count == len(status) == 4
    by_id = {c.id: c for c in revision.cubes}
    for cube in status:
        drawn = by_id[cube.cube.string]
        assert (drawn.depth, drawn.rows, drawn.blocks) == (cube.cube.depth, cube.element_count, len(cube.blocks))
        assert drawn.max_weight == pytest.approx(fraction(cube.max_weight))
        assert {revision.files[i].path for i in drawn.files} == set(cube.files)
    assert by_id[""].parent is None and by_id["gA"].parent == "g"
    assert by_id[""].subtree_rows == 195 and by_id["g"].subtree_rows == 35
    # cube bytes share each file's size by rows: they add up to the revision's bytes
    assert sum(c.bytes for c in revision.cubes) == pytest.approx(revision.bytes, abs=len(revision.cubes))
    assert [(d.depth, d.cubes, d.blocks, d.files, d.rows) for d in revision.depths] == [
        (0, 1, 2, 2, 120), (1, 2, 2, 2, 70), (2, 1, 1, 1, 5)]
    band = {f.rows: (f.min_weight, f.max_weight) for f in revision.files}
    assert band[35] == (pytest.approx(fraction(-999999999)), 1.0)
    assert band[20] == (pytest.approx(fraction(-2147483000)), pytest.approx(fraction(-1500000000)))


def test_the_explanation_gives_one_line_per_reason_with_totals(small_table):
    explained = explain_read(small_table, fraction=0.3, filter="id < 150")
    lines = str(explained).splitlines()
    assert lines[0].endswith("sample 0.3, filter id < 150")
    assert lines[1] == "filter prunes: id < 150"
    assert "index boxes:   revision 1: 2 of 4 cubes meet the filter's boxes on the indexed columns" in lines
    # the root's threshold (about 0.15) is below the sample's: the walk reaches A, whose block
    # holds only weights above 0.3, so only the root's two blocks are needed
    assert "weight bands:  revision 1: sample 0.3 needs 1 of those 2 cubes, 2 blocks" in lines
    assert "min/max stats: revision 1: 1 of 2 files dropped, 1 read, 1 cubes in them" in lines  # ids 175..194
    assert "min/max stats: revision 0: 1 of 1 files dropped, 0 read" in lines  # ids 195..204
    assert explained.cubes == ((1, ""),)
    assert (explained.files_read, explained.rows_read, explained.total_rows) == (1, 140, 205)
    assert lines[-1].startswith("total:         files 1 of 4, rows 140 of 205 (68.3%)")


def test_cubes_whose_files_the_statistics_drop_are_not_read(small_table):
    # ids 175..189: the boxes meet the root and A; A's only block is in the file of ids 0..139,
    # which the min/max statistics drop, so the read opens the root's other file only
    explained = explain_read(small_table, filter="id >= 175 and id < 190")
    assert "index boxes:   revision 1: 2 of 4 cubes meet the filter's boxes on the indexed columns" in str(explained)
    assert explained.revisions[-1].cubes_selected == 2 and explained.cubes == ((1, ""),)
    assert [f.rows for f in explained.files] == [20]
    picture = picture_of_snapshot(QbeastSnapshot.load(small_table), explained)
    assert picture.selection is explained


def test_bad_arguments_name_the_argument(small_table, tmp_path):
    with pytest.raises(InvalidOptionError, match="sample fraction must be in"):
        table_picture(small_table, sample=1.5)
    with pytest.raises(InvalidOptionError, match="output must be an .html file"):
        show_index(small_table, tmp_path / "page.png")
    with pytest.raises(InvalidOptionError, match="png must be a .png file"):
        show_index(small_table, tmp_path / "page.html", png=tmp_path / "page.jpg")
    with open(tmp_path / "o", "w") as out, open(tmp_path / "e", "w") as err:
        assert main(["show", small_table, "--output", str(tmp_path / "p.html"), "--sample", "2"],
                    out=out, err=err) == 2
    assert (tmp_path / "e").read_text() == "qbeast show: error: sample fraction must be in [0, 1], got 2.0\n"
    assert not (tmp_path / "p.html").exists()


@requires_chromium
def test_the_page_draws_every_cube_and_marks_what_a_read_opens(small_table, tmp_path, capsys):
    page = tmp_path / "index.html"
    png = tmp_path / "index.png"
    assert main(["show", small_table, "--output", str(page), "--sample", "0.3", "--filter", "id < 150",
                 "--png", str(png)]) == 0
    printed = capsys.readouterr().out
    explained = explain_read(small_table, fraction=0.3, filter="id < 150")
    assert str(explained) in printed and f"wrote {page} and {png}" in printed
    html = page.read_text()
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html
    dom = dump_dom(page)
    cubes = elements(dom, "data-cube", "rect")
    assert sorted(c["data-cube"] for c in cubes) == ["1:", "1:A", "1:g", "1:gA"]
    assert [c["data-cube"] for c in cubes if c["data-selected"] == "true"] == ["1:"]
    files = elements(dom, "data-file", "tr")
    assert len(files) == 4  # three indexed files and the staging one (its ids are all >= 195)
    assert {f["data-file"] for f in files if f["data-selected"] == "true"} == {f.path for f in explained.files}
    (summary,) = elements(dom, "data-cubes-total")
    assert (summary["data-cubes-total"], summary["data-cubes-drawn"], summary["data-rendered"]) == ("4", "4", "true")
    (read,) = elements(dom, "data-rows-read")
    assert (read["data-files-read"], read["data-rows-read"]) == ("1", "140")
    assert len(elements(dom, "data-depth", "tr")) == 3
    assert [p["data-revision"] for p in elements(dom, "data-revision", "div")] == ["0", "1"]
    width, height, colours = png_colours(png)  # the screenshot `qbeast show --png` took
    assert (width, height) == (1400, 900) and colours > 50


def _write_large_log(path: Path, cubes: int = 10_000, per_file: int = 100) -> list[CubeId]:
    """A 2-dimensional tree of ``cubes`` cubes, breadth first (full levels, then part of the
    next), described by the tags of ``cubes / per_file`` files that are never written."""
    ids: list[CubeId] = []
    level = [CubeId.root(2)]
    while len(ids) < cubes:
        ids.extend(level[: cubes - len(ids)])
        level = [child for cube in level for child in cube.children()]
    deepest = ids[-1].depth
    adds = []
    for start in range(0, cubes, per_file):
        chunk = ids[start:start + per_file]
        blocks = []
        for cube in chunk:
            threshold = MAX_WEIGHT if cube.depth == deepest else -2**31 + (cube.depth + 1) * 2**28
            blocks.append({"cubeId": cube.string, "minWeight": -2**31 + cube.depth * 2**28,
                           "maxWeight": threshold, "elementCount": 50})
        stats = json.dumps({"numRecords": 50 * len(chunk), "minValues": {}, "maxValues": {}, "nullCount": {}})
        adds.append(AddFile(f"part-{start:05d}.parquet", {}, 4000 * len(chunk), 1700000000000, True, stats,
                            {"revision": "1", "blocks": json.dumps(blocks)}))
    log = DeltaLog.for_path(str(path))
    tx = log.start_transaction()
    tx.update_metadata(Metadata.create(SCHEMA, [], {"qbeast.lastRevisionID": "1", "qbeast.revision.1": REVISION_1}))
    tx.add_actions(adds)
    tx.commit("WRITE", {"mode": "Append"})
    return ids


@requires_chromium
def test_a_table_of_ten_thousand_cubes_renders_within_ten_seconds(tmp_path):
    table = tmp_path / "large"
    ids = _write_large_log(table)
    page = tmp_path / "large.html"
    started = time.monotonic()
    picture = table_picture(str(table), sample=0.4)
    write_page(picture, page)
    dom = dump_dom(page, timeout=30)
    elapsed = time.monotonic() - started
    assert picture.cube_count == 10_000
    (summary,) = elements(dom, "data-cubes-total")
    drawn, aggregated = int(summary["data-cubes-drawn"]), int(summary["data-cubes-aggregated"])
    # whole levels up to the budget are drawn, the rest is aggregated below them; none is lost
    assert drawn == len(elements(dom, "data-cube", "rect")) == 1 + 4 + 16 + 64 + 256 + 1024
    assert drawn <= DRAW_BUDGET and drawn + aggregated == 10_000
    assert sum(int(a["data-cubes"]) for a in elements(dom, "data-aggregate", "rect")) == aggregated
    # a 40% sample descends while a level's threshold ((depth + 1) / 16) is below 0.4: it reads
    # depths 0 to 6, the last of them aggregated
    assert len(picture.selection.cubes) == int(summary["data-cubes-selected-total"]) == 1365 + 4096
    assert int(summary["data-cubes-selected-drawn"]) == 1365
    assert int(summary["data-cubes-selected-aggregated"]) == 4096
    assert elapsed < 10, f"building and rendering 10,000 cubes took {elapsed:.1f}s"

    # a click on an aggregate (here asked for by the address) draws its subtree a few levels
    # deep, within the expansion budget; the counts still add up to every cube
    target = next(c for c in ids if c.depth == 5)  # drawn, its subtree aggregated
    dom = dump_dom(page, timeout=30, fragment=f"#expand=1:{target.string}")
    (summary,) = elements(dom, "data-cubes-total")
    below = [c for c in ids if c.depth > 5 and target.is_ancestor_of(c)]
    assert len(below) == 4 + 16  # its children and grandchildren exist (depths 6 and 7)
    assert int(summary["data-cubes-drawn"]) == drawn + len(below)
    assert int(summary["data-cubes-aggregated"]) == aggregated - len(below)
    drawn_ids = {e["data-cube"] for e in elements(dom, "data-cube", "rect")}
    assert {f"1:{c.string}" for c in below} <= drawn_ids
