"""The indexed append of a small input on the driver: one collect instead of three Spark jobs.

:func:`qbeast.spark.write.steps.index_rows` indexes rows with a stats job, an estimation job and
a write job; each pays Spark's job start-up (about 1 s together even for 200 rows: the inserts of
an hourly merge). When the input has at most ``spark.qbeast.write.localRows`` rows, the rows are
collected once as Arrow (with the Spark partition each row comes from) and the same steps run
here, with the engine's pure pieces:

1. **stats** — min and max of the linear columns (Spark's semantics: a NaN is larger than any
   number), the literal histogram of string histograms; the revision is chosen by
   :func:`qbeast.core.revision.compute_revision_change` as in Spark;
2. **estimation** — the local trees of :func:`qbeast.index.estimation.partition_domains_function`
   over each Spark partition's rows in their order, with the group cube size the Spark pass
   computes, so the summed domains (hence thresholds, rollup and bands) are the same; the row
   weight is :func:`qbeast.index.row_weights.spark_hash`, Spark's ``hash()`` bit for bit;
3. **write** — :meth:`WritePlan.assign` per row, one parquet file per output file written with
   pyarrow in the session's encodings (:mod:`qbeast.spark.write.arrow_parquet`), band pieces
   as row groups with the piece record in the footer as the bridge's run writer records them,
   blocks counted from the assignment, Delta stats from the footer; files are staged and
   published with :class:`qbeast.spark.write.staging.StagedFiles` (object-store tables too).

Inputs whose estimation would be sampled (more than ``spark.qbeast.index.estimationSampleRows``
rows: Spark's Bernoulli sample cannot be reproduced here) go back to the Spark path.
"""
from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qbeast.commit import WrittenFile
from qbeast.core.band_row_groups import Piece, encode_pieces
from qbeast.core.cube_id import CubeId
from qbeast.core.index_status import IndexStatus
from qbeast.core.revision import Revision, compute_revision_change
from qbeast.core.sql import quote_identifier
from qbeast.core.transformations import DEFAULT_HISTOGRAM
from qbeast.core.transformers import LinearTransformer, StringHistogramTransformer, Transformer
from qbeast.core.weight import MAX_WEIGHT
from qbeast.core.weight_bands import band_layout
from qbeast.index.assignment import WritePlan, build_write_plan, plan_from_domains
from qbeast.index.estimation import (
    ExistingThresholds,
    estimation_fraction,
    group_cube_size,
    partition_domains_function,
)
from qbeast.index.points import table_points
from qbeast.index.row_weights import spark_hash
from qbeast.index.tally import batch_blocks
from qbeast.index.thresholds import effective_thresholds
from qbeast.spark import settings
from qbeast.spark.write.options import WEIGHT_COLUMN, WriteOptions

if TYPE_CHECKING:
    from qbeast.spark.file_access import FileAccess

logger = logging.getLogger("qbeast.spark.write.writer")

#: The column the collect adds: the Spark partition of each row (dropped before anything else).
PARTITION_COLUMN = "_qbeast_local_partition"


_EXCLUDED_RULES = "spark.sql.optimizer.excludedRules"
_LOCAL_RELATION_RULE = "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation"


class NotLocal(Exception):
    """The input cannot be indexed on the driver (too large, or a step Spark must run)."""


#: Plan nodes :func:`estimated_bytes` visits at most; a larger plan counts as unknown.
_MAX_PLAN_NODES = 2000


def estimated_bytes(data: Any, limit: int | None = None) -> int | None:
    """How large computing ``data`` may be, from Spark's optimizer (nothing runs), or ``None``
    where the session gives none (a Spark Connect DataFrame has no plan in this process).

    A first write collects a small input to the driver, asking for one row more than
    ``spark.qbeast.write.localRows``; when more rows come, the collect gives up and the Spark jobs
    compute the query again. That second computation is cheap when either bound below is small,
    and this returns the smaller one:

    * the plan's own size estimate, of what it outputs: an upper bound for scans, filters,
      projections and aggregates (the collect then gets every row: the query runs once), but the
      product of the sides for a join (two 1 MB tables: 1 TB);
    * the bytes it reads: the sum of the sizes of its leaves and its subqueries' leaves (file
      scans, catalog tables, local rows, ranges), whatever its joins make of them. A leaf Spark
      cannot size (an RDD, a DataFrame of Python rows) counts as Spark's default size, far above
      any limit.

    With ``limit``, a plan whose own estimate is at most ``limit`` is not walked (a smaller
    bound would not change the caller's answer): that estimate is returned.
    """
    try:
        plan = data._jdf.queryExecution().optimizedPlan()
    except AttributeError:  # a Spark Connect DataFrame
        return None
    output = _size_in_bytes(plan)
    if limit is not None and output <= limit:
        return output
    read = _bytes_read(plan)
    return output if read is None else min(output, read)


