"""Joining the band pieces of one output file into one parquet file, row groups copied as they are.

Spark's parquet writer closes a row group by size, not where a weight band ends. The
``rowGroups`` layout (:mod:`qbeast.core.band_row_groups`) therefore writes a file's pieces with
the bridge jar's run writer where it can (:func:`qbeast.spark.write.staging._write_runs`). Where
the jar is not loaded, it has Spark write each band piece as a staging file of its own and then
appends the pieces' row groups, in band order, to one file:
parquet-mr's ``ParquetFileWriter.appendFile`` copies the encoded column chunks byte for byte
(nothing is decoded or compressed again), through the driver's JVM. The Spark metadata of the
first piece (Spark's schema of the columns) is kept, and the piece record is added.

Sessions without a driver JVM (Spark Connect) join with pyarrow instead, which decodes and
encodes the rows again on the driver (slower, same result). Reading a file's piece record back
is :mod:`qbeast.spark.data_footers`'s (the read and change wings need it too).
"""
from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from qbeast.core.band_row_groups import FOOTER_KEY, Piece, encode_pieces
from qbeast.delta.actions import is_local_file_path
from qbeast.spark import settings
from qbeast.spark.write.arrow_parquet import arrow_write_options
from qbeast.storage import file_uri


def join_pieces(spark: Any, parts: Sequence[str], target: str, pieces: Sequence[Piece]) -> None:
    """Write ``target`` holding the row groups of ``parts`` in order, with ``pieces`` recorded."""
    record = encode_pieces(pieces)
    jvm = _jvm(spark)
    if jvm is not None:
        _join_on_jvm(spark, jvm, parts, target, record)
    else:
        _join_with_arrow(parts, target, record, settings.PARQUET_VERSION.read(spark))


def _jvm(spark: Any) -> Any:
    try:
        return spark._jvm  # noqa: SLF001 - classic sessions only
    except Exception:  # noqa: BLE001 - Connect sessions have no Py4J gateway
        return None


def _join_on_jvm(spark: Any, jvm: Any, parts: Sequence[str], target: str, record: str) -> None:
    parquet = jvm.org.apache.parquet.hadoop
    conf = jvm.org.apache.hadoop.conf.Configuration(spark._jsc.hadoopConfiguration())  # noqa: SLF001
    if all(is_local_file_path(p) for p in (*parts, target)):
        # local files without Hadoop's .crc side files: nothing else reads those, and
        # computing them costs as much as the copy
        conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
        conf.setBoolean("fs.file.impl.disable.cache", True)

    def path(location: str) -> Any:
        return jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(file_uri(location)))

    reader = parquet.ParquetFileReader.open(conf, path(parts[0]))
    try:
        meta = reader.getFooter().getFileMetaData()
        schema = meta.getSchema()
        extra = jvm.java.util.HashMap(meta.getKeyValueMetaData())
    finally:
        reader.close()
    extra.put(FOOTER_KEY, record)
    mode = parquet.ParquetFileWriter.Mode.CREATE
    writer = parquet.ParquetFileWriter(conf, schema, path(target), mode)
    try:
        writer.start()
        for part in parts:
            writer.appendFile(conf, path(part))
    except Exception:
        # close the target's stream (no footer is written); the caller removes the file
        with contextlib.suppress(Exception):
            writer.close()
        raise
    writer.end(extra)


def _join_with_arrow(parts: Sequence[str], target: str, record: str, version: str) -> None:
    tables = [pq.read_table(part) for part in parts]
    # the options are chosen from all the rows, as the write of one file would choose them
    whole = pa.concat_tables(tables)
    write_pieces_with_arrow(target, tables, record, **arrow_write_options(whole, version))


def write_pieces_with_arrow(target: str, tables: Sequence[pa.Table], record: str | None,
                            **options: Any) -> None:
    """Write ``tables`` one after the other into ``target``, each in row groups of its own (a
    row group never holds rows of two tables), ``record`` as the footer's piece record.

    ``options`` go to ``pyarrow.parquet.ParquetWriter`` (snappy unless given). The record is
    added to the footer directly: with ``store_schema=False`` pyarrow writes no schema metadata.
    """
    schema = tables[0].schema
    options.setdefault("compression", "snappy")
    with pq.ParquetWriter(target, schema, **options) as writer:
        for table in tables:
            writer.write_table(table.replace_schema_metadata(schema.metadata),
                               row_group_size=max(table.num_rows, 1))
        if record is not None:
            writer.add_key_value_metadata({FOOTER_KEY: record})
