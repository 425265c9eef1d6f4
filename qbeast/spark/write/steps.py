"""The steps of an indexing write, public for reuse by ``qbeast.operations`` (optimize).

``qbeast.spark.write.writer.write`` chains them: :func:`analyze` (estimation pass -> :class:`WritePlan`),
:func:`write_files` (assignment + file writing -> one :class:`~qbeast.commit.WrittenFile` per
file), :func:`with_threshold_markers` (the blocks that record lowered thresholds); then
:func:`qbeast.commit.add_file` and :func:`qbeast.commit.commit_files` turn the files into one
commit.
Optimize reruns the same steps over the files it rewrites, so they live here rather than as
private functions of the writer.
"""
from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from dataclasses import dataclass

from qbeast.commit import WrittenFile
from qbeast.core.blocks import Block
from qbeast.core.cube_id import CubeId
from qbeast.core.index_status import IndexStatus
from qbeast.core.revision import Revision
from qbeast.core.sql import quote_identifier
from qbeast.core.weight import MAX_WEIGHT
from qbeast.core.weight_bands import band_layout
from qbeast.index.assignment import WritePlan, build_write_plan, plan_from_domains
from qbeast.index.estimation import (
    DOMAIN_SCHEMA,
    ExistingThresholds,
    estimation_fraction,
    group_cube_size,
    partition_domains_function,
)
from qbeast.index.thresholds import effective_thresholds, threshold_markers
from qbeast.progress import Phase
from qbeast.spark import settings
from qbeast.spark.file_access import FileAccess
from qbeast.spark.arrow_jobs import map_in_arrow
from qbeast.spark.task_progress import task_monitor
from qbeast.spark.runtime import scoped_confs
from qbeast.spark.write.assignment_udf import new_block_tally, new_flag_tally, weight_column
from qbeast.spark.write.describe import float_stats_columns
from qbeast.spark.write.staging import write_plan_files
from qbeast.spark.write.options import WEIGHT_COLUMN, WriteOptions
from qbeast.spark.write.revision_change import empty_write_revision

if TYPE_CHECKING:
    from qbeast.spark.write.local import CollectedRows

logger = logging.getLogger("qbeast.spark.write.writer")

#: Seed of the estimation sample, so that the same input and partitioning give the same layout.
ESTIMATION_SEED = 1_879_048_193


def write_phase(path: str, name: str, spark: Any = None) -> Phase:
    """A :class:`qbeast.progress.Phase` of a write, logged on ``qbeast.spark.write.writer``;
    with ``spark``, its Spark tasks' progress is logged while it runs."""
    return Phase(logger, "write", path, name, monitor=task_monitor(spark))


# -- analysis -----------------------------------------------------------------------------------


def weight_bands(spark: Any) -> str:
    """How writes of this session place rows by weight band (``spark.qbeast.index.weightBands``,
    one of :data:`qbeast.core.weight_bands.LAYOUTS`)."""
    return band_layout(settings.WEIGHT_BANDS.read(spark))


