"""The thresholds optimize re-assigns rows with (no Spark): effective per cube, pass-through for
ancestors without blocks, and the writer's plan walking rows with them (FORMAT §6.3, §8)."""
from __future__ import annotations

import json

import numpy as np

from qbeast.core.blocks import Block
from qbeast.core.cube_id import CubeId
from qbeast.core.index_status import IndexStatus
from qbeast.core.revision import Revision
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.operations.optimize import _indexed_selection, _staging_selection, pass_through_thresholds
from qbeast.snapshot import QbeastSnapshot
from qbeast.index.assignment import assigned_cube_ids, build_write_plan

from operations_helpers import REVISION_1


def status_without_root() -> IndexStatus:
    # Root has no block (e.g. its only file was removed); g has two blocks with different thresholds.
    files = [
        ("f1", [Block("A", -100, MAX_WEIGHT, 5), Block("g", -90, 1000, 7)]),
        ("f2", [Block("g", -80, 500, 3), Block("gA", 600, MAX_WEIGHT, 2)]),
    ]
    return IndexStatus.from_files(Revision.from_json(REVISION_1), files)


def test_thresholds_are_effective_and_missing_ancestors_pass_rows_through():
    thresholds = pass_through_thresholds(status_without_root())
    cube = lambda s: CubeId.from_string(2, s)  # noqa: E731
    assert thresholds == {cube("A"): MAX_WEIGHT, cube("g"): 500, cube("gA"): MAX_WEIGHT,
                          cube(""): MIN_WEIGHT - 1}


def test_rows_never_stop_in_a_cube_without_blocks():
    thresholds = pass_through_thresholds(status_without_root())
    plan = build_write_plan(2, thresholds, {}, 100)
    coords = np.array([[0.1, 0.1], [0.2, 0.8], [0.7, 0.2], [0.6, 0.1], [0.9, 0.9]])
    weights = np.array([MIN_WEIGHT, MIN_WEIGHT, 500, 501, 0], dtype=np.int64)
    # A: leaf; Q: no cube there, becomes a new leaf under the (block-less) root; g keeps weights
    # <= 500 (its effective threshold, the lower of its two blocks); heavier rows go to gA; w: new leaf.
    assert assigned_cube_ids(plan, coords, weights).tolist() == ["A", "Q", "g", "gA", "w"]


def test_indexed_fraction_selects_files_with_a_light_enough_block(make_table):
    def tags(*min_weights: int) -> dict[str, str]:
        blocks = ",".join(f'{{"cubeId":"","minWeight":{w},"maxWeight":{MAX_WEIGHT},"elementCount":1}}'
                          for w in min_weights)
        return {"revision": "1", "blocks": f"[{blocks}]"}

    log = make_table(
        [(range(0, 3), tags(MIN_WEIGHT)), (range(3, 6), tags(2_000_000_000, -2_000_000_000)),
         (range(6, 9), tags(0)), (range(9, 12), None)],
        {"qbeast.lastRevisionID": "1", "qbeast.revision.1": REVISION_1},
    )
    snapshot = QbeastSnapshot.load(log.table_path)
    first_id = {f.path: int(json.loads(f.stats)["minValues"]["id"]) for f in snapshot.files()}
    # fraction(-2e9) ~ 0.0343 and fraction(0) ~ 0.5: a 10% sample starts in the first two files.
    assert sorted(first_id[f.path] for f in _indexed_selection(snapshot, 1, 0.1)) == [0, 3]
    assert sorted(first_id[f.path] for f in _indexed_selection(snapshot, 1, 1.0)) == [0, 3, 6]


def test_staging_selection_is_oldest_first_until_the_fraction_of_bytes():
    from qbeast.delta.actions import AddFile

    files = [AddFile(name, {}, size, mtime, True) for name, size, mtime in
             [("c", 30, 3), ("a", 10, 1), ("b", 60, 2), ("d", 100, 4)]]
    names = lambda fs: [f.path for f in fs]  # noqa: E731
    assert names(_staging_selection(files, 1.0)) == ["a", "b", "c", "d"]
    assert names(_staging_selection(files, 0.35)) == ["a", "b"]  # 10 < 70 -> take b (crosses 70)
    assert names(_staging_selection(files, 0.05)) == ["a"]
    assert names(_staging_selection(files, 0.5)) == ["a", "b", "c"]  # 70 < 100 -> take c


def test_laid_out_means_one_block_per_cube_at_its_threshold():
    from qbeast.index.thresholds import files_to_lay_out, is_laid_out

    revision = Revision.from_json(REVISION_1)
    fresh = [  # as a write leaves it: one block per cube, plus a zero-element threshold marker
        ("f1", [Block("", -2000, -1000, 5), Block("A", -900, MAX_WEIGHT, 4)]),
        ("f2", [Block("g", -990, 100, 6), Block("gA", 200, MAX_WEIGHT, 2), Block("Q", -5, -5, 0)]),
    ]
    assert is_laid_out(IndexStatus.from_files(revision, fresh))
    # an append that reached g again: two blocks holding rows
    appended = fresh + [("f3", [Block("g", -950, 100, 3)])]
    assert not is_laid_out(IndexStatus.from_files(revision, appended))
    assert is_laid_out(IndexStatus.from_files(revision, appended), {"f1"})  # f1's cubes are fine
    assert not is_laid_out(IndexStatus.from_files(revision, appended), {"f2"})
    # only the files holding g's blocks are rewritten; f1 (root, A) stays
    assert files_to_lay_out(IndexStatus.from_files(revision, appended)) == {"f2", "f3"}
    # an append that lowered g's threshold with a marker: g's rows above 50 belong below it now
    lowered = fresh + [("f3", [Block("g", 50, 50, 0)])]
    assert not is_laid_out(IndexStatus.from_files(revision, lowered))
    # the marker's file too: dropping it would raise g's threshold back over rows placed below
    assert files_to_lay_out(IndexStatus.from_files(revision, lowered)) == {"f2", "f3"}
    # g's heavier rows move into its subtree: gA's file is rewritten with it, A's file is not
    apart = [("f1", fresh[0][1]), ("f2", [Block("g", -990, 100, 6)]), ("f4", [Block("gA", 200, MAX_WEIGHT, 2)]),
             ("f3", [Block("g", 50, 50, 0)])]
    assert files_to_lay_out(IndexStatus.from_files(revision, apart)) == {"f2", "f3", "f4"}
