"""Spark DataFrames over a read plan: the DataFrame half of ``QbeastTable.to_df`` and ``sample``.

:mod:`qbeast.spark.read.planner` decides which files a read opens and which rows it keeps,
without Spark; this module turns that plan into a native parquet scan of exactly those files
(read up to a prefix through the bridge jar where the plan allows it, mapped onto the table's
columns for partitioned and column-mapped tables), then applies the sample's weight filter and
the user's row filters in the JVM. A user's SQL filter that Spark cannot parse or resolve becomes
an :class:`~qbeast.errors.InvalidOptionError` here, so the table API never handles Spark's
exceptions. pyspark is imported inside the functions: importing this module stays cheap and
Spark-free.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from qbeast.core.sql import quote_identifier
from qbeast.errors import InvalidOptionError
from qbeast.spark.bridge import prefix_scan
from qbeast.spark.file_access import FileAccess
from qbeast.spark.paths import spark_path
from qbeast.spark.read.planner import ReadPlan, weight_filter_sql


def spark_schema(plan: ReadPlan):
    """The plan's table schema as a ``pyspark.sql.types.StructType``."""
    from pyspark.sql.types import StructType

    return StructType.fromJson(json.loads(plan.schema_json))


def weight_filter_column(plan: ReadPlan):
    """The JVM row filter ``lo <= hash(cols) < hi`` of a sampled plan (None if not sampled)."""
    if plan.weight_range is None:
        return None
    from pyspark.sql import functions as F

    return F.expr(weight_filter_sql(plan.hash_columns, plan.weight_range))


def _mapped_dataframe(spark: Any, plan: ReadPlan, schema: Any):
    """The files of a partitioned or column-mapped table, read onto the table's columns.

    Files are read with the physical data schema; each column is renamed (and its nested
    fields, by a cast) to its display name, and partition columns become literals of each
    file's partition values. Files sharing partition values share one scan.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    layout = plan.layout
    assert layout is not None
    data_schema = StructType.fromJson(layout.data_schema)
    by_name = {f.name: f for f in schema.fields}
    physical = layout.physical_names
    groups: dict[tuple[tuple[str, Any], ...], list[str]] = {}
    for planned in plan.files:
        groups.setdefault(planned.partition_values, []).append(spark_path(planned.path))
    frames = []
    for values, paths in groups.items():
        constants = dict(values)
        scan = spark.read.schema(data_schema).parquet(*paths)
        columns = []
        for column in schema.fields:
            if column.name in constants:
                literal = _partition_literal(constants[column.name])
                columns.append(literal.cast(by_name[column.name].dataType).alias(column.name))
            else:
                source = F.col(quote_identifier(physical[column.name]))
                if layout.mapping_mode != "none":
                    source = source.cast(column.dataType)  # renames nested fields by position
                columns.append(source.alias(column.name))
        frames.append(scan.select(*columns))
    df = frames[0]
    for frame in frames[1:]:
        df = df.unionAll(frame)
    return df


def _partition_literal(value: Any):
    """A Spark literal of a typed partition value, independent of any session time zone.

    Dates and timestamps go through ISO text (with ``+00:00`` for instants, none for
    ``timestamp_ntz``) and are cast by the caller; Python's own datetime conversion would apply
    the driver's local zone.
    """
    import datetime as dt

    from pyspark.sql import functions as F

    if isinstance(value, (dt.date, dt.datetime)):
        return F.lit(value.isoformat())
    if isinstance(value, bytes):
        return F.lit(bytearray(value))
    return F.lit(value)


def opened_plan(access: FileAccess, plan: ReadPlan) -> ReadPlan:
    """``plan`` with each file's path as Spark opens it: unchanged on a local disk; for a file
    on an object store, its path through the session's Hadoop file system for the scheme, its
    local copy or its signed-URL path
    (:meth:`qbeast.spark.file_access.FileAccess.spark_readable`)."""
    opened = access.spark_readable(plan.paths, [f.size for f in plan.files])
    if opened == plan.paths:
        return plan
    files = tuple(dataclasses.replace(f, path=p) for f, p in zip(plan.files, opened))
    return dataclasses.replace(plan, files=files)


def plan_dataframe(access: FileAccess, plan: ReadPlan, row_filters: Iterable[Any] = ()):
    """A DataFrame over exactly the plan's files (native parquet scan) with the row filters;
    ``access`` is how the read reaches the table's files (:meth:`FileAccess.decide`, once per
    read: :func:`user_filtered_dataframe`).

    ``df.inputFiles()`` lists the planned files (for a table on an object store, their local
    copies or signed-URL paths, :func:`opened_plan`; a Spark Connect session, or a cluster
    session without the JVM read bridge, reads such a table in Arrow tasks instead,
    :mod:`qbeast.spark.read.arrow_tasks`, and lists none). ``row_filters`` are Spark
    Columns or SQL strings applied after the sample filter (the user's predicate, so that
    results are exact).
    """
    spark = access.spark
    schema = spark_schema(plan)
    if not access.native_reads() and access.arrow_tasks:
        # a cluster (or Connect) whose parquet reader can take neither signed URLs nor the
        # files through Hadoop: executors cannot see local copies
        from qbeast.spark.read.arrow_tasks import tasks_dataframe

        df = tasks_dataframe(spark, plan, schema)  # the sample's weight range applied in the tasks
        for condition in row_filters:
            df = df.filter(condition)
        return df
    plan = opened_plan(access, plan)
    if not plan.files:
        df = spark.createDataFrame([], schema)
    elif plan.layout is None:
        df = None
        if plan.prefix_reads:  # read each file up to its planned length (bridge jar needed)
            df = prefix_scan(spark, [(f.path, f.bytes_to_read, f.modification_time)
                                     for f in plan.files], schema)
        if df is None:
            df = spark.read.schema(schema).parquet(*[spark_path(p) for p in plan.paths])
    else:
        df = _mapped_dataframe(spark, plan, schema)
    weight_filter = weight_filter_column(plan)
    if weight_filter is not None:
        df = df.filter(weight_filter)
    for condition in row_filters:
        df = df.filter(condition)
    return df


def user_filtered_dataframe(spark: Any, plan: ReadPlan, user_filter: Any, row_filter: Any):
    """:func:`plan_dataframe` with the row filter of the user's ``filter`` argument (from
    :func:`qbeast.spark.read.predicates.user_predicate`; None: every row): the DataFrame read
    of ``QbeastTable.to_df`` and ``sample``, which decides here how it reaches the files.

    SQL text is parsed and resolved by Spark when the DataFrame is built: a text it refuses
    becomes an :class:`InvalidOptionError` naming the table's columns.
    """
    access = FileAccess.decide(spark, plan.table_path)
    if not isinstance(user_filter, str):
        return plan_dataframe(access, plan, [row_filter] if row_filter is not None else [])
    from pyspark.errors import PySparkException

    try:  # Spark parses and resolves the SQL text here
        return plan_dataframe(access, plan, [row_filter])
    except PySparkException as exc:
        columns = [f["name"] for f in json.loads(plan.schema_json)["fields"]]
        reason = next((line for line in str(exc).splitlines() if line.strip()), repr(exc))
        raise InvalidOptionError(
            f"filter {user_filter!r} is not a valid SQL predicate over the table's columns "
            f"{columns}: {reason.strip()}"
        ) from exc