def analyze(
    spark: Any,
    data: Any,
    revision: Revision,
    *,
    desired_cube_size: int,
    count: int,
    existing: IndexStatus | None,
    options: WriteOptions,
    path: str,
    table_rows: int | None = None,
) -> WritePlan:
    """Estimation pass: local trees in tasks, summed domains, thresholds and rollup on the driver.

    ``count`` is the input's row count (from the stats pass), ``existing`` the index of the
    revision an append writes into (``None`` for a new revision), ``path`` names the table in
    the progress log. ``table_rows`` is the table's row count once the write commits, other
    revisions included (default: the revision's): with weight bands in files, the lightest
    bands share a file only up to the fractions whose sample of the whole table is one target
    file (:func:`qbeast.core.weight_bands.shared_band_count`).
    """
    from pyspark.sql import functions as F

    desired = desired_cube_size
    phase = write_phase(path, "estimation", spark)
    dims = revision.dimension_count
    if existing is None and count <= desired:
        # The whole input fits the root: every domain estimate would give a leaf root holding all
        # rows in one file, so the estimation job is skipped with the same outcome.
        root = CubeId.root(dims)
        plan = build_write_plan(dims, {root: MAX_WEIGHT}, {root: count}, desired)
        phase.done(rows=count, cubes=1, files=1, skipped="input fits one cube")
        return plan
    columns = list(revision.columns)
    capacity = options.buffer_capacity or settings.BUFFER_CAPACITY.read(spark)
    partitions = input_partitions(data)
    sample_rows = options.estimation_sample_rows
    if sample_rows is None:
        sample_rows = settings.ESTIMATION_SAMPLE_ROWS.read(spark)
    sampled = estimation_fraction(count, desired, sample_rows)
    source = data
    if sampled < 1.0:
        # Local trees over a Bernoulli sample, sized as if the sample were the whole input (see
        # estimation_fraction); the summed domains are scaled back to all rows below (a ratio
        # estimate: count over the realized sample size).
        source = data.sample(withReplacement=False, fraction=sampled, seed=ESTIMATION_SEED)
    gcs = group_cube_size(max(1, round(desired * sampled)), partitions,
                          max(1, round(count * sampled)), capacity)
    thresholds = effective_thresholds(existing) if existing is not None else None
    lookup = ExistingThresholds.from_thresholds(dims, thresholds) if thresholds else None
    indexed = source.select(
        *[F.col(quote_identifier(c)) for c in columns], weight_column(columns).alias(WEIGHT_COLUMN)
    )
    domains_fn = partition_domains_function(revision, columns=columns, weight_column=WEIGHT_COLUMN,
                                            gcs=gcs, buffer_capacity=capacity, existing=lookup)
    summed = (
        map_in_arrow(indexed, domains_fn, DOMAIN_SCHEMA)
        .groupBy("cube")
        .agg(F.sum("domain").alias("domain"))
        .collect()
    )
    input_domains = {CubeId.from_string(dims, r["cube"]): float(r["domain"]) for r in summed}
    plan = plan_from_domains(revision, input_domains, count=count, sampled=sampled,
                             existing=existing, thresholds=thresholds,
                             desired_cube_size=desired, table_rows=table_rows,
                             weight_bands=weight_bands(spark))
    phase.done(rows=count, sampled_fraction=round(sampled, 6), partitions=partitions,
               group_cube_size=gcs, cubes=len(plan.tree), files=plan.file_count)
    return plan


# -- writing ------------------------------------------------------------------------------------


#: Average rows per file from which every file gets its own write task even when there are more
#: files than 4 tasks per core: a task costs a few milliseconds to schedule, while sorting the
#: rows of several files within one task costs about 0.1 microseconds per row (about 12% of
#: the write at 16M rows; benchmarks/results/write.md).
ONE_TASK_PER_FILE_ROWS = 50_000


def write_tasks(spark: Any, plan: WritePlan, rows: int | None) -> int:
    """Number of write tasks: one per plan file when they are large, else one per output file
    when those are few or large, else 4 per core (see :func:`qbeast.spark.write.staging.
    write_plan_files` for what each count writes)."""
    files = plan.output_file_count
    tasks = max(1, min(files, 4 * parallelism(spark)))
    if rows is not None and rows >= plan.file_count * ONE_TASK_PER_FILE_ROWS:
        # one task per plan file, so per band piece where pieces are staging files of their
        # own; write_plan_files gives a run-written file's pieces one task whatever is asked
        tasks = plan.file_count
    elif rows is not None and rows >= files * ONE_TASK_PER_FILE_ROWS:
        tasks = files
    return tasks


def write_files(data: Any, revision: Revision, plan: WritePlan, table_dir: str,
                access: FileAccess, *, rows: int | None = None) -> list[WrittenFile]:
    """Assignment, shuffle by file and Spark's parquet writer; returns one description per file.

    See ``qbeast.spark.write.staging``: only the indexed columns and the weight cross to Python.
    ``rows`` (the input's row count, when known) lets large files get one task each. Where
    ``access`` says so (an object-store table seen from a cluster,
    :attr:`qbeast.spark.file_access.FileAccess.arrow_tasks`) the files are written and
    uploaded by Arrow tasks instead (:mod:`qbeast.spark.write.task_files`).
    """
    if access.arrow_tasks:
        from qbeast.spark.write.task_files import write_files_in_tasks

        return write_files_in_tasks(data, revision, plan, table_dir,
                                    tasks=write_tasks(data.sparkSession, plan, rows))
    tally = new_block_tally(data.sparkSession)
    # float columns can hold NaN or infinities, which parquet footers do not reliably show
    flags = (new_flag_tally(data.sparkSession)
             if tally is not None and float_stats_columns(data.schema) else None)
    tasks = write_tasks(data.sparkSession, plan, rows)
    return write_plan_files(data, plan, table_dir, revision=revision, tasks=tasks, tally=tally,
                            flags=flags, access=access)


