"""Tables committed by our log layer, read back by delta-rs and by DuckDB's delta extension."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_interop_helpers import append, create_table, deltalake_view, our_view, overwrite
from qbeast.delta.log import DeltaLog

deltalake = pytest.importorskip("deltalake", reason="deltalake is the reference Delta reader here")
pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("price", pa.float64())])


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "name": [f"item-{i}" for i in range(start, start + n)],
                     "price": [i * 0.5 if i % 7 else None for i in range(start, start + n)]},
                    schema=SCHEMA)


def _tags(i: int) -> dict[str, str]:
    blocks = [{"cubeId": "w" * (i % 3), "minWeight": -2147483648 + i, "maxWeight": 2147483647,
               "elementCount": 10 + i}]
    return {"revision": "1", "blocks": json.dumps(blocks, separators=(",", ":"))}


def _sorted_rows(table: pa.Table) -> list[tuple]:
    columns = table.select(["id", "name", "price"]).to_pylist()
    return sorted(tuple(r.values()) for r in columns)


def _readers_agree(path: str, expected: pa.Table, duckdb_delta, version: int | None = None) -> None:
    want = _sorted_rows(expected)
    dt = deltalake.DeltaTable(path, version=version)
    assert _sorted_rows(pa.table(dt.to_pyarrow_table())) == want
    if version is None:
        got = duckdb_delta.execute(
            f"SELECT id, name, price FROM delta_scan('{path}') ORDER BY id").fetchall()
        assert sorted(got) == want


@pytest.fixture
def history(tmp_path: Path) -> tuple[DeltaLog, list[pa.Table]]:
    """A table with 12 appends, an overwrite and 3 more appends; expected content per version."""
    log = DeltaLog.for_path(str(tmp_path / "ours"))
    create_table(log, SCHEMA)
    contents = [_rows(0, 0)]
    for i in range(12):
        append(log, _rows(i * 10, 5), _tags(i))
        contents.append(pa.concat_tables([contents[-1], _rows(i * 10, 5)]))
    overwrite(log, _rows(500, 8), _tags(99))
    contents.append(_rows(500, 8))
    for i in range(3):
        append(log, _rows(600 + i * 10, 4), _tags(100 + i))
        contents.append(pa.concat_tables([contents[-1], _rows(600 + i * 10, 4)]))
    return log, contents


def test_our_commits_read_identically_before_and_after_checkpoints(history, duckdb_delta) -> None:
    log, contents = history
    path = log.table_path
    latest = len(contents) - 1
    assert log.snapshot().version == latest
    # version 10 got an automatic checkpoint (default interval); readers use it
    assert (Path(log.log_path) / f"{10:020d}.checkpoint.parquet").exists()
    for version in (0, 5, 10, 12, 13, latest):
        _readers_agree(path, contents[version], duckdb_delta, version)
        assert our_view(path, version) == deltalake_view(path, version)
    _readers_agree(path, contents[-1], duckdb_delta)

    log.checkpoint()  # explicit checkpoint at the latest version
    for v in range(0, latest):
        (Path(log.log_path) / f"{v:020d}.json").unlink()  # readers can only use the checkpoint now
    _readers_agree(path, contents[-1], duckdb_delta)
    assert our_view(path, latest) == deltalake_view(path, latest)


def test_tags_survive_our_checkpoints(history) -> None:
    log, _ = history
    before = {p: a.tags for p, a in log.snapshot().files.items()}
    written = log.checkpoint()
    raw = pq.read_table(written[0], columns=["add"]).column("add").to_pylist()
    assert {r["path"]: dict(r["tags"]) for r in raw if r is not None} == before
    for p in Path(log.log_path).glob("*.json"):
        p.unlink()
    after = DeltaLog.for_path(log.table_path).snapshot()
    assert after.checkpoint_version == log.snapshot().version
    assert {p: a.tags for p, a in after.files.items()} == before


def test_tags_survive_a_deltalake_checkpoint_of_our_table(history) -> None:
    log, _ = history
    before = {p: a.tags for p, a in log.snapshot().files.items()}
    latest = log.snapshot().version
    log.start_transaction().add_actions([]).commit("NOOP")
    deltalake.DeltaTable(log.table_path).create_checkpoint()  # delta-rs rewrites the state itself
    for v in range(0, latest + 2):
        (Path(log.log_path) / f"{v:020d}.json").unlink()
    after = DeltaLog.for_path(log.table_path).snapshot()
    assert after.checkpoint_version == latest + 1
    assert {p: a.tags for p, a in after.files.items()} == before


def test_multi_part_checkpoint_read_by_other_engines(history, duckdb_delta, tmp_path: Path) -> None:
    log, contents = history
    copy = tmp_path / "copy"
    shutil.copytree(log.table_path, copy)
    copy_log = DeltaLog.for_path(str(copy))
    copy_log.checkpoint(parts=4)
    for p in (copy / "_delta_log").glob("*.json"):
        p.unlink()
    latest = len(contents) - 1
    _readers_agree(str(copy), contents[-1], duckdb_delta)
    assert our_view(str(copy), latest) == deltalake_view(str(copy), latest)


def test_partitioned_table_written_by_us(tmp_path: Path, duckdb_delta) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("price", pa.float64()),
                        ("p", pa.string())])
    log = DeltaLog.for_path(str(tmp_path / "part"))
    create_table(log, schema, ["p"])
    data = _rows(0, 12).append_column("p", pa.array(["a b", "c%/d", "e=f"] * 4))
    append(log, data, partition_by="p")
    view = our_view(log.table_path, 1)
    assert view == deltalake_view(log.table_path, 1)
    assert {tuple(v[2].values()) for v in view["files"].values()} == {("a b",), ("c%/d",), ("e=f",)}
    got = duckdb_delta.execute(
        f"SELECT id, name, price, p FROM delta_scan('{log.table_path}') ORDER BY id").fetchall()
    assert got == [tuple(r.values()) for r in data.to_pylist()]
    dl = pa.table(deltalake.DeltaTable(log.table_path).to_pyarrow_table()).sort_by("id")
    assert dl.select(["id", "p"]).to_pylist() == data.select(["id", "p"]).to_pylist()
