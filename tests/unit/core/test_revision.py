"""Revision JSON, configuration keys, staging and the new-revision decision (FORMAT §3.8, §4)."""
from __future__ import annotations

import dataclasses
import json
import random

import numpy as np
import pyarrow.parquet as pq
import pytest

from qbeast.core.revision import (
    DEFAULT_CUBE_SIZE,
    LAST_REVISION_KEY,
    REPLICATED_SET_PREFIX,
    Revision,
    compute_revision_change,
    initial_revision,
    last_revision_id,
    plan_transformers,
    revision_key,
    revisions_from_configuration,
    staging_revision,
    staging_revision_for,
    updated_configuration,
    without_qbeast_keys,
)
from qbeast.core.transformations import (
    CDFNumericQuantilesTransformation,
    HashTransformation,
    IdentityTransformation,
    LinearTransformation,
    StringHistogramTransformation,
)
from qbeast.core.transformers import EmptyTransformer, HashTransformer, LinearTransformer, StringHistogramTransformer
from qbeast.core.types import QDataType
from qbeast.errors import FormatError, InvalidOptionError

SPEC_EXAMPLE = (
    '{"revisionID":12,"timestamp":12,"tableID":"test","desiredCubeSize":100,"columnTransformers":'
    '[{"className":"io.qbeast.core.transform.LinearTransformer","columnName":"test1","dataType":"DoubleDataType"}],'
    '"transformations":[{"className":"io.qbeast.core.transform.LinearTransformation","minNumber":0.0,'
    '"maxNumber":10.0,"nullValue":5.0,"orderedDataType":"DoubleDataType"}]}'
)


def _fixture_configurations(root):
    """Every metaData.configuration in the fixtures' JSON commits and checkpoint parquet files."""
    configs = []
    for path in sorted(root.glob("*/_delta_log/*.json")):
        for line in path.read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                configs.append((path, action["metaData"]["configuration"]))
    for path in sorted(root.glob("*/_delta_log/*.checkpoint.parquet")):
        for row in pq.read_table(path, columns=["metaData"]).column("metaData").to_pylist():
            if row is not None:
                configs.append((path, dict(row["configuration"])))
    return configs


def test_spec_example_round_trips_byte_for_byte():
    revision = Revision.from_json(SPEC_EXAMPLE)
    assert revision.revision_id == 12 and revision.columns == ["test1"]
    assert revision.to_json() == SPEC_EXAMPLE


def test_every_fixture_revision_reencodes_identically(qbeast_fixtures):
    configs = _fixture_configurations(qbeast_fixtures)
    assert len(configs) >= 8
    checked = 0
    for path, configuration in configs:
        revisions = revisions_from_configuration(configuration)
        assert int(configuration[LAST_REVISION_KEY]) in revisions, path
        for key, text in configuration.items():
            if key.startswith("qbeast.revision."):
                revision = revisions[int(key.rsplit(".", 1)[1])]
                assert revision.to_json() == text, path
                assert json.loads(revision.to_json()) == json.loads(text)
                checked += 1
    assert checked >= 16


# ----------------------------------------------------------------------------- configuration keys

I, D, S, F = QDataType.INTEGER, QDataType.DOUBLE, QDataType.STRING, QDataType.FLOAT


def _price_revision(rid=1, lo=0.0, hi=1000.0, cube_size=100) -> Revision:
    return Revision(rid, 1000, "/t", cube_size, (LinearTransformer("price", D),),
                    (LinearTransformation(lo, hi, (lo + hi) / 2, D),))


def test_staging_revision_matches_the_real_pair(qbeast_fixtures):
    log = qbeast_fixtures / "v07-ecommerce-300k" / "_delta_log" / "00000000000000000000.json"
    configuration = next(json.loads(line)["metaData"]["configuration"]
                         for line in log.read_text().splitlines() if "metaData" in line)
    revisions = revisions_from_configuration(configuration)
    assert revisions[0].is_staging and not revisions[1].is_staging
    assert staging_revision_for(revisions[1]).to_json() == configuration["qbeast.revision.0"]
    rebuilt = updated_configuration({}, revisions[1])
    assert rebuilt == {k: v for k, v in configuration.items() if k.startswith("qbeast.")}