#: Plan nodes that pass every row of their input on (a scan's rows are all the output's).
_EVERY_ROW_NODES = frozenset({"LogicalRelation", "Project", "Range", "LocalRelation", "Repartition",
                              "RepartitionByExpression", "Sort"})


def scan_row_width(data: Any) -> int | None:
    """Spark's default width of one row of ``data`` (bytes: 8 for a long, 20 for a string, ...)
    when ``data`` outputs every row it reads (scans, projections, repartitions and sorts of one
    source), else None: a filter, an aggregate or a join may output few rows of a large input,
    which Spark's size estimate cannot tell. None too without a plan in this process (Spark
    Connect)."""
    try:
        plan = data._jdf.queryExecution().optimizedPlan()
    except AttributeError:
        return None
    pending = [plan]
    while pending:
        node = pending.pop()
        if str(node.nodeName()) not in _EVERY_ROW_NODES or node.subqueries().size():
            return None
        pending.extend(_scala_items(node.children()))
    return int(plan.schema().defaultSize())


def _size_in_bytes(plan: Any) -> int:
    return int(str(plan.stats().sizeInBytes()))  # a Scala BigInt, or an int from py4j


def _bytes_read(plan: Any) -> int | None:
    """The sum of the sizes of ``plan``'s leaves and of its subqueries' leaves; None for a plan of
    more than ``_MAX_PLAN_NODES`` nodes (not walked)."""
    total, pending = 0, [plan]
    for _ in range(_MAX_PLAN_NODES):
        if not pending:
            return total
        node = pending.pop()
        children = _scala_items(node.children())
        if not children:
            total += _size_in_bytes(node)
        pending.extend(children)
        pending.extend(_scala_items(node.subqueries()))
    return None if pending else total


def _scala_items(sequence: Any) -> list[Any]:
    return [sequence.apply(index) for index in range(sequence.size())]


#: Rows collected to the driver: the Arrow table and each row's Spark partition.
CollectedRows = tuple[pa.Table, np.ndarray]


def collect_rows(data: Any, limit: int) -> CollectedRows | None:
    """``data``'s rows as Arrow and each row's Spark partition, or ``None`` above ``limit`` rows.

    One Spark job (``limit(limit + 1)``: a larger input is not collected whole).
    """
    from pyspark.sql import functions as F

    from qbeast.spark.runtime import scoped_confs

    columns = [F.col(quote_identifier(c)) for c in data.columns]
    rows = data.select(*columns, F.spark_partition_id().alias(PARTITION_COLUMN)).limit(limit + 1)
    # a projection over a local relation (a DataFrame of driver rows) would be evaluated by the
    # optimizer, every row in partition 0, where the Spark jobs spread those rows over tasks
    excluded = [r for r in (data.sparkSession.conf.get(_EXCLUDED_RULES, None) or "").split(",")
                if r.strip()]
    if _LOCAL_RELATION_RULE not in excluded:
        excluded.append(_LOCAL_RELATION_RULE)
    with scoped_confs(data.sparkSession, {_EXCLUDED_RULES: ",".join(excluded)}):
        table = rows.toArrow()
    if table.num_rows > limit:
        return None
    partitions = table.column(PARTITION_COLUMN).to_numpy(zero_copy_only=False).astype(np.int64)
    return table.drop_columns([PARTITION_COLUMN]), partitions


# -- stats ----------------------------------------------------------------------------------------


def _extreme(column: pa.ChunkedArray, which: str) -> Any:
    """``min``/``max`` of a column as Spark's aggregate gives it (NaN above every number)."""
    if pa.types.is_floating(column.type):
        nan = pc.is_nan(column)
        has_nan = pc.any(nan).as_py() or False
        finite_or_inf = pc.filter(column, pc.invert(pc.fill_null(nan, False)))
        found = pc.min_max(finite_or_inf)[which].as_py()
        if has_nan and (which == "max" or found is None):
            return float("nan")
        return found
    return pc.min_max(column)[which].as_py()


