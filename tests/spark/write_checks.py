"""Independent checks of a written Qbeast table, shared by the writer's Spark tests (no tests here).

Everything is recomputed from the files on disk: the rows are read back with Spark's own parquet
reader, weights come from Spark's ``hash()`` (never from the writer), cubes from the format core's
``point_codes``. The checks are the OTree invariants of FORMAT §6.3/§13 and qbeast-spark's
``IndexTestChecks``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from qbeast.core.cube_id import CubeId, codes_to_strings, point_codes
from qbeast.core.selection import select_sample_files
from qbeast.core.transformations import HashTransformation
from qbeast.core.sql import quote_identifier
from qbeast.core.weight import weight_from_fraction
from qbeast.snapshot import QbeastSnapshot
from qbeast.index.points import canonical_values


@dataclass
class RevisionRows:
    """The rows of one revision's files: file name, Spark weight and the indexed columns."""

    files: np.ndarray
    weights: np.ndarray
    table: pa.Table


def read_revision_rows(spark, path: str, snapshot: QbeastSnapshot, revision_id: int) -> RevisionRows:
    from pyspark.sql import functions as F

    revision = snapshot.revision(revision_id)
    adds = snapshot.revision_files(revision_id)
    paths = [os.path.join(path, a.path) for a in adds]
    cols = [F.col(quote_identifier(c)) for c in revision.columns]
    df = spark.read.parquet(*paths).select(
        F.element_at(F.split(F.input_file_name(), "/"), -1).alias("_file"),
        F.hash(*cols).alias("_w"),
        *cols,
    )
    table = df.toArrow()
    return RevisionRows(
        np.asarray(table.column("_file").to_pylist(), dtype=object),
        table.column("_w").to_numpy().astype(np.int64),
        table,
    )


def row_cube_paths(revision, table: pa.Table, depth: int) -> list[list[str]]:
    """Per depth 0..depth, each row's container cube string at that depth (core computation)."""
    values, nulls = zip(*(
        canonical_values(table.column(c), exact_decimals=isinstance(t, HashTransformation))
        for c, t in zip(revision.columns, revision.transformations)
    ))
    coords = revision.transform_points(list(values), list(nulls))
    codes = point_codes(coords, depth)
    d = revision.dimension_count
    return [codes_to_strings(d, codes[:, :k]) for k in range(depth + 1)]


def check_index(spark, path: str, fractions=(0.1, 0.2, 0.5, 0.7, 0.99)) -> dict[int, int]:
    """Assert the OTree invariants of every indexed revision; return rows per revision."""
    snapshot = QbeastSnapshot.load(path)
    rows_per_revision: dict[int, int] = {}
    for revision_id in sorted(snapshot.files_by_revision()):
        if revision_id == 0:
            continue
        revision = snapshot.revision(revision_id)
        status = snapshot.index_status(revision_id)
        thresholds = {s.cube: s.max_weight for s in status}
        # every cube's parent exists, and a child's threshold is at least its parent's
        for cube, weight in thresholds.items():
            if cube.parent is not None:
                assert cube.parent in thresholds, f"cube {cube} has no parent in revision {revision_id}"
                assert weight >= thresholds[cube.parent], f"cube {cube} below its parent's threshold"
        rows = read_revision_rows(spark, path, snapshot, revision_id)
        max_depth = max(c.depth for c in thresholds)
        paths = row_cube_paths(revision, rows.table, max_depth)
        d = revision.dimension_count
        assigned = np.empty(len(rows.weights), dtype=object)
        path_arrays = [np.asarray(level, dtype=object) for level in paths]
        for add in snapshot.revision_files(revision_id):
            blocks = {b.cube: b for b in snapshot.blocks(add)}
            in_file = np.flatnonzero(rows.files == add.path)
            w = rows.weights[in_file]
            cube_of = np.full(len(in_file), None, dtype=object)
            # the first block cube of each row's path (in this file) whose threshold admits it
            for k in range(max_depth + 1):
                level = path_arrays[k][in_file]
                free = cube_of == None  # noqa: E711 - elementwise on an object array
                for cube_string, block in blocks.items():
                    hit = free & (level == cube_string) & (w <= block.max_weight)
                    cube_of[hit] = cube_string
            assert not (cube_of == None).any(), f"rows of {add.path} fit no block of their file"  # noqa: E711
            assigned[in_file] = cube_of
            for cube_string, block in blocks.items():
                members = w[cube_of == cube_string]
                assert len(members) == block.element_count, (add.path, cube_string)
                if block.element_count:
                    assert int(members.min()) == block.min_weight, (add.path, cube_string)
        # readers' invariant: every row is heavier than the effective threshold of its ancestors
        for cube_string in set(assigned.tolist()):
            cube = CubeId.from_string(d, cube_string)
            lightest = int(rows.weights[assigned == cube_string].min())
            for ancestor in cube.ancestors():
                assert lightest > thresholds[ancestor], (cube_string, str(ancestor))
        # a sample reads exactly the rows with weight < Weight(f)
        for f in fractions:
            selected = select_sample_files(status, f)
            limit = weight_from_fraction(f)
            chosen = np.isin(rows.files, list(selected))
            assert int(((rows.weights < limit) & chosen).sum()) == int((rows.weights < limit).sum())
        rows_per_revision[revision_id] = len(rows.weights)
    return rows_per_revision


