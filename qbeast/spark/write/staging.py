"""Writing a Qbeast write's data files with Spark's own parquet writer (JVM): staged, then published.

Moving whole rows from the JVM into Python workers and encoding parquet there costs about as much
as Spark's entire parquet write, so the rows never cross to Python here:

1. **write** — an Arrow UDF sees only the indexed columns and the weight and returns each row's
   file (the assignment of ``qbeast.index.assignment``); Spark repartitions the rows by file into
   a staging folder inside the table folder, one task holding every row of a file. With one task
   per file, each file id is mapped to a key that Spark's hash partitioning sends to partition
   ``file id`` (:func:`partition_keys`), so task ``n`` writes the one part file ``part-<n>-...``
   and Spark's writer neither sorts nor splits the rows. With fewer tasks than files, each task
   writes several files with ``partitionBy(file)`` (one ``_qbeast_file=<n>/`` folder per file,
   rows sorted by file within the task).
2. **describe** — each staged file gets its row count, Delta stats and blocks from what was
   written (:mod:`qbeast.spark.write.describe`: from the footers and the UDF's tally, or by a
   scan of the staged files).
3. **band pieces** (the ``rowGroups`` band layout only) — where the bridge jar is loaded, the
   rows of each output file are sorted by piece in their task and the bridge's run writer ends a
   row group at each piece and records the pieces in the footer (:func:`_write_runs`): nothing
   more to do here. Otherwise each piece is a staging file of its own, and the pieces of one
   output file are joined into one file whose row groups follow the bands
   (:mod:`qbeast.spark.write.row_groups`, :mod:`qbeast.core.band_row_groups`);
4. **move** — each part file becomes ``<table>/<uuid>.parquet``; the staging folder is removed.

Files hold only the user's columns; timestamps are written as ``TIMESTAMP_MICROS`` (Spark's
default INT96 is a legacy encoding) under a session conf that is restored afterwards, and pages
as the ``spark.qbeast.write.parquetVersion`` setting says (:func:`parquet_options`). Nothing is
committed here; on any failure the staging folder and the files already moved are deleted.
"""
from __future__ import annotations

import contextlib
import glob
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from qbeast.commit import WrittenFile
from qbeast.core.band_row_groups import FOOTER_KEY, Piece
from qbeast.core.blocks import Block
from qbeast.core.revision import Revision
from qbeast.core.sql import quote_identifier
from qbeast.delta.stats import footer_stats
from qbeast.errors import QbeastError
from qbeast.index.assignment import WritePlan
from qbeast.spark import settings
from qbeast.spark.bridge import RUN_FOOTER_KEY_OPTION, run_parquet_format
from qbeast.spark.file_access import FileAccess
from qbeast.spark.runtime import scoped_confs
from qbeast.spark.write.assignment_udf import assignment_udf, weight_column
from qbeast.spark.write.describe import (
    STAGING_FILE_COLUMN,
    Described,
    StagedRows,
    describe_by_scan,
    describe_from_footers,
    non_finite_mask,
)
from qbeast.spark.write.options import ASSIGNMENT_COLUMN, STAGING_PREFIX, WEIGHT_COLUMN
from qbeast.spark.write.row_groups import join_pieces
from qbeast.storage import FileStat, Storage, storage_for

logger = logging.getLogger("qbeast.spark.write.writer")

#: Session confs the staging write pins: microsecond timestamps and no row-count split of a
#: group into several files.
_WRITE_CONFS = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.files.maxRecordsPerFile": "0",
}


class FileWriteError(QbeastError):
    """The staging write did not produce exactly one file per group."""


#: parquet-mr's ``parquet.writer.version`` for each value of ``spark.qbeast.write.parquetVersion``.
_WRITER_VERSIONS = {"v1": "PARQUET_1_0", "v2": "PARQUET_2_0"}


def parquet_options(spark) -> dict[str, str]:
    """Options of every Spark parquet write of the engine: snappy, and the session's page version.

    Version 2 pages let parquet-mr fall back from a dictionary to delta encodings (integers as
    DELTA_BINARY_PACKED, strings as DELTA_BYTE_ARRAY) where version 1 falls back to plain values:
    ids, times and keys that grow within a file shrink to a few bits per value. The codec stays
    the one plain Spark parquet uses, so sizes compare like for like.
    """
    version = settings.PARQUET_VERSION.read(spark)
    return {"compression": "snappy", "parquet.writer.version": _WRITER_VERSIONS[version]}


