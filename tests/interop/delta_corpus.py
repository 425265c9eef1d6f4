"""A corpus of small Delta tables from several writers, for the conformance test.

Three sources:

* **delta-rs** (``deltalake``): appends, overwrites, deletes, compaction, partitioned tables
  with awkward partition values, checkpoints with JSON and struct statistics, log cleanup,
  ``timestamp_ntz``, and the column-mapping *property* without protocol support (as delta-rs
  writes it);
* **this engine** (``qbeast.write`` on Spark, ``convert_to_qbeast``), multi-part checkpoints;
* **hand-made logs** for what the other writers here cannot produce: percent-encoded and glob
  characters in file names, absolute ``file:`` URIs, column mapping in ``name`` and ``id`` mode
  (swapped physical names included), deletion vectors, a ``metaData`` without ``schemaString``,
  variant columns, timestamp partition values, widened types and unknown reader features.

Every builder returns a :class:`CorpusTable`: where it is and what a reader must do with it —
read it (``refused=None``) or refuse it with an error matching ``refused``.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass(frozen=True)
class CorpusTable:
    name: str
    path: str
    writer: str
    #: regex the refusal must match (naming the feature or field); None = must be read
    refused: str | None = None
    #: the rows the table holds, where the reference readers get them wrong
    expected: tuple[dict[str, Any], ...] | None = None


# -- hand-made logs -----------------------------------------------------------------------------


def _field(name: str, type_: Any, physical: str | None = None, column_id: int | None = None,
           **extra: Any) -> dict[str, Any]:
    metadata = dict(extra)
    if physical is not None:
        metadata["delta.columnMapping.physicalName"] = physical
    if column_id is not None:
        metadata["delta.columnMapping.id"] = column_id
    return {"name": name, "type": type_, "nullable": True, "metadata": metadata}


def _schema(*fields: dict[str, Any]) -> str:
    return json.dumps({"type": "struct", "fields": list(fields)})


def _stats(table: pa.Table) -> str:
    """numRecords / min / max / nullCount of the top-level non-nested columns."""
    import pyarrow.compute as pc

    mins, maxs, nulls = {}, {}, {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_struct(column.type) or pa.types.is_binary(column.type):
            continue
        nulls[name] = column.null_count
        if column.null_count < len(column):
            mm = pc.min_max(column).as_py()
            lo, hi = mm["min"], mm["max"]
            if isinstance(lo, (dt.date, dt.datetime)):
                lo, hi = lo.isoformat(), hi.isoformat()
            mins[name], maxs[name] = lo, hi
    return json.dumps({"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs,
                       "nullCount": nulls})


class HandLog:
    """A table written file by file and action by action, as another engine would."""

    def __init__(self, root: Path) -> None:
        self.root = root
        shutil.rmtree(root, ignore_errors=True)
        (root / "_delta_log").mkdir(parents=True)
        self.version = 0

    def data_file(self, relative: str, table: pa.Table, partition: dict[str, str | None] | None = None,
                  log_path: str | None = None, stats: str | None = None,
                  **extra: Any) -> dict[str, Any]:
        """Write ``table`` at ``relative`` (a real file name) and return its ``add`` body."""
        target = self.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, target)
        st = os.stat(target)
        body = {"path": log_path if log_path is not None else quote(relative, safe="/="),
                "partitionValues": dict(partition or {}), "size": st.st_size,
                "modificationTime": st.st_mtime_ns // 1_000_000, "dataChange": True,
                "stats": stats if stats is not None else _stats(table)}
        body.update(extra)
        return body

    def commit(self, *actions: dict[str, Any]) -> None:
        lines = [{"commitInfo": {"timestamp": 1_700_000_000_000 + self.version,
                                 "operation": "WRITE", "engineInfo": "hand-made-corpus"}}]
        lines.extend(actions)
        path = self.root / "_delta_log" / f"{self.version:020d}.json"
        path.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
        self.version += 1


def _protocol(reader: int, writer: int, reader_features: list[str] | None = None,
              writer_features: list[str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        body["readerFeatures"] = reader_features
    if writer_features is not None:
        body["writerFeatures"] = writer_features
    return {"protocol": body}


def _metadata(schema: str | None, partitions: list[str] | None = None,
              configuration: dict[str, str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                            "partitionColumns": partitions or [], "configuration": configuration or {},
                            "createdTime": 1_700_000_000_000}
    if schema is not None:
        body["schemaString"] = schema
    return {"metaData": body}


_ID_NAME = _schema(_field("id", "long"), _field("name", "string"))


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "name": [f"n{i}" for i in range(start, start + n)]})


def hand_percent_paths(root: Path) -> CorpusTable:
    """File names with ``%``, spaces and glob characters: the log spells them percent-encoded."""
    log = HandLog(root)
    adds = [log.data_file(name, _rows(i * 10, 3)) for i, name in enumerate([
        "test%file%prefix-part-00000.snappy.parquet",
        "dir with space/part 1.parquet",
        "glob[1]{a,b}*?.parquet",
        "ünïcode-ß.parquet",
    ])]
    log.commit(_protocol(1, 2), _metadata(_ID_NAME), *({"add": a} for a in adds))
    return CorpusTable("hand/percent-encoded-paths", str(root), "hand-made")


def hand_absolute_uri(root: Path, outside: Path) -> CorpusTable:
    """``add.path`` as absolute ``file:`` URIs of files outside the table (shallow clone)."""
    outside.mkdir(parents=True, exist_ok=True)
    log = HandLog(root)
    adds = []
    for i, name in enumerate(["a b.parquet", "c%d.parquet"]):
        target = outside / name
        pq.write_table(_rows(i * 10, 2), target)
        st = os.stat(target)
        adds.append({"path": target.as_uri(), "partitionValues": {}, "size": st.st_size,
                     "modificationTime": st.st_mtime_ns // 1_000_000, "dataChange": True,
                     "stats": _stats(_rows(i * 10, 2))})
    adds.append(log.data_file("local.parquet", _rows(100, 1)))
    log.commit(_protocol(1, 2), _metadata(_ID_NAME), *({"add": a} for a in adds))
    expected = _rows(0, 2).to_pylist() + _rows(10, 2).to_pylist() + _rows(100, 1).to_pylist()
    return CorpusTable("hand/absolute-file-uris", str(root), "hand-made", expected=tuple(expected))


def _physical_table(ids: list[int], names: list[str], xs: list[int]) -> pa.Table:
    """Data under physical names (with parquet field ids), as a column-mapping writer stores it."""
    def fid(n: int) -> dict[bytes, bytes]:
        return {b"PARQUET:field_id": str(n).encode()}

    struct_type = pa.struct([pa.field("col-x", pa.int64(), metadata=fid(4)),
                             pa.field("col-y", pa.string(), metadata=fid(5))])
    # the physical names of "a" and "b" are swapped: a reader that ignores the mapping, or looks
    # statistics up by display name, gets the other column
    schema = pa.schema([pa.field("b", pa.int64(), metadata=fid(1)),   # display name "a"
                        pa.field("a", pa.string(), metadata=fid(2)),  # display name "b"
                        pa.field("col-s", struct_type, metadata=fid(3))])
    structs = [{"col-x": x, "col-y": f"y{x}"} for x in xs]
    return pa.table([pa.array(ids, pa.int64()), pa.array(names), pa.array(structs, struct_type)],
                    schema=schema)


def _mapped_schema() -> str:
    inner = {"type": "struct", "fields": [_field("x", "long", "col-x", 4), _field("y", "string", "col-y", 5)]}
    return _schema(_field("a", "long", "b", 1), _field("b", "string", "a", 2),
                   _field("s", inner, "col-s", 3), _field("p", "string", "col-p", 6))


def _mapped_stats(table: pa.Table) -> str:
    ids = table.column("b").to_pylist()
    names = table.column("a").to_pylist()
    xs = [r["col-x"] for r in table.column("col-s").to_pylist()]
    return json.dumps({"numRecords": table.num_rows,
                       "minValues": {"b": min(ids), "a": min(names), "col-s": {"col-x": min(xs)}},
                       "maxValues": {"b": max(ids), "a": max(names), "col-s": {"col-x": max(xs)}},
                       "nullCount": {"b": 0, "a": 0, "col-s": {"col-x": 0, "col-y": 0}}})


def hand_column_mapping(root: Path, mode: str) -> CorpusTable:
    """Column mapping: physical names swapped against display names, nested and partitioned."""
    log = HandLog(root)
    adds, expected = [], []
    for part, ids in (("p1", [1, 2, 3]), ("p 2", [10, 20])):
        data = _physical_table(ids, [f"v{i}" for i in ids], [i * 7 for i in ids])
        adds.append(log.data_file(f"{uuid.uuid4().hex[:2]}/{uuid.uuid4()}.parquet", data,
                                  {"col-p": part}, stats=_mapped_stats(data)))
        expected.extend({"a": i, "b": f"v{i}", "s": {"x": i * 7, "y": f"y{i * 7}"}, "p": part}
                        for i in ids)
    config = {"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": "6"}
    log.commit(_protocol(2, 5), _metadata(_mapped_schema(), ["p"], config), *({"add": a} for a in adds))
    refused = None if mode == "name" else r"columnMapping.*mode 'id'"
    return CorpusTable(f"hand/column-mapping-{mode}", str(root), "hand-made", refused, tuple(expected))


def hand_deletion_vector(root: Path) -> CorpusTable:
    """An active file with an inline deletion vector: refused (rows would come back)."""
    log = HandLog(root)
    dv = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
          "sizeInBytes": 40, "cardinality": 6}
    add = log.data_file("dv.parquet", _rows(0, 40), deletionVector=dv)
    log.commit(_protocol(3, 7, ["deletionVectors"], ["deletionVectors"]), _metadata(_ID_NAME),
               {"add": add})
    return CorpusTable("hand/deletion-vector", str(root), "hand-made", r"deletionVectors")


def hand_no_schema_string(root: Path) -> CorpusTable:
    """A ``metaData`` action without ``schemaString`` (written by a pipeline engine)."""
    log = HandLog(root)
    log.commit(_protocol(1, 2), _metadata(None), {"add": log.data_file("a.parquet", _rows(0, 2))})
    return CorpusTable("hand/metadata-without-schemaString", str(root), "hand-made", r"schemaString")


def hand_timestamp_partitions(root: Path) -> CorpusTable:
    """Partitioned by timestamp, timestamp_ntz, date, boolean, decimal and binary columns."""
    log = HandLog(root)
    schema = _schema(_field("id", "long"), _field("ts", "timestamp"), _field("ntz", "timestamp_ntz"),
                     _field("d", "date"), _field("flag", "boolean"), _field("amount", "decimal(10,2)"),
                     _field("bin", "binary"))
    partitions = ["ts", "ntz", "d", "flag", "amount", "bin"]
    values = [
        {"ts": "2020-01-01 10:00:00", "ntz": "2020-01-01 10:00:00", "d": "2020-01-01",
         "flag": "true", "amount": "12.50", "bin": "\u0001\u0002"},
        {"ts": "2021-06-01T12:00:00.000000Z", "ntz": "2021-06-01 12:00:00.123456", "d": "1970-01-01",
         "flag": "false", "amount": "-0.01", "bin": "abc"},
        {"ts": "", "ntz": None, "d": "", "flag": "", "amount": "", "bin": ""},  # nulls
    ]
    adds = [log.data_file(f"part-{i}.parquet", pa.table({"id": pa.array([i, i + 100], pa.int64())}), v)
            for i, v in enumerate(values)]
    log.commit(_protocol(3, 7, ["timestampNtz"], ["timestampNtz"]), _metadata(schema, partitions),
               *({"add": a} for a in adds))
    return CorpusTable("hand/typed-partition-values", str(root), "hand-made")


def hand_materialized_partition(root: Path) -> CorpusTable:
    """A partition column also stored in the file with another value: the log wins."""
    log = HandLog(root)
    schema = _schema(_field("id", "long"), _field("p", "string"))
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["wrong", "wrong"]})
    log.commit(_protocol(1, 2), _metadata(schema, ["p"]),
               {"add": log.data_file("p=a/x.parquet", data, {"p": "a"})})
    return CorpusTable("hand/partition-column-in-file", str(root), "hand-made")


def hand_type_widening(root: Path) -> CorpusTable:
    log = HandLog(root)
    widened = _field("id", "long", **{"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]})
    log.commit(_protocol(3, 7, ["typeWidening"], ["typeWidening"]),
               _metadata(_schema(widened, _field("name", "string"))),
               {"add": log.data_file("a.parquet", _rows(0, 2))})
    return CorpusTable("hand/type-widening-used", str(root), "hand-made", r"typeWidening")


def hand_unknown_feature(root: Path) -> CorpusTable:
    log = HandLog(root)
    log.commit(_protocol(3, 7, ["someFutureFeature"], ["someFutureFeature"]), _metadata(_ID_NAME),
               {"add": log.data_file("a.parquet", _rows(0, 2))})
    return CorpusTable("hand/unknown-reader-feature", str(root), "hand-made", r"someFutureFeature")


def hand_variant(root: Path, spark: Any) -> CorpusTable:
    """A variant column in files Spark wrote (shredded), declared by the ``variantType`` feature."""
    scratch = root.parent / f"{root.name}-spark"
    shutil.rmtree(scratch, ignore_errors=True)
    spark.sql("""SELECT id, parse_json(concat('{"k":', id, ',"s":"t', id, '"}')) AS v
                 FROM range(5)""").coalesce(1).write.parquet(str(scratch))
    log = HandLog(root)
    source = next(scratch.glob("*.parquet"))
    target = root / "variant.parquet"
    shutil.copy(source, target)
    st = os.stat(target)
    add = {"path": "variant.parquet", "partitionValues": {}, "size": st.st_size,
           "modificationTime": st.st_mtime_ns // 1_000_000, "dataChange": True,
           "stats": json.dumps({"numRecords": 5})}
    schema = _schema(_field("id", "long"), _field("v", "variant"))
    log.commit(_protocol(3, 7, ["variantType"], ["variantType"]), _metadata(schema), {"add": add})
    # the file's content as Spark's parquet reader sees it (the references cannot read variants)
    expected = spark.read.schema("id long, v variant").parquet(str(source)).toArrow().to_pylist()
    return CorpusTable("hand/variant-column", str(root), "hand-made", expected=tuple(expected))


# -- delta-rs -----------------------------------------------------------------------------------


def _dl_batch(start: int, n: int, **constant: Any) -> pa.Table:
    data: dict[str, Any] = {"id": pa.array(range(start, start + n), pa.int64()),
                            "name": pa.array([f"n{i}" for i in range(start, start + n)])}
    for key, value in constant.items():
        data[key] = pa.array([value] * n)
    return pa.table(data)


def deltalake_tables(root: Path) -> list[CorpusTable]:
    import deltalake

    write = deltalake.write_deltalake
    out = []

    path = str(root / "dl-history")
    write(path, _dl_batch(0, 5))
    for i in range(1, 14):
        write(path, _dl_batch(i * 10, 3), mode="append")
        if i == 5:
            write(path, _dl_batch(500, 4), mode="overwrite")
        if i == 8:
            deltalake.DeltaTable(path).delete("id >= 70")
        if i == 10:
            deltalake.DeltaTable(path).create_checkpoint()
    deltalake.DeltaTable(path).optimize.compact()
    out.append(CorpusTable("delta-rs/appends-overwrite-delete-compact-checkpoint", path, "delta-rs"))

    path = str(root / "dl-partitioned")
    for i, part in enumerate(["x y", "z%/", "plain", "ü=1", "a:b", "x y"]):
        write(path, _dl_batch(i * 10, 2, p=part), mode="append", partition_by=["p"])
    write(path, pa.table({"id": pa.array([99], pa.int64()), "name": ["null part"],
                          "p": pa.array([None], pa.string())}), mode="append", partition_by=["p"])
    deltalake.DeltaTable(path).create_checkpoint()
    deltalake.DeltaTable(path).delete("p = 'plain'")
    write(path, _dl_batch(100, 2, p="after checkpoint"), mode="append", partition_by=["p"])
    out.append(CorpusTable("delta-rs/partitioned-awkward-values-checkpoint", path, "delta-rs"))

    path = str(root / "dl-partitioned-only-checkpoint")
    write(path, pa.concat_tables([_dl_batch(0, 2, p="a"), _dl_batch(2, 2, p="b")]),
          partition_by=["p"])
    deltalake.DeltaTable(path).create_checkpoint()
    for f in (root / "dl-partitioned-only-checkpoint" / "_delta_log").glob("*.json"):
        f.unlink()  # the state lives only in the checkpoint (log cleaned up)
    out.append(CorpusTable("delta-rs/partitioned-state-only-in-checkpoint", path, "delta-rs"))

    path = str(root / "dl-typed-partitions-struct-stats")
    typed = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "n": pa.array([1, 1, 2, 2], pa.int32()),
                      "d": [dt.date(2020, 1, 1)] * 2 + [dt.date(2021, 1, 1)] * 2,
                      "b": [True, True, False, False]})
    write(path, typed, partition_by=["n", "d", "b"],
          configuration={"delta.checkpoint.writeStatsAsStruct": "true",
                         "delta.checkpoint.writeStatsAsJson": "false"})
    deltalake.DeltaTable(path).create_checkpoint()
    out.append(CorpusTable("delta-rs/typed-partitions-struct-stats-checkpoint", path, "delta-rs"))

    path = str(root / "dl-timestamps")
    write(path, pa.table({"id": pa.array([1, 2], pa.int64()),
                          "ntz": pa.array([dt.datetime(2020, 1, 1, 12), None], pa.timestamp("us")),
                          "ts": pa.array([dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)] * 2,
                                         pa.timestamp("us", tz="UTC"))}))
    out.append(CorpusTable("delta-rs/timestamp-ntz", path, "delta-rs"))

    path = str(root / "dl-colmap-property")
    written = _dl_batch(0, 3, p="q")
    write(path, written, partition_by=["p"], configuration={"delta.columnMapping.mode": "name"})
    out.append(CorpusTable("delta-rs/column-mapping-property-without-feature", path, "delta-rs",
                           expected=tuple(written.to_pylist())))

    path = str(root / "dl-dv-enabled")
    write(path, _dl_batch(0, 6), configuration={"delta.enableDeletionVectors": "true"})
    deltalake.DeltaTable(path).delete("id < 2")
    out.append(CorpusTable("delta-rs/deletion-vectors-enabled-unused", path, "delta-rs"))

    path = str(root / "dl-multipart")
    for i in range(4):
        write(path, _dl_batch(i * 10, 2, p=f"p{i % 2}"), mode="append", partition_by=["p"])
    from qbeast.delta.log import DeltaLog

    DeltaLog.for_path(path).checkpoint(parts=3)  # a multi-part checkpoint, as Spark writes them
    for f in (root / "dl-multipart" / "_delta_log").glob("*.json"):
        if int(f.name[:20]) < 3:
            f.unlink()
    write(path, _dl_batch(90, 1, p="p9"), mode="append", partition_by=["p"])
    out.append(CorpusTable("delta-rs+ours/multi-part-checkpoint", path, "delta-rs"))
    return out


# -- this engine --------------------------------------------------------------------------------


def engine_tables(root: Path, spark: Any) -> list[CorpusTable]:
    import qbeast
    from qbeast.delta.log import DeltaLog

    out = []
    path = str(root / "qb-written")
    base = spark.range(0, 600).selectExpr("id", "cast(id % 7 as double) AS x", "concat('s', id) AS s")
    qbeast.write(base, path, "id,x", cube_size=100)
    qbeast.write(spark.range(600, 700).selectExpr("id", "cast(id % 5 as double) AS x",
                                                  "concat('s', id) AS s"), path)
    qbeast.write(spark.range(5000, 5100).selectExpr("id", "cast(id AS double) AS x",
                                                    "concat('s', id) AS s"), path)  # new revision
    DeltaLog.for_path(path).checkpoint()
    qbeast.write(spark.range(700, 720).selectExpr("id", "cast(id % 3 as double) AS x",
                                                  "concat('s', id) AS s"), path)
    out.append(CorpusTable("ours/qbeast-write-appends-revisions-checkpoint", path, "dbt-qbeast"))

    folder = root / "qb-converted"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(_rows(0, 5), folder / "a.parquet")
    pq.write_table(_rows(5, 5), folder / "b%c d[1].parquet")
    qbeast.convert_to_qbeast(spark, str(folder), "id")
    out.append(CorpusTable("ours/converted-parquet-folder", str(folder), "dbt-qbeast"))

    folder = root / "qb-converted-optimized"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(_rows(0, 300), folder / "a{1}.parquet")
    pq.write_table(_rows(300, 200), folder / "b%c d[1].parquet")
    qbeast.convert_to_qbeast(spark, str(folder), "id", cube_size=100)
    qbeast.QbeastTable.for_path(spark, str(folder)).optimize(revision_id=0)  # staging -> revision 1
    out.append(CorpusTable("ours/converted-then-staging-indexed", str(folder), "dbt-qbeast"))
    return out


def build_corpus(root: Path, spark: Any) -> list[CorpusTable]:
    """Every table of the corpus, written below ``root``."""
    hand: list[Callable[[], CorpusTable]] = [
        lambda: hand_percent_paths(root / "hand-percent"),
        lambda: hand_absolute_uri(root / "hand-absolute", root / "outside dir"),
        lambda: hand_column_mapping(root / "hand-cm-name", "name"),
        lambda: hand_column_mapping(root / "hand-cm-id", "id"),
        lambda: hand_deletion_vector(root / "hand-dv"),
        lambda: hand_no_schema_string(root / "hand-no-schema"),
        lambda: hand_timestamp_partitions(root / "hand-typed-partitions"),
        lambda: hand_materialized_partition(root / "hand-materialized"),
        lambda: hand_type_widening(root / "hand-type-widening"),
        lambda: hand_unknown_feature(root / "hand-unknown"),
        lambda: hand_variant(root / "hand-variant", spark),
    ]
    return deltalake_tables(root) + engine_tables(root, spark) + [build() for build in hand]
