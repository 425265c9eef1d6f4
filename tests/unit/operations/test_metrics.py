"""index_metrics: OTree shape figures computed from the block tags."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from qbeast.errors import InvalidOptionError
from qbeast.operations.metrics import SizeStats, index_metrics
from qbeast.snapshot import NotAQbeastTableError

from operations_helpers import REVISION_1

MAX = 2**31 - 1


def blocks_tag(*blocks: tuple[str, int, int, int]) -> dict[str, str]:
    return {"revision": "1", "blocks": json.dumps(
        [{"cubeId": c, "minWeight": lo, "maxWeight": hi, "elementCount": n} for c, lo, hi, n in blocks])}


def as_fraction(weight: int) -> float:
    return (weight + 2**31) / (2**32 - 1)


@pytest.fixture
def indexed_table(make_table):
    # root has two blocks (thresholds -1e9 and -1.5e9), A and gA are leaves, g is inner.
    return make_table(
        [
            (range(0, 140), blocks_tag(("", -2147483000, -1000000000, 100), ("A", -900, MAX, 40))),
            (range(140, 175), blocks_tag(("g", -999999999, 0, 30), ("gA", 5, MAX, 5))),
            (range(175, 195), blocks_tag(("", -2147483000, -1500000000, 20))),
            (range(195, 205), None),  # a staging file
        ],
        {"qbeast.lastRevisionID": "1", "qbeast.revision.1": REVISION_1},
    )


def test_metrics_of_a_revision(indexed_table):
    files = indexed_table.snapshot().files.values()
    tagged_sizes = sorted(f.size for f in files if f.tags)
    m = index_metrics(indexed_table.table_path)
    assert (m.revision_id, m.indexed_columns, m.dimension_count, m.desired_cube_size) == (
        1, ("id", "x"), 2, 100)
    assert (m.element_count, m.cube_count, m.block_count, m.file_count) == (195, 4, 5, 3)
    assert m.bytes == sum(tagged_sizes)
    assert m.height == 3
    assert m.avg_fanout == pytest.approx((2 + 1) / 2)  # root -> A, g ; g -> gA
    assert m.cube_element_count == SizeStats.of([120, 40, 30, 5])
    assert m.cube_element_count.mean == pytest.approx(statistics.mean([120, 40, 30, 5]))
    assert m.cube_element_count.stddev == pytest.approx(statistics.pstdev([120, 40, 30, 5]))
    assert m.block_element_count.count == 5 and m.block_element_count.max == 100
    assert (m.blocks_per_cube.min, m.blocks_per_cube.max) == (1, 2)
    assert sorted([m.blocks_per_file.min, m.blocks_per_file.max]) == [1, 2]
    assert (m.file_bytes.min, m.file_bytes.max) == (tagged_sizes[0], tagged_sizes[-1])
    by_depth = {d.depth: d for d in m.depths}
    assert [(d, by_depth[d].cube_count, by_depth[d].element_count) for d in (0, 1, 2)] == [
        (0, 1, 120), (1, 2, 70), (2, 1, 5)]
    assert by_depth[0].avg_max_weight_fraction == pytest.approx(as_fraction(-1500000000))
    assert by_depth[1].inner_cube_count == 1
    assert by_depth[1].avg_max_weight_fraction == pytest.approx(as_fraction(0))
    assert by_depth[2].avg_max_weight_fraction is None


def test_metrics_print_and_convert(indexed_table):
    m = index_metrics(indexed_table.table_path, revision_id=1)
    text = str(m)
    for expected in ("revision id:          1", "element count:        195", "cubes:                4",
                     "blocks:               5", "height:               3", "average fanout:       1.500",
                     "per depth:"):
        assert expected in text
    assert json.loads(json.dumps(m.to_dict()))["depths"][0]["element_count"] == 120


def test_staging_revision_counts_rows_from_stats(make_table):
    log = make_table([(range(0, 7), None), (range(7, 10), None)],
                     {"qbeast.lastRevisionID": "1", "qbeast.revision.1": REVISION_1,
                      "qbeast.revision.0": json.dumps({
                          "revisionID": 0, "timestamp": 1, "tableID": "t", "desiredCubeSize": 100,
                          "columnTransformers": [
                              {"className": "io.qbeast.core.transform.EmptyTransformer", "columnName": "id"},
                              {"className": "io.qbeast.core.transform.EmptyTransformer", "columnName": "x"}],
                          "transformations": [
                              {"className": "io.qbeast.core.transform.EmptyTransformation"},
                              {"className": "io.qbeast.core.transform.EmptyTransformation"}]})})
    m = index_metrics(log.table_path, revision_id=0)
    assert (m.element_count, m.file_count, m.cube_count, m.height) == (10, 2, 1, 1)
    assert m.block_element_count == SizeStats.of([7, 3])


def test_metrics_errors(make_table, indexed_table):
    with pytest.raises(InvalidOptionError, match=r"revision_id 7 does not exist.*\[1\]"):
        index_metrics(indexed_table.table_path, revision_id=7)
    with pytest.raises(InvalidOptionError, match="revision_id must be an integer"):
        index_metrics(indexed_table.table_path, revision_id="1")
    plain = make_table([(range(0, 3), None)], {}, name="plain")
    with pytest.raises(NotAQbeastTableError, match="convert"):
        index_metrics(plain.table_path)


def test_size_stats_quartiles():
    s = SizeStats.of([4, 1, 3, 2])
    assert (s.min, s.max, s.p25, s.p50, s.p75) == (1, 4, 1.75, 2.5, 3.25)
    assert SizeStats.of([]).count == 0 and SizeStats.of([]).text() == "(none)"


def test_metrics_of_the_qbeast_spark_fixture(qbeast_fixtures: Path):
    table = qbeast_fixtures / "v07-ecommerce-300k"
    m = index_metrics(str(table))
    # FORMAT §12: 16 files, 300,000 rows, 63 blocks (one per cube), cube size 10000.
    assert (m.file_count, m.element_count, m.block_count, m.cube_count) == (16, 300_000, 63, 63)
    assert m.desired_cube_size == 10_000 and m.indexed_columns == ("user_id", "brand")
    assert m.bytes == sum(p.stat().st_size for p in table.glob("*.parquet"))
    assert m.blocks_per_cube.max == 1
    assert sum(d.cube_count for d in m.depths) == 63
    assert m.depths[0].cube_count == 1 and m.avg_fanout <= 4
