"""Reading a list of data files with Spark: the one place that turns Delta file locations into a scan.

Every Spark job that reads files the planner or an operation chose (reads, optimize, convert,
row-level changes) goes through here, so that a table whose folder or file names hold glob
characters is read the same way by all of them.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_GLOB_CHARACTERS = re.compile(r"([\\{}\[\]*?])")


def spark_path(location: str) -> str:
    """A file location as Spark's file readers take it: glob characters escaped.

    Spark expands ``{}``, ``[]``, ``*`` and ``?`` in the paths it is given; a data file whose
    name (or whose table folder's name) holds one of them, legal in Delta whose paths are URIs,
    is found only escaped.
    """
    return _GLOB_CHARACTERS.sub(r"\\\1", location)


def read_files(spark: Any, schema: Mapping[str, Any] | Any, locations: Iterable[str]) -> Any:
    """A native parquet scan of exactly ``locations`` with ``schema`` (a Spark ``StructType`` or
    its JSON form); columns a file lacks read as null."""
    from pyspark.sql.types import StructType

    if isinstance(schema, Mapping):
        schema = StructType.fromJson(dict(schema))
    return spark.read.schema(schema).parquet(*[spark_path(p) for p in locations])
