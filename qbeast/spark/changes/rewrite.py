"""Copy-on-write rewrite of data files: one new file per old file, its rows kept in their cubes.

Row-level changes (:mod:`qbeast.spark.changes.fates`) decide in Spark which rows of each affected
file remain and with which values; this module turns those rows into the replacement files. The
rows are grouped by the file they came from (``ORIGIN_COLUMN``), and one Arrow task per old file:

1. recomputes each row's cube from the old file's own blocks
   (:func:`qbeast.index.file_blocks.file_plan`, the row's weight computed by Spark's ``hash()``
   next to the data) and recounts the blocks (``elementCount``, ``minWeight``; ``maxWeight``
   stays the cube's threshold);
2. writes the rows with pyarrow into a staging folder of the table and describes the file
   (size, Delta stats from the footer, blocks).

Unlike an indexing write, no row changes file or cube, so no shuffle by cube and no second
description pass are needed. :func:`write_replacement` writes one file's replacement; the
one-job key merge (:mod:`qbeast.spark.changes.file_merge`) calls it from its own tasks. Staging files (revision 0) are rewritten as staging files (no
blocks). The new files are moved to the table root only when every task succeeded; on failure
the staging folder is removed and nothing else was touched.
"""
from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from qbeast.commit import WrittenFile
from qbeast.core.band_row_groups import Piece, PieceLayout, encode_pieces
from qbeast.core.blocks import Block
from qbeast.core.revision import Revision
from qbeast.core.sql import quote_identifier, row_weight_sql
from qbeast.delta.actions import AddFile, resolve_file_path
from qbeast.spark import settings
from qbeast.spark.file_access import FileAccess
from qbeast.spark.write.staging import StagedFiles, TaskUploads
from qbeast.spark.write.options import WEIGHT_COLUMN

#: Internal column naming the old file (its index in the list of targets) a row comes from.
ORIGIN_COLUMN = "_qbeast_origin"

_DESCRIPTION_SCHEMA = ("origin int, name string, size long, mtime long, rows long, stats string, "
                       "blocks string")


@dataclass(frozen=True)
class RewriteTarget:
    """One old file to replace: its index, name in the log, revision, blocks and size (bytes;
    None: unknown, saves a request when its footer is read from an object store)."""

    origin: int
    path: str
    revision_id: int
    blocks: tuple[Block, ...]
    size: int | None = None

    @classmethod
    def of(cls, origin: int, add: AddFile, snapshot: Any) -> RewriteTarget:
        """The target of the active file ``add`` of ``snapshot`` (a QbeastSnapshot)."""
        return cls(origin, add.path, snapshot.revision_of(add), tuple(snapshot.blocks(add)),
                   int(add.size) if add.size else None)


def published(staged: StagedFiles, description: Any) -> WrittenFile:
    """The replacement a task described (a row with the fields :func:`write_replacement`
    returns), published from the staging folder to the table (or, when tasks uploaded their
    files themselves, :meth:`StagedFiles.task_uploads`, as the task named it)."""
    blocks = tuple(Block(c, lo, hi, n, rep)
                   for c, lo, hi, n, rep in json.loads(description["blocks"]))
    if staged.uploads is not None:
        name, size, mtime = description["name"], int(description["size"]), int(description["mtime"])
    else:
        name, info = staged.publish(os.path.join(staged.path, description["name"]))
        size, mtime = info.size, info.mtime_ms
    return WrittenFile(int(description["origin"]), name, size, mtime,
                       int(description["rows"]), description["stats"], blocks)


def uploaded(described: dict[str, Any], staging: str, uploads: TaskUploads) -> dict[str, Any]:
    """A replacement a task wrote into its own temporary folder ``staging``, uploaded to the
    table under the name the driver chose for its origin; its description with that name, the
    object's size and time. Runs in tasks on machines that do not share the driver's disk."""
    name, stat = uploads.upload(os.path.join(staging, described["name"]), int(described["origin"]))
    os.remove(os.path.join(staging, described["name"]))
    return {**described, "name": name, "size": stat.size, "mtime": stat.mtime_ms}


