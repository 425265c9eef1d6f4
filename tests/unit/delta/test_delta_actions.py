"""Action JSON: round trips, unknown keys preserved, tags verbatim, lazy stats, path decoding."""
from __future__ import annotations

import json

from qbeast.delta.actions import (
    AddFile,
    CommitInfo,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    action_to_line,
    encode_relative_path,
    resolve_file_path,
)

BLOCKS = '[{"cubeId":"w","minWeight":-1717927374,"maxWeight":-1269647486,"elementCount":10111}]'


def test_add_round_trip_keeps_tags_order_and_unknown_keys() -> None:
    body = {
        "path": "p=a%20b/x.parquet",
        "partitionValues": {"p": "a b"},
        "size": 12,
        "modificationTime": 34,
        "dataChange": False,
        "stats": '{"numRecords":7}',
        "tags": {"revision": "1", "blocks": BLOCKS, "zz": "last"},
        "baseRowId": 5,
        "clusteringProvider": None,
    }
    add = AddFile.from_json(body)
    out = add.to_json()
    assert list(out["tags"].items()) == [("revision", "1"), ("blocks", BLOCKS), ("zz", "last")]
    assert out["baseRowId"] == 5 and "clusteringProvider" not in out
    line = action_to_line(add)
    # tags survive serialisation byte for byte (the blocks JSON string is only escaped once)
    assert json.loads(line)["add"]["tags"]["blocks"] == BLOCKS
    assert AddFile.from_json(json.loads(line)["add"]) == add


def test_stats_parsed_lazily_and_only_once() -> None:
    add = AddFile("f", {}, 1, 1, True, '{"numRecords": 3, "minValues": {"a": 1}}')
    assert add._stats_cache is not None and not isinstance(add._stats_cache, dict)
    assert add.num_records == 3
    assert add.parsed_stats is add.parsed_stats
    assert AddFile("g", {}, 1, 1).num_records is None


def test_remove_from_add_carries_tags_and_partition() -> None:
    add = AddFile("f.parquet", {"p": "1"}, 9, 1, True, None, {"revision": "2"})
    rm = add.remove(deletion_timestamp=123)
    assert rm.to_json() == {
        "path": "f.parquet", "dataChange": True, "deletionTimestamp": 123,
        "extendedFileMetadata": True, "partitionValues": {"p": "1"}, "size": 9,
        "tags": {"revision": "2"},
    }
    assert RemoveFile.from_json(rm.to_json()) == rm


def test_metadata_protocol_txn_commit_info_round_trip() -> None:
    md_body = {
        "id": "abc", "format": {"provider": "parquet", "options": {}},
        "schemaString": '{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}',
        "partitionColumns": [], "configuration": {"k": "v"}, "createdTime": 5,
    }
    md = Metadata.from_json(md_body)
    assert md.to_json() == md_body and md.column_names == ["a"]
    proto = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["timestampNtz"],
             "writerFeatures": ["timestampNtz", "appendOnly"]}
    assert Protocol.from_json(proto).to_json() == proto
    assert SetTransaction.from_json({"appId": "a", "version": 3}).to_json() == {"appId": "a", "version": 3}
    info = {"timestamp": 1, "operation": "WRITE", "operationParameters": {"mode": "Append"},
            "engineInfo": "x", "txnId": "t"}
    parsed = CommitInfo.from_json(info)
    assert parsed.extra == {"txnId": "t"} and parsed.to_json() == info


def test_paths_decode_as_the_protocol_says() -> None:
    table = "/data/t"
    assert resolve_file_path(table, "p=z%2525%252F/f.parquet") == "/data/t/p=z%25%2F/f.parquet"
    assert resolve_file_path(table, "file:///other/x%20y.parquet") == "/other/x y.parquet"
    assert resolve_file_path(table, "file:/other/x.parquet") == "/other/x.parquet"
    assert resolve_file_path(table, "s3://b/k.parquet") == "s3://b/k.parquet"
    assert encode_relative_path("p=a b%/f.parquet") == "p=a%20b%25/f.parquet"
    assert resolve_file_path(table, encode_relative_path("p=a b%/f.parquet")) == "/data/t/p=a b%/f.parquet"
