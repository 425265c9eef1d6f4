"""The writer's vectorized OTree steps against straightforward row-by-row references.

The references below follow FORMAT §6.2 (a), (c) and §6.3 literally (one point at a time, CubeId
objects), so they are slow but obviously right; the engine's numpy versions must agree exactly.
No Spark needed.
"""
from __future__ import annotations

import numpy as np
import pytest

from qbeast.core.cube_id import CubeId
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT, fraction, normalized_to_weight
from qbeast.index.assignment import assigned_cube_ids, build_write_plan
from qbeast.index.estimation import (
    ExistingThresholds,
    estimate_cube_weights,
    estimated_block_sizes,
    estimation_fraction,
    group_cube_size,
    local_tree_domains,
)


def reference_local_tree(coords, weights, gcs, existing=None):
    """FORMAT §6.2 (a): points in ascending weight, each into the first accepting cube."""
    existing = existing or {}
    count: dict[CubeId, int] = {}
    last: dict[CubeId, int] = {}
    for i in np.argsort(weights, kind="stable"):
        w = int(weights[i])
        for cube in CubeId.containers(coords[i]):
            limit = existing.get(cube, MAX_WEIGHT)
            inner = limit < MAX_WEIGHT
            count.setdefault(cube, 0)
            if count[cube] < gcs and (not inner or w < limit):
                count[cube] += 1
                last[cube] = w
                break
    nw = {}
    for cube, c in count.items():
        limit = existing.get(cube, MAX_WEIGHT)
        if limit < MAX_WEIGHT:
            nw[cube] = fraction(last.get(cube, limit))
        elif c >= gcs:
            nw[cube] = fraction(last[cube])
        else:
            nw[cube] = gcs / c
    tree = {c: float(n) for c, n in count.items()}
    domains = {}
    for cube in sorted(count, key=lambda c: -c.depth):
        parent = cube.parent
        if parent is None:
            domains[cube] = tree[cube]
        else:
            domains[cube] = tree[cube] / (1.0 - nw[parent])
            tree[parent] += tree[cube]
    return domains


def reference_assign(weights_map, coords, weights):
    """FORMAT §6.3: the first container without an entry or with weight <= threshold."""
    out = []
    for point, w in zip(coords, weights):
        for cube in CubeId.containers(point):
            if cube not in weights_map or w <= weights_map[cube]:
                out.append(cube.string)
                break
    return out


