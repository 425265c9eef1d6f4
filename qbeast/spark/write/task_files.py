"""Writing a Qbeast write's data files in Arrow tasks: the write path of sessions whose tasks
cannot see this disk (a cluster master, Spark Connect) for tables on an object store.

Spark's parquet writer needs a file system its executors share with the driver, and a plain pip
pyspark has no Hadoop connector for ``s3://``. Here the rows are shuffled by output file as for
Spark's writer (all rows of a file in one task), and each task writes its files with pyarrow
exactly as the driver-local append does (:func:`qbeast.spark.write.local.write_output_file`:
band pieces as row groups, blocks counted from the assignment, Delta stats from the footer),
then uploads each one through the storage layer with the settings the driver resolved
(:meth:`qbeast.storage.Storage.for_tasks`). The tasks return each file's description;
the driver commits as after any write.

File names (``<uuid>.parquet`` at the table root) are chosen on the driver, one per output file:
a retried task replaces its own file, and a failed write deletes every name it handed out, so
nothing is left behind and nothing committed is touched.
"""
from __future__ import annotations

import logging
import pickle
import time
import uuid
from collections.abc import Iterator
from typing import Any

from qbeast.commit import WrittenFile
from qbeast.core.revision import Revision
from qbeast.index.assignment import WritePlan
from qbeast.spark import settings
from qbeast.spark.arrow_jobs import map_in_arrow
from qbeast.spark.write.describe import STAGING_FILE_COLUMN
from qbeast.spark.write.options import WEIGHT_COLUMN
from qbeast.spark.write.staging import assigned_rows, owner_column
from qbeast.storage import storage_for

logger = logging.getLogger("qbeast.spark.write.writer")

_RESULT_SCHEMA = ("file_id int, name string, size long, modification_time long, num_records long, "
                  "stats string, blocks binary")


def write_files_in_tasks(data: Any, revision: Revision, plan: WritePlan, table_dir: str, *,
                         tasks: int) -> list[WrittenFile]:
    """Write ``data``'s rows into the plan's output files of ``revision`` in ``tasks`` Arrow tasks
    that upload them to ``table_dir``; one description per file written (nothing committed)."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    storage = storage_for(table_dir)
    root = storage.resolve(table_dir).rstrip("/")
    names = {output: f"{uuid.uuid4()}.parquet" for output in range(plan.output_file_count)}
    assigned = assigned_rows(data, plan, revision, tally=None, flags=None, keep_weight=True)
    output = F.col(STAGING_FILE_COLUMN)
    if plan.row_group_files is not None:
        output = owner_column(plan, output)
    shuffled = assigned.repartition(max(1, min(tasks, plan.output_file_count)), output)
    write = _task_writer(revision, plan, storage.for_tasks(), root, names,
                         settings.PARQUET_VERSION.read(data.sparkSession))
    try:
        rows = map_in_arrow(shuffled, write, _RESULT_SCHEMA).collect()
    except BaseException:
        for name in names.values():  # what finished tasks uploaded: never committed
            try:
                storage.delete(f"{root}/{name}")
            except FileNotFoundError:
                pass
        raise
    written = [WrittenFile(r["file_id"], r["name"], r["size"], r["modification_time"],
                           r["num_records"], r["stats"], pickle.loads(r["blocks"]))
               for r in rows]
    logger.info("write in Arrow tasks: %s files=%d rows=%d tasks=%d elapsed=%.2fs", root,
                len(written), sum(w.num_records for w in written), tasks,
                time.perf_counter() - started)
    return sorted(written, key=lambda w: w.file_id)


def _task_writer(revision: Revision, plan: WritePlan, storage: Any, root: str,
                 names: dict[int, str], version: str) -> Any:
    """The function each task runs: its rows' files written with pyarrow, uploaded, described."""

    def write(batches: Iterator[Any]) -> Iterator[Any]:  # runs in the executors' Python workers
        import os
        import tempfile

        import numpy as np
        import pyarrow as pa

        from qbeast.index.points import table_points
        from qbeast.spark.write.local import output_rows, write_output_file

        received = [b for b in batches if b.num_rows]
        if not received:
            return
        table = pa.Table.from_batches(received)
        weights = table.column(WEIGHT_COLUMN).to_numpy(zero_copy_only=False).astype(np.int64)
        columns = list(revision.columns)
        coords = table_points(revision, table.select(columns), columns)
        cubes, files = plan.assign(coords, weights)
        data = table.drop_columns([STAGING_FILE_COLUMN, WEIGHT_COLUMN])
        data = data.cast(pa.schema([f.with_nullable(True) for f in data.schema]))
        owners = plan.row_group_files
        with tempfile.TemporaryDirectory(prefix="qbeast-task-") as folder:
            for rows in output_rows(plan, files):
                piece = int(files[rows[0]])
                output = piece if owners is None else int(owners[piece])
                path = os.path.join(folder, names[output])
                file_id, stats, blocks = write_output_file(path, data, rows, files, cubes, weights,
                                                           plan, {}, version)
                info = storage.upload(path, f"{root}/{names[output]}")
                os.remove(path)
                yield pa.RecordBatch.from_pylist([{
                    "file_id": file_id, "name": names[output], "size": info.size,
                    "modification_time": info.mtime_ms, "num_records": len(rows), "stats": stats,
                    "blocks": pickle.dumps(blocks),
                }], schema=_arrow_result_schema())

    return write


def _arrow_result_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("file_id", pa.int32()), ("name", pa.string()), ("size", pa.int64()),
                      ("modification_time", pa.int64()), ("num_records", pa.int64()),
                      ("stats", pa.string()), ("blocks", pa.binary())])


__all__ = ["write_files_in_tasks"]
