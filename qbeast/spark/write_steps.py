"""The steps of an indexing write, public for reuse by ``qbeast.operations`` (optimize).

``qbeast.spark.writer.write`` chains them: :func:`analyze` (estimation pass -> :class:`WritePlan`),
:func:`write_files` (assignment + file writing; one description per file),
:func:`add_files` (the AddFile actions with Qbeast tags, threshold markers included). Optimize
reruns the same steps over the files it rewrites, so they live here rather than as private
functions of the writer.
"""
from __future__ import annotations

import contextlib
import json
import logging
import time
import warnings
from collections.abc import Sequence
from typing import Any

from qbeast.core.blocks import Block, encode_tags
from qbeast.core.cube_id import CubeId
from qbeast.core.revision import Revision
from qbeast.core.transformers import quote_identifier
from qbeast.core.weight import MAX_WEIGHT
from qbeast.delta.actions import AddFile
from qbeast.spark.arrow_jobs import map_in_arrow
from qbeast.index.points import table_points
from qbeast.index.assignment import WritePlan, build_write_plan
from qbeast.index.estimation import (
    DEFAULT_BUFFER_CAPACITY,
    DEFAULT_ESTIMATION_SAMPLE_ROWS,
    DOMAIN_SCHEMA,
    ExistingThresholds,
    estimate_cube_weights,
    estimated_block_sizes,
    estimation_fraction,
    group_cube_size,
    partition_domains_function,
)
from qbeast.spark.spark_files import (
    batch_blocks,
    batch_flags,
    float_stats_columns,
    new_block_tally,
    new_flag_tally,
    scoped_confs,
    write_plan_files,
)
from qbeast.spark.table_state import effective_thresholds
from qbeast.spark.write_options import WEIGHT_COLUMN, check_non_negative_int, check_positive_int

logger = logging.getLogger("qbeast.spark.writer")

#: Session conf of the estimation's sample size (rows; 0 = estimate from every row).
ESTIMATION_SAMPLE_ROWS_CONF = "spark.qbeast.index.estimationSampleRows"
#: Seed of the estimation sample, so that the same input and partitioning give the same layout.
ESTIMATION_SEED = 1_879_048_193


class WritePhase:
    """Logs one phase of the write with its elapsed time (and whatever counts it reports)."""

    def __init__(self, path: str, name: str) -> None:
        self.path, self.name, self.started = path, name, time.perf_counter()
        logger.info("write %s: %s started", path, name)

    def done(self, **counts: Any) -> None:
        details = " ".join(f"{k}={v}" for k, v in counts.items())
        logger.info(
            "write %s: %s done %s elapsed=%.2fs",
            self.path, self.name, details, time.perf_counter() - self.started,
        )


# -- analysis -----------------------------------------------------------------------------------


def analyze(spark, data, revision: Revision, desired: int, count: int, existing, opts, path) -> WritePlan:
    """Estimation pass: local trees in tasks, summed domains, thresholds and rollup on the driver."""
    from pyspark.sql import functions as F

    phase = WritePhase(path, "estimation")
    dims = revision.dimension_count
    if existing is None and count <= desired:
        # The whole input fits the root: every domain estimate would give a leaf root holding all
        # rows in one file, so the estimation job is skipped with the same outcome.
        root = CubeId.root(dims)
        plan = build_write_plan(dims, {root: MAX_WEIGHT}, {root: count}, desired)
        phase.done(rows=count, cubes=1, files=1, skipped="input fits one cube")
        return plan
    columns = list(revision.columns)
    capacity = opts.buffer_capacity or conf_int(
        spark, "spark.qbeast.index.cubeDomainsBufferCapacity", DEFAULT_BUFFER_CAPACITY
    )
    partitions = input_partitions(data)
    sample_rows = opts.estimation_sample_rows
    if sample_rows is None:
        sample_rows = conf_int(spark, ESTIMATION_SAMPLE_ROWS_CONF, DEFAULT_ESTIMATION_SAMPLE_ROWS,
                               allow_zero=True)
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
        *[F.col(quote_identifier(c)) for c in columns], weight_expression(columns).alias(WEIGHT_COLUMN)
    )
    domains_fn = partition_domains_function(revision, columns, WEIGHT_COLUMN, gcs, capacity, lookup)
    summed = (
        map_in_arrow(indexed, domains_fn, DOMAIN_SCHEMA)
        .groupBy("cube")
        .agg(F.sum("domain").alias("domain"))
        .collect()
    )
    input_domains = {CubeId.from_string(dims, r["cube"]): float(r["domain"]) for r in summed}
    root = CubeId.root(dims)
    realized = input_domains.get(root, 0.0)
    if sampled < 1.0 and realized > 0:
        # Every sampled row passes through its local tree's root, so the summed root domain is the
        # realized sample size. Scaling by count / that size (a ratio estimate) instead of by
        # 1 / fraction removes the Bernoulli noise of the sample size, and the root's domain is
        # the exact row count as in a full estimation (its threshold exactly cube_size / rows,
        # where 1 / fraction once put it 0.03% below and a 1% sample of 20M rows read 5 files).
        scale = count / realized
        input_domains = {cube: domain * scale for cube, domain in input_domains.items()}
        input_domains[root] = float(count)
    domains = dict(input_domains)
    if existing is not None and len(existing):
        for cube, domain in existing.cube_domains().items():
            domains[cube] = domains.get(cube, 0.0) + domain
    weights = estimate_cube_weights(domains, desired, thresholds)
    sizes = estimated_block_sizes(weights, input_domains)
    plan = build_write_plan(dims, weights, sizes, desired)
    phase.done(rows=count, sampled_fraction=round(sampled, 6), partitions=partitions,
               group_cube_size=gcs, cubes=len(weights), files=plan.file_count)
    return plan


