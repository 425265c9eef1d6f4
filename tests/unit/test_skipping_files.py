"""Index files at commit time, without Spark: built for the commit's new files, named in their
tags, used by pruning, and gone with the data files when the commit is not made."""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qbeast.commit import commit_files
from qbeast.core import expressions as ex
from qbeast.core.skipping import CONFIG_KEY, INDEX_DIR, TAG
from qbeast.delta.actions import AddFile, Metadata
from qbeast.delta.log import DeltaLog
from qbeast.delta.transaction import Transaction
from qbeast.skipping_files import prune

SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "code", "type": "string", "nullable": True, "metadata": {}}]}


def _file(root: str, name: str, ids: list[int], codes: list[str | None]) -> AddFile:
    path = os.path.join(root, name)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "code": pa.array(codes)}), path)
    stats = json.dumps({"numRecords": len(ids)})
    return AddFile(name, {}, os.path.getsize(path), 0, True, stats, None)


def test_a_commit_indexes_its_files_and_a_failed_one_leaves_no_index(tmp_path):
    root = str(tmp_path)
    log = DeltaLog.for_path(root)
    first = [_file(root, "a.parquet", [1, 2], ["x", None]), _file(root, "b.parquet", [3], ["Y"])]
    transaction = Transaction(log, None).update_metadata(Metadata.create(
        json.dumps(SCHEMA), [], {CONFIG_KEY: json.dumps({"code": "values", "id": "bloom"})}))
    commit_files(transaction, first, operation="WRITE")
    snapshot = log.snapshot()
    tags = {add.path: add.tags for add in snapshot.files.values()}
    assert tags["a.parquet"]["revision"] == "0" and tags["a.parquet"][TAG] == tags["b.parquet"][TAG]
    adds = list(snapshot.files.values())

    def kept(predicate):
        mask, removed = prune(root, snapshot.metadata, predicate, adds)
        return sorted(a.path for a, keep in zip(adds, mask) if keep), removed

    assert kept(ex.EqualTo("code", "y")) == ([], (("code:values", 2),))
    assert kept(ex.EqualTo("code", "Y"))[0] == ["b.parquet"]
    assert kept(ex.IsNull("code"))[0] == ["a.parquet"]
    assert kept(ex.In("id", (2, 3)))[0] == ["a.parquet", "b.parquet"]
    assert kept(ex.GreaterThan("id", 5))[0] == ["a.parquet", "b.parquet"]

    def refuse():
        raise RuntimeError("stop before the commit")

    more = [_file(root, "c.parquet", [4], ["z"])]
    with pytest.raises(RuntimeError):
        commit_files(Transaction(log, log.snapshot()), more, operation="WRITE", before_commit=refuse)
    assert os.listdir(os.path.join(root, INDEX_DIR)) == [tags["a.parquet"][TAG].split("/")[1]]
    assert not os.path.exists(os.path.join(root, "c.parquet"))


def test_a_declaration_is_recorded_replaced_and_removed_only_when_it_changes(tmp_path):
    from qbeast.skipping_files import declare

    log = DeltaLog.for_path(str(tmp_path))
    commit_files(Transaction(log, None).update_metadata(
        Metadata.create(json.dumps(SCHEMA), [], {"team": "x"})), [], operation="WRITE")
    text = json.dumps({"code": {"kind": "values", "max_values": 8}}, separators=(",", ":"))
    transaction = declare(Transaction(log, log.snapshot()), text)
    assert transaction.effective_metadata().configuration == {"team": "x", CONFIG_KEY: text}
    transaction.commit("WRITE", {})
    snapshot = log.snapshot()
    again = declare(Transaction(log, snapshot), text)
    assert again.effective_metadata() is snapshot.metadata  # unchanged: no metadata action
    removed = declare(Transaction(log, log.snapshot()), "{}")
    assert removed.effective_metadata().configuration == {"team": "x"}


@pytest.mark.parametrize("encoding", ["dictionary", "DELTA_BYTE_ARRAY", "PLAIN"])
def test_a_value_list_holds_the_same_values_however_its_column_is_encoded(tmp_path, encoding):
    """Dictionary-encoded string columns are read as dictionaries (only the values the rows
    use are hashed, even when a row group's dictionary holds more); others are read plain."""
    from qbeast.core.skipping import IndexSpec
    from qbeast.core.value_hash import hash_values
    from qbeast.skipping_files import _dictionary_columns, entries_of_file

    codes = pa.array(["b", None, "a", "b", "c"] * 50)
    table = pa.table({"code": codes, "id": pa.array(range(250), pa.int64())})
    path = str(tmp_path / "f.parquet")
    options = ({"use_dictionary": ["code"]} if encoding == "dictionary" else
               {"use_dictionary": False, "column_encoding": {"code": encoding}})
    pq.write_table(table.slice(0, 200), path, row_group_size=100, **options)  # two row groups
    as_dictionary = _dictionary_columns(pq.ParquetFile(path), {"code", "id"})
    assert as_dictionary == (["code"] if encoding == "dictionary" else [])
    indexes = [(IndexSpec("code", "values"), "string"), (IndexSpec("upper(code)", "values"), "string")]
    read = entries_of_file(None, path, indexes)

    def listed(column: str) -> list[int]:
        return sorted(np.frombuffer(read[column].payload, dtype="<u8").tolist())

    expected, _ = hash_values(pa.array(["a", "b", "c"]), "string")
    assert listed("code") == sorted(expected.tolist())
    assert read["code"].has_null and read["upper(code)"].has_null
    upper, _ = hash_values(pa.array(["A", "B", "C"]), "string")
    assert listed("upper(code)") == sorted(upper.tolist())


def test_referenced_values_leave_out_dictionary_entries_no_row_uses():
    from qbeast.core.value_hash import referenced_values

    column = pa.chunked_array([
        pa.DictionaryArray.from_arrays(pa.array([0, None, 0], pa.int32()), pa.array(["x", "unused"])),
        pa.DictionaryArray.from_arrays(pa.array([1], pa.int32()), pa.array(["y", "z"])),
    ])
    values, has_null = referenced_values(column)
    assert sorted(values.to_pylist()) == ["x", "z"] and has_null
