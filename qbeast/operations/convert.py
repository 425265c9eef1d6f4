"""``convert_to_qbeast``: make a parquet folder or a Delta table a Qbeast table without rewriting data.

Following qbeast-spark's ConvertToQbeastCommand (FORMAT §9), conversion is metadata only:

* a **Delta table** gets one ``SET TBLPROPERTIES`` commit that merges ``qbeast.lastRevisionID = 0``
  and ``qbeast.revision.0`` (the staging revision: the indexed columns with empty transformers)
  into its configuration. Its files keep their (absent) tags, so they are staging files.
* a **parquet folder** first needs a Delta log. Here it is created by one ``CONVERT`` commit that
  holds the protocol, the metadata (the schema Spark infers, with the Qbeast properties already
  in the configuration) and one AddFile per parquet file, with Delta statistics read from the
  parquet footers — a single atomic commit, so a failed conversion leaves no half-made table.

Partitioned sources are refused (a Qbeast table is never partitioned) and a table that already has
Qbeast metadata is left alone. After conversion, ``qbeast.write`` appends create revision 1 with
real transformers, plain Delta appends add more staging files, and ``optimize(revision_id=0)``
indexes the staging files.
"""
from __future__ import annotations
from qbeast.delta.outcome import reports_commit_outcome

import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from qbeast.commit import CommitProperties
from qbeast.commit import commit_properties as commit_properties_of
from qbeast.core.columns import check_each_once, resolve_name, schema_fields, type_name
from qbeast.core.revision import LAST_REVISION_KEY, revision_key, staging_revision
from qbeast.core.transformers import parse_columns_to_index
from qbeast.core.types import qdatatype_from_spark_name
from qbeast.delta.actions import AddFile, Metadata, encode_relative_path, now_ms
from qbeast.delta.errors import MetadataChangedError, NotADeltaTableError
from qbeast.delta.log import LOG_DIR, DeltaLog
from qbeast.delta.stats import footer_stats
from qbeast.errors import InvalidOptionError
from qbeast.operations.common import OperationResult, check_optional_int, check_path
from qbeast.progress import Phase
from qbeast.spark import settings
from qbeast.spark.file_access import FileAccess
from qbeast.spark.read.files import infer_parquet_schema
from qbeast.storage import FileStat, Storage
from qbeast.storage.parquet_footer import read_footer

logger = logging.getLogger("qbeast.operations.convert")

SOURCE_FORMATS = ("parquet", "delta")


class PartitionedTableError(InvalidOptionError):
    """The source table is partitioned; Qbeast tables cannot be."""


@dataclass(frozen=True)
class ConvertResult(OperationResult):
    """What ``convert_to_qbeast`` did: the source kind, the commit and the staging revision."""

    path: str
    source_format: str
    converted: bool
    version: int | None
    file_count: int
    columns: tuple[str, ...]
    cube_size: int | None
    message: str

    def summary_lines(self) -> list[str]:
        return [self.message]


@reports_commit_outcome(lambda spark, path, *args, **kwargs: path)
def convert_to_qbeast(
    spark,
    path: str,
    columns_to_index: str | Sequence[str],
    cube_size: int | None = None,
    source_format: str | None = None,
    commit_properties: CommitProperties | None = None,
) -> ConvertResult:
    """Turn the parquet folder or Delta table at ``path`` into a Qbeast table (no data rewritten).

    ``columns_to_index`` are plain column names (list or comma-separated string): the staging
    revision records only names; the transformer of each column is chosen by the first indexed
    write. ``cube_size`` defaults to ``spark.qbeast.index.defaultCubeSize`` (5,000,000).
    ``source_format`` is ``"parquet"``, ``"delta"`` or None to detect it from the ``_delta_log``
    folder. ``commit_properties`` (:class:`qbeast.CommitProperties`): user metadata and the
    application transaction recorded by the commit, the re-plans allowed when a Delta source's
    metadata changes meanwhile, and a ``cancelled`` callback checked right before the commit. A
    convert is idempotent by itself (a Qbeast table has nothing to convert).
    """
    check_path(path)
    props = commit_properties_of(commit_properties)
    fmt = _check_source_format(source_format)
    columns = _check_columns(columns_to_index)
    size = check_optional_int(cube_size, "cube_size", 1)
    if size is None:
        size = settings.DEFAULT_CUBE_SIZE.read(spark)
    log = DeltaLog.for_path(path)
    has_log = log.table_exists()
    if fmt == "delta" and not has_log:
        raise NotADeltaTableError(
            f"source_format='delta' but {log.table_path} has no Delta log ({LOG_DIR}); use "
            "source_format='parquet' (or None to detect it) for a folder of parquet files"
        )
    if has_log:
        if fmt == "parquet":
            logger.info("convert %s: the folder already holds a Delta log; converting it as Delta",
                        log.table_path)
        return _convert_delta(log, path, columns, size, props)
    return _convert_parquet(spark, log, path, columns, size, props)


