"""The ``qbeast`` Spark Python data source: ``spark.read.format("qbeast")`` and ``USING qbeast``.

After :func:`qbeast.spark.sql.sources.register`, a Qbeast table can be read by path or through a catalog table::

    spark.read.format("qbeast").option("sampleFraction", "0.1").load("/data/events")
    SELECT * FROM events WHERE user_id BETWEEN 10 AND 20

Options of path reads (case-insensitive): ``sampleFraction`` (0..1, deterministic sample by row
weight) and ``versionAsOf`` (time travel to a Delta version).

Why this source never prunes by filters and refuses options on catalog tables: Spark (4.1-4.3)
keeps the planned read of a Python data source (the pushed filters, the options and the
partitions it produced) on the table provider object, and every reference to the same table in
one query shares that object. With pruning, ``select count(*) from t union all select count(*)
from t where x < 20`` read the filtered scan's files for the unfiltered count too and returned
wrong counts without an error; a ``WITH ('sampleFraction' ...)`` option of one reference applied
to another reference of the same table. So the read planned here depends only on the table
location, and on the options of a path read (a DataFrame loaded by path has its own relation, so
the scans that share it have the same options). Samples in SQL are row filters
(``hash(indexed columns) < Weight(f)``, see :func:`qbeast.table.QbeastTable.sample_predicate`),
which Spark applies per scan; with the JVM read bridge they also prune files.

How the pieces run: ``schema()`` and ``partitions()`` run in a Python planner process; ``read()``
runs in executor Python workers, reading the planned parquet files with pyarrow and yielding Arrow
record batches. Python workers have no JVM, so the sample's row filter ``lo <= hash(indexed
columns) < hi`` uses :mod:`qbeast.index.row_weights`, a bit-exact port of Spark's ``hash()``.

Catalog tables: Spark does not hand a Python source the OPTIONS or LOCATION of a table created
``USING qbeast`` (the options arrive empty), only the table schema with its column metadata. Column
metadata cannot identify a table by itself: every projection copies it into the table it builds.
So :func:`qbeast.spark.catalog.create_table` stores, for tables this source reads, a marker on every column (key
``qbeast.catalogTable``) that names both the location and the Delta table id (``metaData.id``)
found there, and the reader believes it only when the table at that location still has that id
and the catalog's columns are exactly that table's columns; anything else is refused with an
error, never read. Catalog tables read by the JVM bridge carry no marker: Spark hands the bridge
their ``LOCATION``.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from qbeast.errors import InvalidOptionError
from qbeast.spark.arrow_columns import conform_column, spark_arrow_types

if TYPE_CHECKING:  # the log layer stays out of every Spark worker's imports (see test_layering)
    from qbeast.delta.scan import ScanSchema
    from qbeast.storage import Storage
    from qbeast.spark.read.planner import ReadPlan

logger = logging.getLogger("qbeast.spark.read.datasource")

SOURCE_NAME = "qbeast"
#: The name of this Python source in sessions where the JVM bridge is ``qbeast``.
PYTHON_SOURCE_NAME = "qbeast_python"
#: The column-metadata key of a catalog table's marker for this source (see the module doc).
CATALOG_MARKER_KEY = "qbeast.catalogTable"
OPTION_SAMPLE_FRACTION = "sampleFraction"
OPTION_VERSION_AS_OF = "versionAsOf"
#: The name of ``versionAsOf`` where Spark would take ``versionAsOf`` for its own time travel.
OPTION_QBEAST_VERSION_AS_OF = "qbeastVersionAsOf"
KNOWN_OPTIONS = (OPTION_SAMPLE_FRACTION, OPTION_VERSION_AS_OF, OPTION_QBEAST_VERSION_AS_OF, "path")
#: Options that change which rows a read returns: refused on catalog tables (see the module doc).
_PER_READ_OPTIONS = (OPTION_SAMPLE_FRACTION, OPTION_VERSION_AS_OF, OPTION_QBEAST_VERSION_AS_OF)
#: Largest bytes of parquet per Spark task (files are grouped up to this size) ...
PARTITION_TARGET_BYTES = 128 * 1024 * 1024
#: ... but reads are spread over at least this many tasks when there are enough files, so that
#: mid-sized tables still use several cores (the Python row filter of samples is single-threaded).
MIN_TASKS = 8
ARROW_BATCH_ROWS = 65536


# -- options ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadOptions:
    """The validated options of one read."""

    path: str
    sample_fraction: float | None
    version: int | None
    #: for a catalog table read through its marker: the Delta table id the marker names
    table_id: str | None = None


@dataclass(frozen=True)
class CatalogMarker:
    """What a catalog table read by this source keeps in its columns' metadata."""

    location: str
    table_id: str

    def to_json(self) -> str:
        return json.dumps({"location": self.location, "id": self.table_id}, sort_keys=True)

    @classmethod
    def from_json(cls, text: Any) -> CatalogMarker | None:
        try:
            obj = json.loads(str(text))
            return cls(str(obj["location"]), str(obj["id"]))
        except (ValueError, TypeError, KeyError):
            return None


