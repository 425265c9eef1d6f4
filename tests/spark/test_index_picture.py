"""``explain_read`` and ``show_index`` against Spark's own scan of the same read.

The table has two revisions (an out-of-range append makes the second) and a weight-band layout
with files read as prefixes by samples. For a sample, a filter and both, the files and rows the
explanation states are the ones Spark's file scan opened and produced (``inputFiles()`` and the
scan's ``numOutputRows``), and the page, opened in a headless browser, draws every cube of both
revisions and marks exactly the cubes and files of the explanation.
"""
from __future__ import annotations

import pytest
from browser import dump_dom, elements, png_colours, requires_chromium

import qbeast
from qbeast import QbeastTable

pytestmark = pytest.mark.spark

READS = [(0.1, None), (None, "x < 20"), (0.3, "id >= 3500")]


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory) -> QbeastTable:
    path = str(tmp_path_factory.mktemp("picture") / "events")
    qbeast.write(spark.range(4000).selectExpr("id", "cast(id % 97 as double) as x"), path, "id,x",
                 cube_size=300)
    qbeast.write(spark.range(4000, 6000).selectExpr("id", "cast(id % 89 as double) as x"), path)
    table = QbeastTable.for_path(spark, path)
    assert table.revision_ids()[-2:] == [1, 2]
    return table


def _scan(df) -> tuple[set[str], int]:
    """Files and rows of the file scan of ``df``'s execution (Spark's own numbers)."""
    df.collect()
    rows: list[int] = []

    def walk(node) -> None:
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
            return
        if name == "FileSourceScanExec":
            rows.append(int(node.metrics().apply("numOutputRows").value()))
        children = node.children().iterator()
        while children.hasNext():
            walk(children.next())

    walk(df._jdf.queryExecution().executedPlan())
    assert len(rows) == 1
    return {p.rsplit("/", 1)[-1] for p in df.inputFiles()}, rows[0]


@pytest.mark.parametrize(("fraction", "filter_sql"), READS)
def test_the_explanation_is_what_sparks_scan_reads(spark, table, fraction, filter_sql):
    explained = table.explain_read(filter=filter_sql, fraction=fraction)

    def read():
        return table.sample(fraction, filter=filter_sql) if fraction else table.to_df(filter=filter_sql)

    # the rows of the opened files (or prefixes): what the scan produces when parquet's own
    # row-group statistics do not skip more
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        files, rows = _scan(read())
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")
    assert files == {f.path.rsplit("/", 1)[-1] for f in explained.files}
    assert rows == explained.rows_read
    pushed_files, pushed_rows = _scan(read())
    assert pushed_files == files and pushed_rows <= rows
    assert explained.files_read < explained.total_files
    assert explained.total_rows == 6000 and explained.bytes_read < explained.total_bytes
    text = str(explained)
    assert text.splitlines()[-1].startswith(
        f"total:         files {explained.files_read} of {explained.total_files}, rows {rows} of 6000")
    if filter_sql:
        assert "index boxes:   revision 1:" in text and "min/max stats: revision 2:" in text
    if fraction:
        assert f"weight bands:  revision 2: sample {fraction:g} needs" in text


@requires_chromium
def test_the_page_marks_the_planners_selection(table, tmp_path):
    snapshot = table.snapshot()
    cubes = {(r, c.cube.string) for r in (1, 2) for c in snapshot.index_status(r)}
    for i, (fraction, filter_sql) in enumerate(READS[1:]):
        png = tmp_path / f"page{i}.png"
        page = table.show_index(str(tmp_path / "page.html"), fraction=fraction, filter=filter_sql,
                                png=str(png))
        explained = table.explain_read(filter=filter_sql, fraction=fraction)
        dom = dump_dom(page)
        drawn = elements(dom, "data-cube", "rect")
        assert {tuple(d["data-cube"].split(":", 1)) for d in drawn} == {(str(r), c) for r, c in cubes}
        assert len(drawn) == len(cubes)
        selected = {d["data-cube"] for d in drawn if d["data-selected"] == "true"}
        assert selected == {f"{r}:{c}" for r, c in explained.cubes} and selected
        read = {f["data-file"] for f in elements(dom, "data-file", "tr") if f["data-selected"] == "true"}
        assert read == {f.path for f in explained.files}
        assert [p["data-revision"] for p in elements(dom, "data-revision", "div")][-2:] == ["1", "2"]
        _, _, colours = png_colours(png)
        assert colours > 50
