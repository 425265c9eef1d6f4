"""Reading conformance of the log layer: paths, partition values, column mapping, file identity."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from pathlib import Path

import pytest

from delta_helpers import write_log_lines
from qbeast.delta import partition_values
from qbeast.delta.actions import resolve_file_path
from qbeast.delta.errors import CorruptLogError, UnsupportedFeatureError
from qbeast.delta.log import DeltaLog
from qbeast.delta.scan import scan_schema

UTC = dt.timezone.utc


def _field(name, type_, physical=None):
    meta = {"delta.columnMapping.physicalName": physical} if physical else {}
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}


def _table(tmp_path: Path, fields, partitions=(), config=None, protocol=(1, 2), adds=(),
           extra_lines=()):
    meta = {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps({"type": "struct", "fields": fields}),
                         "partitionColumns": list(partitions), "configuration": config or {}}}
    proto = {"protocol": {"minReaderVersion": protocol[0], "minWriterVersion": protocol[1]}}
    lines = [proto, meta] + [{"add": {"size": 1, "modificationTime": 0, "dataChange": True, **a}}
                             for a in adds]
    write_log_lines(tmp_path / "t", 0, lines + list(extra_lines))
    return DeltaLog.for_path(str(tmp_path / "t"))


@pytest.mark.parametrize("text,type_,value", [
    ("7", "integer", 7), ("-12", "long", -12), ("1.5", "double", 1.5),
    ("12.50", "decimal(10,2)", decimal.Decimal("12.50")), ("true", "boolean", True),
    ("FALSE", "boolean", False), ("2020-02-29", "date", dt.date(2020, 2, 29)),
    ("2020-01-01 10:00:00", "timestamp", dt.datetime(2020, 1, 1, 10, tzinfo=UTC)),
    ("2021-06-01T12:00:00.000000Z", "timestamp", dt.datetime(2021, 6, 1, 12, tzinfo=UTC)),
    ("2021-06-01 14:00:00+02:00", "timestamp", dt.datetime(2021, 6, 1, 12, tzinfo=UTC)),
    ("2021-06-01 12:00:00.123456", "timestamp_ntz", dt.datetime(2021, 6, 1, 12, 0, 0, 123456)),
    ("\u0001\u0002", "binary", b"\x01\x02"), ("x y%2F", "string", "x y%2F"),
    ("", "string", None), (None, "long", None), ("", "date", None),
])
def test_partition_values_are_typed_by_the_protocol_serialization(text, type_, value) -> None:
    assert partition_values.parse(text, type_) == value


def test_partition_value_special_floats_and_errors() -> None:
    assert math.isnan(partition_values.parse("NaN", "double"))
    assert partition_values.parse("-Infinity", "float") == -math.inf
    with pytest.raises(CorruptLogError, match=r"partition value 'abc' of column 'n' is not a valid long"):
        partition_values.parse("abc", "long", "n")
    with pytest.raises(UnsupportedFeatureError, match=r"partition column 's' has type struct"):
        partition_values.parse("x", {"type": "struct", "fields": []}, "s")
    for value in (True, 3, decimal.Decimal("-0.01"), dt.date(1970, 1, 1), b"\x01a",
                  dt.datetime(2020, 1, 1, 1, 2, 3, 4)):
        assert partition_values.parse(partition_values.serialize(value), _type_of(value)) == value


def _type_of(value):
    return {bool: "boolean", int: "long", decimal.Decimal: "decimal(5,2)", dt.date: "date",
            bytes: "binary", dt.datetime: "timestamp_ntz"}[type(value)]


@pytest.mark.parametrize("path,expected", [
    ("a%20b/c%25d.parquet", "/t/a b/c%d.parquet"),
    ("ts=2020-01-01%2000%253A00/x.parquet", "/t/ts=2020-01-01 00%3A00/x.parquet"),
    ("file:///data/x%20y.parquet", "/data/x y.parquet"),
    ("file:/data/x.parquet", "/data/x.parquet"),
    ("file://localhost/data/x.parquet", "/data/x.parquet"),
    ("/abs/p%25.parquet", "/abs/p%.parquet"),
    ("s3://bucket/key%20x.parquet", "s3://bucket/key%20x.parquet"),
])
def test_add_paths_are_uris_decoded_once(path: str, expected: str) -> None:
    assert resolve_file_path("/t", path) == expected


def test_scan_schema_of_a_partitioned_name_mapped_table(tmp_path: Path) -> None:
    inner = {"type": "struct", "fields": [_field("x", "long", "col-x")]}
    fields = [_field("a", "long", "b"), _field("b", "string", "a"), _field("s", inner, "col-s"),
              _field("p", "date", "col-p")]
    log = _table(tmp_path, fields, ["p"], {"delta.columnMapping.mode": "name"}, (2, 5),
                 [{"path": "f.parquet", "partitionValues": {"col-p": "2020-01-02"}}])
    snapshot = log.snapshot()
    layout = scan_schema(snapshot)
    assert layout.mapping_mode == "name" and layout.partition_columns == ("p",)
    assert [f["name"] for f in layout.data_schema["fields"]] == ["b", "a", "col-s"]
    assert layout.data_schema["fields"][2]["type"]["fields"][0]["name"] == "col-x"
    scan = layout.scan_file(snapshot.table_path, snapshot.files["f.parquet"])
    assert scan.partition_values == (("p", dt.date(2020, 1, 2)),)
    stats = {"numRecords": 2, "minValues": {"b": 1, "a": "z", "col-s": {"col-x": 5}},
             "maxValues": {"b": 9}, "nullCount": {"col-p": 0}}
    assert layout.logical_stats(stats) == {
        "numRecords": 2, "minValues": {"a": 1, "b": "z", "s": {"x": 5}}, "maxValues": {"a": 9},
        "nullCount": {"p": 0}}


def test_mapping_property_without_the_feature_reads_display_names(tmp_path: Path) -> None:
    log = _table(tmp_path, [_field("a", "long", "col-a")], (), {"delta.columnMapping.mode": "name"})
    layout = scan_schema(log.snapshot())
    assert layout.is_plain and layout.data_schema["fields"][0]["name"] == "a"


def test_a_remove_spelled_differently_still_removes_the_file(tmp_path: Path) -> None:
    log = _table(tmp_path, [_field("id", "long")], adds=[{"path": "dir%20x/a.parquet"},
                                                         {"path": "b.parquet"}])
    absolute = (tmp_path / "t" / "dir x" / "a.parquet").as_uri()
    write_log_lines(tmp_path / "t", 1, [{"remove": {"path": absolute, "dataChange": True}}])
    assert set(log.snapshot().files) == {"b.parquet"}


def test_removes_match_the_deletion_vector_of_the_active_file(tmp_path: Path) -> None:
    dv1 = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1,
           "sizeInBytes": 4, "cardinality": 1}
    dv2 = dict(dv1, offset=9)
    log = _table(tmp_path, [_field("id", "long")], protocol=(3, 7),
                 adds=[{"path": "a.parquet", "deletionVector": dv1}])
    proto = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                          "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}}
    write_log_lines(tmp_path / "t", 0, [proto] + [json.loads(line) for line in
                    (tmp_path / "t" / "_delta_log" / f"{0:020d}.json").read_text().splitlines()[1:]])
    # a DELETE: the file with its new vector first, then the removal of the old logical file
    write_log_lines(tmp_path / "t", 1, [
        {"add": {"path": "a.parquet", "size": 1, "modificationTime": 0, "dataChange": True,
                 "deletionVector": dv2}},
        {"remove": {"path": "a.parquet", "dataChange": True, "deletionVector": dv1}}])
    snapshot = log.snapshot()
    assert snapshot.files["a.parquet"].deletion_vector == dv2  # still active, new vector
    with pytest.raises(UnsupportedFeatureError, match="deletionVectors"):
        scan_schema(snapshot)


def test_metadata_without_schema_string(tmp_path: Path) -> None:
    write_log_lines(tmp_path / "t", 0, [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "x", "format": {"provider": "parquet"}, "partitionColumns": [],
                      "configuration": {}}}])
    snapshot = DeltaLog.for_path(str(tmp_path / "t")).snapshot()  # loads: describe can show it
    with pytest.raises(CorruptLogError, match=r"has no schemaString"):
        scan_schema(snapshot)


def test_missing_required_fields_name_the_action_and_field(tmp_path: Path) -> None:
    write_log_lines(tmp_path / "t", 0, [{"protocol": {"minReaderVersion": 1}}])
    with pytest.raises(CorruptLogError,
                       match=r"00000000000000000000\.json: protocol action lacks the required field\(s\) \['minWriterVersion'\]"):
        DeltaLog.for_path(str(tmp_path / "t")).snapshot()


def test_checkpoint_with_struct_statistics_only(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    log = _table(tmp_path, [_field("id", "long"), _field("d", "date")], ["d"])
    add = pa.array([{"path": "d=2020-01-01/f.parquet", "partitionValues": None,
                     "partitionValues_parsed": {"d": dt.date(2020, 1, 1)}, "size": 5,
                     "modificationTime": 0, "dataChange": True,
                     "stats_parsed": {"numRecords": 3, "minValues": {"id": 1}}}])
    cp = log.snapshot()  # metaData and protocol rows come from the JSON commit
    rows = pa.table({"add": pa.concat_arrays([pa.nulls(2, add.type), add]),
                     "metaData": pa.array([None, {"id": cp.metadata.id,
                                                  "schemaString": cp.metadata.schema_string,
                                                  "partitionColumns": ["d"]}, None]),
                     "protocol": pa.array([{"minReaderVersion": 1, "minWriterVersion": 2}, None, None])})
    pq.write_table(rows, tmp_path / "t" / "_delta_log" / f"{1:020d}.checkpoint.parquet")
    write_log_lines(tmp_path / "t", 1, [{"commitInfo": {}}])
    snapshot = DeltaLog.for_path(str(tmp_path / "t")).snapshot()
    assert snapshot.checkpoint_version == 1
    add_file = snapshot.files["d=2020-01-01/f.parquet"]
    assert add_file.partition_values == {"d": "2020-01-01"} and add_file.num_records == 3
    assert json.loads(add_file.stats)["minValues"] == {"id": 1}