def write_plan_files(
    data: Any,
    plan: WritePlan,
    table_dir: str,
    *,
    revision: Revision,
    tasks: int,
    tally: Any = None,
    flags: Any = None,
    access: FileAccess,
) -> list[WrittenFile]:
    """Write ``data``'s rows into one file per plan group of ``revision``; describe each file.

    ``tasks == plan.file_count`` writes one file per task without ``partitionBy`` (no sort);
    fewer tasks write several files each with ``partitionBy`` (sorted by file within a task). A
    plan with band pieces (:attr:`WritePlan.row_group_files`) writes each output file's pieces
    as runs of row groups with the bridge's run writer (at most one task per output file), or,
    without the jar, each piece as a staging file (one task per piece, or the pieces of an
    output file in one task) joined into the output file in band order
    (:mod:`qbeast.spark.write.row_groups`). Either way the files returned are the output files.
    ``access`` is how the operation reaches the table's files (its tasks must share this disk).

    With a ``tally`` accumulator (:func:`~qbeast.spark.write.assignment_udf.new_block_tally`, classic sessions) the assignment UDF
    counts the blocks while it runs, and stats come from the parquet footers, without reading
    rows again. With a ``flags`` accumulator (:func:`~qbeast.spark.write.assignment_udf.new_flag_tally`) the UDF also receives the
    :func:`~qbeast.spark.write.describe.non_finite_mask` of each row and reports per file which float columns hold NaN or
    infinities, so that no scan of the new files is needed for that either. When the tally
    disagrees with the footers' row counts (a re-executed task counted twice) or is missing, the
    files are described by a grouped aggregate over them.
    """
    started = time.perf_counter()
    spark = data.sparkSession
    runs_format = run_parquet_format(spark) if plan.row_group_files is not None else None
    out = StagedFiles(table_dir, access)
    staging = out.path
    try:
        if runs_format is not None:
            # a file's pieces are runs of one task's rows: at most one task per output file
            tasks = min(tasks, plan.output_file_count)
            plain = tasks == plan.output_file_count
            _write_runs(data, plan, staging, runs_format, revision=revision, tasks=tasks,
                        plain=plain, tally=tally, flags=flags)
        else:
            plain = tasks == plan.file_count
            _write_staged(data, plan, staging, revision=revision, tasks=tasks, plain=plain,
                          tally=tally, flags=flags)
        logger.info("staging write done: %s tasks=%d one_file_per_task=%s row_group_runs=%s "
                    "elapsed=%.2fs", staging, tasks, plain, runs_format is not None,
                    time.perf_counter() - started)
        parts = _staging_parts(staging, plain)
        if not parts:
            # rows were written (the caller counted them), but not where this process looks:
            # the executors wrote to a disk the driver does not see
            raise FileWriteError(
                f"the staging write produced no file in {staging}, which this process reads; the "
                "executors must write where the driver reads: a local[*] session, or a table "
                "folder on a file system every machine mounts at the same path (docs/cluster.md)"
            )
        staged = StagedRows(spark, data.schema, staging, plain)
        owners = plan.row_group_files if runs_format is not None else None
        described = describe_from_footers(staged, parts, plan, tally, flags, owners=owners)
        if described is None:
            logger.info("block tally unavailable or inconsistent: describing the files by a scan")
            described = describe_by_scan(staged, plan, revision)
        logger.info("files described: groups=%d elapsed=%.2fs", len(described),
                    time.perf_counter() - started)
        if plan.row_group_files is not None and runs_format is None:
            return _join_and_publish(spark, out, parts, described, plan)
        first_piece = _first_pieces(plan) if owners is not None else {}
        results = []
        for file_id, part in sorted(parts.items()):
            entry = described.get(file_id)
            if entry is None or entry[0] == 0:
                # Spark writes a file for its first task even when no row went there (a plan
                # group can stay empty: a weight band no row reached); it is left in staging
                continue
            num_records, stats, blocks, _ = entry
            name, info = out.publish(part)
            results.append(WrittenFile(first_piece.get(file_id, file_id), name, info.size,
                                       info.mtime_ms, num_records, stats, blocks))
        return results
    except BaseException:
        out.discard()
        raise
    finally:
        out.cleanup()