def _option(options: Any, name: str) -> str | None:
    """Option lookup that does not depend on the mapping's case handling."""
    lowered = {str(k).lower(): v for k, v in dict(options).items()}
    value = lowered.get(name.lower())
    return None if value is None or str(value).strip() == "" else str(value).strip()


def catalog_marker(schema: Any) -> CatalogMarker | None:
    """The marker of a catalog table, when every column carries the same one (else None).

    :func:`qbeast.spark.catalog.create_table` marks every column; a schema where only some columns carry a marker
    (or different ones) was put together from other tables' columns, and names none of them.
    """
    fields = list(getattr(schema, "fields", None) or ())
    texts = {str((f.metadata or {}).get(CATALOG_MARKER_KEY)) for f in fields}
    if len(texts) != 1 or not fields or (fields[0].metadata or {}).get(CATALOG_MARKER_KEY) is None:
        return None
    return CatalogMarker.from_json(texts.pop())


def check_catalog_marker(options: ReadOptions, delta_metadata_id: str, table_schema: Mapping[str, Any],
                         catalog_schema: Any) -> None:
    """Refuse a catalog read whose marker does not describe the table it points at.

    The marker's table id must be the id of the table at its location (a folder rebuilt as
    another table, or a marker copied from elsewhere, is not believed), and the catalog's
    columns must be that table's columns, in order.
    """
    if options.table_id is None:
        return
    problem = None
    if options.table_id != delta_metadata_id:
        problem = (f"it names Delta table id {options.table_id}, but {options.path} now holds "
                   f"table id {delta_metadata_id}")
    else:
        ours = [str(f.name).lower() for f in getattr(catalog_schema, "fields", None) or ()]
        theirs = [str(f["name"]).lower() for f in table_schema.get("fields", [])]
        if ours != theirs:
            problem = (f"the catalog table's columns {ours} are not the columns {theirs} of the "
                       f"table at {options.path}")
    if problem:
        raise InvalidOptionError(
            f"the qbeast catalog table's location marker is not believed: {problem}. Re-create the "
            "catalog table with qbeast.create_table(spark, name, path) (in dbt: run its model or "
            "qbeast_register_table), or read the table by path"
        )


def parse_read_options(options: Any, schema: Any = None) -> ReadOptions:
    """Validate the data source options; errors name the option and what it accepts."""
    unknown = sorted(
        str(k) for k in dict(options) if str(k).lower() not in {o.lower() for o in KNOWN_OPTIONS}
    )
    if unknown:
        logger.warning("ignoring unknown qbeast read options %s (known: %s)", unknown, KNOWN_OPTIONS)
    path = _option(options, "path")
    table_id = None
    if path is None:
        marker = catalog_marker(schema)
        path, table_id = (marker.location, marker.table_id) if marker else (None, None)
        given = [name for name in _PER_READ_OPTIONS if _option(options, name) is not None]
        if path and given:
            raise InvalidOptionError(
                f"option {given[0]} is not supported on catalog table reads by the qbeast Python "
                "data source: Spark shares one planned read between every reference to a table in "
                "a query, so the option could apply to another reference. Sample with "
                "qbeast_sample() in dbt or a row filter `hash(<indexed columns>) < <weight>` "
                "(QbeastTable.sample_predicate), or read by path: "
                "spark.read.format('qbeast').option(...).load('<path>')"
            )
    if not path:
        raise InvalidOptionError(
            "the qbeast data source needs the table location: use "
            "spark.read.format('qbeast').load('<path>'), or re-create the catalog table with "
            "qbeast.create_table(spark, name, path) in this session (in dbt: run its model or "
            "qbeast_register_table); Spark does not pass a catalog table's LOCATION to the Python "
            "data source, and tables registered by older versions or by SQL carry none it can use"
        )
    fraction_text = _option(options, OPTION_SAMPLE_FRACTION)
    fraction: float | None = None
    if fraction_text is not None:
        try:
            fraction = float(fraction_text)
        except ValueError:
            fraction = -1.0
        if not 0.0 <= fraction <= 1.0:
            raise InvalidOptionError(
                f"option {OPTION_SAMPLE_FRACTION} must be a number between 0 and 1, got {fraction_text!r}"
            )
    version: int | None = None
    for name in (OPTION_VERSION_AS_OF, OPTION_QBEAST_VERSION_AS_OF):
        version_text = _option(options, name)
        if version_text is None:
            continue
        if not version_text.isdigit():
            raise InvalidOptionError(
                f"option {name} must be a non-negative integer Delta version, got {version_text!r}"
            )
        if version is not None and version != int(version_text):
            raise InvalidOptionError(
                f"options {OPTION_VERSION_AS_OF} and {OPTION_QBEAST_VERSION_AS_OF} disagree "
                f"({version} vs {version_text}); give one of them"
            )
        version = int(version_text)
    return ReadOptions(path, fraction, version, table_id)