def test_configuration_helpers():
    rev1 = _price_revision(1)
    cfg = updated_configuration({"delta.appendOnly": "false"}, rev1)
    assert cfg[LAST_REVISION_KEY] == "1" and revision_key(1) in cfg and revision_key(0) in cfg
    staging = Revision.from_json(cfg[revision_key(0)])
    assert staging.is_staging and staging.timestamp == rev1.timestamp - 1 and staging.columns == ["price"]
    cfg2 = updated_configuration(cfg, _price_revision(2, 0.0, 2000.0))
    assert cfg2[LAST_REVISION_KEY] == "2" and cfg2[revision_key(0)] == cfg[revision_key(0)]
    assert sorted(revisions_from_configuration(cfg2)) == [0, 1, 2]
    assert last_revision_id(cfg2) == 2 and last_revision_id({}) is None
    old = dict(cfg2, **{REPLICATED_SET_PREFIX + "1": '["", "A"]'})
    assert sorted(revisions_from_configuration(old)) == [0, 1, 2]  # replicated sets are not revisions
    assert without_qbeast_keys(old) == {"delta.appendOnly": "false"}
    # a first revision other than 1 gets no staging companion
    assert revision_key(0) not in updated_configuration({}, _price_revision(3))


@pytest.mark.parametrize(
    "cfg,match",
    [
        ({"qbeast.revision.x": SPEC_EXAMPLE}, "revision id"),
        ({"qbeast.revision.3": SPEC_EXAMPLE}, "holds revision 12"),
        ({LAST_REVISION_KEY: "one"}, LAST_REVISION_KEY),
    ],
)
def test_configuration_errors(cfg, match):
    with pytest.raises(FormatError, match=match):
        revisions_from_configuration(cfg)
        last_revision_id(cfg)


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda o: o.pop("revisionID"), "revisionID"),
        (lambda o: o.update(timestamp="12"), "timestamp"),
        (lambda o: o.update(desiredCubeSize=1.5), "desiredCubeSize"),
        (lambda o: o.update(tableID=None), "tableID"),
        (lambda o: o.update(columnTransformers={}), "arrays"),
        (lambda o: o["transformations"].append({"className": "io.qbeast.core.transform.EmptyTransformation"}), "1 columnTransformers but 2"),
        (lambda o: o["columnTransformers"][0].update(className="x.Y"), "x.Y"),
        (lambda o: o["transformations"][0].update(minNumber=0), "minNumber"),
    ],
)
def test_revision_json_errors(mutate, match):
    obj = json.loads(SPEC_EXAMPLE)
    mutate(obj)
    with pytest.raises(FormatError, match=match):
        Revision.from_json(json.dumps(obj))


def test_revision_json_syntax_errors():
    with pytest.raises(FormatError, match="not valid JSON"):
        Revision.from_json("{")
    with pytest.raises(FormatError, match="NaN"):
        Revision.from_json(SPEC_EXAMPLE.replace('"maxNumber":10.0', '"maxNumber":NaN'))
    with pytest.raises(FormatError, match="object"):
        Revision.from_json("[]")


def test_revision_without_transformations_and_deprecated_identity():
    empty = Revision.from_json(SPEC_EXAMPLE.split(',"transformations"')[0] + ',"transformations":[]}')
    assert empty.transformations == () and empty.to_json().endswith('"transformations":[]}')
    old = json.loads(SPEC_EXAMPLE)
    old["columnTransformers"][0]["dataType"] = "LongDataType"
    old["transformations"] = [{"className": "io.qbeast.core.transform.IdentityToZeroTransformation", "identityValue": 7}]
    revision = Revision.from_json(json.dumps(old))
    assert revision.transformations == (IdentityTransformation(7, QDataType.LONG),)


def test_transform_points():
    revision = Revision(1, 0, "t", 10, (LinearTransformer("a", I), HashTransformer("f", F)),
                        (LinearTransformation(0, 10, 5, I), HashTransformation(0)))
    points = revision.transform_points([np.array([0, 10, 7]), np.array([0.1, 1.5, 0.0])],
                                       [np.array([False, False, True]), None])
    assert points.shape == (3, 2)
    assert points[:, 0].tolist() == [0.0, 1.0, 0.5]
    # a Float column hashes the Float.toString text ("0.1"), not the double's
    assert points[0, 1] == HashTransformation(0).transform("0.1")
    assert points[1, 1] == HashTransformation(0).transform("1.5")
    with pytest.raises(InvalidOptionError, match="2 columns|indexes"):
        revision.transform_points([np.array([1])])
    with pytest.raises(InvalidOptionError, match="no transformations"):
        Revision(0, 0, "t", 1, (LinearTransformer("a", I),)).transform_points([np.array([1])])


