"""The read planner that Spark SQL asks through the JVM read bridge (``jvm/``).

The bridge's Java side knows nothing of the Qbeast format: its ``FileIndex`` asks this module
which files a scan needs, and its optimizer rule asks what a sample's row filter is. Everything
here is the engine's own read planning (:func:`qbeast.spark.read.planner.plan_read`: snapshot, query
spaces, OTree walk, Delta stats) fed with what Spark hands over:

* ``describe``: which table (location and version) a reference names, from the data source
  options (``path`` — a catalog table's ``LOCATION`` or the path of a read —,
  ``versionAsOf`` / ``qbeastVersionAsOf``, ``sampleFraction``), and its schema;
* ``list_files``: the files of one scan, from its data filters as SQL text
  (``Expression.sql()``: ``(x >= 100.0D)``, ``(zone IN (1, 2))``, ``(hash(a, b) < -1717986918)``).
  Filters are parsed with the engine's predicate parser; a weight filter on the indexed columns
  (a sample) prunes by weight; anything not understood is simply not used for pruning. Spark
  applies every filter to the rows afterwards, so results never depend on the planning;
* ``sample_filter``: the row filter of a sample between two fractions (``TABLESAMPLE``).

The module is plain Python (no Py4J): :mod:`qbeast.spark.sql.python_planner` wraps it for the JVM and turns
its errors into messages. Snapshots are cached per (location, version, stamp of that version's
log file): a committed version never changes, the stamp tells a table rebuilt in the same folder
(which starts over at version 0) from the one before it, and the latest version is looked up on
every call, so appends are seen at once.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qbeast.core import expressions as ex
from qbeast.core.columns import without_engine_metadata
from qbeast.core.sql import row_weight_sql
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT, weight_from_fraction
from qbeast.delta.errors import UnsupportedFeatureError
from qbeast.delta.log import DeltaLog
from qbeast.delta.scan import scan_schema
from qbeast.errors import InvalidOptionError
from qbeast.snapshot import QbeastSnapshot
from qbeast.spark.read.datasource import (
    KNOWN_OPTIONS,
    PYTHON_SOURCE_NAME,
    parse_read_options,
)
from qbeast.spark.read.sql_parser import parse_sql_predicate, weight_bounds
from qbeast.spark.read.planner import (
    PlannedFile,
    plan_read,
    sample_columns,
    sample_filter_sql,
    weight_filter_sql,
)

logger = logging.getLogger("qbeast.spark.sql.sql_planner")

#: Snapshots kept in memory (a few tables, a few versions each).
SNAPSHOT_CACHE_SIZE = 16
#: Scans remembered for :func:`recent_scans` (what the bridge gave Spark, newest last).
RECENT_SCANS = 64


@dataclass(frozen=True)
class TableRef:
    """One table reference: a location and a version (None: the latest at every scan)."""

    location: str
    version: int | None

    def to_json(self) -> dict[str, Any]:
        return {"location": self.location, "version": self.version}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> TableRef:
        version = obj.get("version")
        return cls(str(obj["location"]), None if version is None else int(version))

    def describe(self) -> str:
        return f"{self.location} v{'latest' if self.version is None else self.version}"


@dataclass(frozen=True)
class Described:
    """What ``describe`` tells the JVM about a reference."""

    table: TableRef
    schema: dict[str, Any]
    sample_filter: str | None


@dataclass(frozen=True)
class PushedFilters:
    """A scan's data filters as the planner uses them."""

    predicate: ex.Expression
    weight_range: tuple[int, int] | None
    unused: tuple[str, ...]


@dataclass(frozen=True)
class ScanRecord:
    """One planned scan: the table, the filters Spark passed and the files given back."""

    table: TableRef
    version: int
    filters: tuple[str, ...]
    paths: tuple[str, ...]
    weight_range: tuple[int, int] | None
    predicate: str
    #: 1 for the first scan of the process, then one more per scan (see :func:`scan_count`)
    sequence: int = 0


_cache_lock = threading.Lock()
_snapshots: OrderedDict[tuple[str, int, tuple[int, int]], QbeastSnapshot] = OrderedDict()
_scans: deque[ScanRecord] = deque(maxlen=RECENT_SCANS)
_scan_count = 0


# -- snapshots --------------------------------------------------------------------------------


