"""timestamp_ntz columns get Delta min/max bounds from every writer that can produce them, and a
filter on such a column then skips files by those bounds.

``qbeast.write`` refuses timestamp_ntz columns (README, "What the engine supports"), so the files
come from ``convert_to_qbeast`` (bounds from the footers) and from optimize, whose files are
described from their footers or, where the assignment's tally is missing (Spark Connect, a task
counted twice), by a scan of the files: both must apply the bound rule of qbeast.delta.stats.
"""
from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import qbeast
from qbeast.errors import UnsupportedTypeError
from qbeast.operations.convert import convert_to_qbeast
from qbeast.operations.optimize import optimize_table
from qbeast.snapshot import QbeastSnapshot

pytestmark = pytest.mark.spark

START = dt.datetime(2024, 1, 1)


def _ntz_folder(root) -> None:
    """Two parquet files, ids 0..399 and 400..799, each a separate day range of ``at``."""
    root.mkdir()
    for p in range(2):
        ids = list(range(p * 400, (p + 1) * 400))
        at = [START + dt.timedelta(days=100 * p, minutes=i % 400) for i in ids]
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()),
                                 "at": pa.array(at, pa.timestamp("us"))}),
                       root / f"part-{p:05d}.parquet")


def _bounds(path: str) -> list[tuple[str | None, str | None]]:
    files = QbeastSnapshot.load(path).delta.files.values()
    stats = [json.loads(f.stats) for f in files]
    return [(s["minValues"].get("at"), s["maxValues"].get("at")) for s in stats]


def _skips_by_at(spark, path: str) -> None:
    table = qbeast.QbeastTable.for_path(spark, path)
    condition = "at < TIMESTAMP_NTZ '2024-01-02 00:00:00'"
    pruned = table.to_df(filter=condition)
    assert sorted(r.id for r in pruned.collect()) == list(range(400))
    assert len(table.read_plan(filter=condition).files) < len(QbeastSnapshot.load(path).delta.files)


@pytest.mark.parametrize("described", ["footers", "scan"])
def test_convert_and_optimize_record_timestamp_ntz_bounds(spark, tmp_path, monkeypatch, described):
    root = tmp_path / "t"
    _ntz_folder(root)
    path = str(root)
    convert_to_qbeast(spark, path, ["id"], cube_size=100)
    assert sorted(_bounds(path)) == [("2024-01-01T00:00:00.000Z", "2024-01-01T06:39:00.000Z"),
                                     ("2024-04-10T00:00:00.000Z", "2024-04-10T06:39:00.000Z")]
    _skips_by_at(spark, path)

    if described == "scan":
        from qbeast.spark.write import steps

        monkeypatch.setattr(steps, "new_block_tally", lambda spark: None)
    optimize_table(spark, path, revision_id=0)  # the staging files indexed into revision 1
    snapshot = QbeastSnapshot.load(path)
    assert snapshot.latest_revision_id == 1 and snapshot.staging_files() == []
    bounds = _bounds(path)
    assert len(bounds) > 2 and all(low is not None and high is not None for low, high in bounds)
    optimize_table(spark, path)  # a rewrite of the indexed revision
    assert all(low is not None and high is not None for low, high in _bounds(path))
    assert qbeast.QbeastTable.for_path(spark, path).to_df().count() == 800
    _skips_by_at(spark, path)


def test_qbeast_write_still_refuses_timestamp_ntz(spark, tmp_path):
    df = spark.sql("select id, timestamp_ntz'2024-01-01 00:00:00' as at from range(3)")
    with pytest.raises(UnsupportedTypeError, match="timestamp_ntz"):
        qbeast.write(df, str(tmp_path / "t"), "id")