def check_weight_bands(spark, path: str) -> int:
    """Assert that the blocks of every cube hold disjoint weight ranges and cover its rows: the
    rows of each (file, cube) block lie in ``[minWeight, maxWeight]`` and no two blocks of one
    cube overlap (a single write's weight bands). Return how many cubes have several blocks."""
    snapshot = QbeastSnapshot.load(path)
    split = 0
    for revision_id in sorted(snapshot.files_by_revision()):
        if revision_id == 0:
            continue
        rows = read_revision_rows(spark, path, snapshot, revision_id)
        status = snapshot.index_status(revision_id)
        max_depth = max(s.cube.depth for s in status)
        paths = [np.asarray(level, dtype=object)
                 for level in row_cube_paths(snapshot.revision(revision_id), rows.table, max_depth)]
        for cube_status in status:
            cube = cube_status.cube
            level = paths[cube.depth]
            ranges = []
            for fb in cube_status.blocks:
                if not fb.block.element_count:
                    continue
                w = rows.weights[(rows.files == fb.path) & (level == cube.string)]
                w = w[(w >= fb.block.min_weight) & (w <= fb.block.max_weight)]
                # the block's rows are those of its file in its cube's weight range above its
                # ancestors' thresholds: the lightest is minWeight, the count is elementCount
                lower = max((s.max_weight for s in status
                             if s.cube != cube and s.cube.is_ancestor_of(cube)), default=None)
                if lower is not None:
                    w = w[w > lower]
                assert len(w) == fb.block.element_count, (fb.path, str(cube))
                assert int(w.min()) == fb.block.min_weight, (fb.path, str(cube))
                ranges.append((int(w.min()), int(w.max())))
            ranges.sort()
            for (_, hi), (lo, _) in zip(ranges, ranges[1:]):
                assert hi < lo, f"blocks of cube {cube!r} overlap in weight: {ranges}"
            split += len(ranges) > 1
    return split


def sample_count(spark, path: str, f: float) -> int:
    """Rows with weight < Weight(f) in the files a sample of ``f`` selects, over all revisions."""
    from pyspark.sql import functions as F

    snapshot = QbeastSnapshot.load(path)
    total = 0
    limit = weight_from_fraction(f)
    for revision_id, adds in snapshot.files_by_revision().items():
        if revision_id == 0:
            files = [a.path for a in adds]
        else:
            files = sorted(select_sample_files(snapshot.index_status(revision_id), f))
        if not files:
            continue
        columns = snapshot.latest_revision.columns
        df = spark.read.parquet(*[os.path.join(path, p) for p in files])
        total += df.where(F.hash(*[F.col(quote_identifier(c)) for c in columns]) < limit).count()
    return total


def active_paths(path: str) -> list[str]:
    snapshot = QbeastSnapshot.load(path)
    return [os.path.join(path, a.path) for a in snapshot.files()]


def file_descriptions(path: str) -> list[tuple]:
    """Each data file as (rows, Qbeast tags, Delta stats): what the log says, names left out.
    Stats are compared as values (pyarrow records a float column's 0.0 minimum where Spark's
    writer records -0.0: equal values, and equal for skipping)."""
    import json

    from qbeast.delta.log import DeltaLog

    snapshot = DeltaLog.for_path(path).snapshot()
    return sorted(((a.num_records, json.dumps(a.tags, sort_keys=True), json.loads(a.stats))
                   for a in snapshot.files.values()), key=lambda d: d[:2])


def spark_jobs(spark, action):
    """(result of ``action``, the Spark jobs it ran)."""
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    result = action()
    return result, len(set(tracker.getJobIdsForGroup(None)) - before)