def snapshot(table: TableRef) -> QbeastSnapshot:
    """The snapshot a reference reads now (cached per location, version and version stamp)."""
    log = DeltaLog.for_path(table.location)
    version = table.version
    if version is None:
        version = log.latest_version()
    key = (table.location, version, log.version_stamp(version))
    with _cache_lock:
        cached = _snapshots.get(key)
        if cached is not None:
            _snapshots.move_to_end(key)
            return cached
    loaded = QbeastSnapshot.load(table.location, version=version)
    with _cache_lock:
        _snapshots[key] = loaded
        while len(_snapshots) > SNAPSHOT_CACHE_SIZE:
            _snapshots.popitem(last=False)
    return loaded


def clear_cache() -> None:
    """Forget cached snapshots (they are immutable; this only frees memory)."""
    with _cache_lock:
        _snapshots.clear()


# -- describe -----------------------------------------------------------------------------------


def describe(options: Mapping[str, str], catalog_schema: Mapping[str, Any] | None) -> Described:
    """Resolve a read's table, version, schema and sample from its options and catalog schema.

    The location is the ``path`` option and nothing else: Spark passes a catalog table's
    ``LOCATION`` there, and a read by path its path. Column metadata never names the table: a
    projection copies it from the table it read into the next one, so a table built from
    another would read as that other table. The catalog schema only lends its columns' comments.
    """
    known = {name.lower() for name in KNOWN_OPTIONS}  # a catalog's storage properties are not ours
    options = {str(k): str(v) for k, v in options.items() if str(k).lower() in known}
    if not any(k.lower() == "path" for k in options):
        raise InvalidOptionError(
            "a qbeast table read needs the table's location: read by path "
            "(spark.read.format('qbeast').load('<path>')) or create the catalog table with a "
            "LOCATION (qbeast.create_table(spark, name, path), or CREATE TABLE ... USING qbeast "
            "LOCATION '<path>')"
        )
    read = parse_read_options(options)
    table = TableRef(DeltaLog.for_path(read.path).table_path, read.version)  # absolute, no file:
    snap = snapshot(table)
    _check_files_read_as_they_are(table, snap)
    schema = _with_catalog_metadata(snap.delta.schema, catalog_schema)
    sample = None
    if read.sample_fraction is not None:
        sample = sample_filter(table, 0.0, read.sample_fraction, required=True)
    return Described(table, schema, sample)


def _check_files_read_as_they_are(table: TableRef, snap: QbeastSnapshot) -> None:
    """Refuse a table whose rows are not the columns of its data files as they are.

    Spark's parquet reader reads the files the planner lists with the table's schema. Partition
    values (kept in the log, not the files) and column mapping (files that name columns by
    physical names) would come out as nulls or type errors, so such plain Delta tables are
    refused with the readers that handle them. Qbeast tables never have either.
    """
    layout = scan_schema(snap.delta)  # also refuses what no reader of ours can read
    if layout.is_plain:
        return
    what = (f"partition columns {list(layout.partition_columns)}" if layout.partition_columns
            else f"column mapping (mode {layout.mapping_mode!r})")
    raise UnsupportedFeatureError(
        f"{table.location}: the SQL read bridge reads data files as they are, and this Delta table "
        f"has {what}; read it with spark.read.format('{PYTHON_SOURCE_NAME}'), a catalog table "
        f"created with source='{PYTHON_SOURCE_NAME}', or qbeast.QbeastTable.for_path(spark, "
        "path).to_df()"
    )


def _with_catalog_metadata(schema: Mapping[str, Any], catalog: Mapping[str, Any] | None) -> dict[str, Any]:
    """The table's schema with the column metadata the catalog keeps (``persist_docs`` comments).

    ``qbeast.*`` keys are dropped from both sides: older versions stored a table location
    there, and whatever reads this relation would copy it into the tables it builds.
    """
    fields = [dict(f) for f in without_engine_metadata(schema).get("fields", [])]
    if catalog:
        catalog = without_engine_metadata(catalog)
        by_name = {str(f["name"]).lower(): f for f in catalog.get("fields", [])}
        for field in fields:
            extra = by_name.get(str(field["name"]).lower(), {}).get("metadata") or {}
            field["metadata"] = {**extra, **(field.get("metadata") or {})}
    return {**schema, "fields": fields}


# -- samples ------------------------------------------------------------------------------------


