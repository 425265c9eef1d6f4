"""After upgrade_format, a table written in the pre-0.6 format samples and optimizes like any other.

The legacy table is built by hand with real data: one indexed column ``x`` in [0, 1] (linear), row
weights from Spark's ``hash(x)``, a root cube with threshold ``Weight(0.25)`` and two leaf cubes
``A`` (x < 0.5) and ``g`` (x >= 0.5), one file per cube with the flat string tags of qbeast-spark
0.5 (FORMAT §5.2). The expected sample of ``f`` is computed directly: the rows with
``hash(x) < Weight(f)``.
"""
from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import qbeast
from qbeast.core.weight import MAX_WEIGHT, weight_from_fraction
from qbeast.delta.actions import AddFile, Metadata
from qbeast.delta.log import DeltaLog
from qbeast.errors import InvalidOptionError
from qbeast.operations.optimize import optimize_table
from qbeast.operations.upgrade import upgrade_format
from qbeast.snapshot import QbeastSnapshot

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index  # noqa: E402

pytestmark = pytest.mark.spark

SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "x", "type": "double", "nullable": True, "metadata": {}}]})
REVISION = json.dumps({
    "revisionID": 1, "timestamp": 1600000000000, "tableID": "legacy", "desiredCubeSize": 1000,
    "columnTransformers": [{"className": "io.qbeast.core.transform.LinearTransformer",
                            "columnName": "x", "dataType": "DoubleDataType"}],
    "transformations": [{"className": "io.qbeast.core.transform.LinearTransformation",
                         "minNumber": 0.0, "maxNumber": 1.0, "nullValue": 0.5,
                         "orderedDataType": "DoubleDataType"}],
}, separators=(",", ":"))
ROOT_THRESHOLD = weight_from_fraction(0.25)


def legacy_table(spark, path: Path) -> pa.Table:
    """Write the pre-0.6 table described in the module docstring; return its rows with weights."""
    rows = spark.range(0, 4000).selectExpr(
        "id", "case when id = 0 then 0.0 when id = 1 then 1.0 else rand(7) end as x"
    ).selectExpr("id", "x", "hash(x) as w").toArrow()
    w, x = rows.column("w"), rows.column("x")
    in_root = pc.less_equal(w, ROOT_THRESHOLD)
    cubes = [
        ("", "REPLICATED", in_root, ROOT_THRESHOLD),
        ("A", "ANNOUNCED", pc.and_(pc.invert(in_root), pc.less(x, 0.5)), MAX_WEIGHT),
        ("g", "FLOODED", pc.and_(pc.invert(in_root), pc.greater_equal(x, 0.5)), MAX_WEIGHT),
    ]
    path.mkdir(parents=True)
    adds = []
    for cube, state, mask, threshold in cubes:
        part = rows.filter(mask)
        name = f"{uuid.uuid4()}.parquet"
        pq.write_table(part.select(["id", "x"]), path / name)
        tags = {"state": state, "cube": cube, "revision": "1", "elementCount": str(part.num_rows),
                "minWeight": str(pc.min(part.column("w")).as_py()), "maxWeight": str(threshold)}
        adds.append(AddFile(name, {}, os.path.getsize(path / name), 1600000000000, True,
                            json.dumps({"numRecords": part.num_rows}), tags))
    config = {"qbeast.lastRevisionID": "1", "qbeast.revision.1": REVISION,
              "qbeast.replicatedSet.1": '[""]'}
    log = DeltaLog.for_path(str(path))
    log.start_transaction().update_metadata(Metadata.create(SCHEMA, [], config)).add_actions(adds).commit("WRITE")
    return rows


def expected_sample(rows: pa.Table, f: float) -> list[int]:
    return sorted(rows.filter(pc.less(rows.column("w"), weight_from_fraction(f))).column("id").to_pylist())


