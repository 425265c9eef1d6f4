"""Helpers shared by the skipping-index tests (no tests here): a table written with indexes, its
active files read back with pyarrow, and the files a read plan keeps."""
from __future__ import annotations

import os

import pyarrow.parquet as pq

import qbeast
from qbeast import QbeastTable
from qbeast.delta.log import DeltaLog


def indexed_table(spark, tmp_path_factory, name: str, rows: list, schema: str, cube_size: int,
                  indexes: dict) -> str:
    """A table of ``rows`` indexed on ``k``, declaring ``indexes``; its path."""
    path = str(tmp_path_factory.mktemp(name) / "t")
    qbeast.write(spark.createDataFrame(rows, schema), path, "k", cube_size=cube_size,
                 skipping_indexes=indexes)
    return path


def active_files(path: str) -> dict[str, object]:
    """Each active data file's rows (pyarrow), by its path in the log."""
    return {f: pq.read_table(os.path.join(path, f)) for f in DeltaLog.for_path(path).snapshot().files}


def plan_files(path: str, condition: object) -> tuple[set[str], dict]:
    """The file names a read plan of ``condition`` keeps, and what each index removed."""
    plan = QbeastTable.for_path(None, path).read_plan(filter=condition)
    return {os.path.basename(f.path) for f in plan.files}, dict(plan.index_pruned)
