"""Writing the data files of a Qbeast write from Spark tasks, and describing them to the driver.

After the shuffle by file index, a task receives every row of the files it owns. It writes each
file with pyarrow (``<uuid>.parquet`` at the table root, only the user's columns, snappy, all fields
nullable like the Delta schema), and returns one small row per file: name, size, Delta stats and the
blocks (per cube: min row weight, threshold, row count). Nothing about the rows themselves travels
back to the driver, and nothing is committed here: the driver commits once all tasks succeeded,
so a failed write leaves the previous table version untouched (the files of a failed task are
deleted; those of succeeded tasks stay as unreferenced files for ``vacuum``).

Rows of one file may arrive scattered over many Arrow batches; they are buffered per file and
flushed as row groups of about ``row_group_rows`` rows, so files do not end up with thousands of
tiny row groups. One open ``ParquetWriter`` per file of the task.
"""
from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from qbeast.spark.arrow_jobs import ArrowMapFunction
from qbeast.spark.assignment import WritePlan
from qbeast.spark.delta_stats import StatsAccumulator

#: Schema of the per-file rows the write tasks return to the driver.
FILE_SCHEMA = (
    "file_id int, path string, size long, modification_time long, num_records long, "
    "stats string, blocks string"
)

DEFAULT_ROW_GROUP_ROWS = 128 * 1024
#: Above this many buffered bytes in a task, the largest buffer is flushed early.
TASK_BUFFER_BYTES = 256 * 1024 * 1024


def nullable_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every top-level field nullable (Qbeast tables declare all columns so)."""
    return pa.schema([f.with_nullable(True) for f in schema], metadata=schema.metadata)


@dataclass
class _OpenFile:
    """One file being written by a task: its writer, pending rows, stats and blocks."""

    file_id: int
    name: str
    writer: pq.ParquetWriter
    stats: StatsAccumulator
    pending: list[pa.Table] = field(default_factory=list)
    pending_rows: int = 0
    pending_bytes: int = 0
    cube_min: dict[int, int] = field(default_factory=dict)
    cube_count: dict[int, int] = field(default_factory=dict)

    def add_blocks(self, cube_ids: np.ndarray, weights: np.ndarray) -> None:
        order = np.argsort(cube_ids, kind="stable")
        ids = cube_ids[order]
        w = weights[order]
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        mins = np.minimum.reduceat(w, starts)
        counts = np.diff(np.r_[starts, len(ids)])
        for cube, low, count in zip(ids[starts].tolist(), mins.tolist(), counts.tolist()):
            if cube in self.cube_min:
                self.cube_min[cube] = min(self.cube_min[cube], low)
                self.cube_count[cube] += count
            else:
                self.cube_min[cube] = low
                self.cube_count[cube] = count

    def flush(self) -> None:
        if not self.pending:
            return
        table = pa.concat_tables(self.pending).cast(self.writer.schema)
        self.writer.write_table(table)
        self.stats.update(table)
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0


def write_files_function(
    table_dir: str,
    plan: WritePlan,
    user_columns: Sequence[str],
    weight_column: str,
    assignment_column: str,
    row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
) -> ArrowMapFunction:
    """The ``mapInArrow`` function writing a task's files; yields one row per file written.

    ``assignment_column`` is the struct ``<file: int, cube: bigint>`` of the assignment step.
    """
    columns = list(user_columns)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        open_files: dict[int, _OpenFile] = {}
        buffered_bytes = 0
        try:
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                assignment = batch.column(assignment_column)
                file_ids = assignment.field("file").to_numpy()
                cube_ids = assignment.field("cube").to_numpy()
                weights = batch.column(weight_column).to_numpy().astype(np.int64)
                data = pa.Table.from_batches([batch.select(columns)])
                order = np.argsort(file_ids, kind="stable")
                sorted_ids = file_ids[order]
                starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
                ends = np.r_[starts[1:], len(order)]
                for start, end in zip(starts.tolist(), ends.tolist()):
                    file_id = int(sorted_ids[start])
                    rows = order[start:end]
                    target = open_files.get(file_id)
                    if target is None:
                        target = _open(table_dir, data.schema, file_id)
                        open_files[file_id] = target
                    piece = data.take(pa.array(rows))
                    target.pending.append(piece)
                    target.pending_rows += piece.num_rows
                    target.pending_bytes += piece.nbytes
                    buffered_bytes += piece.nbytes
                    target.add_blocks(cube_ids[rows], weights[rows])
                    if target.pending_rows >= row_group_rows:
                        buffered_bytes -= target.pending_bytes
                        target.flush()
                if buffered_bytes > TASK_BUFFER_BYTES:
                    largest = max(open_files.values(), key=lambda f: f.pending_bytes)
                    buffered_bytes -= largest.pending_bytes
                    largest.flush()
            results = [_close(table_dir, plan, f) for f in open_files.values()]
        except BaseException:
            for f in open_files.values():
                _discard(table_dir, f)
            raise
        if results:
            yield pa.RecordBatch.from_pylist(results, schema=_file_arrow_schema())

    return run


def _file_arrow_schema() -> pa.Schema:
    return pa.schema(
        [
            ("file_id", pa.int32()),
            ("path", pa.string()),
            ("size", pa.int64()),
            ("modification_time", pa.int64()),
            ("num_records", pa.int64()),
            ("stats", pa.string()),
            ("blocks", pa.string()),
        ]
    )


def _open(table_dir: str, schema: pa.Schema, file_id: int) -> _OpenFile:
    name = f"{uuid.uuid4()}.parquet"
    out_schema = nullable_schema(schema)
    writer = pq.ParquetWriter(
        os.path.join(table_dir, name), out_schema, compression="snappy", store_schema=False
    )
    return _OpenFile(file_id, name, writer, StatsAccumulator(out_schema))


def _close(table_dir: str, plan: WritePlan, target: _OpenFile) -> dict:
    target.flush()
    target.writer.close()
    blocks = []
    for cube_id in sorted(target.cube_min):
        cube, threshold = plan.cube_and_threshold(cube_id)
        blocks.append([cube, target.cube_min[cube_id], threshold, target.cube_count[cube_id]])
    info = os.stat(os.path.join(table_dir, target.name))
    return {
        "file_id": target.file_id,
        "path": target.name,
        "size": info.st_size,
        "modification_time": int(info.st_mtime * 1000),
        "num_records": target.stats.num_records,
        "stats": target.stats.to_json(),
        "blocks": json.dumps(blocks, separators=(",", ":")),
    }


def _discard(table_dir: str, target: _OpenFile) -> None:
    try:
        target.writer.close()
    except Exception:  # noqa: BLE001 - the original error matters more
        pass
    try:
        os.remove(os.path.join(table_dir, target.name))
    except OSError:
        pass
