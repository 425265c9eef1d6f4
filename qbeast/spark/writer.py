"""``qbeast.write``: index a DataFrame with the OTree and commit it as a Qbeast table.

The write follows qbeast-spark's double-pass algorithm (FORMAT §6), as Spark jobs in which only
cube-level aggregates and per-file descriptions reach the driver:

1. **stats** — one aggregate query: the transformers' min/max (and friends) plus ``count(1)``. It
   decides the revision: the latest one when it covers the data, else a new one (FORMAT §3.8).
2. **estimation** — every task builds local OTrees over buffers of the indexed columns and their
   weight (``F.hash`` in the JVM) and emits a domain per cube; Spark sums them per cube; the driver
   derives each cube's threshold and the rollup of cubes into files (``qbeast.spark.estimation``).
3. **write** — an Arrow UDF assigns every row to its cube and file (``qbeast.spark.assignment``),
   rows are repartitioned by file, and each task writes its parquet files with pyarrow and returns
   their size, Delta stats and blocks (``qbeast.spark.files``).
4. **commit** — one Delta transaction with all AddFiles (tags = revision + blocks), the metadata
   when a revision or the schema changes, the removal of every file on overwrite and the optional
   application transaction. Nothing is committed before every file is written, so a failed write
   leaves the previous version intact.

Appends into the latest revision keep sampling exact (FORMAT §13): existing cube thresholds are
never raised, and when one is lowered while the write puts no row in that cube, a zero-element
block carrying the new threshold is added to one of the new files, so that the cube's effective
threshold (the minimum over its blocks) is the one the new rows were assigned with.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qbeast.core.blocks import Block, encode_tags
from qbeast.core.cube_id import CubeId
from qbeast.core.transformers import quote_identifier
from qbeast.core.weight import MAX_WEIGHT
from qbeast.core.revision import (
    LAST_REVISION_KEY,
    Revision,
    updated_configuration,
    without_qbeast_keys,
)
from qbeast.delta.actions import AddFile, Metadata
from qbeast.errors import InvalidOptionError
from qbeast.spark.arrow_jobs import map_in_arrow
from qbeast.spark.arrow_values import table_points
from qbeast.spark.assignment import WritePlan, build_write_plan
from qbeast.spark.estimation import (
    DEFAULT_BUFFER_CAPACITY,
    DOMAIN_SCHEMA,
    ExistingThresholds,
    estimate_cube_weights,
    estimated_block_sizes,
    group_cube_size,
    partition_domains_function,
)
from qbeast.spark.files import FILE_SCHEMA, write_files_function
from qbeast.spark.revision_change import choose_revision, index_spec
from qbeast.spark.table_state import TableState, canonical_type, effective_thresholds, schema_fields
from qbeast.spark.write_options import (
    ASSIGNMENT_COLUMN,
    DEFAULT_CUBE_SIZE,
    WEIGHT_COLUMN,
    WriteOptions,
    check_mode,
    check_positive_int,
    check_storable_schema,
    check_txn,
)

logger = logging.getLogger("qbeast.spark.writer")


@dataclass(frozen=True)
class WriteResult:
    """What a write committed: Delta ``version``, the revision written into, files, rows, blocks.

    ``skipped`` is True when ``txn_app_id``/``txn_version`` showed the write was already committed
    (nothing was written; ``version`` is then the table's current version).
    """

    version: int | None
    revision_id: int
    files: tuple[str, ...]
    rows: int
    blocks: int
    skipped: bool = False

    @property
    def file_count(self) -> int:
        return len(self.files)

    def __repr__(self) -> str:  # the file list can be long: show its size
        return (
            f"WriteResult(version={self.version}, revision_id={self.revision_id}, "
            f"files={self.file_count}, rows={self.rows}, blocks={self.blocks}, "
            f"skipped={self.skipped})"
        )


class _Phase:
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


def write(
    df,
    path: str,
    columns_to_index: str | Sequence[str] | None = None,
    cube_size: int | None = None,
    mode: str = "append",
    column_stats: str | dict | None = None,
    txn_app_id: str | None = None,
    txn_version: int | None = None,
    **options: Any,
) -> WriteResult:
    """Write ``df`` to the Qbeast table at ``path`` (see docs/writer.md for every option).

    ``columns_to_index`` is a list or a comma-separated string of column names, each optionally
    followed by ``:linear``, ``:hashing``, ``:quantiles`` or ``:histogram``; on append it defaults
    to the latest revision's columns. ``cube_size`` defaults to the latest revision's (append) or
    ``spark.qbeast.index.defaultCubeSize`` (5,000,000). ``mode`` is ``append`` or ``overwrite``.
    Options: ``merge_schema`` (allow new columns on append), ``buffer_capacity`` (rows per local
    tree in the estimation, default ``spark.qbeast.index.cubeDomainsBufferCapacity`` or 100000),
    ``user_metadata`` (stored in the commit info).
    """
    started = time.perf_counter()
    mode = check_mode(mode)
    txn = check_txn(txn_app_id, txn_version)
    opts = WriteOptions.parse(options)
    if cube_size is not None:
        check_positive_int("cube_size", cube_size)
    if not isinstance(path, str) or not path:
        raise InvalidOptionError(f"path must be a non-empty string, got {path!r}")
    check_storable_schema(df.schema)
    spark = df.sparkSession

    state = TableState.load(path)
    if txn is not None and state.snapshot is not None:
        done = state.snapshot.txn_version(txn[0])
        if done is not None and done >= txn[1]:
            logger.info(
                "write %s: skipped, application %r already committed transaction %d (asked %d)",
                path, txn[0], done, txn[1],
            )
            return WriteResult(
                state.snapshot.version, state.latest_revision_id or 0, (), 0, 0, skipped=True
            )
    if mode == "append" and state.exists and not state.is_qbeast:
        raise InvalidOptionError(
            f"{path} is a Delta table without Qbeast metadata (no {LAST_REVISION_KEY}); convert it "
            "with qbeast.convert_to_qbeast(...) first, or write with mode='overwrite'"
        )
    base = state.latest_revision if mode == "append" else None
    spec = index_spec(df.schema, columns_to_index, base)
    desired = cube_size or (base.desired_cube_size if base is not None else _conf_int(
        spark, "spark.qbeast.index.defaultCubeSize", DEFAULT_CUBE_SIZE))
    data, schema_string, schema_changed = _align_schema(df, state, mode, opts.merge_schema)

    phase = _Phase(path, "stats")
    revision, is_new_revision, count = choose_revision(
        data, spec, base, desired, column_stats, table_id=path
    )
    phase.done(rows=count, revision=revision.revision_id, new_revision=is_new_revision)

    table_dir = _local_dir(state.log.table_path)
    os.makedirs(table_dir, exist_ok=True)
    adds: list[AddFile] = []
    blocks_written = 0
    if count > 0:
        existing = None
        if not is_new_revision:
            existing = state.index_status(revision)
        with _larger_arrow_batches(spark):
            plan = _analyze(spark, data, revision, desired, count, existing, opts, path)
            phase = _Phase(path, "write")
            rows = _write_files(data, revision, plan, table_dir)
        adds, blocks_written = _add_files(rows, revision, plan, existing)
        phase.done(files=len(adds), rows=sum(r["num_records"] for r in rows), blocks=blocks_written)

    phase = _Phase(path, "commit")
    metadata_changed = schema_changed or is_new_revision or mode == "overwrite" or not state.exists
    version = _commit(
        state, table_dir, mode, revision if is_new_revision else None,
        schema_string if metadata_changed else None, adds, txn, opts,
    )
    rows_written = sum(a.num_records or 0 for a in adds)
    phase.done(version=version, files=len(adds))
    logger.info(
        "write %s: finished version=%d revision=%d rows=%d files=%d blocks=%d elapsed=%.2fs",
        path, version, revision.revision_id, rows_written, len(adds), blocks_written,
        time.perf_counter() - started,
    )
    return WriteResult(
        version, revision.revision_id, tuple(a.path for a in adds), rows_written, blocks_written
    )


def _commit(state: TableState, table_dir: str, mode: str, new_revision: Revision | None,
            schema_string: str | None, adds: list[AddFile], txn: tuple[str, int] | None,
            opts: WriteOptions) -> int:
    """The write's single Delta transaction; returns the committed version.

    Metadata is written only when ``schema_string`` is given (new table, overwrite, new revision
    or merged schema): plain appends into the latest revision commit none, as qbeast-spark.
    When the commit fails (e.g. a conflicting concurrent commit), the new files are deleted:
    nothing references them.
    """
    transaction = state.log.start_transaction(state.snapshot)
    configuration = state.configuration
    if mode == "overwrite":
        configuration = without_qbeast_keys(configuration)
        if state.snapshot is not None:
            # an overwrite replaces everything it saw: a concurrent append must conflict
            transaction.mark_table_read()
            transaction.add_actions([add.remove() for add in state.snapshot.files.values()])
    if new_revision is not None:
        configuration = updated_configuration(configuration, new_revision)
    if schema_string is not None:
        old = state.snapshot.metadata if state.snapshot is not None else None
        if old is None:
            metadata = Metadata.create(schema_string, [], configuration)
        else:  # the table keeps its identity
            metadata = Metadata(
                old.id, schema_string, [], configuration, old.created_time, old.name,
                old.description, old.format_provider, dict(old.format_options),
            )
        transaction.update_metadata(metadata)
    transaction.add_actions(adds)
    if txn is not None:
        transaction.set_transaction(*txn)
    info = {"userMetadata": opts.user_metadata} if opts.user_metadata is not None else None
    try:
        return transaction.commit(
            "WRITE",
            {"mode": mode.capitalize(), "partitionBy": "[]"},
            metrics={"numFiles": len(adds), "numOutputRows": sum(a.num_records or 0 for a in adds),
                     "numOutputBytes": sum(a.size for a in adds)},
            info=info,
        )
    except BaseException:
        if transaction.committed_version is None:
            _delete_files(table_dir, adds)
        raise


def _delete_files(table_dir: str, adds: Sequence[AddFile]) -> None:
    for add in adds:
        try:
            os.remove(os.path.join(table_dir, add.path))
        except OSError:
            pass


# -- schema -------------------------------------------------------------------------------------


def _align_schema(df, state: TableState, mode: str, merge_schema: bool):
    """The DataFrame in the table's column order, the schema to commit, and whether it changed.

    On append every column the data shares with the table must have the same type; columns the
    table lacks are an error unless ``merge_schema`` (then they are appended to the schema);
    table columns the data lacks are written as nulls.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    incoming = StructType([StructField(f.name, f.dataType, True, f.metadata) for f in df.schema])
    if not state.exists or mode == "overwrite":
        return df, incoming.json(), True
    table_schema = StructType.fromJson(state.schema)
    table_fields = schema_fields(state.schema)
    by_name = {f.name: f for f in incoming.fields}
    for name, field in by_name.items():
        if name in table_fields and canonical_type(field.jsonValue()) != canonical_type(
            table_fields[name]
        ):
            raise InvalidOptionError(
                f"column {name!r} has type {field.dataType.simpleString()} in the data but "
                f"{table_schema[name].dataType.simpleString()} in the table {state.log.table_path};"
                " cast it to the table's type (schemas can only gain columns on append)"
            )
    new = [f for f in incoming.fields if f.name not in table_fields]
    if new and not merge_schema:
        raise InvalidOptionError(
            f"the data has columns {[f.name for f in new]} that the table "
            f"{state.log.table_path} lacks; pass merge_schema=True to add them, or select only "
            f"the table's columns {list(table_fields)}"
        )
    target = StructType(list(table_schema.fields) + new)
    columns = [
        F.col(quote_identifier(f.name)) if f.name in by_name else F.lit(None).cast(f.dataType).alias(f.name)
        for f in target.fields
    ]
    return df.select(*columns), target.json(), bool(new)


# -- analysis -----------------------------------------------------------------------------------


def _analyze(spark, data, revision: Revision, desired: int, count: int, existing, opts, path) -> WritePlan:
    """Estimation pass: local trees in tasks, summed domains, thresholds and rollup on the driver."""
    from pyspark.sql import functions as F

    phase = _Phase(path, "estimation")
    dims = revision.dimension_count
    if existing is None and count <= desired:
        # The whole input fits the root: every domain estimate would give a leaf root holding all
        # rows in one file, so the estimation job is skipped with the same outcome.
        root = CubeId.root(dims)
        plan = build_write_plan(dims, {root: MAX_WEIGHT}, {root: count}, desired)
        phase.done(rows=count, cubes=1, files=1, skipped="input fits one cube")
        return plan
    columns = list(revision.columns)
    capacity = opts.buffer_capacity or _conf_int(
        spark, "spark.qbeast.index.cubeDomainsBufferCapacity", DEFAULT_BUFFER_CAPACITY
    )
    partitions = _input_partitions(data)
    gcs = group_cube_size(desired, partitions, count, capacity)
    thresholds = effective_thresholds(existing) if existing is not None else None
    lookup = ExistingThresholds.from_thresholds(dims, thresholds) if thresholds else None
    indexed = data.select(
        *[F.col(quote_identifier(c)) for c in columns], _weight_expression(columns).alias(WEIGHT_COLUMN)
    )
    domains_fn = partition_domains_function(revision, columns, WEIGHT_COLUMN, gcs, capacity, lookup)
    summed = (
        map_in_arrow(indexed, domains_fn, DOMAIN_SCHEMA)
        .groupBy("cube")
        .agg(F.sum("domain").alias("domain"))
        .collect()
    )
    input_domains = {CubeId.from_string(dims, r["cube"]): float(r["domain"]) for r in summed}
    domains = dict(input_domains)
    if existing is not None and len(existing):
        for cube, domain in existing.cube_domains().items():
            domains[cube] = domains.get(cube, 0.0) + domain
    weights = estimate_cube_weights(domains, desired, thresholds)
    sizes = estimated_block_sizes(weights, input_domains)
    plan = build_write_plan(dims, weights, sizes, desired)
    phase.done(rows=count, partitions=partitions, group_cube_size=gcs, cubes=len(weights),
               files=plan.file_count)
    return plan


def _weight_expression(columns: Sequence[str]):
    """Spark's ``hash()`` over the indexed columns in revision order: the row weight."""
    from pyspark.sql import functions as F

    return F.hash(*[F.col(quote_identifier(c)) for c in columns])


# -- writing ------------------------------------------------------------------------------------


def _assignment_udf(revision: Revision, plan: WritePlan, columns: Sequence[str]):
    """Arrow UDF: (indexed columns..., weight) -> struct<file, cube> (only those cross to Python)."""
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.util import PythonEvalType

    names = list(columns)

    def assign(*arrays: pa.Array) -> pa.Array:
        table = pa.Table.from_arrays(list(arrays[:-1]), names=names)
        coords = table_points(revision, table, names)
        cubes, files = plan.assign(coords, arrays[-1].to_numpy(zero_copy_only=False))
        return pa.StructArray.from_arrays(
            [pa.array(files, pa.int32()), pa.array(cubes, pa.int64())], names=["file", "cube"]
        )

    with warnings.catch_warnings():  # pyspark prefers type hints; the eval type is explicit
        warnings.simplefilter("ignore", UserWarning)
        return F.arrow_udf(
            assign, "struct<file:int,cube:bigint>", PythonEvalType.SQL_SCALAR_ARROW_UDF
        )


def _write_files(data, revision: Revision, plan: WritePlan, table_dir: str) -> list[dict]:
    """Assignment + shuffle by file + per-task parquet writing; returns one dict per file."""
    from pyspark.sql import functions as F

    columns = list(revision.columns)
    user_columns = list(data.columns)
    weighted = data.withColumn(WEIGHT_COLUMN, _weight_expression(columns))
    udf = _assignment_udf(revision, plan, columns)
    assigned = weighted.withColumn(
        ASSIGNMENT_COLUMN, udf(*[F.col(quote_identifier(c)) for c in columns], F.col(WEIGHT_COLUMN))
    )
    tasks = max(1, min(plan.file_count, 4 * _parallelism(data.sparkSession)))
    shuffled = assigned.repartition(tasks, F.col(f"{ASSIGNMENT_COLUMN}.file"))
    write_fn = write_files_function(table_dir, plan, user_columns, WEIGHT_COLUMN, ASSIGNMENT_COLUMN)
    return [r.asDict() for r in map_in_arrow(shuffled, write_fn, FILE_SCHEMA).collect()]


def _add_files(rows: list[dict], revision: Revision, plan: WritePlan, existing) -> tuple[list[AddFile], int]:
    """AddFile actions with Qbeast tags, threshold markers included (see :func:`_threshold_markers`)."""
    per_file: dict[int, list[Block]] = {
        row["file_id"]: [Block(c, lo, hi, n) for c, lo, hi, n in json.loads(row["blocks"])]
        for row in rows
    }
    for file_id, block in _threshold_markers(per_file, plan, existing):
        per_file[file_id].append(block)
    adds = [
        AddFile(
            row["path"], {}, int(row["size"]), int(row["modification_time"]), True,
            row["stats"], encode_tags(revision.revision_id, per_file[row["file_id"]]),
        )
        for row in rows
    ]
    return adds, sum(len(b) for b in per_file.values())


def _threshold_markers(per_file: dict[int, list[Block]], plan: WritePlan, existing):
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
def _larger_arrow_batches(spark):
    """Raise the Arrow batch size for the write's jobs (never lower a user's larger setting)."""
    previous = spark.conf.get(_ARROW_BATCH_KEY, None)
    try:
        current = int(previous) if previous is not None else 10_000
    except ValueError:
        current = 10_000
    if 0 < current < WRITE_ARROW_BATCH_ROWS:
        spark.conf.set(_ARROW_BATCH_KEY, str(WRITE_ARROW_BATCH_ROWS))
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(_ARROW_BATCH_KEY)
        else:
            spark.conf.set(_ARROW_BATCH_KEY, previous)


def _input_partitions(data) -> int:
    """Partitions of the input (1 where the RDD is not reachable, e.g. Spark Connect)."""
    try:
        return max(1, data.rdd.getNumPartitions())
    except Exception:  # noqa: BLE001 - Connect DataFrames have no RDD
        return 1


def _parallelism(spark) -> int:
    """Cores Spark schedules on (shuffle partitions where the SparkContext is not reachable)."""
    try:
        return max(1, spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Connect sessions have no SparkContext
        return max(1, int(spark.conf.get("spark.sql.shuffle.partitions", "8")))


def _conf_int(spark, key: str, default: int) -> int:
    value = spark.conf.get(key, None)
    if value is None:
        return default
    try:
        return check_positive_int(key, int(value))
    except ValueError:
        raise InvalidOptionError(f"Spark conf {key} must be a positive integer, got {value!r}") from None


def _local_dir(table_path: str) -> str:
    """The file-system folder of a table path (``file:`` URIs included)."""
    if table_path.startswith("file://"):
        return table_path[len("file://"):]
    if table_path.startswith("file:"):
        return table_path[len("file:"):]
    return table_path


__all__ = ["WriteResult", "write"]
