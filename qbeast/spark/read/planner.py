"""Read planning: a table snapshot + a sample fraction + a predicate -> the files to open.

Every reader shares this plan: the DataFrame API (``QbeastTable.to_df`` / ``sample``), whose
:mod:`qbeast.spark.read.dataframe` hands the selected files to Spark's native parquet reader and
filters rows with ``F.hash`` in the JVM; the SQL planner the JVM read bridge asks; and the
``qbeast`` Python data source, which reads the same files with pyarrow. The plan is plain data
and this module never imports pyspark: planning runs in the Python planner process and in the
table API, neither of which needs Spark to decide which files a read opens.

Which files (FORMAT §7.2, §7.4):

* every staging file (revision 0: no tags, or ``revision`` "0") - it has no index, only stats;
* for every revision > 0, the files holding blocks of the cubes the OTree walk selects for the
  query spaces of the predicate and the weight range of the sample;
* then Delta min/max stats drop files that cannot hold a matching row, on any column.

Revisions whose files carry pre-0.6 tags (or revision tags without blocks) are read as plain
Delta until upgraded: all their files, stats pruning only. Tables without Qbeast metadata are
plain Delta tables: stats pruning only, and sampling is refused (there is no row weight).

The sampled rows are exactly ``Weight(lo) <= hash(indexed columns of the latest revision) <
Weight(hi)``: the file choice only saves I/O, the row filter decides.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import compress, repeat
from typing import Any
from weakref import WeakKeyDictionary

from qbeast.core import expressions as ex
from qbeast.core.band_row_groups import PieceLayout
from qbeast.core.blocks import TagFormat
from qbeast.core.columns import column_types, without_engine_metadata
from qbeast.core.index_status import IndexStatus
from qbeast.core.query_space import query_spaces
from qbeast.core.selection import select_blocks, select_cubes
from qbeast.core.sql import row_weight_sql
from qbeast.core.stats_skipping import StatsColumns
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT, weight_from_fraction
from qbeast.delta.scan import ScanSchema, scan_schema
from qbeast.errors import InvalidOptionError
from qbeast.skipping_files import prune as skipping_prune
from qbeast.snapshot import NotAQbeastTableError, QbeastSnapshot
from qbeast.spark.data_footers import read_piece_layout

logger = logging.getLogger("qbeast.spark.read.planner")

#: Tag generations whose blocks cannot drive the OTree walk (read as plain Delta until upgraded).
_UNINDEXED_FORMATS = frozenset({TagFormat.LEGACY_FLAT, TagFormat.NO_BLOCKS})


@dataclass(frozen=True)
class PlannedFile:
    """One data file a read opens."""

    path: str  # file-system path (absolute), or the URI of another storage
    size: int
    revision_id: int
    modification_time: int = 0  # epoch milliseconds, from the AddFile
    #: ``(column, typed value)`` of the table's partition columns (plain Delta tables only)
    partition_values: tuple[tuple[str, Any], ...] = ()
    #: bytes from the file's start that hold every row the read needs (a sample of a file whose
    #: rows are in weight-band order, :mod:`qbeast.core.band_row_groups`); None: the whole file
    read_size: int | None = None
    #: rows of the whole file (the AddFile's numRecords statistic; None: not recorded)
    num_records: int | None = None

    @property
    def bytes_to_read(self) -> int:
        return self.size if self.read_size is None else self.read_size


@dataclass(frozen=True)
class ReadPlan:
    """What a read opens and how it filters rows; plain data, picklable for Python workers."""

    table_path: str
    version: int
    schema_json: str
    files: tuple[PlannedFile, ...]
    total_files: int
    total_bytes: int
    weight_range: tuple[int, int] | None  # [lo, hi) of hash(hash_columns); None = every row
    hash_columns: tuple[str, ...]
    predicate: ex.Expression = field(default_factory=ex.AlwaysTrue)
    #: how files map onto columns (partition values, column mapping); None = plain files
    layout: ScanSchema | None = None
    #: blocks the index walk needs in the planned files (a staging or unindexed file counts as
    #: one); files are read whole, so files and bytes are what a read costs, blocks what it needs
    blocks_read: int = 0
    #: ``(index, files it removed)`` per skipping index the predicate uses (``"order_id:bloom"``):
    #: of the files the OTree walk left, those that index alone proves hold no matching row
    #: (the min/max stats may have removed some of them too; docs/skipping.md)
    index_pruned: tuple[tuple[str, int], ...] = ()

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]

    @property
    def selected_bytes(self) -> int:
        """Bytes the read opens: whole files, or the prefixes of :attr:`PlannedFile.read_size`."""
        return sum(f.bytes_to_read for f in self.files)

    @property
    def file_rows(self) -> int | None:
        """Rows of the planned files (whole files, from the log's statistics; None when a file
        has no numRecords)."""
        counts = [f.num_records for f in self.files]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)

    @property
    def prefix_reads(self) -> bool:
        """Whether some file is read only up to a prefix (a reader must honour the lengths)."""
        return any(f.read_size is not None for f in self.files)


@dataclass(frozen=True)
class RevisionTrace:
    """What the index decided for one revision of a planned read (see :class:`PlanTrace`)."""

    revision_id: int
    #: False for the staging revision and for revisions read as plain Delta (no index to walk)
    indexed: bool
    files: tuple[str, ...]  # every file of the revision, as the Delta log names them
    cube_count: int = 0
    #: cubes whose space meets the filter's query boxes, over the whole weight range
    cubes_in_boxes: int = 0
    #: ``(cube string id, file)`` of every block the read needs: its cube is in the boxes and,
    #: for a sample, its weights meet the sample's (files as the Delta log names them)
    blocks_needed: tuple[tuple[str, str], ...] = ()
    #: files holding a needed block, before the min/max statistics (Delta log paths)
    files_selected: tuple[str, ...] = ()
    #: whether the sample's weight range prunes this revision (its columns are the hashed ones)
    weighted: bool = False

    @property
    def cubes_selected(self) -> tuple[str, ...]:
        """The cubes holding a needed block, each once."""
        return tuple(dict.fromkeys(cube for cube, _ in self.blocks_needed))


@dataclass
class PlanTrace:
    """Why a plan holds the files it holds; :func:`plan_read` fills it when a caller passes one.

    Reads never ask for it (it costs a second walk per revision); ``QbeastTable.explain_read``
    and the index picture do, so that what they show is what this planner decided.
    """

    revisions: list[RevisionTrace] = field(default_factory=list)
    #: planned location -> the file's path in the Delta log, for every file the plan keeps
    kept: dict[str, str] = field(default_factory=dict)
    #: paths in the Delta log of the files the skipping indexes removed (before the statistics)
    skipped: set[str] = field(default_factory=set)


def sample_weight_range(fraction: float | None) -> tuple[int, int] | None:
    """The weight range ``[Weight(0), Weight(fraction))`` of ``sample(fraction)``.

    ``None`` and ``1.0`` mean "every row" (no row filter at all, so that a full sample also keeps
    rows whose hash is exactly ``Int.MaxValue``).
    """
    if fraction is None:
        return None
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise InvalidOptionError(f"sample fraction must be a number in [0, 1], got {fraction!r}")
    value = float(fraction)
    if not 0.0 <= value <= 1.0:
        raise InvalidOptionError(f"sample fraction must be in [0, 1], got {fraction!r}")
    if value == 1.0:
        return None
    return MIN_WEIGHT, weight_from_fraction(value)


def sample_columns(snapshot: Any) -> tuple[str, ...]:
    """The columns a row's weight hashes (latest revision); refused for plain Delta tables."""
    if not snapshot.is_qbeast:
        raise NotAQbeastTableError(
            f"cannot sample {snapshot.table_path}: it is a plain Delta table without Qbeast "
            "metadata (qbeast.lastRevisionID), so rows have no weight; read it in full or "
            "convert it with qbeast.convert_to_qbeast"
        )
    return tuple(snapshot.latest_revision.columns)