def sample_filter(table: TableRef, lower: float, upper: float, *, required: bool = False) -> str | None:
    """SQL row filter of the sample ``[lower, upper)`` of the table (fractions of the weights).

    ``lower = 0`` is the engine's ``sample(upper)`` exactly (``true`` when ``upper >= 1``). A
    table without Qbeast metadata has no row weights: None, or the engine's error when
    ``required``.
    """
    snap = snapshot(table)
    if not snap.is_qbeast and not required:
        return None
    columns = sample_columns(snap)
    for name, value in (("lower", lower), ("upper", upper)):
        if not 0.0 <= float(value) <= 1.0:
            raise InvalidOptionError(f"sample {name} fraction must be in [0, 1], got {value!r}")
    if lower <= 0.0:
        return sample_filter_sql(columns, float(upper))
    lo = weight_from_fraction(float(lower))
    if upper >= 1.0:
        return f"{row_weight_sql(columns)} >= {lo}"
    return weight_filter_sql(columns, (lo, weight_from_fraction(float(upper))))


# -- scans --------------------------------------------------------------------------------------


def pushed_filters(
    filters: Sequence[str], schema: Any, hash_columns: Sequence[str], time_zone: str
) -> PushedFilters:
    """A scan's conjuncts as one pruning predicate plus the weight range of a sample filter."""
    parts: list[ex.Expression] = []
    unused: list[str] = []
    lo, hi = MIN_WEIGHT, None
    for text in filters:
        bounds = weight_bounds(text, hash_columns)
        if bounds is not None:
            lo = max(lo, bounds[0])
            hi = bounds[1] if hi is None else min(hi, bounds[1])
            continue
        predicate = parse_sql_predicate(text, schema, time_zone=time_zone)
        if isinstance(predicate, ex.AlwaysTrue):
            unused.append(text)
        else:
            parts.append(predicate)
    combined = parts[0] if len(parts) == 1 else ex.And(*parts) if parts else ex.AlwaysTrue()
    weight_range = None if hi is None and lo == MIN_WEIGHT else (lo, MAX_WEIGHT + 1 if hi is None else hi)
    return PushedFilters(combined, weight_range, tuple(unused))


def list_files(table: TableRef, filters: Sequence[str], time_zone: str = "UTC") -> list[PlannedFile]:
    """The files a scan with these data filters needs (never fewer than its rows need)."""
    from pyspark.sql.types import StructType

    started = time.monotonic()
    snap = snapshot(table)
    schema = StructType.fromJson(snap.delta.schema)
    hash_columns = sample_columns(snap) if snap.is_qbeast else ()
    pushed = pushed_filters(filters, schema, hash_columns, time_zone)
    plan = plan_read(snap, predicate=pushed.predicate, weight_range=pushed.weight_range)
    global _scan_count
    with _cache_lock:
        _scan_count += 1
        _scans.append(ScanRecord(table, plan.version, tuple(filters), tuple(plan.paths),
                                 pushed.weight_range, repr(pushed.predicate), _scan_count))
    logger.debug(  # the reader logs the plan's size at INFO; this adds what pruned it
        "sql scan of %s v%d: %d of %d files (%d of %d bytes), pruning by %s%s, %.3fs",
        table.location, plan.version, len(plan.files), plan.total_files, plan.selected_bytes,
        plan.total_bytes, pushed.predicate,
        "" if pushed.weight_range is None else f" and weights {pushed.weight_range}",
        time.monotonic() - started,
    )
    if pushed.unused:
        logger.debug("filters not used for pruning (still applied to rows): %s", pushed.unused)
    return list(plan.files)


def table_size(table: TableRef) -> int:
    """Bytes of the table's active files (Spark's size estimate for join planning)."""
    return int(snapshot(table).delta.size_bytes)


def recent_scans(since: int = 0) -> list[ScanRecord]:
    """The latest scans the bridge planned in this process, oldest first (for checks and logs).

    ``since``: only scans after that :func:`scan_count` (the list keeps the last
    ``RECENT_SCANS``, so its length says nothing about what was added once it is full).
    """
    with _cache_lock:
        return [record for record in _scans if record.sequence > since]


def scan_count() -> int:
    """How many scans the bridge planned in this process so far."""
    return _scan_count


__all__ = [
    "Described",
    "PushedFilters",
    "ScanRecord",
    "TableRef",
    "clear_cache",
    "describe",
    "list_files",
    "pushed_filters",
    "recent_scans",
    "scan_count",
    "sample_filter",
    "snapshot",
    "table_size",
]