# -- reading ----------------------------------------------------------------------------------


class FilesPartition(InputPartition):
    """One Spark task: the parquet files it reads and the sample's row filter.

    Everything ``read()`` needs travels here, because Spark pickles the reader for the executors
    before it asks for the partitions: a plan stored on the reader would not reach them.
    """

    def __init__(
        self,
        paths: Sequence[str],
        weight_range: tuple[int, int] | None,
        hash_columns: Sequence[str],
        table_schema_json: str,
        layout: ScanSchema | None = None,
        partition_values: dict[str, tuple[tuple[str, Any], ...]] | None = None,
        sizes: Mapping[str, int] | None = None,
        storage: Storage | None = None,
        read_sizes: Mapping[str, int] | None = None,
    ) -> None:
        super().__init__(tuple(paths))
        self.paths = list(paths)
        self.weight_range = weight_range
        self.hash_columns = tuple(hash_columns)
        self.table_schema_json = table_schema_json
        self.layout = layout
        self.partition_values = partition_values or {}
        #: bytes of each file, from the log (an object-store file of this size or more is read
        #: by ranges: its footer and the column chunks the task needs)
        self.sizes = dict(sizes or {})
        #: the store of the table's files when they are on an object store, built on the
        #: driver: the settings it resolved there (the session's ``fs.s3a.*``, shared files)
        #: travel with the task to executors that have none of them
        self.storage = storage
        #: the planned prefix of a sampled file (``PlannedFile.read_size``): only the row groups
        #: inside it are read, as Spark's reader does with the length the bridge reports
        self.read_sizes = dict(read_sizes or {})


def plan_partitions(plan: ReadPlan, storage: Storage | None = None) -> list[FilesPartition]:
    """The tasks that read ``plan``'s files (:func:`group_files`), each with the sample's weight
    range: a task returns exactly the plan's rows. ``storage`` opens files on an object store
    (default: one built here from the table's location)."""
    from qbeast.spark.file_access import is_remote

    _check_python_readable(plan.schema_json, plan.layout)
    if storage is None and is_remote(plan.table_path):
        from qbeast.storage import storage_for

        storage = storage_for(plan.table_path).for_tasks()
    values = {f.path: f.partition_values for f in plan.files if f.partition_values}
    sizes = {f.path: f.size for f in plan.files}
    prefixes = {f.path: f.read_size for f in plan.files if f.read_size is not None}
    return [
        FilesPartition(group, plan.weight_range, plan.hash_columns, plan.schema_json, plan.layout,
                       {p: values[p] for p in group if p in values}, {p: sizes[p] for p in group},
                       storage, {p: prefixes[p] for p in group if p in prefixes})
        for group in group_files(plan.files)
    ]