def load_snapshot(path: str, version: int | None = None):
    """The Qbeast view of the table at ``path`` (latest committed version by default)."""
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
        raise InvalidOptionError(f"version must be a non-negative integer, got {version!r}")
    return QbeastSnapshot.load(path, version=version)


def _revision_files(snapshot: Any) -> dict[int, list[Any]]:
    """Active files grouped by revision id (0 = staging), as the Qbeast snapshot sees them."""
    if not snapshot.is_qbeast:
        return {0: list(snapshot.delta.files.values())}
    return {rid: list(files) for rid, files in snapshot.files_by_revision().items()}


def _select_revision(
    snapshot: Any,
    revision_id: int,
    files: list[Any],
    predicate: ex.Expression,
    weight_range: tuple[int, int] | None,
    hash_columns: tuple[str, ...],
    trace: PlanTrace | None = None,
) -> tuple[list[Any], dict[str, int]]:
    """The files of one indexed revision the OTree walk keeps, and the blocks needed per file
    (files without an entry count as one block).

    The weight range only prunes a revision whose indexed columns are the ``hash_columns``: a
    row's weight is the hash of its revision's columns, so another revision's blocks say nothing
    about ``hash(hash_columns)`` (the row filter still applies to its rows).
    """
    decoded = [(add, snapshot.decoded(add)) for add in files]
    if snapshot.needs_upgrade or any(tags.format in _UNINDEXED_FORMATS for _, tags in decoded):
        logger.info(
            "revision %d of %s has pre-0.6 or block-less tags: read as plain Delta (upgrade the "
            "table to prune it with the index)", revision_id, snapshot.table_path,
        )
        _trace_unindexed(trace, revision_id, files)
        return files, {}
    revision = snapshot.revisions.get(revision_id)
    if revision is None:
        # Files of a revision the metadata does not describe: nothing to prune with.
        logger.warning("revision %d of %s is not in the table metadata: reading all its files",
                       revision_id, snapshot.table_path)
        _trace_unindexed(trace, revision_id, files)
        return files, {}
    status = IndexStatus.from_files(revision, ((add.path, tags.blocks) for add, tags in decoded))
    if tuple(revision.columns) != hash_columns:
        weight_range = None
    lo, hi = weight_range or (MIN_WEIGHT, MAX_WEIGHT)
    spaces = query_spaces(revision, None if isinstance(predicate, ex.AlwaysTrue) else predicate)
    needed: dict[str, int] = {}
    blocks = select_blocks(status, spaces, lo, hi)
    for fb in blocks:
        needed[fb.path] = needed.get(fb.path, 0) + 1
    if trace is not None:
        trace.revisions.append(RevisionTrace(
            revision_id, True, tuple(add.path for add in files), cube_count=len(status),
            cubes_in_boxes=len(select_cubes(status, spaces)),
            blocks_needed=tuple((fb.block.cube, fb.path) for fb in blocks),
            files_selected=tuple(needed),
            weighted=weight_range is not None))
    return [add for add in files if add.path in needed], needed