def weight_expression(columns: Sequence[str]):
    """Spark's ``hash()`` over the indexed columns in revision order: the row weight."""
    from pyspark.sql import functions as F

    return F.hash(*[F.col(quote_identifier(c)) for c in columns])


# -- writing ------------------------------------------------------------------------------------


def assignment_udf(revision: Revision, plan: WritePlan, columns: Sequence[str], tally=None,
                   flags=None):
    """Arrow UDF: (indexed columns..., weight) -> struct<file, cube> (only those cross to Python).

    ``tally``, a Spark accumulator of :class:`qbeast.spark.spark_files.BlockTally`, receives per
    batch the row count and min weight of every (file, cube) met. With ``flags`` (a
    :class:`qbeast.spark.spark_files.FlagTally` accumulator) the UDF takes one more argument, the
    row's ``non_finite_mask``, and ORs it per file into ``flags``.
    """
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.util import PythonEvalType

    names = list(columns)

    def assign(*arrays: pa.Array) -> pa.Array:
        masks = None
        if flags is not None:
            *arrays, mask_array = arrays
            masks = mask_array.to_numpy(zero_copy_only=False)
        table = pa.Table.from_arrays(list(arrays[:-1]), names=names)
        coords = table_points(revision, table, names)
        weights = arrays[-1].to_numpy(zero_copy_only=False)
        cubes, files = plan.assign(coords, weights)
        if tally is not None:
            tally.add(batch_blocks(files, cubes, weights))
        if masks is not None:
            found = batch_flags(files, masks)
            if found:
                flags.add(found)
        return pa.StructArray.from_arrays(
            [pa.array(files, pa.int32()), pa.array(cubes, pa.int64())], names=["file", "cube"]
        )

    with warnings.catch_warnings():  # pyspark prefers type hints; the eval type is explicit
        warnings.simplefilter("ignore", UserWarning)
        return F.arrow_udf(
            assign, "struct<file:int,cube:bigint>", PythonEvalType.SQL_SCALAR_ARROW_UDF
        )


#: Average rows per file from which every file gets its own write task even when there are more
#: files than 4 tasks per core: a task costs a few milliseconds to schedule, while sorting the
#: rows of several files within one task costs about 0.1 microseconds per row (about 12% of
#: the write at 16M rows; benchmarks/results/write.md).
ONE_TASK_PER_FILE_ROWS = 50_000


def write_tasks(spark, plan: WritePlan, rows: int | None) -> int:
    """Number of write tasks: one per file when files are few or large, else 4 per core."""
    tasks = max(1, min(plan.file_count, 4 * parallelism(spark)))
    if rows is not None and rows >= plan.file_count * ONE_TASK_PER_FILE_ROWS:
        tasks = plan.file_count
    return tasks


def write_files(data, revision: Revision, plan: WritePlan, table_dir: str,
                rows: int | None = None) -> list[dict]:
    """Assignment, shuffle by file and Spark's parquet writer; returns one dict per file.

    See ``qbeast.spark.spark_files``: only the indexed columns and the weight cross to Python.
    ``rows`` (the input's row count, when known) lets large files get one task each.
    """
    columns = list(revision.columns)
    tally = new_block_tally(data.sparkSession)
    # float columns can hold NaN or infinities, which parquet footers do not reliably show
    flags = (new_flag_tally(data.sparkSession)
             if tally is not None and float_stats_columns(data.schema) else None)
    udf = assignment_udf(revision, plan, columns, tally, flags)
    tasks = write_tasks(data.sparkSession, plan, rows)
    return write_plan_files(
        data, plan, table_dir, columns, lambda: weight_expression(columns), udf, tasks, tally,
        lambda: assignment_udf(revision, plan, columns), flags,
    )