def _data(rng, n, d, skewed):
    if skewed:
        coords = rng.beta(0.3, 3.0, size=(n, d))
        coords[: n // 10] = 0.25  # a heavy spike of identical points
    else:
        coords = rng.random((n, d))
    weights = rng.integers(MIN_WEIGHT, MAX_WEIGHT, size=n, endpoint=True).astype(np.int32)
    return coords, weights


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("skewed", [False, True])
def test_local_tree_matches_row_by_row_reference(d, skewed):
    rng = np.random.default_rng(d * 10 + skewed)
    coords, weights = _data(rng, 3000, d, skewed)
    cubes, domains = local_tree_domains(coords, weights, gcs=40)
    expected = reference_local_tree(coords, weights, 40)
    assert sorted(cubes) == sorted(expected)
    got = dict(zip(cubes, domains))
    for cube, value in expected.items():
        assert got[cube] == pytest.approx(value, rel=1e-12)
    assert got[CubeId.root(d)] == len(coords)


def test_local_tree_respects_existing_inner_thresholds():
    rng = np.random.default_rng(7)
    coords, weights = _data(rng, 2000, 2, False)
    root = CubeId.root(2)
    existing = {
        root: -1_500_000_000,
        root.child(0): -500_000_000,
        root.child(3): MAX_WEIGHT,  # an existing leaf: no restriction
        root.child(1).child(2): 0,  # below a cube that does not exist: reached through a new cube
    }
    lookup = ExistingThresholds.from_thresholds(2, existing)
    cubes, domains = local_tree_domains(coords, weights, 50, lookup)
    expected = reference_local_tree(coords, weights, 50, existing)
    assert sorted(cubes) == sorted(expected)
    got = dict(zip(cubes, domains))
    for cube, value in expected.items():
        assert got[cube] == pytest.approx(value, rel=1e-12)


def test_identical_points_build_a_chain_of_full_cubes():
    # CubeDomainsBuilderTest: 100 points at one location with gcs 40 -> tree sizes 40, 40, 20.
    coords = np.full((100, 2), 0.3)
    weights = np.arange(100, dtype=np.int32) * 1000
    cubes, domains = local_tree_domains(coords, weights, gcs=40)
    assert [c.depth for c in cubes] == [0, 1, 2]
    assert domains[0] == 100


def test_group_cube_size_formula():
    # EstimateGroupCubeSizeTest cases (FORMAT §11).
    assert group_cube_size(1_000_000, 1, 10_000, 100_000) == 1_000_000
    assert group_cube_size(1_000_000, 1, 1_000_000, 100_000) == 100_000
    assert group_cube_size(1_000_000, 20, 1_000_000, 100_000) == 50_000
    assert group_cube_size(1_000_000, 15, 2_000_000, 100_000) == 50_000
    assert group_cube_size(100, 8, 1000, 100_000) == 30


def test_root_threshold_of_a_first_write_is_weight_of_dcs_over_n():
    root = CubeId.root(2)
    weights = estimate_cube_weights({root: 300_000.0}, 10_000)
    assert weights[root] == -2004318071  # the v07 fixture's root (FORMAT §6.2 c)
    assert estimate_cube_weights({root: 900.0}, 1000) == {root: MAX_WEIGHT}


def test_cube_weights_skip_children_of_leaves_and_clamp_existing():
    root = CubeId.root(1)
    a, b = root.child(0), root.child(1)
    domains = {root: 10_000.0, a: 800.0, b: 9000.0, a.child(0): 5.0, b.child(1): 4000.0}
    weights = estimate_cube_weights(domains, 1000)
    assert weights[root] == normalized_to_weight(0.1)
    assert weights[a] == MAX_WEIGHT  # domain <= dcs: a leaf
    assert a.child(0) not in weights  # under a leaf
    assert weights[b] == normalized_to_weight(0.1 + 1000 / 9000)
    clamped = estimate_cube_weights(domains, 1000, {root: -2_000_000_000, b: MAX_WEIGHT})
    assert clamped[root] == -2_000_000_000  # never raised above the stored threshold
    assert clamped[b] < MAX_WEIGHT  # an existing leaf may become inner


def test_cubes_an_append_does_not_reach_keep_their_thresholds():
    root = CubeId.root(1)
    a, b = root.child(0), root.child(1)
    stored = {root: normalized_to_weight(0.1), a: normalized_to_weight(0.4), b: normalized_to_weight(0.3)}
    # the append's rows all fall in a: the root's threshold drops with the summed domain, a's too
    merged = {root: 20_000.0, a: 15_000.0, b: 5_000.0, b.child(0): 2_000.0}
    appended = {root: 10_000.0, a: 10_000.0}
    everywhere = estimate_cube_weights(merged, 1000, stored)
    assert everywhere[b] < stored[b]  # without input domains b is lowered with its parent
    kept = estimate_cube_weights(merged, 1000, stored, input_domains=appended)
    assert kept[root] == everywhere[root] < stored[root] and kept[a] < stored[a]
    assert kept[b] == stored[b]  # not reached: kept (stored rows weigh more than the new root's)
    assert kept[b.child(0)] > kept[b]  # below it, estimates start from its kept threshold


def test_block_sizes_follow_threshold_fractions():
    root = CubeId.root(1)
    child = root.child(1)
    w = {root: normalized_to_weight(0.25), child: MAX_WEIGHT}
    sizes = estimated_block_sizes(w, {root: 1000.0, child: 600.0})
    assert sizes[root] == int((fraction(w[root]) - 0.0) * 1000)
    assert sizes[child] == int((1.0 - fraction(w[root])) * 600)


@pytest.mark.parametrize("d", [2, 3])
def test_assignment_matches_reference_and_rollup_groups(d):
    rng = np.random.default_rng(3 + d)
    coords, weights = _data(rng, 4000, d, True)
    cubes, domains = local_tree_domains(coords, weights, gcs=60)
    domain_map = dict(zip(cubes, domains))
    thresholds = estimate_cube_weights(domain_map, 60)
    sizes = estimated_block_sizes(thresholds, domain_map)
    plan = build_write_plan(d, thresholds, sizes, 60)
    got = assigned_cube_ids(plan, coords, weights)
    assert list(got) == reference_assign(thresholds, coords, weights)
    # every row's file is its cube's rollup group (or the nearest ancestor's)
    _, files = plan.assign(coords, weights)
    assert files.min() >= 0 and files.max() < plan.file_count
    by_cube: dict[str, set[int]] = {}
    for cube, f in zip(got, files.tolist()):
        by_cube.setdefault(cube, set()).add(f)
    assert all(len(fs) == 1 for fs in by_cube.values())


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_lookup_grid_assigns_as_the_level_by_level_walk(d):
    """The grid gather plus the walk below it choose what the plain walk from the root chooses,
    for trees deeper than the grid (a spike of identical points), with coordinates on the dyadic
    cube bounds, on 0 and on 1, and with weights equal to thresholds."""
    rng = np.random.default_rng(40 + d)
    coords, weights = _data(rng, 6000, d, True)
    cubes, domains = local_tree_domains(coords, weights, gcs=25)
    thresholds = estimate_cube_weights(dict(zip(cubes, domains)), 25)
    plan = build_write_plan(d, thresholds, estimated_block_sizes(thresholds, dict(zip(cubes, domains))), 25)
    grid = plan.lookup_grid()
    assert 0 < grid.depth < max(c.depth for c in plan.tree.cubes)  # some rows go below the grid
    edges = rng.integers(0, 65, size=(4000, d)) / 64.0  # 0, 1 and every bound down to depth 6
    inner = [t for t in thresholds.values() if t < MAX_WEIGHT]
    test_coords = np.vstack([coords, edges])
    test_weights = np.concatenate([weights, rng.choice(inner, size=len(edges))]).astype(np.int32)
    got_cubes, got_files = plan.assign(test_coords, test_weights)
    n = len(test_coords)
    want_cubes, want_files = np.empty(n, np.int64), np.empty(n, np.int32)
    plan._walk(want_cubes, want_files, test_weights.astype(np.int64), np.arange(n),
               np.zeros(n, np.int64), test_coords.copy())
    assert np.array_equal(got_cubes, want_cubes)
    assert np.array_equal(got_files, want_files)
    assert list(assigned_cube_ids(plan, test_coords, test_weights)) == reference_assign(
        thresholds, test_coords, test_weights)


def test_lookup_grid_is_not_shipped_with_the_plan():
    import pickle

    root = CubeId.root(2)
    plan = build_write_plan(2, {root: 0, root.child(1): MAX_WEIGHT}, {root: 10, root.child(1): 5}, 100)
    plan.lookup_grid()
    copy = pickle.loads(pickle.dumps(plan))
    assert copy._grid is None
    coords = np.array([[0.1, 0.9], [1.0, 1.0]])
    assert [a.tolist() for a in copy.assign(coords, np.array([7, 7]))] == \
        [a.tolist() for a in plan.assign(coords, np.array([7, 7]))]


def test_plan_describes_cubes_outside_the_plan_as_leaves():
    root = CubeId.root(2)
    plan = build_write_plan(2, {root: 0}, {root: 10}, 100)
    coords = np.array([[0.9, 0.1], [0.1, 0.1]])
    cube_ids, files = plan.assign(coords, np.array([5, -5], dtype=np.int32))
    assert plan.cube_and_threshold(int(cube_ids[0])) == ("g", MAX_WEIGHT)
    assert plan.cube_and_threshold(int(cube_ids[1])) == ("", 0)
    assert files.tolist() == [0, 0]


def test_threshold_markers_pin_lowered_and_empty_inner_cubes():
    """FORMAT §13: cubes whose threshold rows were placed by get a block even without rows."""
    from qbeast.core.blocks import Block
    from qbeast.core.index_status import IndexStatus
    from qbeast.core.revision import Revision
    from qbeast.core.transformations import LinearTransformation
    from qbeast.core.transformers import LinearTransformer
    from qbeast.core.types import QDataType
    from qbeast.index.thresholds import threshold_markers

    revision = Revision(1, 0, "t", 100, (LinearTransformer("x", QDataType.DOUBLE),),
                        (LinearTransformation.create(0.0, 1.0, QDataType.DOUBLE),))
    root = CubeId.root(1)
    low, high = root.child(0), root.child(1)
    deep = high.child(1)
    existing = IndexStatus.from_files(revision, [("old.parquet", [
        Block("", -1_900_000_000, -1_000_000_000, 100),
        Block(low.string, -900_000_000, MAX_WEIGHT, 40),
        Block(high.string, -900_000_000, MAX_WEIGHT, 40),
    ])])
    thresholds = {root: -1_500_000_000, low: MAX_WEIGHT, high: 0, deep: MAX_WEIGHT}
    plan = build_write_plan(1, thresholds, {root: 100, low: 100, high: 100, deep: 100}, 50)
    written = {7: [Block(low.string, 5, MAX_WEIGHT, 3), Block(deep.string, 9, MAX_WEIGHT, 4)]}
    markers = threshold_markers(written, plan, existing)
    got = {block.cube: (block.min_weight, block.max_weight, block.element_count)
           for _, block in markers}
    assert got == {"": (-1_500_000_000, -1_500_000_000, 0), high.string: (0, 0, 0)}
    assert {file_id for file_id, _ in markers} == {7}
    # a threshold that did not go down needs no marker; a new inner cube without rows does
    same = {root: -1_000_000_000, low: MAX_WEIGHT, high: 0, deep: MAX_WEIGHT}
    plan = build_write_plan(1, same, {root: 100, low: 100, high: 100, deep: 100}, 50)
    markers = threshold_markers(written, plan, existing)
    assert {block.cube for _, block in markers} == {high.string}
    fresh = threshold_markers({0: [Block(deep.string, 9, MAX_WEIGHT, 4)]}, plan, None)
    assert {block.cube for _, block in fresh} == {"", high.string}


@pytest.mark.parametrize(
    ("count", "cube_size", "sample_rows", "expected"),
    [
        (20_000_000, 100_000, 2_000_000, 0.1),  # the sample size decides
        (20_000_000, 1_000_000, 2_000_000, 0.1),
        (20_000_000, 10_000, 2_000_000, 0.1),  # 1,000 sampled rows per cube would need only 0.1
        (20_000_000, 5_000, 2_000_000, 0.2),  # ...here 0.2: small cubes raise the fraction
        (20_000_000, 500, 2_000_000, 1.0),  # cubes too small to sample: every row
        (2_000_000, 100_000, 2_000_000, 1.0),  # not more rows than the sample size
        (50_000_000, 100_000, 0, 1.0),  # 0 disables sampling
    ],
)
def test_estimation_fraction(count, cube_size, sample_rows, expected):
    assert estimation_fraction(count, cube_size, sample_rows) == pytest.approx(expected)


def test_sampled_local_trees_scale_to_the_full_domains():
    """Trees over a 10% sample with a 10% cube size give domains that, scaled by 10, match the full ones."""
    rng = np.random.default_rng(5)
    n = 200_000
    coords = rng.random((n, 2))
    weights = rng.integers(MIN_WEIGHT, MAX_WEIGHT, n, dtype=np.int64).astype(np.int32)
    full_cubes, full_domains = local_tree_domains(coords, weights, 2_000)
    keep = rng.random(n) < 0.1
    sample_cubes, sample_domains = local_tree_domains(coords[keep], weights[keep], 200)
    full = dict(zip(full_cubes, full_domains))
    scaled = {c: d / 0.1 for c, d in zip(sample_cubes, sample_domains)}
    full_weights = estimate_cube_weights(full, 2_000)
    sampled_weights = estimate_cube_weights(scaled, 2_000)
    top = [c for c in full_weights if c.depth <= 2]
    assert top and all(c in sampled_weights for c in top)
    for cube in top:  # within 10%: a sampled cube of 200 rows has a ~7% standard error
        a, b = fraction(full_weights[cube]), fraction(sampled_weights[cube])
        assert abs(a - b) <= 0.10 * max(a, b), (cube, a, b)