def task_uploads_wanted(access: FileAccess) -> bool:
    """Whether a rewrite's tasks upload their files themselves: an object-store table seen from
    a session whose tasks run elsewhere (they cannot write into this machine's staging folder).
    Such a session reads the old files by signed URL; without that (no bridge jar, Spark Connect)
    the operation is refused with what works."""
    if not access.arrow_tasks:
        return False
    access.check_native()
    return True


def weight_by_origin(targets: Sequence[RewriteTarget], revisions: Mapping[int, Revision]) -> Any:
    """The row weight under the revision of the row's old file (null for staging files).

    Revisions usually index the same columns; when they differ, the weight is a CASE over the
    origins of each column list.
    """
    from pyspark.sql import functions as F

    by_columns: dict[tuple[str, ...], list[int]] = {}
    for t in targets:
        if t.revision_id > 0:
            by_columns.setdefault(tuple(revisions[t.revision_id].columns), []).append(t.origin)
    weight = F.lit(None).cast("int")
    for columns, origins in by_columns.items():
        weight = F.when(F.col(ORIGIN_COLUMN).isin(origins), F.expr(row_weight_sql(columns))
                        ).otherwise(weight)
    return weight


@dataclass
class Rewritten:
    """What :func:`rewrite_files` wrote: origin -> the replacement (a target left without rows
    has none), and how many rows had each value of the action column."""

    files: dict[int, WrittenFile]
    counts: dict[int, int]


def rewrite_files(rows: Any, targets: Sequence[RewriteTarget], revisions: Mapping[int, Revision],
                  table_dir: str, access: FileAccess, *, action_column: str,
                  kept: Sequence[int]) -> Rewritten:
    """Write the remaining rows of each target into one new file.

    ``rows`` holds the table's columns plus ``ORIGIN_COLUMN`` and ``action_column``; ``access``
    is how the change reaches the table's files (decided when it started), ``action_column`` the
    rows' fates (small ints): ``rows`` holds every row of the targets and only those whose
    action is in ``kept`` are written back; the tasks count the rows of each action, so the change needs no
    counting job of its own. Targets without any remaining row get no file. Block lists
    include blocks left without rows (``elementCount`` 0); the caller settles them
    (:func:`qbeast.index.file_blocks.settle_empty_blocks`).
    """
    from pyspark.sql import functions as F

    if not targets:
        return Rewritten({}, {})
    by_origin = {t.origin: t for t in targets}
    needed = {t.revision_id: revisions[t.revision_id] for t in targets if t.revision_id > 0}
    columns = [c for c in rows.columns if c not in (ORIGIN_COLUMN, action_column)]
    spark = rows.sparkSession
    in_tasks = task_uploads_wanted(access)
    with StagedFiles(table_dir, access, writers="tasks" if in_tasks else "spark") as staged:
        version = settings.PARQUET_VERSION.read(spark)
        olds = [resolve_file_path(table_dir, t.path) for t in targets]
        uploads = staged.task_uploads([t.origin for t in targets]) if in_tasks else None
        if uploads is None:
            os.makedirs(staged.path)
            # where each task reads its old file's footer: the file itself, or (object stores)
            # the local copy the scan of its rows made, so tasks need no store credentials
            olds = access.readable(olds, [t.size for t in targets])
        footers = {t.origin: old for t, old in zip(targets, olds)}
        task = _rewrite_task(by_origin, needed, columns, staged.path, footers, version, uploads,
                             action_column, tuple(kept))
        weighted = rows.select(*[F.col(quote_identifier(c)) for c in rows.columns],
                               weight_by_origin(targets, revisions).alias(WEIGHT_COLUMN))
        described = (weighted.groupBy(ORIGIN_COLUMN)
                     .applyInArrow(task, f"{_DESCRIPTION_SCHEMA}, counts string").collect())
        counts: dict[int, int] = {}
        for r in described:
            for action, n in json.loads(r["counts"]).items():
                counts[int(action)] = counts.get(int(action), 0) + n
        return Rewritten({int(r["origin"]): published(staged, r)
                          for r in described if r["name"] is not None}, counts)


