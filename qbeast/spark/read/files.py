"""Reading a list of data files with Spark: the one place that turns Delta file locations into a scan.

Every Spark job that reads files the planner or an operation chose (reads, optimize, convert,
row-level changes) goes through here, so that a table whose folder or file names hold glob
characters is read the same way by all of them.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from qbeast.spark.file_access import FileAccess
from qbeast.spark.paths import spark_path


def read_files(access: FileAccess, schema: Mapping[str, Any] | Any, locations: Iterable[str],
               sizes: Sequence[int | None] | None = None) -> Any:
    """A native parquet scan of exactly ``locations`` (files of the table ``access`` reaches)
    with ``schema`` (a Spark ``StructType`` or its JSON form); columns a file lacks read as
    null. Files on an object store are read through Hadoop, from local copies or by signed URL
    (:meth:`qbeast.spark.file_access.FileAccess.spark_readable`; ``sizes``, from the log, check
    the copies and size the signed reads)."""
    return read_opened(access.spark, schema, access.spark_readable(list(locations), sizes))


def read_opened(spark: Any, schema: Mapping[str, Any] | Any, opened: Sequence[str]) -> Any:
    """:func:`read_files` of files already as Spark opens them (from
    :meth:`qbeast.spark.file_access.FileAccess.spark_readable`: a caller that keeps those paths across
    scans does not map them again)."""
    from pyspark.sql.types import StructType

    if isinstance(schema, Mapping):
        schema = StructType.fromJson(dict(schema))
    return spark.read.schema(schema).parquet(*[spark_path(p) for p in opened])


def infer_parquet_schema(access: FileAccess, files: Sequence[str],
                         sizes: Sequence[int | None] | None = None) -> dict[str, Any]:
    """The schema Spark reads ``files`` (of the folder ``access`` reaches) with (merged across
    files) in its JSON form, every field nullable and without engine column metadata: the
    schema a converted parquet folder records.

    Files Spark cannot read as one table (a column with different types in different files, a
    file that is not parquet) are refused with an error naming the folder and the cause.
    """
    import os

    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from qbeast.core.columns import without_engine_metadata
    from qbeast.errors import InvalidOptionError, root_cause

    try:
        opened = access.spark_readable(files, sizes)
        inferred = access.spark.read.option("mergeSchema", "true").parquet(
            *[spark_path(f) for f in opened]).schema.jsonValue()
    except (PySparkException, Py4JJavaError) as exc:
        folder = os.path.dirname(files[0])
        raise InvalidOptionError(
            f"Spark cannot read the parquet files of {folder} as one table (for instance a column "
            f"has different types in different files): {root_cause(exc)}"
        ) from exc
    # the files' footers keep the column metadata of the DataFrame that wrote them, which may
    # be a Qbeast table's (older versions stored its location there): none of it is the engine's
    inferred = without_engine_metadata(inferred)
    for field in inferred["fields"]:
        field["nullable"] = True
    return inferred
