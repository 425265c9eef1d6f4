"""QbeastSnapshot: the log read through the format (no Spark needed)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from qbeast.core.blocks import Block, encode_tags
from qbeast.core.revision import LAST_REVISION_KEY, revision_key, staging_revision
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT, weight_from_fraction
from qbeast.delta.actions import AddFile, Metadata
from qbeast.delta.log import DeltaLog
from qbeast.errors import FormatError, InvalidOptionError
from qbeast.snapshot import NotAQbeastTableError, QbeastSnapshot

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "x", "type": "integer", "nullable": True, "metadata": {}},
            {"name": "y", "type": "double", "nullable": True, "metadata": {}},
        ],
    }
)


def _add(path: str, tags: dict[str, str] | None, rows: int = 10) -> AddFile:
    return AddFile(path, {}, 100, 0, True, json.dumps({"numRecords": rows}), tags)


def _revision_one_json() -> str:
    return json.dumps(
        {
            "revisionID": 1,
            "timestamp": 1700000000001,
            "tableID": "t",
            "desiredCubeSize": 100,
            "columnTransformers": [
                {"className": "io.qbeast.core.transform.LinearTransformer", "columnName": "x", "dataType": "IntegerDataType"},
                {"className": "io.qbeast.core.transform.LinearTransformer", "columnName": "y", "dataType": "DoubleDataType"},
            ],
            "transformations": [
                {"className": "io.qbeast.core.transform.LinearTransformation", "minNumber": 0, "maxNumber": 10, "nullValue": 5, "orderedDataType": "IntegerDataType"},
                {"className": "io.qbeast.core.transform.LinearTransformation", "minNumber": 0.0, "maxNumber": 1.0, "nullValue": 0.5, "orderedDataType": "DoubleDataType"},
            ],
        },
        separators=(",", ":"),
    )


@pytest.fixture()
def qbeast_table(tmp_path: Path) -> Path:
    """A two-revision-id table (staging 0 + revision 1) with one staging and two indexed files."""
    staging = staging_revision("t", ["x", "y"], 100, 1700000000000)
    config = {
        LAST_REVISION_KEY: "1",
        revision_key(0): staging.to_json(),
        revision_key(1): _revision_one_json(),
    }
    log = DeltaLog.for_path(str(tmp_path))
    threshold = weight_from_fraction(0.5)
    txn = log.start_transaction()
    txn.update_metadata(Metadata.create(SCHEMA, configuration=config))
    txn.add_actions(
        _add("staged.parquet", None, rows=7),
        _add("root.parquet", encode_tags(1, [Block("", MIN_WEIGHT, threshold, 100)])),
        _add(
            "leaves.parquet",
            encode_tags(1, [Block("A", threshold + 1, MAX_WEIGHT, 30), Block("w", threshold + 5, MAX_WEIGHT, 40)]),
        ),
        # a second block of the root with a lower threshold: the effective one is the minimum
        _add("root2.parquet", encode_tags(1, [Block("", MIN_WEIGHT, threshold - 10, 5)])),
    )
    txn.commit("WRITE")
    return tmp_path


def test_groups_files_by_revision_with_staging_under_zero(qbeast_table: Path) -> None:
    snap = QbeastSnapshot.load(str(qbeast_table))
    assert snap.is_qbeast
    assert snap.latest_revision_id == 1
    assert sorted(snap.revisions) == [0, 1]
    by_rev = snap.files_by_revision()
    assert sorted(f.path for f in by_rev[0]) == ["staged.parquet"]
    assert sorted(f.path for f in by_rev[1]) == ["leaves.parquet", "root.parquet", "root2.parquet"]
    assert [f.path for f in snap.staging_files()] == ["staged.parquet"]
    assert snap.latest_revision.columns == ["x", "y"]
    assert not snap.needs_upgrade


def test_index_status_takes_min_threshold_and_sums_counts(qbeast_table: Path) -> None:
    snap = QbeastSnapshot.load(str(qbeast_table))
    status = snap.index_status()
    by_cube = {str(c.cube): c for c in status}
    assert set(by_cube) == {"", "A", "w"}
    assert by_cube[""].max_weight == weight_from_fraction(0.5) - 10
    assert by_cube[""].element_count == 105
    assert set(by_cube[""].files) == {"root.parquet", "root2.parquet"}
    assert by_cube["w"].max_weight == MAX_WEIGHT


def test_unknown_revision_is_a_clear_error(qbeast_table: Path) -> None:
    snap = QbeastSnapshot.load(str(qbeast_table))
    with pytest.raises(InvalidOptionError, match="revision 7 does not exist.*\\[0, 1\\]"):
        snap.index_status(7)


def test_plain_delta_table_is_not_qbeast(tmp_path: Path) -> None:
    log = DeltaLog.for_path(str(tmp_path))
    txn = log.start_transaction()
    txn.update_metadata(Metadata.create(SCHEMA))
    txn.add_actions(_add("a.parquet", None))
    txn.commit("WRITE")
    snap = QbeastSnapshot.load(str(tmp_path))
    assert not snap.is_qbeast
    assert [f.path for f in snap.staging_files()] == ["a.parquet"]
    with pytest.raises(NotAQbeastTableError, match="convert_to_qbeast"):
        _ = snap.latest_revision_id
    assert QbeastSnapshot.load_if_exists(str(tmp_path / "missing")) is None


def test_malformed_tags_name_the_file(tmp_path: Path) -> None:
    log = DeltaLog.for_path(str(tmp_path))
    txn = log.start_transaction()
    txn.update_metadata(Metadata.create(SCHEMA, configuration={LAST_REVISION_KEY: "1", revision_key(1): _revision_one_json()}))
    txn.add_actions(_add("bad.parquet", {"revision": "1", "blocks": "[{\"cube\": 1}]"}))
    txn.commit("WRITE")
    snap = QbeastSnapshot.load(str(tmp_path))
    with pytest.raises(FormatError, match="bad.parquet"):
        snap.index_status()


def test_v07_fixture(qbeast_fixtures: Path) -> None:
    snap = QbeastSnapshot.load(str(qbeast_fixtures / "v07-ecommerce-300k"))
    assert snap.is_qbeast and not snap.needs_upgrade
    assert snap.latest_revision.columns == ["user_id", "brand"]
    status = snap.index_status()
    assert len(status) == 63
    assert sum(c.element_count for c in status) == 300_000
    assert len(snap.revision_files(1)) == 16


@pytest.mark.parametrize(
    "name", ["pre06-logs-test-table", "pre06-logs-with-remove", "pre06-logs-with-checkpoint"]
)
def test_pre06_fixtures_need_upgrade(qbeast_fixtures: Path, name: str) -> None:
    snap = QbeastSnapshot.load(str(qbeast_fixtures / name))
    assert snap.is_qbeast
    assert snap.needs_upgrade
    assert set(snap.files_by_revision()) == {1}