def assigned_rows(data: Any, plan: WritePlan, revision: Revision, *, tally: Any, flags: Any,
              keep_weight: bool = False) -> Any:
    """``data``'s user columns, then each row's plan file (:data:`STAGING_FILE_COLUMN`), then,
    with ``keep_weight``, its weight (:data:`WEIGHT_COLUMN`, computed once for both uses)."""
    from pyspark.sql import functions as F

    user = [F.col(quote_identifier(c)) for c in data.columns]
    indexed = [F.col(quote_identifier(c)) for c in revision.columns]
    weight = weight_column(list(revision.columns))
    source = data
    if keep_weight:
        source = data.select(*user, weight.alias(WEIGHT_COLUMN))
        weight = F.col(WEIGHT_COLUMN)
    inputs = [*indexed, weight]
    if flags is not None:
        inputs.append(non_finite_mask(data.schema))
    assignment = assignment_udf(revision, plan, tally=tally, flags=flags)
    extra = [F.col(WEIGHT_COLUMN)] if keep_weight else []
    assigned = source.select(*user, assignment(*inputs).getField("file").alias(STAGING_FILE_COLUMN),
                             *extra)
    return _all_nullable(assigned, data.schema)


def _write_staged(data: Any, plan: WritePlan, staging: str, *, revision: Revision, tasks: int,
                  plain: bool, tally: Any, flags: Any) -> None:
    """One staging file per plan file (a band piece, with band pieces: joined afterwards)."""
    from pyspark.sql import functions as F

    spark = data.sparkSession
    assigned = assigned_rows(data, plan, revision, tally=tally, flags=flags)
    options = parquet_options(spark)
    with scoped_confs(spark, _WRITE_CONFS):
        if plan.row_group_files is not None and not plain:
            # the pieces of one output file in one task, each piece a file of its own
            owner = owner_column(plan, F.col(STAGING_FILE_COLUMN))
            if tasks == plan.output_file_count:
                owner = _task_of(owner, tasks)
            (assigned.repartition(tasks, owner)
             .write.mode("error").options(**options)
             .partitionBy(STAGING_FILE_COLUMN).parquet(staging))
        elif plain:
            (assigned.repartition(tasks, _task_of(F.col(STAGING_FILE_COLUMN), tasks))
             .drop(STAGING_FILE_COLUMN)
             .write.mode("error").options(**options).parquet(staging))
        else:
            (assigned.repartition(tasks, F.col(STAGING_FILE_COLUMN))
             .write.mode("error").options(**options)
             .partitionBy(STAGING_FILE_COLUMN).parquet(staging))


def _write_runs(data: Any, plan: WritePlan, staging: str, runs_format: str, *,
                revision: Revision, tasks: int, plain: bool, tally: Any, flags: Any) -> None:
    """One staging file per output file, its band pieces as runs of row groups.

    The rows of each output file are sorted by piece (plan files are numbered in band order) and
    written by the bridge's run writer (:func:`qbeast.spark.bridge.run_parquet_format`), which
    ends a row group where the piece changes and records each piece's lowest weight and rows in
    the footer, in the piece record's format (:func:`qbeast.core.band_row_groups.encode_pieces`).
    No piece is a file of its own and nothing is copied afterwards.
    """
    from pyspark.sql import functions as F

    spark = data.sparkSession
    assigned = assigned_rows(data, plan, revision, tally=tally, flags=flags, keep_weight=True)
    user = [F.col(quote_identifier(c)) for c in data.columns]
    piece, weight = F.col(STAGING_FILE_COLUMN), F.col(WEIGHT_COLUMN)
    owner = owner_column(plan, piece)
    options = {**parquet_options(spark), RUN_FOOTER_KEY_OPTION: FOOTER_KEY}
    with scoped_confs(spark, _WRITE_CONFS):
        if plain:
            rows = (assigned.repartition(tasks, _task_of(owner, tasks))
                    .sortWithinPartitions(piece)
                    .select(*user, piece.cast("int").alias(ASSIGNMENT_COLUMN), weight))
            rows.write.mode("error").format(runs_format).options(**options).save(staging)
        else:
            # the output file replaces the piece as the partition column
            rows = (assigned.select(*user, owner.alias(STAGING_FILE_COLUMN),
                                    piece.cast("int").alias(ASSIGNMENT_COLUMN), weight)
                    .repartition(tasks, F.col(STAGING_FILE_COLUMN))
                    .sortWithinPartitions(STAGING_FILE_COLUMN, ASSIGNMENT_COLUMN))
            (rows.write.mode("error").format(runs_format).options(**options)
             .partitionBy(STAGING_FILE_COLUMN).save(staging))