def _trace_unindexed(trace: PlanTrace | None, revision_id: int, files: list[Any]) -> None:
    """Record a revision whose files are all read (staging, or no usable index)."""
    if trace is not None:
        paths = tuple(add.path for add in files)
        trace.revisions.append(RevisionTrace(revision_id, False, paths, files_selected=paths))


def plan_read(
    snapshot: Any,
    *,
    fraction: float | None = None,
    predicate: ex.Expression | None = None,
    weight_range: tuple[int, int] | None = None,
    trace: PlanTrace | None = None,
) -> ReadPlan:
    """Plan a read of ``snapshot`` sampled to ``fraction`` and pruned by ``predicate``.

    ``predicate`` must already name the table's columns with literals of their types
    (:func:`qbeast.spark.read.predicates.normalize_predicate` and friends produce that).
    ``weight_range`` ``[lo, hi)`` of ``hash(indexed columns)`` is the other way to ask for a
    sample (the SQL bridge finds it in a scan's filters); give it or ``fraction``, not both.
    ``trace`` (a fresh :class:`PlanTrace`) receives why each file is in the plan.
    """
    started = time.monotonic()
    predicate = predicate if predicate is not None else ex.AlwaysTrue()
    if weight_range is not None and fraction is not None:
        raise InvalidOptionError("plan_read takes a sample fraction or a weight range, not both")
    if weight_range is None:
        weight_range = sample_weight_range(fraction)
    hash_columns: tuple[str, ...] = ()
    if weight_range is not None:
        hash_columns = sample_columns(snapshot)
    delta = snapshot.delta
    layout = scan_schema(delta)  # refuses features a scan would misread
    # the schema reads hand on: no qbeast.* column metadata (an older version's table may have
    # some in its log), or every DataFrame read from the table would carry it into the next one
    schema_json = json.dumps(without_engine_metadata(delta.schema))
    types = column_types(delta.schema)

    # the candidate files and their revisions as two parallel lists: a plan of 10,000 files
    # allocates no object per file before the statistics (and so triggers no garbage collection)
    candidates: list[Any] = []
    revision_ids: list[int] = []
    needed: dict[str, int] = {}
    weighted: set[int] = set()  # revisions whose row weights are the sample's hash
    for revision_id, files in sorted(_revision_files(snapshot).items()):
        if revision_id == 0:
            selected = files
            _trace_unindexed(trace, revision_id, files)
        else:
            selected, blocks = _select_revision(snapshot, revision_id, files, predicate, weight_range,
                                                hash_columns, trace)
            needed.update(blocks)
            revision = snapshot.revisions.get(revision_id)
            if revision is not None and tuple(revision.columns) == hash_columns:
                weighted.add(revision_id)
        candidates.extend(selected)
        revision_ids.extend(repeat(revision_id, len(selected)))
    index_pruned: tuple[tuple[str, int], ...] = ()
    if layout.is_plain:
        # before the stats: probing index files costs per index file, stats per file
        survives, index_pruned = skipping_prune(delta.table_path, delta.metadata, predicate,
                                                candidates)
        if trace is not None:
            trace.skipped.update(add.path for add, keep in zip(candidates, survives) if not keep)
        candidates = list(compress(candidates, survives))
        revision_ids = list(compress(revision_ids, survives))
    chosen = list(zip(revision_ids, candidates))
    if not isinstance(predicate, ex.AlwaysTrue):
        chosen = list(compress(chosen, _stats_may_match(delta, layout, types, predicate,
                                                        candidates)))
    kept: list[PlannedFile] = []
    blocks_read = 0
    prefixed: list[tuple[int, Any, str]] = []  # (index in kept, add, location)
    for revision_id, add in chosen:
        scan = layout.scan_file(delta.table_path, add)
        if (weight_range is not None and layout.is_plain and revision_id in weighted
                and add.path in needed and _may_hold_heavier(snapshot, add, weight_range[1])):
            prefixed.append((len(kept), add, scan.location))
        kept.append(PlannedFile(scan.location, scan.size, revision_id,
                                modification_time=int(add.modification_time or 0),
                                partition_values=scan.partition_values,
                                num_records=add.num_records))
        if trace is not None:
            trace.kept[scan.location] = add.path
        blocks_read += needed.get(add.path, 1)
    if prefixed:
        assert weight_range is not None
        sizes = _sample_prefixes([(add, location) for _, add, location in prefixed], weight_range[1])
        for (index, _, _), size in zip(prefixed, sizes):
            if size is not None:
                kept[index] = replace(kept[index], read_size=size)
    plan = ReadPlan(
        table_path=snapshot.table_path,
        version=snapshot.version,
        schema_json=schema_json,
        files=tuple(sorted(kept, key=lambda f: f.path)),
        total_files=len(delta.files),
        total_bytes=sum(int(a.size or 0) for a in delta.files.values()),
        weight_range=weight_range,
        hash_columns=hash_columns,
        predicate=predicate,
        layout=None if layout.is_plain else layout,
        blocks_read=blocks_read,
        index_pruned=index_pruned,
    )
    logger.info(
        "planned read of %s v%d: %d of %d files (%d of %d bytes, %d blocks), sample=%s, "
        "skipping indexes removed %s, %.3fs",
        plan.table_path, plan.version, len(plan.files), plan.total_files, plan.selected_bytes,
        plan.total_bytes, plan.blocks_read, fraction, dict(index_pruned) or "none",
        time.monotonic() - started,
    )
    return plan