# -- arguments ----------------------------------------------------------------------------------


def _check_source_format(source_format: object) -> str | None:
    if source_format is None:
        return None
    if not isinstance(source_format, str) or source_format.lower() not in SOURCE_FORMATS:
        raise InvalidOptionError(
            f"source_format must be one of {list(SOURCE_FORMATS)} or None (detect), got {source_format!r}"
        )
    return source_format.lower()


def _check_columns(columns_to_index: object) -> list[str]:
    if isinstance(columns_to_index, str) or (
        isinstance(columns_to_index, Sequence)
        and columns_to_index
        and all(isinstance(c, str) for c in columns_to_index)
    ):
        specs = parse_columns_to_index(columns_to_index)
    else:
        raise InvalidOptionError(
            "columns_to_index must be a non-empty list of column names or a comma-separated "
            f"string, got {columns_to_index!r}"
        )
    typed = [f"{s.name}:{s.type_name}" for s in specs if s.type_name is not None]
    if typed:
        raise InvalidOptionError(
            f"convert_to_qbeast takes plain column names, got typed specs {typed}; the staging "
            "revision stores only names and the first indexed write chooses each transformer "
            "(pass the types to that write's columns_to_index)"
        )
    names = [s.name for s in specs]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidOptionError(f"columns_to_index lists {duplicated} more than once")
    return names


def _schema_columns(schema_json: dict, columns: list[str], where: str) -> list[str]:
    """The indexed columns as the table spells them (names match case-insensitively, as for
    ``qbeast.write``); each must exist and have a type the index supports."""
    fields = schema_fields(schema_json)
    available = list(fields)
    resolved = [resolve_name(available, c) for c in columns]
    missing = [c for c, r in zip(columns, resolved) if r not in fields]
    if missing:
        raise InvalidOptionError(
            f"columns_to_index {missing} are not columns of {where}; available columns: {available}",
            option="columns_to_index", value=missing, allowed=available,
        )
    check_each_once(resolved, columns)
    for column in resolved:
        kind = fields[column]["type"]
        qdatatype_from_spark_name(kind if isinstance(kind, str) else type_name(kind), column)
    return resolved


def _qbeast_properties(table_id: str, columns: list[str], cube_size: int) -> dict[str, str]:
    staging = staging_revision(table_id, columns, cube_size, now_ms())
    return {LAST_REVISION_KEY: "0", revision_key(0): staging.to_json()}


# -- Delta source -------------------------------------------------------------------------------


def _convert_delta(log: DeltaLog, table_id: str, columns: list[str], cube_size: int,
                   props: CommitProperties) -> ConvertResult:
    """The metadata-only commit; re-run on a fresh snapshot if another commit changed the
    metadata first (a concurrent convert makes this one a no-op), ``props.max_retries`` times."""
    retries = props.max_retries
    for attempt in range(retries + 1):
        try:
            return _convert_delta_once(log, table_id, columns, cube_size, props)
        except MetadataChangedError as exc:
            if attempt == retries:
                raise
            logger.warning("convert %s: lost a race to a metadata change (%s); retrying on the "
                           "new snapshot (%d of %d)", log.table_path, exc, attempt + 1, retries)
    raise AssertionError("unreachable")


def _convert_delta_once(log: DeltaLog, table_id: str, columns: list[str],
                        cube_size: int, props: CommitProperties) -> ConvertResult:
    snapshot = log.snapshot()
    configuration = snapshot.configuration
    if LAST_REVISION_KEY in configuration:
        message = (
            f"{log.table_path} is already a Qbeast table (latest revision "
            f"{configuration[LAST_REVISION_KEY]}); nothing to convert"
        )
        logger.info("convert %s: %s", log.table_path, message)
        return ConvertResult(log.table_path, "qbeast", False, None, snapshot.num_files,
                             tuple(columns), None, message)
    if snapshot.partition_columns:
        raise PartitionedTableError(
            f"{log.table_path} is a Delta table partitioned by {snapshot.partition_columns}; "
            "partitioned tables cannot be converted to Qbeast (rewrite it unpartitioned with "
            "qbeast.write instead)"
        )
    snapshot.check_writable()
    columns = _schema_columns(snapshot.schema, columns, f"the Delta table {log.table_path}")
    phase = Phase(logger, "convert", log.table_path, "metadata commit")
    properties = _qbeast_properties(table_id, columns, cube_size)
    metadata = dataclasses.replace(snapshot.metadata, configuration={**configuration, **properties})
    transaction = props.stamp(log.start_transaction(snapshot).update_metadata(metadata))
    props.check_cancelled(f"convert of {log.table_path}", "the commit")
    version = transaction.commit("SET TBLPROPERTIES", {"properties": properties}, info=props.info())
    phase.done(version=version, files=snapshot.num_files)
    message = (
        f"converted the Delta table {log.table_path} to Qbeast at version {version}: "
        f"{snapshot.num_files} staging file(s), indexed columns {columns}, cube size {cube_size}"
    )
    return ConvertResult(log.table_path, "delta", True, version, snapshot.num_files,
                         tuple(columns), cube_size, message)


