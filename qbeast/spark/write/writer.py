"""``qbeast.write``: index a DataFrame with the OTree and commit it as a Qbeast table.

The write follows qbeast-spark's double-pass algorithm (FORMAT §6), as Spark jobs in which only
cube-level aggregates and per-file descriptions reach the driver:

1. **stats** — one aggregate query: the transformers' min/max (and friends) plus ``count(1)``. It
   decides the revision: the latest one when it covers the data, else a new one (FORMAT §3.8).
2. **estimation** — every task builds local OTrees over buffers of the indexed columns and their
   weight (``F.hash`` in the JVM) and emits a domain per cube; Spark sums them per cube; the driver
   derives each cube's threshold and the rollup of cubes into files (``qbeast.index.estimation``).
3. **write** — an Arrow UDF that sees only the indexed columns and the weight assigns every row
   to its cube and file (``qbeast.index.assignment``); rows are repartitioned by file and Spark's
   own parquet writer writes one file per group, then the files are moved to ``<uuid>.parquet``
   at the table root and described (size, Delta stats, blocks) from their footers and the
   assignment counts (``qbeast.spark.write.staging``, ``qbeast.spark.write.describe``).
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
from qbeast.delta.outcome import reports_commit_outcome

import dataclasses
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qbeast.commit import CommitProperties, add_file, delete_new_files
from qbeast.commit import commit_properties as commit_properties_of
from qbeast.core.columns import (
    canonical_type,
    engine_metadata_columns,
    schema_fields,
    without_engine_metadata,
)
from qbeast.core.revision import (
    LAST_REVISION_KEY,
    updated_configuration,
    without_qbeast_keys,
)
from qbeast.core.skipping import column_types, encode_declaration, parse_declaration
from qbeast.core.sql import quote_identifier
from qbeast.delta.actions import AddFile, Metadata
from qbeast.core.types import QDataType
from qbeast.delta.log import DeltaLog
from qbeast.delta.transaction import Transaction
from qbeast.errors import InvalidOptionError, QbeastError, WriteFailedError, root_cause
from qbeast.rebase import PlannedCommit, commit_with_retries, metadata_for
from qbeast.skipping_files import declare
from qbeast.snapshot import QbeastSnapshot
from qbeast.spark import settings
from qbeast.spark.file_access import FileAccess
from qbeast.spark.write.revision_change import choose_revision, index_spec
from qbeast.spark.write.table_state import TableState
from qbeast.spark.write.options import (
    COMMIT_OPTIONS,
    WriteOptions,
    check_mode,
    check_positive_int,
    check_storable_schema,
)
from qbeast.spark.write.steps import (
    analyze,
    index_locally,
    larger_arrow_batches,
    with_threshold_markers,
    write_files,
    write_phase,
)

logger = logging.getLogger("qbeast.spark.write.writer")


@dataclass(frozen=True)
class WriteResult:
    """What a write committed: Delta ``version``, the revision written into, files, rows, blocks.

    ``version`` is None when an append had no rows and nothing else to change (no new columns,
    no application transaction to record): nothing was committed.

    ``skipped`` is True when the commit properties' application transaction (``app_id`` /
    ``app_version``, or the ``txn_app_id`` / ``txn_version`` shorthands) showed the write was
    already committed (nothing was written; ``version`` is then the table's current version).
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


@reports_commit_outcome(lambda df, path, *args, **kwargs: path)
def write(
    df: Any,
    path: str,
    columns_to_index: str | Sequence[str] | None = None,
    cube_size: int | None = None,
    mode: str = "append",
    column_stats: str | dict | None = None,
    commit_properties: CommitProperties | None = None,
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
    ``estimation_sample_rows`` (a larger input's cube thresholds are estimated from a sample of
    about this many rows; default ``spark.qbeast.index.estimationSampleRows`` or 1000000, 0 = all
    rows), ``user_metadata`` (stored in the commit info), ``non_finite`` (``"fail"``, the default:
    NaN or an infinity in an indexed float/double column fails the write; ``"null"``: they are
    stored as null), ``skipping_indexes`` (``{"order_id": "bloom", "status": "values"}``: per-file
    value lists or Bloom filters that prune lookups on those columns, kept by the table for later
    writes; ``{}`` removes them; docs/skipping.md).

    How the write commits is one :class:`qbeast.CommitProperties` (``commit_properties``): user
    metadata, an idempotent transaction, retries after a lost race, cancellation. The keyword
    arguments ``txn_app_id``/``txn_version`` and the options ``user_metadata`` and ``cancelled``
    (a callable checked between the phases and right before the commit; True stops the write
    with ``WriteCancelled`` and deletes its files) are shorthands folded into it. An overwrite
    never retries: it replaces what it read, so a lost race fails it.
    """
    started = time.perf_counter()
    mode = check_mode(mode)
    opts = WriteOptions.parse(options)
    props = commit_properties_of(commit_properties, txn_app_id=txn_app_id, txn_version=txn_version,
                                 **{k: options[k] for k in COMMIT_OPTIONS if k in options})
    if cube_size is not None:
        check_positive_int("cube_size", cube_size)
    if not isinstance(path, str) or not path:
        raise InvalidOptionError(f"path must be a non-empty string, got {path!r}")
    check_storable_schema(df.schema)
    spark = df.sparkSession
    # decided once, before the log is read: a store's settings may be the session's
    access = FileAccess.decide(spark, path)
    in_tasks = access.arrow_tasks  # an object store seen from a cluster

    state = TableState.load(path)
    skipped = props.done_before(state.snapshot)
    if skipped is not None and state.snapshot is not None:
        logger.info("write %s: %s", path, skipped)
        return WriteResult(state.snapshot.version, state.latest_revision_id or 0, (), 0, 0, skipped=True)
    if mode == "append" and state.exists and not state.is_qbeast:
        raise InvalidOptionError(
            f"{path} is a Delta table without Qbeast metadata (no {LAST_REVISION_KEY}); convert it "
            "with qbeast.convert_to_qbeast(...) first, or write with mode='overwrite'",
            option="mode", value=mode, allowed=["overwrite"],
        )
    base = state.latest_revision if mode == "append" else None
    spec = index_spec(df.schema, columns_to_index, base)
    settings.check_write_settings(spark)
    if opts.non_finite == "null":
        df = _non_finite_as_null(df, spec)
    desired = cube_size or (base.desired_cube_size if base is not None
                            else settings.DEFAULT_CUBE_SIZE.read(spark))
    data, schema_string, schema_changed = _align_schema(df, state, mode, opts.merge_schema)
    declaration = None
    if opts.skipping_indexes is not None:
        declaration = encode_declaration(parse_declaration(
            opts.skipping_indexes, column_types(json.loads(schema_string))))

    table_dir = state.log.table_path  # a plain folder (the log resolved any file: URI) or a URI
    kept_rows = (state.snapshot.num_records or 0) if mode == "append" and state.exists else 0
    local = None
    if not in_tasks and _small_enough_for_the_driver(spark, data, first_write=base is None):
        # a small input: collected once and indexed on the driver (qbeast.spark.write.local)
        try:
            local = index_locally(access, data, base, spec, table_dir, path=path,
                                  cube_size=desired, column_stats=column_stats, table_id=path,
                                  index_status=state.index_status, rows_before=kept_rows,
                                  options=opts)
        except OSError as exc:  # full disk, read-only folder, ...
            raise _write_failed(path, state, exc) from exc
    if local is not None:
        revision, is_new_revision, count = local.revision, local.new_revision, local.rows
    else:
        phase = write_phase(path, "stats", spark)
        revision, is_new_revision, count = choose_revision(
            data, spec, base=base, cube_size=desired, column_stats=column_stats, table_id=path
        )
        phase.done(rows=count, revision=revision.revision_id, new_revision=is_new_revision)
    try:
        props.check_cancelled(f"write to {path}", "writing files")
    except BaseException:
        if local is not None:  # the files a driver-local append already wrote
            delete_new_files(state.log, [add_file(w, revision.revision_id) for w in local.written])
        raise

    if not access.remote:
        os.makedirs(table_dir, exist_ok=True)
    adds: list[AddFile] = []
    blocks_written = 0
    if local is not None and local.written:
        adds = [add_file(w, revision.revision_id) for w in local.written]
        blocks_written = sum(len(w.blocks) for w in local.written)
    elif local is None and count > 0:
        existing = None
        if not is_new_revision:
            existing = state.index_status(revision)
        with larger_arrow_batches(spark):
            plan = analyze(spark, data, revision, desired_cube_size=desired, count=count,
                           existing=existing, options=opts, path=path, table_rows=kept_rows + count)
            phase = write_phase(path, "write", spark)
            try:
                written = write_files(data, revision, plan, table_dir, access, rows=count)
            except Exception as exc:  # a Spark job failed: full disk, read-only folder, ...
                if isinstance(exc, QbeastError):
                    raise
                raise _write_failed(path, state, exc) from exc
        written = with_threshold_markers(written, plan, existing)
        adds = [add_file(w, revision.revision_id) for w in written]
        blocks_written = sum(len(w.blocks) for w in written)
        phase.done(files=len(adds), rows=sum(w.num_records for w in written),
                   blocks=blocks_written)

    schema_recorded = schema_changed or mode == "overwrite" or not state.exists
    if (mode == "append" and not adds and not schema_recorded and not is_new_revision
            and declaration is None and props.transaction is None):
        # nothing to add and nothing to change: an empty version would only lengthen the log
        # (a daily incremental run with no new rows); an app transaction is still recorded
        logger.info("write %s: no rows to append and no schema change: nothing committed, the "
                    "table stays at version %s", path, state.snapshot and state.snapshot.version)
        return WriteResult(None, revision.revision_id, (), 0, 0)
    phase = write_phase(path, "commit")
    planned = PlannedCommit(
        revision=revision, opens_revision=is_new_revision, adds=adds,
        schema_string=schema_string if schema_recorded else None,
        data_schema=json.loads(schema_string),
        read_version=state.snapshot.version if state.snapshot is not None else -1,
    )
    version, planned = _commit(state, planned, mode=mode, properties=props, declaration=declaration)
    adds = planned.adds
    rows_written = sum(a.num_records or 0 for a in adds)
    revision_id = (planned.revision or revision).revision_id  # a rebase may have re-tagged it
    phase.done(version=version, files=len(adds))
    logger.info(
        "write %s: finished version=%d revision=%d rows=%d files=%d blocks=%d elapsed=%.2fs",
        path, version, revision_id, rows_written, len(adds), blocks_written,
        time.perf_counter() - started,
    )
    return WriteResult(
        version, revision_id, tuple(a.path for a in adds), rows_written, blocks_written
    )


def _small_enough_for_the_driver(spark: Any, data: Any, *, first_write: bool) -> bool:
    """Whether to try indexing ``data`` on the driver (the collect gives up above
    ``spark.qbeast.write.localRows`` rows). An append always tries: its input is usually new
    rows. A first write (a new table, an overwrite, a dbt model's build) tries only when its
    input's size bound (:func:`qbeast.spark.write.local.estimated_bytes`: Spark's estimate, or
    the bytes its query reads) is at most ``spark.qbeast.write.localFirstWriteBytes``: a model
    over a large query then runs it once, in the Spark jobs, rather than once more for the
    collect. A scan of one source (every row it reads is output) whose size holds more rows than
    ``localRows`` at Spark's default row width (:func:`qbeast.spark.write.local.scan_row_width`)
    is not tried either: the collect would give up and the source be read twice (a parquet file
    of a million rows is far smaller than 64 MB: +0.4 s of 3 s here). On-disk rows are usually
    narrower than that width, so a scan of at most ``localRows`` rows is rarely turned away; a
    filter, an aggregate or a join of such a source may output few rows and is still tried."""
    if not first_write:
        return True
    limit = settings.LOCAL_FIRST_WRITE_BYTES.read(spark)
    if limit == 0:
        return False
    from qbeast.spark.write.local import estimated_bytes, scan_row_width

    estimate = estimated_bytes(data, limit)
    if estimate is None or estimate > limit:
        return False
    width = scan_row_width(data)
    return width is None or estimate <= width * settings.LOCAL_ROWS.read(spark)


def _write_failed(path: str, state: TableState, exc: Exception) -> WriteFailedError:
    """The error of a write whose data files could not be written."""
    version = state.snapshot.version if state.snapshot is not None else None
    return WriteFailedError(
        f"write {path}: writing the data files failed: {root_cause(exc)}; nothing was "
        + ("committed (the table does not exist yet)" if version is None else
           f"committed (the table is still at version {version})")
    )


def _commit(state: TableState, planned: PlannedCommit, *, mode: str,
            properties: CommitProperties, declaration: str | None = None) -> tuple[int, PlannedCommit]:
    """The write's Delta transaction; returns the committed version and the committed plan.

    An append that loses the race to a concurrent metadata change (another append opened a
    revision, a schema merge, the table was created meanwhile) is re-planned on the new snapshot
    and committed again (:func:`qbeast.rebase.commit_with_retries`); an overwrite replaces what
    it read and fails instead; ``properties.max_retries`` bounds the re-plans of an append. The
    caller's ``cancelled`` callback may stop the write right before the commit. When nothing could be committed, the new files are deleted: nothing
    references them (:func:`qbeast.commit.commit_files`). A ``declaration`` of skipping indexes
    is recorded in the table's configuration by the same commit.
    """
    adds = planned.adds
    return commit_with_retries(
        state.log.table_path, planned, state.qbeast,
        lambda plan, snapshot: properties.stamp(
            declare(_transaction(state.log, plan, snapshot, mode=mode), declaration)),
        what="write",
        operation="WRITE",
        parameters={"mode": mode.capitalize(), "partitionBy": "[]"},
        metrics={"numFiles": len(adds), "numOutputRows": sum(a.num_records or 0 for a in adds),
                 "numOutputBytes": sum(a.size for a in adds)},
        info=properties.info(),
        before_commit=lambda: properties.check_cancelled(f"write to {state.log.table_path}",
                                                         "the commit"),
        max_retries=0 if mode == "overwrite" else properties.max_retries,
    )


def _transaction(log: DeltaLog, planned: PlannedCommit, snapshot: QbeastSnapshot | None, *,
                 mode: str) -> Transaction:
    """The transaction of ``planned`` on top of ``snapshot`` (None: a new table), files aside.

    Metadata is written only when the plan records a schema or opens a revision: plain appends
    into the latest revision commit none, as qbeast-spark (metadata actions interrupt writers).
    """
    delta = snapshot.delta if snapshot is not None else None
    transaction = Transaction(log, delta)  # never "the latest": a new table must not exist yet
    if mode == "overwrite" and delta is not None:
        # an overwrite replaces everything it saw: a concurrent append must conflict
        transaction.mark_table_read()
        transaction.add_actions([add.remove() for add in delta.files.values()])
        configuration = without_qbeast_keys(delta.configuration)
        if planned.revision is not None and planned.opens_revision:
            configuration = updated_configuration(configuration, planned.revision)
        transaction.update_metadata(dataclasses.replace(
            delta.metadata, schema_string=planned.schema_string, configuration=configuration,
            partition_columns=[], format_options=dict(delta.metadata.format_options)))
    else:
        metadata = metadata_for(planned, snapshot,
                                lambda schema, config: Metadata.create(schema, [], config))
        if metadata is not None:
            transaction.update_metadata(metadata)
    return transaction


def _non_finite_as_null(df, spec):
    """``df`` with NaN and infinities of the indexed float/double columns replaced by null.

    The ``non_finite='null'`` option: a linear index has no place for those values, so instead of
    refusing the write they are stored as null (which the index places like any null).
    """
    from pyspark.sql import functions as F

    floating = {name for name, kind in spec.data_types.items()
                if kind in (QDataType.DOUBLE, QDataType.FLOAT)}
    if not floating:
        return df
    columns = []
    for field in df.schema.fields:
        col = F.col(quote_identifier(field.name))
        if field.name in floating:
            bad = F.isnan(col) | (F.abs(col) == F.lit(float("inf")))
            col = F.when(bad, F.lit(None).cast(field.dataType)).otherwise(col).alias(field.name)
        columns.append(col)
    return df.select(*columns)


# -- schema -------------------------------------------------------------------------------------


def _align_schema(df: Any, state: TableState, mode: str,
                  merge_schema: bool) -> tuple[Any, str, bool]:
    """The DataFrame in the table's column order, the schema to commit, and whether it changed.

    On append every column the data shares with the table must have the same type; columns the
    table lacks are an error unless ``merge_schema`` (then they are appended to the schema);
    table columns the data lacks are written as nulls.

    Column metadata under ``qbeast.`` is dropped from the data and from the schema committed:
    a projection copies column metadata from the table it read, so the engine keeps nothing
    there. A table whose schema still carries such keys (written by an older version) has its
    schema committed again without them ("changed").
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    df = _without_engine_metadata(df)
    incoming = StructType([StructField(f.name, f.dataType, True, f.metadata) for f in df.schema])
    if not state.exists or mode == "overwrite" or state.schema is None:
        return df, incoming.json(), True
    stale = bool(engine_metadata_columns(state.schema))
    table_schema = StructType.fromJson(without_engine_metadata(state.schema))
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
            f"the table's columns {list(table_fields)}",
            option="merge_schema", value=merge_schema, allowed=[True],
        )
    target = StructType(list(table_schema.fields) + new)
    columns = [
        F.col(quote_identifier(f.name)) if f.name in by_name else F.lit(None).cast(f.dataType).alias(f.name)
        for f in target.fields
    ]
    return df.select(*columns), target.json(), bool(new) or stale


def schema_extension(df: Any, path: str) -> Any:
    """No rows, the columns of ``df``: those the table at ``path`` has cast to the table's types,
    the new ones as they are. Appended with ``merge_schema`` before a row change that adds
    columns, it commits the new columns alone; an append of the data's own types would be
    refused where a shared column's type differs (a dbt snapshot's staging widens
    ``dbt_updated_at`` to a timestamp over a date column), which the change itself casts."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    table_fields = {f.name.lower(): f for f in StructType.fromJson(
        without_engine_metadata(QbeastSnapshot.load(path).delta.schema)).fields}
    columns = [F.col(quote_identifier(name)).cast(table_fields[name.lower()].dataType)
               .alias(table_fields[name.lower()].name)
               if name.lower() in table_fields else F.col(quote_identifier(name))
               for name in df.columns]
    return df.limit(0).select(*columns)


def _without_engine_metadata(df: Any) -> Any:
    """``df`` with the ``qbeast.*`` keys dropped from its columns' metadata (a no-op projection
    when there are none), so that neither the log nor the parquet footers keep them."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = df.schema.jsonValue()
    if not engine_metadata_columns(schema):
        return df
    clean = StructType.fromJson(without_engine_metadata(schema))
    return df.select(*[
        F.col(quote_identifier(f.name)).cast(f.dataType).alias(f.name, metadata=f.metadata)
        for f in clean.fields
    ])


__all__ = ["WriteResult", "write"]