#: Per Delta snapshot: its files' statistics by column and each file's position among them,
#: built for the first plan that needs them and kept while the snapshot lives
_STATS: WeakKeyDictionary[Any, tuple[dict[str, int], StatsColumns]] = WeakKeyDictionary()
_STATS_LOCK = threading.Lock()


def _stats_may_match(delta: Any, layout: ScanSchema, types: dict[str, tuple[str, str]],
                     predicate: ex.Expression, candidates: list[Any]) -> list[bool]:
    """Per candidate: whether its Delta min/max statistics let it hold a matching row
    (:class:`qbeast.core.stats_skipping.StatsColumns`).

    Against the snapshot's columns, built once, when they exist or the candidates are a good
    part of the table (at least a quarter of its files), so that a warm plan of 10,000 files
    costs a few array operations instead of a Python walk per file; otherwise against the
    candidates' own statistics, so that a plan the index narrowed parses no other file's."""
    with _STATS_LOCK:
        cached = _STATS.get(delta)
    if cached is None and len(candidates) * 4 < len(delta.files):
        own = StatsColumns([layout.logical_stats(add.parsed_stats) for add in candidates], types)
        return own.may_match(predicate).tolist()
    if cached is None:
        adds = list(delta.files.values())
        cached = ({add.path: i for i, add in enumerate(adds)},
                  StatsColumns([layout.logical_stats(add.parsed_stats) for add in adds], types))
        with _STATS_LOCK:
            _STATS[delta] = cached
    positions, columns = cached
    mask = columns.may_match(predicate)
    return mask[[positions[add.path] for add in candidates]].tolist()