# ----------------------------------------------------------------------------- FORMAT §3.8


def test_append_outside_range_creates_next_revision():
    # docs example: prices [1000, 2000] appended to a [0, 1000] linear revision; without
    # headroom the new range is exactly qbeast-spark's
    latest = _price_revision(4)
    new = compute_revision_change(latest, None, {"price_min": 1000.0, "price_max": 2000.0}, None, None, 777,
                                  rng=random.Random(0), headroom_percent=0)
    assert new is not None and new.revision_id == 5 and new.timestamp == 777
    assert (new.table_id, new.desired_cube_size, new.column_transformers) == ("/t", 100, latest.column_transformers)
    t = new.transformations[0]
    assert (t.min_number, t.max_number) == (0.0, 2000.0) and 0.0 <= t.null_value <= 2000.0


def test_growth_gets_headroom_on_the_side_it_grew():
    latest = _price_revision(4)
    new = compute_revision_change(latest, None, {"price_min": 1000.0, "price_max": 2000.0}, None, None, 777,
                                  rng=random.Random(0))  # default: 300% of the new span
    t = new.transformations[0]
    assert (t.min_number, t.max_number) == (0.0, 8000.0) and 0.0 <= t.null_value <= 8000.0
    assert isinstance(t.min_number, float) and isinstance(t.max_number, float)  # Double JSON typing
    # the next appends up to the headroom stay in that revision
    assert compute_revision_change(new, None, {"price_min": 2000.0, "price_max": 8000.0}, None, None, 778) is None
    down = compute_revision_change(latest, None, {"price_min": -500.0, "price_max": 10.0}, None, None, 779,
                                   headroom_percent=100)
    assert (down.transformations[0].min_number, down.transformations[0].max_number) == (-2000.0, 1000.0)


def test_growth_by_one_step_per_append_opens_logarithmically_many_revisions():
    # a date-like key growing by one unit per append (the daily incremental model): 30 appends
    # open revisions at appends 1, 2 and 8 only (the span quadruples at each growth), fewer than
    # log2(30)
    revision = compute_revision_change(None, ["day:linear"], {"day_min": 0, "day_max": 99}, 10, None, 1,
                                       data_types={"day": QDataType.LONG}, table_id="/t")
    opened = [1]
    for day in range(1, 30):
        stats = {"day_min": day * 100, "day_max": day * 100 + 99}
        new = compute_revision_change(revision, None, stats, None, None, day + 1)
        if new is not None:
            revision = new
            opened.append(day + 1)
            t = new.transformations[0]
            assert isinstance(t.min_number, int) and isinstance(t.max_number, int)
    assert opened == [1, 2, 8]


@pytest.mark.parametrize("data_type, low, high, grown_low, grown_high", [
    (QDataType.INTEGER, 0, 2**31 - 10, -(2**31), 2**31 - 1),
    (QDataType.LONG, 0, 2**63 - 10, -(2**63), 2**63 - 1024),
    (QDataType.FLOAT, 0.0, 3.0e38, -3.4028234663852886e38, 3.4028234663852886e38),
])
def test_headroom_stays_within_the_column_type(data_type, low, high, grown_low, grown_high):
    from qbeast.core.transformations import LinearTransformation

    t = LinearTransformation.create(low, high, data_type, random.Random(1))
    widened = t.with_headroom(1, 2, 5.0)  # grew on both sides past [1, 2]
    assert widened.min_number >= grown_low and widened.max_number <= grown_high
    assert (widened.min_number, widened.max_number) in {(grown_low, grown_high), (grown_low, high)} or \
        widened.max_number == grown_high
    assert widened.with_headroom(widened.min_number, widened.max_number, 5.0) is widened  # no growth


def test_append_inside_range_keeps_the_revision():
    latest = _price_revision()
    assert compute_revision_change(latest, "price", {"price_min": 10.0, "price_max": 900.0}, 100, None, 5) is None
    assert compute_revision_change(latest, ["price"], {"price_min": None, "price_max": None}, None, "", 5) is None


def test_cube_size_change_copies_transformations():
    latest = _price_revision()
    new = compute_revision_change(latest, None, {"price_min": 1.0, "price_max": 2.0}, 500, None, 9)
    assert new.desired_cube_size == 500 and new.transformations == latest.transformations
    with pytest.raises(InvalidOptionError, match="cubeSize"):
        compute_revision_change(latest, None, {}, 0, None, 9)