def with_threshold_markers(written: Sequence[WrittenFile], plan: WritePlan,
                           existing: IndexStatus | None) -> list[WrittenFile]:
    """The written files with the zero-element blocks that state the thresholds rows were
    placed by (see :func:`qbeast.index.thresholds.threshold_markers`)."""
    per_file: dict[int, list[Block]] = {w.file_id: list(w.blocks) for w in written}
    extra: dict[int, list[Block]] = {}
    for file_id, block in threshold_markers(per_file, plan, existing):
        extra.setdefault(file_id, []).append(block)
    return [w.with_blocks(extra.get(w.file_id, ())) for w in written]


# -- an append into the latest revision, as one step ----------------------------------------------


@dataclass(frozen=True)
class IndexedRows:
    """Files an indexed append wrote (not committed): the revision, whether it is new, the rows."""

    revision: Revision
    new_revision: bool
    written: tuple[WrittenFile, ...]
    rows: int


def index_rows(access: FileAccess, data: Any, snapshot: Any, table_dir: str, *,
               options: WriteOptions | None = None, rows_already_in_table: bool = False,
               driver_rows: int = 0, collected: CollectedRows | None = None) -> IndexedRows:
    """Stats, estimation, assignment, file writing and threshold markers of rows appended to the
    latest revision of ``snapshot`` (a :class:`qbeast.snapshot.QbeastSnapshot`), opening a new
    revision when the rows grow the indexed space (FORMAT §3.8); nothing is committed.

    Row-level operations append their inserted (and re-indexed) rows with it, in the same
    commit as their rewrites. ``rows_already_in_table``: the rows move within the table (a
    revision merge, the staging step), so the table's row count stays as it is.

    An input of at most ``spark.qbeast.write.localRows`` rows is indexed on the driver after
    one collect (:func:`index_locally`), with the same revision, plan and files.
    ``driver_rows``: ``data`` is a DataFrame of that many rows the driver already holds (a
    shipped merge's inserts): collecting them back costs no new memory, so they are indexed on
    the driver whatever their number (unless ``localRows`` is 0). ``collected``: ``data``
    already collected by the caller (:func:`qbeast.spark.write.local.collect_rows` within the
    limit): indexed on the driver without another Spark job. ``access``: how the operation
    reaches the table's files (decided once, when it started).
    """
    from qbeast.spark.write.revision_change import choose_revision, index_spec

    spark = access.spark
    path = snapshot.table_path
    latest = snapshot.latest_revision
    spec = index_spec(data.schema, None, latest)
    local = index_locally(access, data, latest, spec, table_dir, path=path,
                          cube_size=latest.desired_cube_size, column_stats=None,
                          table_id=latest.table_id,
                          index_status=lambda r: snapshot.index_status(r.revision_id),
                          rows_before=snapshot.delta.num_records or 0,
                          options=options or WriteOptions(),
                          rows_already_in_table=rows_already_in_table, driver_rows=driver_rows,
                          collected=collected)
    if local is not None:
        return local
    phase = write_phase(path, "stats", spark)
    revision, is_new, count = choose_revision(
        data, spec, base=latest, cube_size=latest.desired_cube_size, column_stats=None,
        table_id=latest.table_id,
    )
    phase.done(rows=count, revision=revision.revision_id, new_revision=is_new)
    if count == 0:
        return IndexedRows(revision, False, (), 0)
    existing = None if is_new else snapshot.index_status(revision.revision_id)
    with larger_arrow_batches(spark):
        plan = analyze(spark, data, revision, desired_cube_size=revision.desired_cube_size,
                       count=count, existing=existing, options=options or WriteOptions(),
                       path=path,
                       table_rows=(snapshot.delta.num_records or 0) + (0 if rows_already_in_table else count))
        phase = write_phase(path, "write", spark)
        written = write_files(data, revision, plan, table_dir, access, rows=count)
    written = with_threshold_markers(written, plan, existing)
    phase.done(files=len(written), rows=count)
    return IndexedRows(revision, is_new, tuple(written), count)