def owner_column(plan: WritePlan, piece: Any) -> Any:
    """The output file of a band piece column (:attr:`WritePlan.row_group_files`)."""
    from pyspark.sql import functions as F

    assert plan.row_group_files is not None
    owners = F.array(*[F.lit(int(o)) for o in plan.row_group_files])
    return F.element_at(owners, piece + 1)


def _first_pieces(plan: WritePlan) -> dict[int, int]:
    """Output file -> its first band piece: the plan file id a joined or run-written file
    reports (the id :func:`qbeast.spark.write.steps.with_threshold_markers` keys files by)."""
    assert plan.row_group_files is not None
    first: dict[int, int] = {}
    for piece, owner in enumerate(plan.row_group_files.tolist()):
        first.setdefault(int(owner), piece)
    return first


def _join_and_publish(spark: Any, out: StagedFiles, parts: dict[int, str],
                      described: dict[int, Described], plan: WritePlan) -> list[WrittenFile]:
    """The ``rowGroups`` layout: join each output file's band pieces (plan files numbered in band
    order) into one file whose row groups follow the bands, then publish it.

    A cube's rows in several pieces of one file become one block (FORMAT §6.4: one block per
    cube and file; its ``minWeight`` the lowest of them); the stats come from the joined footer.
    """
    assert plan.row_group_files is not None
    started = time.perf_counter()
    by_file: dict[int, list[int]] = {}
    for piece in sorted(parts):
        entry = described.get(piece)
        if entry is not None and entry[0] > 0:
            by_file.setdefault(int(plan.row_group_files[piece]), []).append(piece)
    joined_dir = os.path.join(out.path, "joined")
    os.makedirs(joined_dir, exist_ok=True)

    def join(item: tuple[int, list[int]]) -> tuple[str, int, str, tuple[Block, ...]]:
        file_id, pieces = item
        entries = [described[p] for p in pieces]
        records = [Piece(min(b.min_weight for b in blocks if b.element_count > 0), rows)
                   for rows, _, blocks, _ in entries]
        target = os.path.join(joined_dir, f"part-{file_id:05d}.parquet")
        join_pieces(spark, [parts[p] for p in pieces], target, records)
        meta = pq.ParquetFile(target).metadata
        unsafe = set().union(*(bad for _, _, _, bad in entries))
        blocks = _merged_blocks([b for _, _, bs, _ in entries for b in bs])
        return target, int(meta.num_rows), footer_stats(meta, non_finite=unsafe), blocks

    items = sorted(by_file.items())
    # copying is I/O bound: a few files at a time (each its own Py4J connection)
    with ThreadPoolExecutor(max_workers=max(1, min(4, len(items)))) as pool:
        joined = list(pool.map(join, items))
    results = []
    for (_, pieces), (target, rows, stats, blocks) in zip(items, joined):
        name, info = out.publish(target)
        results.append(WrittenFile(pieces[0], name, info.size, info.mtime_ms,
                                   rows, stats, blocks))
    logger.info("band pieces joined: pieces=%d files=%d elapsed=%.2fs",
                sum(len(p) for p in by_file.values()), len(results), time.perf_counter() - started)
    return results


def _merged_blocks(blocks: Sequence[Block]) -> tuple[Block, ...]:
    """One block per cube (first-seen order): rows summed, the lowest ``minWeight`` kept."""
    merged: dict[str, Block] = {}
    for block in blocks:
        seen = merged.get(block.cube)
        if seen is None:
            merged[block.cube] = block
        else:
            merged[block.cube] = Block(block.cube, min(seen.min_weight, block.min_weight),
                                       max(seen.max_weight, block.max_weight),
                                       seen.element_count + block.element_count)
    return tuple(merged.values())