def test_indexed_columns_must_match():
    latest = Revision(1, 0, "t", 10, (LinearTransformer("a", I), LinearTransformer("b", I)),
                      (LinearTransformation(0, 1, 0, I), LinearTransformation(0, 1, 0, I)))
    for spec in ("b,a", "a", "a,b,c"):
        with pytest.raises(InvalidOptionError, match="overwrite"):
            compute_revision_change(latest, spec, {}, None, None, 1)


def test_explicit_type_change_and_typeless_spec():
    latest = Revision(1, 0, "t", 10, (LinearTransformer("a", I),), (LinearTransformation(0, 10, 5, I),))
    assert compute_revision_change(latest, "a", {"a_min": 1, "a_max": 2}, None, None, 1) is None
    assert compute_revision_change(latest, "a:linear", {"a_min": 1, "a_max": 2}, None, None, 1) is None
    new = compute_revision_change(latest, "a:hashing", {"a_min": 1, "a_max": 2}, None, None, 1,
                                  data_types={"a": I})
    assert new.column_transformers == (HashTransformer("a", I),)
    assert isinstance(new.transformations[0], HashTransformation)
    transformers, changed = plan_transformers(latest, "a:hashing")
    assert changed == [True] and transformers[0].type_name == "hashing"


def test_identity_then_linear_sequence():
    first = compute_revision_change(None, "a", {"a_min": 3, "a_max": 3}, 10, None, 1,
                                    data_types={"a": I}, table_id="t")
    assert first.revision_id == 1 and first.transformations == (IdentityTransformation(3, I),)
    assert compute_revision_change(first, None, {"a_min": 3, "a_max": 3}, None, None, 2) is None
    second = compute_revision_change(first, None, {"a_min": 1, "a_max": 3}, None, None, 2, rng=random.Random(1),
                                     headroom_percent=0)
    assert isinstance(second.transformations[0], LinearTransformation)
    assert (second.transformations[0].min_number, second.transformations[0].max_number) == (1, 3)
    # with the default headroom the range grows downwards only (where the data went): 300% of 2
    roomy = compute_revision_change(first, None, {"a_min": 1, "a_max": 3}, None, None, 2)
    assert (roomy.transformations[0].min_number, roomy.transformations[0].max_number) == (-5, 3)


def test_new_table_and_staging_get_all_new_transformations():
    base = initial_revision("/x", "a,s", {"a": I, "s": S}, None, 50)
    assert base.revision_id == 0 and base.desired_cube_size == DEFAULT_CUBE_SIZE and base.transformations == ()
    new = compute_revision_change(base, None, {"a_min": 1, "a_max": 9}, None, None, 60)
    assert new.revision_id == 1 and [type(t) for t in new.transformations] == [LinearTransformation, HashTransformation]
    staging = staging_revision("/x", ["a", "s"], 100, 5)
    assert staging.is_staging and staging.column_transformers == (EmptyTransformer("a"), EmptyTransformer("s"))
    from_staging = compute_revision_change(staging, "a,s:histogram", {"a_min": 1, "a_max": 1}, None, None, 6,
                                           data_types={"a": I, "s": S})
    assert from_staging.revision_id == 1
    assert from_staging.column_transformers == (LinearTransformer("a", I), StringHistogramTransformer("s", S))
    assert from_staging.transformations[0] == IdentityTransformation(1, I)
    with pytest.raises(InvalidOptionError, match="'s' is not in the data"):
        compute_revision_change(staging, "a,s", {}, None, None, 6, data_types={"a": I})
    with pytest.raises(InvalidOptionError, match="new table"):
        compute_revision_change(None, "a", {}, None, None, 1)


def test_quantiles_need_column_stats_then_are_kept():
    base = initial_revision("t", "q:quantiles", {"q": D}, 10, 0)
    with pytest.raises(InvalidOptionError, match="'q_quantiles'"):
        compute_revision_change(base, None, {}, None, None, 1)
    first = compute_revision_change(base, None, {}, None, '{"q_quantiles": [0, 5, 10]}', 1)
    assert first.transformations == (CDFNumericQuantilesTransformation((0.0, 5.0, 10.0), D),)
    assert compute_revision_change(first, None, {}, None, None, 2) is None
    changed = compute_revision_change(first, None, {}, None, {"q_quantiles": [0, 6, 10]}, 2)
    assert changed.transformations == (CDFNumericQuantilesTransformation((0.0, 6.0, 10.0), D),)


