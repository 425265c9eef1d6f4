"""The default maintenance's plan for old revisions (merge into the latest, or close), pure."""
from __future__ import annotations

import random

from qbeast.core.revision import Revision
from qbeast.core.transformations import LinearTransformation
from qbeast.core.transformers import LinearTransformer
from qbeast.core.types import QDataType
from qbeast.operations.tiering import is_layout_of, plan_old_revisions

D = QDataType.DOUBLE


def _revision(rid: int, lo: float, hi: float, column: str = "t") -> Revision:
    return Revision(rid, 1000 + rid, "/t", 100, (LinearTransformer(column, D),),
                    (LinearTransformation.create(lo, hi, D, random.Random(rid)),))


REVISIONS = {1: _revision(1, 0, 10), 2: _revision(2, 0, 40), 3: _revision(3, 0, 160)}


def test_small_old_revisions_inside_the_latest_space_are_merged_together():
    plan = plan_old_revisions(REVISIONS, {1: 100, 2: 300, 3: 200}, 3, ratio=2.0)
    assert plan.merge == (1, 2) and plan.close == () and plan.notes == ()


def test_old_revisions_larger_than_the_budget_wait_and_are_closed():
    plan = plan_old_revisions(REVISIONS, {1: 100, 2: 900, 3: 400}, 3, ratio=2.0)
    assert plan.merge == () and plan.close == (1, 2)
    assert "merge deferred" in plan.notes[0] and "1000 bytes" in plan.notes[0]
    # without a budget (optimize(merge_revisions=True)) they are merged whatever their size
    assert plan_old_revisions(REVISIONS, {1: 100, 2: 900, 3: 400}, 3, ratio=None).merge == (1, 2)


def test_revisions_whose_files_are_in_place_are_kept_as_they_are():
    # revisions 1 and 2 hold earlier stretches of a growing key: merging them would only spread
    # their rows over more files
    plan = plan_old_revisions(REVISIONS, {1: 100, 2: 300, 3: 200}, 3, ratio=2.0, in_place={1, 2})
    assert plan.merge == () and plan.close == ()
    assert "revision(s) 1, 2 kept as they are" in plan.notes[0]
    plan = plan_old_revisions(REVISIONS, {1: 100, 2: 300, 3: 200}, 3, ratio=2.0, in_place={2})
    assert plan.merge == (1,) and plan.close == ()


def test_revisions_outside_the_latest_space_are_never_merged():
    revisions = {**REVISIONS, 1: _revision(1, -5, 10), 2: _revision(2, 0, 40, column="u")}
    plan = plan_old_revisions(revisions, {1: 10, 2: 10, 3: 400}, 3, ratio=None)
    assert plan.merge == () and plan.close == (1, 2)
    assert "do not fit" in plan.notes[0]


def test_revisions_without_files_and_staging_are_left_alone():
    plan = plan_old_revisions(REVISIONS, {0: 50, 1: 0, 3: 400}, 3, ratio=2.0)
    assert plan == plan_old_revisions(REVISIONS, {3: 400}, 3, ratio=2.0)
    assert plan.merge == () and plan.close == ()


def test_only_an_in_place_optimize_of_the_revision_is_its_layout():
    assert is_layout_of("OPTIMIZE", {"revisionId": "2", "numFilesRewritten": "4"}, 2)
    assert not is_layout_of("OPTIMIZE", {"revisionId": "1"}, 2)
    # a merge into 2 and the staging step append to it as far as its layout is concerned
    assert not is_layout_of("OPTIMIZE", {"mergedRevisionIds": "[1]", "targetRevisionId": "2"}, 2)
    assert not is_layout_of("OPTIMIZE", {"revisionId": "0", "targetRevisionId": "2"}, 2)
    assert not is_layout_of("WRITE", {"revisionId": "2"}, 2)