def index_locally(access: FileAccess, data: Any, base: Revision | None, spec: Any, table_dir: str, *,
                  path: str, cube_size: int, column_stats: Any, table_id: str,
                  index_status: Any, rows_before: int, options: WriteOptions,
                  rows_already_in_table: bool = False, driver_rows: int = 0,
                  collected: CollectedRows | None = None) -> IndexedRows | None:
    """An indexed append of ``data`` into ``base`` on the driver, when the input has at most
    ``spark.qbeast.write.localRows`` rows (:mod:`qbeast.spark.write.local`): one collect job
    instead of the stats, estimation and write jobs, the same revision, plan and files. With
    ``base`` None (a new table or an overwrite) the write opens its first revision, as the
    Spark path does. ``None``: run the Spark jobs. ``index_status(revision)`` is the index an
    append into an existing revision adds to; ``rows_before`` the table's rows before the
    write; ``driver_rows``: rows of ``data`` the driver already holds (the limit rises to
    them); ``collected``: ``data`` as the caller already collected it (no collect job).
    """
    from qbeast.spark.write import local

    spark = access.spark
    limit = settings.LOCAL_ROWS.read(spark)
    if limit == 0:
        return None
    limit = max(limit, driver_rows)
    phase = write_phase(path, "local collect")
    if collected is None:
        collected = local.collect_rows(data, limit)
    if collected is None:
        phase.done(rows=f"> {limit}", local=False)
        return None
    table, partitions = collected
    count = table.num_rows
    phase.done(rows=count, local=True)
    try:
        phase = write_phase(path, "local stats")
        if count == 0:
            phase.done(rows=0)
            if base is None:  # qbeast-spark's first revision, as choose_revision commits it
                return IndexedRows(empty_write_revision(spec, cube_size=cube_size, table_id=table_id,
                                                        now=int(time.time() * 1000)), True, (), 0)
            return IndexedRows(base, False, (), 0)
        revision, is_new = local.choose_revision_locally(
            spark, table, spec, base, cube_size=cube_size, column_stats=column_stats,
            table_id=table_id)
        phase.done(rows=count, revision=revision.revision_id, new_revision=is_new)
        phase = write_phase(path, "local estimation")
        existing = None if is_new else index_status(revision)
        indexed, weights = local.indexed_table(table, revision)
        table_rows = rows_before + (0 if rows_already_in_table else count)
        plan = local.analyze_locally(spark, indexed, partitions, revision,
                                     input_partitions=input_partitions(data), count=count,
                                     existing=existing, options=options, table_rows=table_rows)
        phase.done(rows=count, cubes=len(plan.tree), files=plan.file_count)
    except local.NotLocal as reason:
        logger.info("indexed append of %d rows runs in Spark: %s", count, reason)
        return None
    phase = write_phase(path, "local write")
    written = local.write_locally(access, table, indexed, weights, revision, plan, table_dir)
    written = with_threshold_markers(written, plan, existing)
    phase.done(files=len(written), rows=count)
    return IndexedRows(revision, is_new, tuple(written), count)


# -- small helpers ------------------------------------------------------------------------------


_ARROW_BATCH_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"
#: Rows per Arrow batch during the write's Python stages. Spark's default (10000) makes the
#: per-batch overhead visible; larger batches cut the JVM <-> Python transfer time by ~20%
#: (benchmarks/bench_write.py).
WRITE_ARROW_BATCH_ROWS = 100_000


@contextlib.contextmanager
def larger_arrow_batches(spark: Any) -> Iterator[None]:
    """Raise the Arrow batch size for the write's jobs (never lower a user's larger setting)."""
    previous = spark.conf.get(_ARROW_BATCH_KEY, None)
    try:
        current = int(previous) if previous is not None else 10_000
    except ValueError:
        current = 10_000
    if 0 < current <= WRITE_ARROW_BATCH_ROWS:  # equal: another write holds it, share it
        with scoped_confs(spark, {_ARROW_BATCH_KEY: str(WRITE_ARROW_BATCH_ROWS)}):
            yield
    else:
        yield


def input_partitions(data: Any) -> int:
    """Partitions of the input (1 where the RDD is not reachable, e.g. Spark Connect)."""
    try:
        return max(1, data.rdd.getNumPartitions())
    except Exception:  # noqa: BLE001 - Connect DataFrames have no RDD
        return 1


def parallelism(spark: Any) -> int:
    """Cores Spark schedules on (shuffle partitions where the SparkContext is not reachable)."""
    try:
        return max(1, spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Connect sessions have no SparkContext
        return max(1, int(spark.conf.get("spark.sql.shuffle.partitions", "8")))


__all__ = [
    "IndexedRows", "analyze", "index_locally", "index_rows", "input_partitions", "larger_arrow_batches", "parallelism", "with_threshold_markers",
    "write_files", "write_phase", "write_tasks",
]
