"""Reading a plan's files in Arrow tasks: the read path of sessions whose tasks cannot see this disk.

A Spark session on a cluster master has no Hadoop connector for ``s3://`` (a plain pip pyspark),
and its executors cannot open the local copies the driver keeps
(:mod:`qbeast.spark.file_access`). Here each Spark task opens its share of the planned files
through the engine's storage layer instead, with the store settings the driver resolved
(:meth:`qbeast.storage.Storage.for_tasks`), and yields Arrow batches: the same reader as
the Python data source (:func:`qbeast.spark.read.datasource.read_partition`), driven by
``mapInArrow`` (:func:`qbeast.spark.arrow_jobs.map_in_arrow`) over one row per task so that it serves any plan the DataFrame API makes.

The sample's weight range is applied in the task, as in the data source; the user's row filters
are applied by Spark on the result, as on every path.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from qbeast.spark.read.datasource import plan_partitions
from qbeast.spark.arrow_jobs import map_in_arrow

logger = logging.getLogger(__name__)


def tasks_dataframe(spark: Any, plan: Any, schema: Any) -> Any:
    """A DataFrame of exactly ``plan``'s rows (its files, its sample) with ``schema`` (a Spark
    ``StructType`` of the table's columns), read in one Spark task per group of files."""
    partitions = plan_partitions(plan)
    if not partitions:
        return spark.createDataFrame([], schema)
    logger.info("qbeast read of %s: %d files in %d Arrow tasks through the storage layer",
                plan.table_path, len(plan.files), len(partitions))
    schema_json = schema.json()

    def read(batches: Iterator[Any]) -> Iterator[Any]:  # runs in the executors' Python workers
        from qbeast.spark.arrow_columns import spark_arrow_schema
        from pyspark.sql.types import StructType

        from qbeast.spark.read.datasource import read_partition

        target = spark_arrow_schema(StructType.fromJson(json.loads(schema_json)))
        for batch in batches:
            for index in batch.column(0).to_pylist():
                yield from read_partition(partitions[index], target)

    tasks = len(partitions)
    return map_in_arrow(spark.range(0, tasks, 1, tasks), read, schema)


__all__ = ["tasks_dataframe"]