#: Piece layouts of data files by (location, size, modification time) (None: no record): data
#: files never change in place, so a footer read once serves every later sample of the file.
_FOOTERS: OrderedDict[tuple[str, int, int], PieceLayout | None] = OrderedDict()
_FOOTERS_LOCK = threading.Lock()
_FOOTER_CACHE_FILES = 100_000


def _may_hold_heavier(snapshot: Any, add: Any, below: int) -> bool:
    """Whether ``add`` can hold rows at or above weight ``below`` (a block's rows weigh at most
    its ``maxWeight``): only such files can be read less than whole by a sample."""
    blocks = snapshot.decoded(add).blocks
    return bool(blocks) and max(b.max_weight for b in blocks) >= below


def _sample_prefixes(files: list[tuple[Any, str]], below: int) -> list[int | None]:
    """Per ``(add, location)``: the bytes a sample below weight ``below`` needs; ``None``: the
    whole file (no piece record, or a footer that cannot be read here).

    Footers not cached yet are read in parallel (I/O bound: pyarrow releases the GIL).
    """
    keys = [(location, int(add.size or 0), int(add.modification_time or 0)) for add, location in files]
    with _FOOTERS_LOCK:
        missing = [k for k in dict.fromkeys(keys) if k not in _FOOTERS]
    if missing:
        with ThreadPoolExecutor(max_workers=min(8, len(missing))) as pool:
            layouts = list(pool.map(lambda k: read_piece_layout(k[0], k[1] or None), missing))
        with _FOOTERS_LOCK:
            _FOOTERS.update(zip(missing, layouts))
            while len(_FOOTERS) > _FOOTER_CACHE_FILES:
                _FOOTERS.popitem(last=False)
    with _FOOTERS_LOCK:
        found = [_FOOTERS.get(key) for key in keys]
    out: list[int | None] = []
    for key, pieces in zip(keys, found):
        size = pieces.prefix_bytes(below) if pieces is not None else None
        out.append(size if size is not None and size < key[1] else None)
    return out


def rows_to_read(file: PlannedFile, rows: int | None) -> int | None:
    """Rows a reader of ``file`` gets: ``rows`` (the file's, from its Delta statistics) for a
    whole file, those of the row groups inside its prefix when the plan reads a prefix (the
    footer was read when the prefix was planned); ``None`` when unknown."""
    if file.read_size is None:
        return rows
    with _FOOTERS_LOCK:
        pieces = _FOOTERS.get((file.path, file.size, file.modification_time))
    return None if pieces is None else pieces.rows_within(file.read_size)


def weight_filter_sql(hash_columns: Iterable[str], weight_range: tuple[int, int]) -> str:
    """The row filter ``lo <= hash(cols) < hi`` as Spark SQL text.

    This is what a sample *is* (FORMAT §2.4): the DataFrame reader applies it, ``qbeast_sample()``
    in dbt expands to it, and the read planner recognises it in filters to prune by the sample.
    """
    lo, hi = weight_range
    weight = row_weight_sql(hash_columns)
    condition = f"{weight} < {hi}"
    if lo != MIN_WEIGHT:
        condition = f"{weight} >= {lo} AND {condition}"
    return condition


def sample_filter_sql(hash_columns: Iterable[str], fraction: float) -> str:
    """The SQL row filter of ``sample(fraction)`` over ``hash_columns``: ``true`` for a fraction
    of 1, else :func:`weight_filter_sql` of :func:`sample_weight_range`."""
    weight_range = sample_weight_range(fraction)
    return "true" if weight_range is None else weight_filter_sql(hash_columns, weight_range)