def empty_file(access: FileAccess, table_dir: str, schema: Any, origin: int,
               blocks: tuple[Block, ...]) -> WrittenFile:
    """A parquet file without rows (of the Spark ``schema``) whose tags carry ``blocks``.

    When every row of a file goes but one of its blocks must stay (a zero-element block that
    keeps a cube's threshold, :func:`qbeast.index.file_blocks.settle_empty_blocks`), some file
    has to carry the block: this one. It is published like any new file (moved into a local
    table, uploaded to one on an object store).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq
    from qbeast.spark.arrow_columns import spark_arrow_schema

    from qbeast.delta.stats import footer_stats

    arrow = spark_arrow_schema(schema)
    with StagedFiles(table_dir, access, writers="driver") as staged:
        os.makedirs(staged.path)
        local = os.path.join(staged.path, f"{uuid.uuid4()}.parquet")
        pq.write_table(pa.Table.from_batches([], arrow), local, compression="snappy")
        stats = footer_stats(pq.ParquetFile(local).metadata, non_finite=set())
        name, info = staged.publish(local)
    return WrittenFile(origin, name, info.size, info.mtime_ms, 0, stats, blocks)


def _rewrite_task(by_origin: dict[int, RewriteTarget], revisions: dict[int, Revision],
                  columns: list[str], staging: str, footers: dict[int, str], version: str,
                  uploads: TaskUploads | None, action_column: str, kept: tuple[int, ...]):
    """The grouped Arrow function: the rows of one old file -> its description row (with the
    counts of its rows' actions; no file when no row remains). With ``uploads`` the task reads
    the old footer from the store and uploads its file."""

    def rewrite(table):
        import tempfile

        import numpy as np
        import pyarrow.compute as pc

        origin = int(table.column(ORIGIN_COLUMN)[0].as_py())
        target = by_origin[origin]
        actions = table.column(action_column)
        counts = json.dumps({str(e["values"]): int(e["counts"])
                             for e in pc.value_counts(actions).to_pylist()})
        table = table.filter(pc.is_in(actions, pa.array(kept, actions.type)))
        if table.num_rows == 0:  # no file: only the counts
            return pa.table({**{f.name: [None] for f in DESCRIPTION_ARROW}, "origin": [origin],
                             "rows": [0], "counts": [counts]}, schema=_COUNTED_ARROW)
        weights = None
        if target.revision_id > 0:
            weights = table.column(WEIGHT_COLUMN).to_numpy(zero_copy_only=False).astype(np.int64)
        from qbeast.spark.data_footers import read_data_footer

        if uploads is None:
            described = write_replacement(table.select(columns), target,
                                          revisions.get(target.revision_id), staging,
                                          read_data_footer(footers[origin], target.size), version,
                                          weights=weights)
        else:
            with tempfile.TemporaryDirectory(prefix="qbeast-rewrite-") as local:
                described = uploaded(write_replacement(
                    table.select(columns), target, revisions.get(target.revision_id), local,
                    uploads.footer(footers[origin], target.size), version, weights=weights),
                    local, uploads)
        return pa.table({**{k: [v] for k, v in described.items()}, "counts": [counts]},
                        schema=_COUNTED_ARROW)

    return rewrite


#: The Arrow schema of a replacement's description (``_DESCRIPTION_SCHEMA``).
DESCRIPTION_ARROW = pa.schema([("origin", pa.int32()), ("name", pa.string()), ("size", pa.int64()),
                               ("mtime", pa.int64()), ("rows", pa.int64()),
                               ("stats", pa.string()), ("blocks", pa.string())])
#: The grouped rewrite's rows: a description and the counts of the rows' actions (JSON).
_COUNTED_ARROW = DESCRIPTION_ARROW.append(pa.field("counts", pa.string()))


def write_replacement(data: Any, target: RewriteTarget, revision: Revision | None, staging: str,
                      old_footer: Any, version: str, *, weights: Any = None,
                      in_place: InPlace | None = None) -> dict[str, Any]:
    """Write ``data`` (the remaining rows of ``target``, the table's columns) as the target's
    replacement in the folder ``staging``; its description (``_DESCRIPTION_SCHEMA`` fields).

    Runs in tasks: the grouped rewrite and the per-file key merge
    (:mod:`qbeast.spark.changes.file_merge`) both write through it, so their files are alike.
    Each row stays in the cube it was written to (recomputed from the old file's blocks,
    ``weights`` being the rows' weights under ``revision``: computed here with
    :func:`qbeast.index.row_weights.spark_hash` when not given), and the blocks are recounted;
    staging files (revision 0) get no blocks. A file written in band pieces (``rowGroups``
    layout, read from the old file's footer: ``old_footer``, its
    ``pyarrow.parquet.FileMetaData``, None when it could not be read) is rewritten in the same
    pieces, its remaining rows regrouped by the old pieces' weights, so samples still read a
    prefix of it. The new file is encoded as a Spark write of the session's page ``version``
    would encode it (:func:`qbeast.spark.write.arrow_parquet.arrow_write_options`).

    ``in_place``: ``data`` holds the old file's rows in the file's order, less the rows
    ``in_place`` names, and none of them with a changed indexed value (a key merge, delete or
    delete+insert). Each remaining row then keeps its weight, its cube and its place in the
    band pieces, so the old blocks and piece record, less the rows that left, describe the new
    file: only the leaving rows' weights and cubes are computed (:func:`in_place_layout`; for
    exact old tags, what recomputing every row would give).
    """
    import numpy as np
    import pyarrow.parquet as pq

    from qbeast.core.band_row_groups import split_by_floors
    from qbeast.delta.stats import footer_stats
    from qbeast.index.file_blocks import file_plan, recount_blocks, row_cubes
    from qbeast.index.points import table_points
    from qbeast.index.row_weights import spark_hash
    from qbeast.spark.write.arrow_parquet import arrow_write_options, non_finite_columns
    from qbeast.spark.write.row_groups import write_pieces_with_arrow

    data = data.cast(pa.schema([f.with_nullable(True) for f in data.schema]))
    blocks: tuple[Block, ...] = ()
    parts = [data]
    record = None
    old = PieceLayout.of(old_footer) if old_footer is not None else None
    kept = (in_place_layout(target, data.num_rows, old, in_place, revision)
            if in_place is not None else None)
    if kept is not None:
        blocks, parts, record = kept[0], _slices(data, kept[1]), kept[2]
    elif target.revision_id > 0:
        assert revision is not None
        if weights is None:
            weights = spark_hash([data.column(c) for c in revision.columns]).astype(np.int64)
        coords = table_points(revision, data, list(revision.columns))
        plan = file_plan(revision.dimension_count, target.blocks)
        cubes = row_cubes(plan, coords, weights, target.path)
        blocks = recount_blocks(target.blocks, cubes, weights)
        if old is not None:
            order, pieces = split_by_floors(weights, [p.min_weight for p in old.pieces])
            ordered = data.take(pa.array(order))
            ends = np.cumsum([p.rows for p in pieces])
            parts = [ordered.slice(int(end - p.rows), p.rows) for end, p in zip(ends, pieces)]
            record = encode_pieces(pieces)
    name = f"{uuid.uuid4()}.parquet"
    path = os.path.join(staging, name)
    write_pieces_with_arrow(path, parts, record,
                            **arrow_write_options(data, version, like=old_footer))
    info = os.stat(path)
    stats = footer_stats(pq.ParquetFile(path).metadata, non_finite=non_finite_columns(data))
    encoded = json.dumps([[b.cube, b.min_weight, b.max_weight, b.element_count, b.replicated]
                          for b in blocks])
    return {"origin": target.origin, "name": name, "size": info.st_size,
            "mtime": int(info.st_mtime * 1000), "rows": data.num_rows, "stats": stats,
            "blocks": encoded}


@dataclass(frozen=True)
class InPlace:
    """Rows that leave a file rewritten in place: their positions in the old file (ascending)
    and their old values (at least the indexed columns)."""

    removed: Any  # numpy int64 positions
    rows: Any  # pyarrow Table


def in_place_layout(target: RewriteTarget, rows: int, old: PieceLayout | None, place: InPlace,
                    revision: Revision | None
                    ) -> tuple[tuple[Block, ...], tuple[int, ...], str | None] | None:
    """(blocks, rows of each band piece, piece record) of a replacement holding the old file's
    rows in their order with unchanged indexed values, ``rows`` of them, less those ``place``
    names; None when they must be recomputed.

    The old description carries over only when it is one a recount reproduces: one block per
    cube (a recount merges duplicates) whose counts add up to the file's rows, and a piece
    record (``old``, when the file has one) covering exactly those rows. A leaving row lowers
    its block's and its piece's count; when it was the lightest of either (its weight is the
    recorded minimum), the minimum would change and everything is recomputed instead. Staging
    files have no blocks and no pieces.
    """
    import numpy as np

    removed = np.asarray(place.removed, dtype=np.int64)
    if target.revision_id == 0:
        return (), (rows,), None
    total = rows + len(removed)
    cubes = [b.cube for b in target.blocks]
    if len(set(cubes)) != len(cubes) or sum(b.element_count for b in target.blocks) != total:
        return None
    if old is not None and sum(p.rows for p in old.pieces) != total:
        return None
    blocks = target.blocks
    pieces = old.pieces if old is not None else ()
    if len(removed):
        assert revision is not None
        left = _without_rows(target, revision, place)
        if left is None:
            return None
        blocks, weights = left
        if pieces:
            ends = np.cumsum([p.rows for p in pieces])
            piece_of = np.searchsorted(ends, removed, side="right")
            lowered = []
            for i, p in enumerate(pieces):
                leaving = piece_of == i
                if (weights[leaving] == p.min_weight).any():
                    return None
                count = p.rows - int(leaving.sum())
                if count:
                    lowered.append(Piece(p.min_weight, count))
            pieces = tuple(lowered)
    if old is None:
        return blocks, (rows,), None
    return blocks, tuple(p.rows for p in pieces), encode_pieces(pieces)


def _without_rows(target: RewriteTarget, revision: Revision, place: InPlace
                  ) -> tuple[tuple[Block, ...], Any] | None:
    """The target's blocks less the rows of ``place`` and those rows' weights; None when a
    leaving row was the lightest of its block (or fits none: the tags do not describe it)."""
    import numpy as np

    from qbeast.index.file_blocks import BlockMismatchError, file_plan, row_cubes
    from qbeast.index.points import table_points
    from qbeast.index.row_weights import spark_hash

    leaving = place.rows
    weights = spark_hash([leaving.column(c) for c in revision.columns]).astype(np.int64)
    coords = table_points(revision, leaving, list(revision.columns))
    try:
        cubes = row_cubes(file_plan(revision.dimension_count, target.blocks), coords, weights,
                          target.path)
    except BlockMismatchError:
        return None
    blocks = []
    for block in target.blocks:
        mine = cubes == block.cube
        if not mine.any():
            blocks.append(block)
            continue
        if (weights[mine] == block.min_weight).any():
            return None
        blocks.append(Block(block.cube, block.min_weight, block.max_weight,
                            block.element_count - int(mine.sum()), block.replicated))
    return tuple(blocks), weights


def _slices(data: Any, sizes: Sequence[int]) -> list[Any]:
    """``data`` cut into consecutive parts of ``sizes`` rows."""
    parts, start = [], 0
    for size in sizes:
        parts.append(data.slice(start, size))
        start += size
    return parts