def group_files(files: Sequence[Any], target_bytes: int | None = None) -> list[list[str]]:
    """Pack planned files (``.path``, ``.size``) into tasks of at most about ``target_bytes``.

    By default the target is the table share that gives :data:`MIN_TASKS` tasks, capped at
    :data:`PARTITION_TARGET_BYTES`. Files are never split (a file is one parquet read).
    """
    if target_bytes is None:
        total = sum(f.size for f in files)
        target_bytes = min(PARTITION_TARGET_BYTES, max(1, -(-total // MIN_TASKS)))
    groups: list[list[str]] = []
    current: list[str] = []
    current_bytes = 0
    for f in sorted(files, key=lambda f: -f.size):
        if current and current_bytes + f.size > target_bytes:
            groups.append(current)
            current, current_bytes = [], 0
        current.append(f.path)
        current_bytes += f.size
    if current:
        groups.append(current)
    return groups


class QbeastDataSourceReader(DataSourceReader):
    """Reads the files of a sample (or of the whole table) with pyarrow.

    There is deliberately no ``pushFilters``: Spark shares the planned read between the scans of
    one table in a query (module doc), so a plan pruned for one scan's filters would be read by
    the others. Spark applies every filter to the rows this reader returns.
    """

    def __init__(self, options: ReadOptions, schema: Any) -> None:
        self.options = options
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        from qbeast.spark.read.planner import load_snapshot, plan_read

        snapshot = load_snapshot(self.options.path, self.options.version)
        check_catalog_marker(self.options, snapshot.delta.metadata.id, snapshot.delta.schema,
                             self.schema)
        plan = plan_read(snapshot, fraction=self.options.sample_fraction)
        partitions = plan_partitions(plan)
        logger.info(
            "qbeast source %s: %d of %d files in %d tasks", plan.table_path, len(plan.files),
            plan.total_files, len(partitions),
        )
        return list(partitions) or [FilesPartition([], plan.weight_range, plan.hash_columns,
                                                   plan.schema_json, plan.layout)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from qbeast.spark.arrow_columns import spark_arrow_schema

        assert isinstance(partition, FilesPartition)  # what partitions() returns
        yield from read_partition(partition, spark_arrow_schema(self.schema))


def read_partition(partition: FilesPartition, target: Any) -> Iterator[Any]:
    """The rows of one task's files as Arrow batches of the ``target`` schema (an Arrow schema
    whose fields are the table's columns by name, any case): the sample's weight range applied,
    partition values filled in, physical names of a column-mapped table resolved, columns a
    file lacks as nulls. Runs in Spark's Python workers (data source reads and Arrow tasks)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    weight_range = partition.weight_range
    hash_types = _hash_column_types(partition) if weight_range is not None else []
    started, rows = time.monotonic(), 0
    layout = partition.layout
    physical = layout.physical_names if layout is not None else {}
    for path in partition.paths:
        constants = dict(partition.partition_values.get(path, ()))
        parquet = pq.ParquetFile(_opened(path, partition.sizes.get(path), partition.storage),
                                 coerce_int96_timestamp_unit="us")
        by_lower = {name.lower(): name for name in parquet.schema_arrow.names}
        if layout is not None:  # display name -> the physical name in the file
            by_lower = {name.lower(): by_lower.get(physical[name].lower())
                        for name in physical if name not in constants}
            by_lower = {k: v for k, v in by_lower.items() if v is not None}
        hash_names = [by_lower.get(c.lower()) for c in partition.hash_columns]
        # the indexed columns are read even when the requested schema leaves them out
        wanted = [f.name.lower() for f in target] + [c.lower() for c in partition.hash_columns]
        present = list(dict.fromkeys(by_lower[c] for c in wanted if c in by_lower))
        groups = _groups_to_read(parquet, partition.read_sizes.get(path))
        for batch in parquet.iter_batches(batch_size=ARROW_BATCH_ROWS, columns=present,
                                          row_groups=groups):
            arrays = []
            for f in target:
                source = by_lower.get(f.name.lower())
                if f.name in constants:
                    arrays.append(pa.array([constants[f.name]] * batch.num_rows, f.type))
                elif source is None:
                    arrays.append(pa.nulls(batch.num_rows, f.type))
                else:
                    arrays.append(conform_column(batch.column(source), f.type))
            out = pa.RecordBatch.from_arrays(arrays, schema=target)
            if weight_range is not None:
                out = out.filter(_weight_mask(batch, hash_names, hash_types, weight_range))
            rows += out.num_rows
            if out.num_rows:
                yield out
    logger.debug("read %d rows in %.2fs", rows, time.monotonic() - started)


def _groups_to_read(parquet: Any, read_size: int | None) -> list[int] | None:
    """The row groups inside a sampled file's planned prefix (None: all of them). The rows past
    it are heavier than the sample keeps (the planner chose the prefix from the footer's band
    pieces), so this saves reads and never changes rows."""
    if read_size is None:
        return None
    from qbeast.core.band_row_groups import PieceLayout

    layout = PieceLayout.of(parquet.metadata)
    return None if layout is None else layout.groups_within(read_size)


def _opened(path: str, size: int | None = None, storage: Storage | None = None) -> Any:
    """What pyarrow opens for a planned file: its local path, or a file on an object store read
    through the storage layer (the task may run on any machine of the cluster): by ranges when
    it is large (:meth:`Storage.open_input`), else in one request."""
    from qbeast.spark.file_access import is_remote

    if not is_remote(path):
        return path
    if storage is None:
        from qbeast.storage import storage_for

        storage = storage_for(path)
    return storage.open_input(path, size)


def _check_python_readable(schema_json: str, layout: ScanSchema | None) -> None:
    """Refuse what this pyarrow reader cannot map onto the table's columns.

    Top-level physical names and partition values are handled; nested fields of a
    column-mapped table would need renaming inside structs, and variant columns may be shredded
    in the files: both are read correctly by ``QbeastTable.to_df`` (Spark's own parquet reader).
    """
    from qbeast.delta.errors import UnsupportedFeatureError

    if '"variant"' in schema_json:
        raise UnsupportedFeatureError(
            "the qbeast Python data source cannot read variant columns (Delta feature "
            "variantType; the files may hold shredded variants); read the table with "
            "QbeastTable.to_df() instead"
        )
    if layout is None or layout.mapping_mode == "none":
        return
    nested = [name for name, _, t in layout.data_columns() if isinstance(t, dict)]
    if nested:
        raise UnsupportedFeatureError(
            f"the qbeast Python data source cannot read the nested column(s) {nested} of a "
            "column-mapped table (Delta feature columnMapping); read the table with "
            "QbeastTable.to_df() instead"
        )


def _hash_column_types(partition: FilesPartition) -> list[Any]:
    """Arrow types of the indexed columns as Spark types them (the hash depends on the type)."""
    return spark_arrow_types(partition.table_schema_json, partition.hash_columns)


def _weight_mask(
    batch: Any, hash_names: list[str | None], hash_types: list[Any], weight_range: tuple[int, int]
) -> Any:
    """Rows of ``batch`` whose weight (Spark's hash of the indexed columns) is in the range."""
    import pyarrow as pa

    from qbeast.index.row_weights import spark_hash

    columns = [
        pa.nulls(batch.num_rows, arrow_type) if source is None
        else conform_column(batch.column(source), arrow_type)
        for source, arrow_type in zip(hash_names, hash_types)
    ]
    weights = spark_hash(columns)
    lo, hi = weight_range
    return pa.array((weights >= lo) & (weights < hi))


class QbeastDataSource(DataSource):
    """``format("qbeast")``: Qbeast tables (and plain Delta tables) read with index pruning."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> Any:
        """The table schema from the Delta log (for reads by path)."""
        from pyspark.sql.types import StructType

        from qbeast.spark.read.planner import load_snapshot

        from qbeast.core.columns import without_engine_metadata

        options = parse_read_options(self.options)
        snapshot = load_snapshot(options.path, options.version)
        return StructType.fromJson(without_engine_metadata(snapshot.delta.schema))

    def reader(self, schema: Any) -> DataSourceReader:
        return QbeastDataSourceReader(parse_read_options(self.options, schema), schema)


class QbeastPythonSource(QbeastDataSource):
    """The Python source under a second name, for sessions where the JVM bridge holds ``qbeast``.

    Reading one table through both implementations in one session (to compare them) needs two
    names: ``spark.read.format("qbeast_python")``, or catalog tables created with
    ``create_table(..., source="qbeast_python")``.
    """

    @classmethod
    def name(cls) -> str:
        return PYTHON_SOURCE_NAME


def register_python_source(spark: Any, name: str = SOURCE_NAME) -> None:
    """Register this Python data source in ``spark``'s session as ``name``.

    ``name`` is ``qbeast`` (the fallback, where the bridge cannot serve the session) or
    ``qbeast_python`` (beside the bridge, for comparisons). Registrations are per session: a
    session made with ``newSession()`` needs its own call. Spark checks for a name clash by
    looking the name up in the *active* session, so registering in a second session while the
    first is active fails with ``DATA_SOURCE_ALREADY_EXISTS``; ``spark`` is made the active
    session for the duration of the call to avoid that.
    """
    sources = {SOURCE_NAME: QbeastDataSource, PYTHON_SOURCE_NAME: QbeastPythonSource}
    if name not in sources:
        raise InvalidOptionError(f"python source name {name!r} is unknown; allowed: {', '.join(sources)}")
    source = sources[name]
    jvm_session = getattr(spark, "_jsparkSession", None)  # absent on Spark Connect
    if jvm_session is None:
        spark.dataSource.register(source)
        return
    session_class = spark._jvm.org.apache.spark.sql.SparkSession
    previous = session_class.getActiveSession()
    session_class.setActiveSession(jvm_session)
    try:
        spark.dataSource.register(source)
    finally:
        if previous.isDefined():
            session_class.setActiveSession(previous.get())
        else:
            session_class.clearActiveSession()


__all__ = [
    "QbeastDataSource",
    "QbeastDataSourceReader",
    "CatalogMarker",
    "ReadOptions",
    "catalog_marker",
    "check_catalog_marker",
    "parse_read_options",
    "register_python_source",
]