def local_stats(table: pa.Table, transformers: Sequence[Transformer]) -> dict[str, Any]:
    """The stats row of :func:`qbeast.spark.write.revision_change.run_stats`, from ``table``."""
    stats: dict[str, Any] = {"count": table.num_rows}
    for t in transformers:
        if isinstance(t, LinearTransformer):
            key_min, key_max = t.stats_keys()
            column = table.column(t.column_name)
            stats[key_min] = _extreme(column, "min")
            stats[key_max] = _extreme(column, "max")
        elif isinstance(t, StringHistogramTransformer):
            # a literal array in the Spark pass too (StringHistogramTransformer.stats_sql)
            (key,) = t.stats_keys()
            stats[key] = list(DEFAULT_HISTOGRAM)
        elif t.stats_sql():
            raise NotLocal(f"no driver-local stats for the {t.type_name!r} transformer")
    return stats


def choose_revision_locally(spark: Any, table: pa.Table, spec: Any, base: Revision | None, *,
                            cube_size: int, column_stats: Any,
                            table_id: str) -> tuple[Revision, bool]:
    """:func:`qbeast.spark.write.revision_change.choose_revision` of an append into ``base``,
    or of a first write (``base`` None: a new table or an overwrite)."""
    from qbeast.spark.write.revision_change import planned_transformers

    now = int(time.time() * 1000)
    transformers = planned_transformers(spec, base, table_id, cube_size)
    stats = local_stats(table, transformers)
    new = compute_revision_change(
        base, spec.specs, stats, cube_size, column_stats, now,
        data_types=spec.data_types, table_id=table_id,
        headroom_percent=settings.REVISION_HEADROOM.read(spark),
    )
    if new is None:
        assert base is not None  # a first write always opens a revision
        return base, False
    return new, True


# -- estimation -----------------------------------------------------------------------------------


def indexed_table(table: pa.Table, revision: Revision) -> tuple[pa.Table, np.ndarray]:
    """The indexed columns with the weight column, and the weights (int64)."""
    from qbeast.errors import UnsupportedTypeError

    columns = list(revision.columns)
    try:
        weights = spark_hash([table.column(c) for c in columns])
    except UnsupportedTypeError as exc:
        raise NotLocal(f"no driver-local row weight: {exc}") from exc
    indexed = pa.table([table.column(c) for c in columns] + [pa.array(weights, pa.int32())],
                       names=[*columns, WEIGHT_COLUMN])
    return indexed, weights.astype(np.int64)


def analyze_locally(spark: Any, indexed: pa.Table, partitions: np.ndarray, revision: Revision, *,
                    input_partitions: int, count: int, existing: IndexStatus | None,
                    options: WriteOptions, table_rows: int) -> WritePlan:
    """:func:`qbeast.spark.write.steps.analyze` over the collected rows (same plan)."""
    desired = revision.desired_cube_size
    dims = revision.dimension_count
    if existing is None and count <= desired:
        root = CubeId.root(dims)
        return build_write_plan(dims, {root: MAX_WEIGHT}, {root: count}, desired)
    sample_rows = options.estimation_sample_rows
    if sample_rows is None:
        sample_rows = settings.ESTIMATION_SAMPLE_ROWS.read(spark)
    if estimation_fraction(count, desired, sample_rows) < 1.0:
        raise NotLocal("the estimation of this input is sampled")
    capacity = options.buffer_capacity or settings.BUFFER_CAPACITY.read(spark)
    gcs = group_cube_size(desired, input_partitions, count, capacity)
    thresholds = effective_thresholds(existing) if existing is not None else None
    lookup = ExistingThresholds.from_thresholds(dims, thresholds) if thresholds else None
    run = partition_domains_function(revision, columns=list(revision.columns),
                                     weight_column=WEIGHT_COLUMN, gcs=gcs,
                                     buffer_capacity=capacity, existing=lookup)
    summed: dict[str, float] = {}
    for partition in np.unique(partitions).tolist():
        rows = indexed.take(pa.array(np.flatnonzero(partitions == partition)))
        for batch in run(iter(rows.to_batches())):
            for cube, domain in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                summed[cube] = summed.get(cube, 0.0) + domain
    input_domains = {CubeId.from_string(dims, c): d for c, d in summed.items()}
    return plan_from_domains(revision, input_domains, count=count, sampled=1.0,
                             existing=existing, thresholds=thresholds, desired_cube_size=desired,
                             table_rows=table_rows, weight_bands=band_layout(
                                 settings.WEIGHT_BANDS.read(spark)))


# -- writing --------------------------------------------------------------------------------------