# -- parquet source -----------------------------------------------------------------------------


def _convert_parquet(spark, log: DeltaLog, table_id: str, columns: list[str],
                     cube_size: int, props: CommitProperties) -> ConvertResult:
    root = log.table_path  # a plain absolute path (file: URIs resolved), or an object-store URI
    storage = log.storage
    try:
        is_folder = storage.stat(root).is_dir
    except FileNotFoundError:
        is_folder = False
    if not is_folder:
        raise InvalidOptionError(f"{log.table_path} is not a folder: nothing to convert")
    access = FileAccess.decide(spark, root)  # once: the schema is read with Spark's parquet reader
    access.check_native()
    phase = Phase(logger, "convert", log.table_path, "listing parquet files")
    files = list_parquet_files(storage, root)
    phase.done(files=len(files))
    phase = Phase(logger, "convert", log.table_path, "schema and footer statistics")
    schema_json = infer_parquet_schema(access, [f.path for f in files], [f.size for f in files])
    columns = _schema_columns(schema_json, columns, f"the parquet files in {log.table_path}")
    adds = [parquet_add_file(storage, root, f) for f in files]
    phase.done(files=len(adds), rows=sum(a.num_records or 0 for a in adds))
    phase = Phase(logger, "convert", log.table_path, "commit")
    metadata = Metadata.create(json.dumps(schema_json), [], _qbeast_properties(table_id, columns, cube_size))
    transaction = props.stamp(log.start_transaction(None).update_metadata(metadata).add_actions(adds))
    props.check_cancelled(f"convert of {log.table_path}", "the commit")
    version = transaction.commit(
        "CONVERT",
        {"numFiles": len(adds), "partitionedBy": "[]", "collectStats": True, "sourceFormat": "parquet"},
        metrics={"numConvertedFiles": len(adds)},
        info=props.info(),
    )
    phase.done(version=version)
    message = (
        f"converted the parquet folder {log.table_path} to Qbeast at version {version}: "
        f"{len(adds)} staging file(s), indexed columns {columns}, cube size {cube_size}"
    )
    return ConvertResult(log.table_path, "parquet", True, version, len(adds), tuple(columns),
                         cube_size, message)


def list_parquet_files(storage: Storage, root: str) -> list[FileStat]:
    """Data files of a flat parquet folder, sorted by name (one listing of the folder).

    Hidden names (``_SUCCESS``, ``.crc`` files, ``_delta_log``) are skipped like Spark does.
    Sub-folders holding data mean a partitioned (``key=value``) or nested layout; both are refused.
    """
    files: list[FileStat] = []
    for entry in sorted(storage.list_dir(root), key=lambda e: e.name):
        if entry.name.startswith(("_", ".")):
            continue
        if entry.is_dir:
            if "=" in entry.name:
                raise PartitionedTableError(
                    f"{root} holds the hive-style partition folder {entry.name!r}; partitioned "
                    "parquet tables cannot be converted to Qbeast (rewrite the data "
                    "unpartitioned with qbeast.write instead)"
                )
            raise InvalidOptionError(
                f"{root} holds the sub-folder {entry.name!r}; only a flat folder of parquet files "
                "can be converted"
            )
        files.append(entry)
    if not files:
        raise InvalidOptionError(f"{root} holds no parquet files to convert")
    return files


def parquet_add_file(storage: Storage, root: str, file: FileStat) -> AddFile:
    """The AddFile of one existing parquet file, with Delta statistics from its footer (read
    with ranged requests on an object store)."""
    try:
        footer = read_footer(storage, file.path, file.size)
    except (OSError, ValueError, pa.ArrowInvalid) as exc:
        raise InvalidOptionError(f"{file.path} is not a readable parquet file: {exc}") from exc
    return AddFile(
        encode_relative_path(file.name), {}, file.size, file.mtime_ms, True, footer_stats(footer),
    )
