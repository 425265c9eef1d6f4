"""Protocol gating: features we do not implement are refused for the operations they affect."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_helpers import SCHEMA, make_add, write_log_lines
from qbeast.delta.actions import Protocol
from qbeast.delta.errors import UnsupportedFeatureError
from qbeast.delta.features import describe_protocol, reader_features, writer_features
from qbeast.delta.log import DeltaLog
from qbeast.delta.vacuum import vacuum

DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4,
      "sizeInBytes": 40, "cardinality": 6}


def _table(tmp_path: Path, protocol: dict, configuration: dict | None = None,
           adds: list[dict] | None = None, schema: str = SCHEMA) -> DeltaLog:
    meta = {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                         "schemaString": schema, "partitionColumns": [],
                         "configuration": configuration or {}, "createdTime": 1}}
    lines = [{"protocol": protocol}, meta] + [{"add": a} for a in (adds or [make_add("a").to_json()])]
    write_log_lines(tmp_path / "t", 0, lines)
    return DeltaLog.for_path(str(tmp_path / "t"))


def test_legacy_versions_map_to_features() -> None:
    assert reader_features(Protocol(2, 5)) == {"columnMapping"}
    assert writer_features(Protocol(1, 4)) >= {"changeDataFeed", "generatedColumns", "checkConstraints"}
    assert writer_features(Protocol(3, 7, ["deletionVectors"], ["deletionVectors", "x"])) == {
        "deletionVectors", "x"}
    assert describe_protocol(Protocol(1, 2)) == "reader 1 / writer 2 (appendOnly, invariants)"


def test_deletion_vectors_in_use_block_reads_and_writes(tmp_path: Path) -> None:
    with_dv = make_add("a").to_json() | {"deletionVector": DV}
    log = _table(tmp_path, {"minReaderVersion": 3, "minWriterVersion": 7,
                            "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]},
                 adds=[with_dv])
    snap = log.snapshot()  # the log itself replays fine: the file list is right
    assert snap.files["a"].deletion_vector == DV
    with pytest.raises(UnsupportedFeatureError, match=r"read.*\['deletionVectors'\]"):
        snap.check_readable()
    with pytest.raises(UnsupportedFeatureError, match="deletionVectors"):
        log.start_transaction().add_actions(make_add("b")).commit("WRITE")
    with pytest.raises(UnsupportedFeatureError, match="deletionVectors"):
        vacuum(log, dry_run=True)


def test_enabled_but_unused_features_do_not_block(tmp_path: Path) -> None:
    log = _table(tmp_path, {"minReaderVersion": 3, "minWriterVersion": 7,
                            "readerFeatures": ["deletionVectors", "timestampNtz"],
                            "writerFeatures": ["deletionVectors", "timestampNtz", "appendOnly"]})
    log.snapshot().check_readable()
    # adding and removing plain files is correct while no file carries a deletion vector
    tx = log.start_transaction()
    tx.add_actions(make_add("b"), log.snapshot().files["a"].remove())
    assert tx.commit("WRITE") == 1
    assert set(log.snapshot().files) == {"b"}


def test_column_mapping_modes(tmp_path: Path) -> None:
    proto = {"minReaderVersion": 2, "minWriterVersion": 5}
    named = _table(tmp_path / "n", proto, {"delta.columnMapping.mode": "name"})
    named.snapshot().check_readable()  # name mode is read through the physical names
    with pytest.raises(UnsupportedFeatureError, match=r"write.*columnMapping: mode 'name'"):
        named.start_transaction().add_actions(make_add("b")).commit("WRITE")
    by_id = _table(tmp_path / "i", proto, {"delta.columnMapping.mode": "id"})
    with pytest.raises(UnsupportedFeatureError, match=r"read.*columnMapping: mode 'id'"):
        by_id.snapshot().check_readable()
    # the property without protocol support (as delta-rs writes it) is ignored by readers
    ignored = _table(tmp_path / "x", {"minReaderVersion": 1, "minWriterVersion": 2},
                     {"delta.columnMapping.mode": "name"})
    ignored.snapshot().check_readable()
    plain = _table(tmp_path / "p", proto, {"delta.columnMapping.mode": "none"})
    plain.snapshot().check_readable()
    assert plain.start_transaction().add_actions(make_add("b")).commit("WRITE") == 1


def test_legacy_writer_features_only_block_when_used(tmp_path: Path) -> None:
    cdf = _table(tmp_path / "cdf", {"minReaderVersion": 1, "minWriterVersion": 4},
                 {"delta.enableChangeDataFeed": "true"})
    with pytest.raises(UnsupportedFeatureError, match="changeDataFeed"):
        cdf.start_transaction().add_actions(make_add("b")).commit("WRITE")
    quiet = _table(tmp_path / "q", {"minReaderVersion": 1, "minWriterVersion": 4})
    assert quiet.start_transaction().add_actions(make_add("b")).commit("WRITE") == 1
    schema = json.loads(SCHEMA)
    schema["fields"][0]["metadata"] = {"delta.invariants": '{"expression": {"expression": "id > 0"}}'}
    inv = _table(tmp_path / "inv", {"minReaderVersion": 1, "minWriterVersion": 2}, schema=json.dumps(schema))
    inv.snapshot().check_readable()
    with pytest.raises(UnsupportedFeatureError, match="invariants"):
        inv.start_transaction().add_actions(make_add("b")).commit("WRITE")


def test_unknown_and_too_new_protocols(tmp_path: Path) -> None:
    unknown = _table(tmp_path / "u", {"minReaderVersion": 3, "minWriterVersion": 7,
                                      "readerFeatures": ["futureThing"], "writerFeatures": ["futureThing"]})
    with pytest.raises(UnsupportedFeatureError, match="futureThing"):
        unknown.snapshot().check_readable()
    too_new = _table(tmp_path / "n", {"minReaderVersion": 4, "minWriterVersion": 8})
    with pytest.raises(UnsupportedFeatureError, match="minReaderVersion 4"):
        too_new.snapshot().check_readable()
    with pytest.raises(UnsupportedFeatureError, match="minWriterVersion 8"):
        too_new.snapshot().check_writable()