def write_locally(access: FileAccess, table: pa.Table, indexed: pa.Table, weights: np.ndarray,
                  revision: Revision, plan: WritePlan, table_dir: str) -> list[WrittenFile]:
    """Assign the rows and write one file per output file of ``plan``; staged, then published
    (``access``: how the operation reaches the table's files)."""
    from qbeast.spark.bridge import run_parquet_format
    from qbeast.spark.write.staging import StagedFiles

    spark = access.spark
    coords = table_points(revision, indexed, list(revision.columns))
    cubes, files = plan.assign(coords, weights)
    owners = plan.row_group_files
    # the file id each output file reports: the bridge's run writer reports its first piece,
    # the join of staged pieces (no bridge jar) its first piece holding rows
    first_piece: dict[int, int] = {}
    if owners is not None and run_parquet_format(spark) is not None:
        for piece, owner in enumerate(owners.tolist()):
            first_piece.setdefault(int(owner), piece)
    version = settings.PARQUET_VERSION.read(spark)
    data = table.cast(pa.schema([f.with_nullable(True) for f in table.schema]))
    written: list[WrittenFile] = []
    with StagedFiles(table_dir, access, writers="driver") as staged:
        os.makedirs(staged.path)
        for rows in output_rows(plan, files):
            path = os.path.join(staged.path, f"{uuid.uuid4()}.parquet")
            file_id, stats, blocks = write_output_file(path, data, rows, files, cubes, weights, plan,
                                                       first_piece, version)
            name, info = staged.publish(path)
            written.append(WrittenFile(file_id, name, info.size, info.mtime_ms, len(rows),
                                       stats, blocks))
    return written


def output_rows(plan: WritePlan, files: np.ndarray) -> list[np.ndarray]:
    """The rows of each output file, for rows assigned to the plan's ``files`` (a band piece's
    rows go to the output file that owns the piece), in output file order."""
    owners = plan.row_group_files
    outputs = files if owners is None else owners[files]
    return [np.flatnonzero(outputs == output) for output in np.unique(outputs).tolist()]


def write_output_file(path: str, data: pa.Table, rows: np.ndarray, files: np.ndarray,
                      cubes: np.ndarray, weights: np.ndarray, plan: WritePlan,
                      first_piece: dict[int, int], version: str) -> tuple[int, str, tuple[Any, ...]]:
    """Write the ``rows`` of one output file (indexes into ``data`` and the per-row ``files``,
    ``cubes`` and ``weights``) to the local ``path`` with pyarrow in the session's encodings:
    band pieces as row groups with the piece record in the footer, as the bridge's run writer
    records them. Returns the file id it reports, its Delta stats and its blocks."""
    import pyarrow.parquet as pq

    from qbeast.delta.stats import footer_stats
    from qbeast.spark.write.arrow_parquet import arrow_write_options, non_finite_columns
    from qbeast.spark.write.row_groups import write_pieces_with_arrow

    owners = plan.row_group_files
    pieces_of_rows = files[rows]
    rows = rows[np.argsort(pieces_of_rows, kind="stable")]
    pieces_of_rows = files[rows]
    part = data.take(pa.array(rows))
    record = None
    parts = [part]
    if owners is not None:
        starts = np.flatnonzero(np.r_[True, pieces_of_rows[1:] != pieces_of_rows[:-1]])
        ends = np.r_[starts[1:], len(rows)]
        parts = [part.slice(int(s), int(e - s)) for s, e in zip(starts, ends)]
        record = encode_pieces([Piece(int(weights[rows[s:e]].min()), int(e - s))
                                for s, e in zip(starts.tolist(), ends.tolist())])
        output = int(owners[pieces_of_rows[0]])
        file_id = first_piece.get(output, int(pieces_of_rows[0]))
    else:
        file_id = int(pieces_of_rows[0])
    counts = batch_blocks(np.zeros(len(rows), np.int32), cubes[rows], weights[rows])
    blocks = tuple(plan.block(cube_id, count, low)
                   for (_, cube_id), (count, low) in sorted(counts.items()))
    write_pieces_with_arrow(path, parts, record, **arrow_write_options(part, version))
    stats = footer_stats(pq.ParquetFile(path).metadata, non_finite=non_finite_columns(part))
    return file_id, stats, blocks


__all__ = ["NotLocal", "analyze_locally", "choose_revision_locally", "collect_rows", "estimated_bytes",
           "indexed_table", "local_stats", "output_rows", "scan_row_width", "write_locally",
           "write_output_file"]