def test_linear_column_stats_widen_the_space():
    latest = _price_revision()
    new = compute_revision_change(latest, None, {"price_min": 5.0, "price_max": 6.0}, None,
                                  {"price_min": -50.0, "price_max": 3000.0}, 3)
    t = new.transformations[0]
    assert (t.min_number, t.max_number) == (-50.0, 3000.0)
    with pytest.raises(InvalidOptionError, match="'price_min' and 'price_max'"):
        compute_revision_change(latest, None, {}, None, {"price_min": -50.0}, 3)
    with pytest.raises(InvalidOptionError, match="'price_mn'"):
        compute_revision_change(latest, None, {}, None, {"price_mn": -50.0}, 3)


def test_histogram_default_kept_and_custom_from_column_stats():
    latest = Revision(1, 0, "t", 10, (StringHistogramTransformer("b", S),), (StringHistogramTransformation(),))
    default_stats = {"b_histogram": list("abcdefghijklmnopqrstuvwxyz")}
    assert compute_revision_change(latest, None, default_stats, None, None, 1) is None
    new = compute_revision_change(latest, None, default_stats, None, {"b_histogram": ["a", "n", "z"]}, 1)
    assert new.transformations == (StringHistogramTransformation(("a", "n", "z")),)


def test_fixture_rows_fall_in_their_files_cubes(qbeast_fixtures):
    """Real data check of Linear(Int) + StringHistogram coordinates (FORMAT §12).

    Each v07 file holds one cube and its children. With revision 1's transformations every row
    must fall in the file's shallowest cube, and each block's cube must contain at least its
    ``elementCount`` rows of the file. A shifted histogram (boundaries "b".."z") or a linear
    minimum moved by 1e6 breaks the second property, so the check has teeth.
    """
    from qbeast.core.cube_id import codes_to_strings, point_codes

    table = qbeast_fixtures / "v07-ecommerce-300k"
    actions = [json.loads(line) for line in (table / "_delta_log" / "00000000000000000000.json").read_text().splitlines()]
    configuration = next(a["metaData"]["configuration"] for a in actions if "metaData" in a)
    revision = revisions_from_configuration(configuration)[1]
    rows = 0
    for add in (a["add"] for a in actions if "add" in a):
        blocks = json.loads(add["tags"]["blocks"])
        top = min((b["cubeId"] for b in blocks), key=len)
        data = pq.read_table(table / add["path"], columns=revision.columns)
        values = [data.column(c).to_numpy(zero_copy_only=False) for c in revision.columns]
        nulls = [np.asarray(data.column(c).is_null()) for c in revision.columns]
        points = revision.transform_points(values, nulls)
        depth = max(len(b["cubeId"]) for b in blocks)  # 2 dimensions -> one symbol per level
        cubes = np.array(codes_to_strings(2, point_codes(points, depth)))
        assert all(c.startswith(top) for c in cubes), add["path"]
        for block in blocks:
            inside = np.char.startswith(cubes.astype(str), block["cubeId"]).sum()
            assert inside >= block["elementCount"], (add["path"], block)
        rows += data.num_rows
    assert rows == 300_000


# ----------------------------------------------------------------------------- revision merge


def test_a_revision_fits_within_one_whose_ranges_contain_its_own():
    from qbeast.core.revision import fits_within

    old = _price_revision(1, 0.0, 1000.0)
    wider = _price_revision(3, -10.0, 4000.0)
    assert fits_within(old, wider)
    assert fits_within(old, _price_revision(2, 0.0, 1000.0))  # the same range
    assert not fits_within(wider, old)  # rows of the wider one may lie outside
    assert not fits_within(_price_revision(1, -20.0, 100.0), wider)  # one side beyond


def test_a_revision_fits_only_with_the_same_columns_and_transformers():
    from qbeast.core.revision import fits_within

    old = _price_revision(1)
    other_column = Revision(3, 1000, "/t", 100, (LinearTransformer("cost", D),),
                            (LinearTransformation(0.0, 5000.0, 1.0, D),))
    hashed = Revision(3, 1000, "/t", 100, (HashTransformer("price", D),),
                      (HashTransformation.create(random.Random(3)),))
    assert not fits_within(old, other_column)
    assert not fits_within(old, hashed)
    # hashed columns cover every value
    assert fits_within(dataclasses.replace(hashed, revision_id=1), hashed)
    # staging holds no index: its rows are indexed by optimize's staging step, not merged
    assert not fits_within(staging_revision("/t", ["price"], 100, 5), old)
