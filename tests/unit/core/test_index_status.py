"""IndexStatus of a revision built from its files' blocks (FORMAT §6.1, §6.2 b)."""
from __future__ import annotations

import pytest

from qbeast.core.blocks import Block, staging_block
from qbeast.core.cube_id import CubeId
from qbeast.core.index_status import IndexStatus
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT, fraction
from qbeast.errors import FormatError


def cube(s: str) -> CubeId:
    return CubeId.from_string(2, s)


def test_blocks_grouped_by_cube_in_preorder(revisions):
    rev = revisions.linear_revision(2, cube_size=100)
    files = [
        ("f1", [Block("w", -10, 500, 60), Block("", MIN_WEIGHT, -1000, 100)]),
        ("f2", [Block("w", -20, 300, 40), Block("A", 0, MAX_WEIGHT, 7)]),
        ("f3", [Block("wQ", 400, MAX_WEIGHT, 5), Block("w", 5, 900, 1)]),
    ]
    status = IndexStatus.from_files(rev, files)
    assert [s.cube.string for s in status.cubes] == ["", "A", "w", "wQ"]
    w = status.get(cube("w"))
    assert w.max_weight == 300  # min over the blocks
    assert w.element_count == 101
    assert w.files == ("f1", "f2", "f3")
    assert [fb.path for fb in w.blocks] == ["f1", "f2", "f3"]
    assert status.files == ("f1", "f2", "f3")
    assert cube("wQ") in status and cube("g") not in status
    assert len(status) == 4
    assert [s.cube.string for s in status.subtree(cube("w"))] == ["w", "wQ"]
    assert status.ceiling_index(cube("g")) == 2  # first cube >= g is w


def test_normalized_weights(revisions):
    rev = revisions.linear_revision(2, cube_size=100)
    status = IndexStatus.from_files(
        rev,
        [("f", [Block("", MIN_WEIGHT, -858993459, 30), Block("A", 1, MAX_WEIGHT, 40),
                Block("Q", 1, MAX_WEIGHT, 0)])],
    )
    assert status.normalized_weight(CubeId.root(2)) == fraction(-858993459)
    assert status.normalized_weight(cube("A")) == 100 / 40
    # No counted element (e.g. a block-less file): still a leaf, no division by zero.
    assert status.normalized_weight(cube("Q")) >= 1.0
    assert status.normalized_weights()[cube("A")] == 2.5
    with pytest.raises(KeyError, match="not in the index"):
        status.normalized_weight(cube("ww"))


def test_tree_sizes_and_cube_domains(revisions):
    rev = revisions.linear_revision(2)
    status = IndexStatus.from_files(
        rev,
        [("f", [Block("", 0, 0, 10), Block("A", 0, 0, 5), Block("w", 0, 0, 3),
                Block("wQ", 0, 0, 2), Block("gA", 0, 0, 4)])],
    )
    sizes = status.tree_sizes()
    # g has no block but its child gA does: it appears with the subtree size.
    assert sizes == {
        CubeId.root(2): 24.0, cube("A"): 5.0, cube("w"): 5.0, cube("wQ"): 2.0,
        cube("g"): 4.0, cube("gA"): 4.0,
    }
    domains = status.cube_domains()
    assert domains[CubeId.root(2)] == 24.0
    assert domains[cube("A")] == pytest.approx(24 * 5 / 14)
    assert domains[cube("g")] == pytest.approx(24 * 4 / 14)
    assert domains[cube("w")] == pytest.approx(24 * 5 / 14)
    assert domains[cube("wQ")] == pytest.approx(domains[cube("w")])  # only child
    assert domains[cube("gA")] == pytest.approx(domains[cube("g")])


def test_deep_missing_ancestors_are_filled(revisions):
    rev = revisions.linear_revision(1)
    deep = CubeId.from_codes(1, [1, 0, 1, 1])
    status = IndexStatus.from_files(rev, [("f", [Block(deep.string, 0, MAX_WEIGHT, 9)])])
    sizes = status.tree_sizes()
    assert set(sizes) == set(deep.ancestors()) | {deep}
    assert all(v == 9.0 for v in sizes.values())
    assert all(v == 9.0 for v in status.cube_domains().values())


def test_staging_files_give_a_root_only_index(revisions):
    rev = revisions.linear_revision(2, cube_size=50)
    status = IndexStatus.from_files(rev, [("a", [staging_block()]), ("b", [staging_block()])])
    assert [s.cube for s in status.cubes] == [CubeId.root(2)]
    assert status.cubes[0].files == ("a", "b")
    assert status.normalized_weight(CubeId.root(2)) >= 1.0


def test_empty_index(revisions):
    status = IndexStatus.from_files(revisions.linear_revision(2), [])
    assert len(status) == 0 and status.cube_domains() == {} and status.files == ()


def test_block_of_another_dimension_count_is_a_format_error(revisions):
    with pytest.raises(FormatError, match="beyond dimension"):
        IndexStatus.from_files(revisions.linear_revision(1), [("f", [Block("Q", 0, 0, 1)])])


def test_v07_fixture_index(v07_index):
    status = v07_index
    assert len(status) == 63  # one write: each cube has one block
    assert sum(s.element_count for s in status.cubes) == 300_000
    root = status.cubes[0]
    assert root.cube == CubeId.root(2)
    # First write of N = 300,000 rows with cube size 10,000: root threshold Weight(1/30) (§6.2 c).
    assert root.max_weight == -2004318071
    assert status.normalized_weight(root.cube) == fraction(-2004318071)
    # Every child of an inner cube admits only heavier rows (FORMAT §6.3 invariant).
    for s in status.cubes:
        parent = status.get(s.cube.parent) if s.cube.parent else None
        if parent is not None:
            assert s.max_weight >= parent.max_weight
            assert min(fb.block.min_weight for fb in s.blocks) > parent.max_weight
    assert status.cube_domains()[root.cube] == 300_000.0


def test_pre06_fixture_index(qbeast_fixtures):
    """A pre-0.6 table (flat string tags, one block per file) gives a consistent index too."""
    import json

    from qbeast.core.blocks import TagFormat, decode_tags
    from qbeast.core.revision import Revision
    from qbeast.core.weight import weight_from_fraction

    log = qbeast_fixtures / "pre06-logs-test-table" / "_delta_log" / "00000000000000000000.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    config = next(a["metaData"]["configuration"] for a in actions if "metaData" in a)
    rev = Revision.from_json(config["qbeast.revision.1"])
    files = []
    for a in actions:
        if "add" in a:
            decoded = decode_tags(a["add"]["tags"])
            assert decoded.format is TagFormat.LEGACY_FLAT
            files.append((a["add"]["path"], decoded.blocks))
    status = IndexStatus.from_files(rev, files)
    total = sum(s.element_count for s in status.cubes)
    assert total == 100_000 and len(status) == len(files) == 20
    # First write of N rows with cube size dcs: the root threshold is Weight(dcs / N) (§6.2 c).
    assert status.cubes[0].cube == CubeId.root(2)
    assert status.cubes[0].max_weight == weight_from_fraction(rev.desired_cube_size / total)
    assert status.cube_domains()[CubeId.root(2)] == float(total)
