"""Appending with ``qbeast.write`` to a table written by qbeast-spark (v0.7, FORMAT §12).

The fixture is copied to a temporary folder (never modified in place, never committed). The append
must land in qbeast-spark's revision 1 (its space covers the new rows), respect the cube thresholds
qbeast-spark estimated, and leave an index whose every block — qbeast-spark's and ours — is
reproduced from the files, with exact samples.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

import qbeast
from qbeast.snapshot import QbeastSnapshot

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index  # noqa: E402

pytestmark = pytest.mark.spark


def _writable_copy(source: Path, target: Path) -> str:
    shutil.copytree(source, target, copy_function=shutil.copyfile)
    for root, dirs, _ in os.walk(target):
        os.chmod(root, 0o755)
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    return str(target)


def test_append_into_a_qbeast_spark_revision(spark, tmp_path, qbeast_fixtures):
    path = _writable_copy(qbeast_fixtures / "v07-ecommerce-300k", tmp_path / "t")
    before = QbeastSnapshot.load(path)
    revision = before.latest_revision
    old_status = before.index_status(1)
    low = revision.transformations[0].min_number
    high = revision.transformations[0].max_number
    new_rows = spark.range(0, 20_000).selectExpr(
        "timestamp_micros(1570000000000000 + id * 1000000) as event_time",
        "'view' as event_type",
        "cast(id % 5000 as int) as product_id",
        "id * 11 as category_id",
        "cast(null as string) as category_code",
        "case when id % 7 = 0 then null else "
        "concat(char(97 + cast(id % 26 as int)), 'brand') end as brand",
        "rand(5) * 100 as price",
        f"cast({low} + rand(6) * {high - low} as int) as user_id",
        "concat('session-', id) as user_session",
    )
    result = qbeast.write(new_rows, path)  # columns and cube size come from the table
    after = QbeastSnapshot.load(path)
    assert result.revision_id == 1 and after.latest_revision_id == 1
    new_status = after.index_status(1)
    for status in old_status:  # thresholds only ever go down
        assert new_status.get(status.cube).max_weight <= status.max_weight
    assert check_index(spark, path, fractions=(0.01, 0.1, 0.5)) == {1: 320_000}