def test_upgraded_table_samples_and_optimizes(spark, tmp_path):
    path = tmp_path / "legacy"
    rows = legacy_table(spark, path)
    with pytest.raises(InvalidOptionError, match="upgrade_format"):
        optimize_table(spark, str(path))

    result = upgrade_format(str(path))
    assert result.file_count == 3 and result.removed_properties == ("qbeast.replicatedSet.1",)

    table = qbeast.QbeastTable.for_path(spark, str(path))
    for f in (0.1, 0.25, 0.6):
        assert sorted(r.id for r in table.sample(f).select("id").collect()) == expected_sample(rows, f)
    # below the root threshold a sample needs the root file only
    snapshot = QbeastSnapshot.load(str(path))
    root_file = next(a.path for a in snapshot.files() if snapshot.blocks(a)[0].cube == "")
    assert [Path(p).name for p in table.read_plan(fraction=0.1).paths] == [root_file]

    optimize_table(spark, str(path))
    status = QbeastSnapshot.load(str(path)).index_status(1)
    assert {c.cube.string: len(c.blocks) for c in status} == {"": 1, "A": 1, "g": 1}
    assert check_index(spark, str(path)) == {1: 4000}
    for f in (0.1, 0.25, 0.6):
        assert sorted(r.id for r in table.sample(f).select("id").collect()) == expected_sample(rows, f)


def test_upgrade_commits_with_properties(spark, tmp_path):
    """The upgrade's one commit carries the caller's user metadata and application transaction,
    and a cancelled callback stops it before the commit, leaving the table as it was."""
    from qbeast import CommitProperties
    from qbeast.errors import WriteCancelled
    from qbeast.operations.maintenance import table_history

    path = tmp_path / "legacy"
    legacy_table(spark, path)
    before = QbeastSnapshot.load(str(path)).version
    with pytest.raises(WriteCancelled):
        upgrade_format(str(path), commit_properties=CommitProperties(cancelled=lambda: True))
    assert QbeastSnapshot.load(str(path)).version == before

    props = CommitProperties(user_metadata="format-upgrade", app_id="ops", app_version=3)
    result = upgrade_format(str(path), commit_properties=props)
    entry = table_history(str(path))[0]
    assert entry.version == result.version == before + 1
    assert entry.user_metadata == "format-upgrade"
    assert QbeastSnapshot.load(str(path)).delta.txn_version("ops") == 3


def test_upgrade_is_planned_again_after_losing_a_race_to_a_metadata_change(spark, tmp_path):
    """Another writer changes the table's metadata between the upgrade's plan and its commit
    (committed from the ``cancelled`` hook, which runs right before the commit): the upgrade
    plans again on the new version and commits; with max_retries=0 it fails and changes nothing."""
    import dataclasses

    from qbeast import CommitProperties
    from qbeast.delta.errors import MetadataChangedError
    from qbeast.delta.log import DeltaLog

    def competitor(path, key):
        log = DeltaLog.for_path(str(path))
        snapshot = log.snapshot()
        configuration = {**snapshot.configuration, key: "x"}
        (log.start_transaction(snapshot)
         .update_metadata(dataclasses.replace(snapshot.metadata, configuration=configuration))
         .commit("SET TBLPROPERTIES"))

    def racing(path, key):
        raced = []

        def cancelled():
            if not raced:
                raced.append(True)
                competitor(path, key)
            return False
        return cancelled

    path = tmp_path / "legacy"
    legacy_table(spark, path)
    before = QbeastSnapshot.load(str(path)).version
    with pytest.raises(MetadataChangedError):
        upgrade_format(str(path), commit_properties=CommitProperties(
            max_retries=0, cancelled=racing(path, "competitor.first")))
    after_race = QbeastSnapshot.load(str(path))
    assert after_race.version == before + 1  # only the competitor's commit
    assert upgrade_format(str(path), dry_run=True).changes != ()  # still to upgrade

    result = upgrade_format(str(path), commit_properties=CommitProperties(
        max_retries=1, cancelled=racing(path, "competitor.second")))
    upgraded = QbeastSnapshot.load(str(path))
    assert result.version == upgraded.version == before + 3
    assert upgraded.configuration["competitor.first"] == "x"
    assert upgraded.configuration["competitor.second"] == "x"  # the competitor's change kept
    assert upgrade_format(str(path), dry_run=True).changes == ()  # and the upgrade done