def add_files(rows: list[dict], revision: Revision, plan: WritePlan, existing) -> tuple[list[AddFile], int]:
    """AddFile actions with Qbeast tags, threshold markers included (see :func:`threshold_markers`)."""
    per_file: dict[int, list[Block]] = {
        row["file_id"]: [Block(c, lo, hi, n) for c, lo, hi, n in json.loads(row["blocks"])]
        for row in rows
    }
    for file_id, block in threshold_markers(per_file, plan, existing):
        per_file[file_id].append(block)
    adds = [
        AddFile(
            row["path"], {}, int(row["size"]), int(row["modification_time"]), True,
            row["stats"], encode_tags(revision.revision_id, per_file[row["file_id"]]),
        )
        for row in rows
    ]
    return adds, sum(len(b) for b in per_file.values())


def threshold_markers(per_file: dict[int, list[Block]], plan: WritePlan, existing):
    """Zero-element blocks that make the committed index state the thresholds rows were placed by.

    Readers only know a cube's threshold from its blocks (the minimum over them). Two kinds of cube
    can end up without a block in this commit although rows were assigned using their threshold:

    * an inner cube that received no row while rows went to its descendants (a sparse region): the
      index would lack the parent of a written cube;
    * an existing cube of the revision whose threshold this append lowered but which received no
      row: its effective threshold would stay the old, higher one, and a sample with
      ``Weight(f)`` between the two would stop there and miss the rows placed below (FORMAT §13).

    For each such cube a block ``(cube, threshold, threshold, 0)`` is attached to one of the new
    files (the cube's own rollup file when it was written, else the file that needed it).
    """
    dims = plan.dimensions
    current = {s.cube: s.max_weight for s in existing} if existing is not None else {}
    covered = {b.cube for blocks in per_file.values() for b in blocks}
    markers: list[tuple[int, Block]] = []

    def mark(cube: CubeId, fallback_file: int) -> None:
        node = plan.tree.index[cube]
        threshold = int(plan.max_weights[node])
        covered.add(cube.string)
        if threshold >= current.get(cube, MAX_WEIGHT):
            return  # the stored blocks already carry this threshold (or a lower one)
        target = int(plan.files[node])
        markers.append((target if target in per_file else fallback_file,
                        Block(cube.string, threshold, threshold, 0)))

    for file_id, blocks in list(per_file.items()):
        for block in list(blocks):
            for ancestor in CubeId.from_string(dims, block.cube).ancestors():
                if ancestor.string in covered:
                    break
                mark(ancestor, file_id)
    if per_file:
        first = next(iter(per_file))
        for cube in current:
            node = plan.tree.index.get(cube)
            if node is not None and cube.string not in covered and plan.max_weights[node] < current[cube]:
                mark(cube, first)
    return markers


# -- small helpers ------------------------------------------------------------------------------


_ARROW_BATCH_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"
#: Rows per Arrow batch during the write's Python stages. Spark's default (10000) makes the
#: per-batch overhead visible; larger batches cut the JVM <-> Python transfer time by ~20%
#: (benchmarks/bench_write.py).
WRITE_ARROW_BATCH_ROWS = 100_000


@contextlib.contextmanager
def larger_arrow_batches(spark):
    """Raise the Arrow batch size for the write's jobs (never lower a user's larger setting)."""
    previous = spark.conf.get(_ARROW_BATCH_KEY, None)
    try:
        current = int(previous) if previous is not None else 10_000
    except ValueError:
        current = 10_000
    if 0 < current < WRITE_ARROW_BATCH_ROWS:
        with scoped_confs(spark, {_ARROW_BATCH_KEY: str(WRITE_ARROW_BATCH_ROWS)}):
            yield
    else:
        yield


def input_partitions(data) -> int:
    """Partitions of the input (1 where the RDD is not reachable, e.g. Spark Connect)."""
    try:
        return max(1, data.rdd.getNumPartitions())
    except Exception:  # noqa: BLE001 - Connect DataFrames have no RDD
        return 1


def parallelism(spark) -> int:
    """Cores Spark schedules on (shuffle partitions where the SparkContext is not reachable)."""
    try:
        return max(1, spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Connect sessions have no SparkContext
        return max(1, int(spark.conf.get("spark.sql.shuffle.partitions", "8")))


def conf_int(spark, key: str, default: int, allow_zero: bool = False) -> int:
    """An integer session conf (> 0, or >= 0 with ``allow_zero``), else ``default`` when unset."""
    value = spark.conf.get(key, None)
    if value is None:
        return default
    check = check_non_negative_int if allow_zero else check_positive_int
    try:
        number: Any = int(value)
    except ValueError:
        number = value  # not an integer: the check reports the text as given
    return check(f"Spark conf {key}", number)


__all__ = [
    "WritePhase", "add_files", "analyze", "assignment_udf", "conf_int", "input_partitions",
    "larger_arrow_batches", "parallelism", "threshold_markers", "weight_expression", "write_files",
    "write_tasks",
]
