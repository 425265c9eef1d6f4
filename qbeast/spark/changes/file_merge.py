"""A key merge or delete+insert in one Spark job: each candidate file read and rewritten in one
task, the source shipped to the tasks.

Why: the join path (:mod:`qbeast.spark.changes.merge`) runs a chain of jobs and shuffles every
row of the affected files to a task by file; each job pays Spark's start-up and whole rows cross
into Python twice. Here the source (small, :mod:`qbeast.spark.changes.shipped_source`) goes to
every task; the candidate files are spread over a few tasks per core (:func:`task_groups`), and
for each of its files a task:

1. reads the file's key columns with pyarrow (the file itself, the local copy of a file on an
   object store, :meth:`qbeast.spark.file_access.FileAccess.readable`, or, from a cluster, the object
   through the storage layer) and matches them against the
   source's keys (:mod:`qbeast.spark.changes.key_match`); a file without a matched row returns
   only the source rows it matched (none), is not read further and not rewritten;
2. otherwise reads the whole file, applies the fates (delete, update in place, move) and writes
   the replacement through :func:`qbeast.spark.changes.rewrite.write_replacement`, the grouped
   rewrite's own code (weights, cubes recomputed from the file's blocks, blocks recounted, band
   row groups and parquet encodings kept; staging files stay staging files);
3. returns the file's description, its fate counts, the indexes of the source rows it matched
   and the rows that move to the indexed append (Arrow IPC).

The replacements are published (moved to the table, or uploaded) when every task succeeded;
from a cluster the tasks upload them under names the driver chose
(:meth:`qbeast.spark.write.staging.StagedFiles.task_uploads`). Nothing is committed here.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from qbeast.commit import WrittenFile
from qbeast.core.revision import Revision
from qbeast.delta.actions import AddFile
from qbeast.spark import settings
from qbeast.spark.changes.fates import DELETE, FATES, KEEP, MOVE, UPDATE_IN_PLACE
from qbeast.spark.changes.null_tests import NullTest, rows_meeting
from qbeast.spark.changes.rewrite import (
    InPlace,
    RewriteTarget,
    published,
    task_uploads_wanted,
    uploaded,
)
from qbeast.spark.changes.scan import ChangeScan
from qbeast.spark.changes.shipped_source import SOURCE_ROW, ShippedSource, table_arrow_schema
from qbeast.spark.write.staging import StagedFiles, TaskUploads
from qbeast.spark.write.steps import parallelism

#: What a matched row becomes: deleted, updated with the source's values, or nothing (the
#: matches are only counted: a merge without ``when_matched``, to know which rows to insert).
ACTIONS = ("delete", "update", "match")

@dataclass(frozen=True)
class _FileTask:
    """One candidate file as its task needs it (``location``: where pyarrow opens it)."""

    target: RewriteTarget
    location: str


@dataclass(frozen=True)
class _JobSpec:
    """Everything a task needs, pickled with the task function."""

    files: tuple[_FileTask, ...]
    groups: tuple[tuple[int, ...], ...]  # the files (indexes) of each task
    revisions: dict[int, Revision]
    schema: pa.Schema
    keys: tuple[str, ...]
    source: bytes  # Arrow IPC stream of the key table
    action: str
    #: only the rows meeting these (the target predicate) can match
    target_tests: tuple[NullTest, ...]
    moving: tuple[str, ...]
    staging: str
    version: str
    #: set when tasks read the files from the store and upload their replacements themselves
    uploads: TaskUploads | None = None


@dataclass
class FileMergeOutcome:
    """What the job found and wrote: the affected candidates (in candidate order), their
    replacements (by index into ``removed``; a file left without rows has none), the fate
    counts, the source rows some target row matched and the rows moving to the append."""

    removed: list[AddFile] = field(default_factory=list)
    rewritten: dict[int, WrittenFile] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=lambda: dict.fromkeys(FATES, 0))
    matched: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    moved: pa.Table | None = None


def merge_files(job: ChangeScan, candidates: Sequence[AddFile], shipped: ShippedSource, *,
                action: str, updated: Sequence[str] = (),
                distinct_keys: bool = False) -> FileMergeOutcome:
    """Run the change over ``candidates`` in one job (see the module doc).

    ``action`` is one of :data:`ACTIONS`; ``updated`` the columns an update takes from the
    source. ``distinct_keys``: the source may repeat a key (a delete+insert), the tasks get its
    distinct keys.
    """
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {ACTIONS}, got {action!r}")
    outcome = FileMergeOutcome()
    if not candidates:
        return outcome
    from pyspark.sql.pandas.types import from_arrow_schema

    spark = job.spark
    snapshot = job.snapshot
    table_dir = snapshot.delta.log.table_path
    sizes = [int(a.size) if a.size else None for a in candidates]
    in_tasks = task_uploads_wanted(job.access)
    locations = [snapshot.delta.file_path(a) for a in candidates]
    if not in_tasks:  # tasks share this disk: they open local copies of object-store files
        locations = job.access.readable(locations, sizes)
    files = tuple(
        _FileTask(RewriteTarget.of(i, a, snapshot), location)
        for i, (a, location) in enumerate(zip(candidates, locations)))
    values = list(updated) if action == "update" else []
    keys = shipped.key_table(values, distinct=distinct_keys)
    indexed = {c for r in snapshot.revisions.values() for c in r.columns}
    with StagedFiles(table_dir, job.access, writers="tasks" if in_tasks else "spark") as staged:
        uploads = staged.task_uploads(range(len(files))) if in_tasks else None
        if uploads is None:
            os.makedirs(staged.path)
        groups = task_groups(sizes, 4 * parallelism(spark))
        spec = _JobSpec(
            files=files, groups=groups,
            revisions={t.target.revision_id: snapshot.revision(t.target.revision_id)
                       for t in files if t.target.revision_id > 0},
            schema=table_arrow_schema(job), keys=shipped.keys, source=_ipc(keys),
            action=action, target_tests=shipped.target_tests,
            moving=tuple(c for c in values if c in indexed),
            staging=staged.path, version=settings.PARQUET_VERSION.read(spark), uploads=uploads)
        described = (spark.range(0, len(groups), 1, len(groups))
                     .mapInArrow(_merge_task(spec), from_arrow_schema(_RESULT_ARROW)).collect())
        matched: list[np.ndarray] = []
        moved: list[pa.Table] = []
        for r in sorted(described, key=lambda r: int(r["origin"])):
            matched.append(np.frombuffer(bytes(r["matched"]), dtype=np.int64))
            if action == "match":
                continue
            index = len(outcome.removed)
            outcome.removed.append(candidates[int(r["origin"])])
            outcome.counts[DELETE] += int(r["deleted"])
            outcome.counts[UPDATE_IN_PLACE] += int(r["updated"])
            outcome.counts[MOVE] += int(r["moved"])
            if r["moved_rows"] is not None:
                moved.append(_from_ipc(bytes(r["moved_rows"])))
            if r["name"] is not None:
                outcome.rewritten[index] = dataclasses.replace(published(staged, r),
                                                               file_id=index)
    written = sum(w.num_records for w in outcome.rewritten.values())
    outcome.counts[KEEP] = written - outcome.counts[UPDATE_IN_PLACE]
    if matched:
        outcome.matched = np.concatenate(matched)
    if moved:
        outcome.moved = pa.concat_tables(moved)
    return outcome


def appended_rows(job: ChangeScan, shipped: ShippedSource, outcome: FileMergeOutcome,
                  inserts: str | None) -> tuple[Any, int] | None:
    """The rows the indexed append writes, as a DataFrame of the table's columns made from
    rows the driver holds, and their number (None: no row): the moved rows, then the inserts:
    the source rows no target row matched (``inserts="unmatched"``, a merge; null keys
    included), or every source row (``"all"``, a delete+insert)."""
    parts: list[pa.Table] = []
    if outcome.moved is not None and outcome.moved.num_rows:
        parts.append(outcome.moved)
    if inserts is not None:
        rows = shipped.rows
        if inserts == "unmatched" and len(outcome.matched):
            keep = np.ones(rows.num_rows, dtype=bool)
            keep[outcome.matched] = False
            rows = rows.filter(pa.array(keep))
        parts.append(shipped.table_rows(job, rows))
    table = pa.concat_tables(parts) if parts else None
    if table is None or table.num_rows == 0:
        return None
    return job.spark.createDataFrame(table, schema=job.schema), table.num_rows


def task_groups(sizes: Sequence[int | None], tasks: int) -> tuple[tuple[int, ...], ...]:
    """The file indexes each task handles: at most ``tasks`` groups of about equal bytes (the
    largest file first into the lightest group).

    Why not one task per file: a Python task costs Spark 30-40 ms to run however little it
    does (measured on 2 cores), about what a task needs to read an unaffected file's keys, so
    a table of many small files would spend most of the job starting tasks. A few tasks per
    core still balance the files that turn out to be rewritten.
    """
    count = max(1, min(len(sizes), tasks))
    loads = [0] * count
    members: list[list[int]] = [[] for _ in range(count)]
    for i in sorted(range(len(sizes)), key=lambda i: -(sizes[i] or 0)):
        lightest = loads.index(min(loads))
        members[lightest].append(i)
        loads[lightest] += sizes[i] or 1
    return tuple(tuple(sorted(m)) for m in members if m)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def _merge_task(spec: _JobSpec):
    """The ``mapInArrow`` function: task numbers in, one result row per file with a match."""

    def run(batches):
        source = _from_ipc(spec.source)
        for batch in batches:
            for group in batch.column(0).to_pylist():
                for origin in spec.groups[group]:
                    row = _merge_one(spec, spec.files[origin], source)
                    if row is not None:
                        yield pa.RecordBatch.from_pylist([row], schema=_RESULT_ARROW)

    return run


def _merge_one(spec: _JobSpec, task: _FileTask, source: pa.Table) -> dict[str, Any] | None:
    """The change of one file (see the module doc); None when no row of it matched."""
    import pyarrow.parquet as pq

    from qbeast.spark.changes.key_match import apply_matches, match_rows, read_columns
    from qbeast.spark.changes.rewrite import write_replacement

    target = task.target
    opened = (spec.uploads.open(task.location, target.size) if spec.uploads is not None
              else task.location)
    parquet = pq.ParquetFile(opened, coerce_int96_timestamp_unit="us")
    tested = [t.column for t in spec.target_tests if t.column not in spec.keys]
    keys = read_columns(parquet, spec.schema, [*spec.keys, *dict.fromkeys(tested)])
    rows, source_rows = match_rows(keys, source, spec.keys, SOURCE_ROW)
    if spec.target_tests and len(rows):  # a row outside the target predicate matches nothing
        meets = rows_meeting(keys, spec.target_tests)[rows]
        rows, source_rows = rows[meets], source_rows[meets]
    if len(rows) == 0:
        return None
    row: dict[str, Any] = {"origin": target.origin, "name": None, "size": None, "mtime": None,
                           "rows": 0, "stats": None, "blocks": None,
                           "matched": source_rows.astype(np.int64).tobytes(), "deleted": 0,
                           "updated": 0, "moved": 0, "moved_rows": None}
    if spec.action == "match":
        return row
    data = read_columns(parquet, spec.schema)
    values = source.select([c for c in source.column_names
                            if c not in spec.keys and c != SOURCE_ROW]).take(
        pa.array(_positions(source, source_rows)))
    # the keys matched, so their values are the source's: an update of a key column is a no-op
    change = apply_matches(data, rows, values, delete=spec.action == "delete",
                           moving=spec.moving, staging=target.revision_id == 0)
    row.update(deleted=change.deleted, updated=change.updated, moved=change.moved.num_rows)
    if change.moved.num_rows:
        row["moved_rows"] = _ipc(change.moved)
    if change.remaining.num_rows:
        def replace(staging: str) -> dict[str, Any]:
            return write_replacement(change.remaining, target,
                                     spec.revisions.get(target.revision_id), staging,
                                     parquet.metadata, spec.version,
                                     in_place=_in_place(change, data, spec, target))

        if spec.uploads is None:
            row.update(replace(spec.staging))
        else:
            import tempfile

            with tempfile.TemporaryDirectory(prefix="qbeast-merge-") as local:
                row.update(uploaded(replace(local), local, spec.uploads))
    return row


def _in_place(change: Any, data: pa.Table, spec: _JobSpec, target: Any) -> InPlace:
    """The rows leaving ``target`` (deleted or moved) with their old indexed values: all a
    rewrite in place computes from them (staging files, without a revision, need none)."""
    revision = spec.revisions.get(target.revision_id)
    indexed = list(revision.columns) if revision is not None else []
    return InPlace(change.removed, data.select(indexed).take(pa.array(change.removed)))


def _positions(source: pa.Table, source_rows: np.ndarray) -> np.ndarray:
    """Positions in the key table of the given source row indexes (the table is in source
    order, so a sorted search finds them)."""
    index = source.column(SOURCE_ROW).to_numpy()
    return np.searchsorted(index, source_rows)


_RESULT_ARROW = pa.schema([
    ("origin", pa.int32()), ("name", pa.string()), ("size", pa.int64()), ("mtime", pa.int64()),
    ("rows", pa.int64()), ("stats", pa.string()), ("blocks", pa.string()),
    ("matched", pa.binary()), ("deleted", pa.int64()), ("updated", pa.int64()),
    ("moved", pa.int64()), ("moved_rows", pa.binary()),
])