class StagedFiles:
    """A staging folder for a table's new files, and the files published from it.

    Tasks write into :attr:`path`; :meth:`publish` makes a finished file a data file of the
    table, named ``<uuid>.parquet`` at its root. For a table on the local disk the staging folder
    is inside the table folder and publishing is a rename. For a table on an object store
    (:mod:`qbeast.spark.file_access`) the staging folder is in the session's local mirror folder
    and publishing uploads the file, which then stays as the mirror's copy of it (in sessions
    that read copies: :meth:`qbeast.spark.file_access.FileAccess.reads_local_copies`). ``access``
    is how the operation reaches the table's files (decided once, when it started). When the
    operation fails, :meth:`discard` removes what was published (nothing references it yet);
    :meth:`cleanup` always removes the staging folder. As a context manager it does both.
    """

    #: Who writes into the staging folder: ``spark`` (Spark's tasks, which must share this disk:
    #: an object-store table is refused on a cluster), ``driver`` (this process only), ``tasks``
    #: (tasks elsewhere, each uploading its own files: :meth:`task_uploads`).
    WRITERS = ("spark", "driver", "tasks")

    def __init__(self, table_dir: str, access: FileAccess, writers: str = "spark") -> None:
        if writers not in self.WRITERS:
            raise ValueError(f"writers must be one of {self.WRITERS}, got {writers!r}")
        self.table_dir = table_dir
        self.remote = access.remote
        name = f"{STAGING_PREFIX}{uuid.uuid4().hex}"
        self.published: list[str] = []
        self.uploads: TaskUploads | None = None
        self.writers = writers
        if self.remote:
            if writers == "spark":
                access.check_shared_disk()
            self.storage = storage_for(table_dir)
            self.mirror = access.mirror()
            self.path = os.path.join(self.mirror.root, "staging", name)
            # an uploaded file stays as the local copy of it only where reads open copies
            self.keep_copies = access.reads_local_copies()
        else:
            self.path = os.path.join(table_dir, name)

    def publish(self, part: str) -> tuple[str, FileStat]:
        """Make ``part`` a data file of the table; its name (relative to the table) and stat."""
        name = f"{uuid.uuid4()}.parquet"
        target = f"{self.table_dir.rstrip('/')}/{name}"
        if self.remote:
            self.published.append(target)
            stat = self.storage.upload(part, target)
            if self.keep_copies:
                self.mirror.adopt(part, target)
            return name, stat
        os.replace(part, target)
        self.published.append(target)
        info = os.stat(target)
        return name, FileStat(info.st_size, int(info.st_mtime * 1000), target)

    def task_uploads(self, keys: Sequence[int]) -> TaskUploads:
        """What tasks on other machines need to upload this operation's new files of an
        object-store table: the store (with this process's settings, :meth:`Storage.for_tasks`),
        the table root and one file name per key (a task's retry replaces its own file; a failed
        operation deletes every name, uploaded or not)."""
        if not self.remote or self.writers != "tasks":
            raise ValueError("task uploads are for object-store tables staged with writers='tasks'")
        root = self.table_dir.rstrip("/")
        names = {int(key): f"{uuid.uuid4()}.parquet" for key in keys}
        self.published.extend(f"{root}/{name}" for name in names.values())
        self.uploads = TaskUploads(self.storage.for_tasks(), self.storage.resolve(root), names)
        return self.uploads

    def discard(self) -> None:
        for path in self.published:
            with contextlib.suppress(OSError):
                if self.remote:
                    self.storage.delete(path)
                else:
                    os.remove(path)

    def cleanup(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> StagedFiles:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.discard()
        self.cleanup()


@dataclass(frozen=True)
class TaskUploads:
    """How a task on another machine reads an object-store table's files and uploads a new one
    (pickled with the task; made by :meth:`StagedFiles.task_uploads`)."""

    storage: Storage
    root: str
    names: dict[int, str]

    def open(self, location: str, size: int | None) -> Any:
        """A seekable reader of a data file (large files by ranged requests)."""
        return self.storage.open_input(location, size)

    def footer(self, location: str, size: int | None) -> Any:
        """The parquet footer of a data file, by ranged requests; None when it cannot be read."""
        from qbeast.storage.parquet_footer import read_footer

        try:
            return read_footer(self.storage, location, size)
        except (OSError, ValueError) as exc:
            logger.debug("footer of %s not read (%s)", location, exc)
            return None

    def upload(self, local_file: str, key: int) -> tuple[str, FileStat]:
        """Upload a finished file as key's new data file; (its name in the table, its stat)."""
        name = self.names[key]
        return name, self.storage.upload(local_file, f"{self.root}/{name}")


def partition_keys(count: int) -> list[int]:
    """For each file id ``f < count``, an int key that ``repartition(count, key)`` puts in partition f.

    Spark's hash partitioning sends a row to partition ``pmod(hash(key), count)`` (Murmur3 with
    seed 42, the same function as ``F.hash``, reproduced by :func:`qbeast.index.row_weights.
    spark_hash`). Taking the smallest int with the wanted remainder for every file id makes the
    shuffle a one-to-one map from files to tasks. Should Spark ever partition differently, files
    would share part files: the tally then disagrees with the footers and the files are
    described by a scan of what was written, so blocks stay exact.
    """
    import pyarrow as pa

    from qbeast.index.row_weights import spark_hash

    found: dict[int, int] = {}
    start, step = 0, max(64, 16 * count)
    while len(found) < count:
        candidates = np.arange(start, start + step, dtype=np.int32)
        partitions = spark_hash([pa.array(candidates)]).astype(np.int64) % count
        values, first = np.unique(partitions, return_index=True)
        for partition, index in zip(values.tolist(), first.tolist()):
            found.setdefault(partition, int(candidates[index]))
        start += step
    return [found[f] for f in range(count)]


def _task_of(file_id: Any, tasks: int) -> Any:
    """The column of :func:`partition_keys` keys that sends file id ``n`` to partition ``n``."""
    from pyspark.sql import functions as F

    keys = F.array(*[F.lit(k).cast("int") for k in partition_keys(tasks)])
    return F.element_at(keys, file_id + 1)


def _staging_parts(staging: str, plain: bool) -> dict[int, str]:
    """File id -> the single part file written for it (see :class:`StagedRows` for the layouts)."""
    parts: dict[int, str] = {}
    if not os.path.isdir(staging):
        return parts
    if plain:
        for path in sorted(glob.glob(os.path.join(glob.escape(staging), "part-*.parquet"))):
            match = re.match(r"part-(\d+)-", os.path.basename(path))
            if match is None or int(match.group(1)) in parts:
                raise FileWriteError(
                    f"the staging write produced an unexpected part file {path}; expected one "
                    "part-<task>-... file per task (is spark.sql.files.maxRecordsPerFile forced "
                    "elsewhere?)"
                )
            parts[int(match.group(1))] = path
        return parts
    prefix = f"{STAGING_FILE_COLUMN}="
    for entry in sorted(os.listdir(staging)):
        if not entry.startswith(prefix):
            continue
        files = sorted(glob.glob(os.path.join(glob.escape(staging), glob.escape(entry), "part-*.parquet")))
        if len(files) != 1:
            raise FileWriteError(
                f"the staging write produced {len(files)} files for group {entry} in {staging}; "
                "expected exactly 1 (is spark.sql.files.maxRecordsPerFile forced elsewhere?)"
            )
        parts[int(entry[len(prefix):])] = files[0]
    return parts


def _all_nullable(assigned, schema):
    """Declare every user column nullable, as the Delta schema does (Spark writes ``required``
    parquet fields for non-nullable columns). The condition on the UDF's output cannot be folded
    away by the optimizer and is always true."""
    from pyspark.sql import functions as F

    if all(f.nullable for f in schema.fields):
        return assigned
    file_known = F.col(STAGING_FILE_COLUMN).isNotNull()
    user = {f.name for f in schema.fields}
    return assigned.select(
        *[F.col(quote_identifier(f.name)) if f.nullable
          else F.when(file_known, F.col(quote_identifier(f.name))).alias(f.name, metadata=f.metadata)
          for f in schema.fields],
        *[F.col(c) for c in assigned.columns if c not in user],
    )
