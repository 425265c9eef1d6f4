"""The index of a table as a picture model: every live revision's cubes, files and depths.

Why: ``columns_to_index`` and ``cube_size`` are choices a user can only judge by seeing the tree
they produced (how deep, how full, how many files per cube) and what a query reads of it. This
module turns a snapshot into plain typed data that a writer draws (:mod:`qbeast.operations.
index_page` writes one self-contained HTML page): per revision the cubes (id, depth, parent,
rows, bytes, threshold, files), the files with the weight band their blocks cover, and per depth
the numbers :func:`qbeast.operations.metrics.metrics_of_snapshot` computes. A read's selection is
handed in as the read planner's own :class:`~qbeast.operations.explain.ReadExplanation`, so the
highlighted cubes and files are the ones a read opens.

Nothing here reads data: block tags and Delta statistics only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qbeast.core import expressions as ex
from qbeast.core.weight import MAX_WEIGHT, fraction
from qbeast.operations.common import check_optional_int, check_path
from qbeast.operations.explain import ReadExplanation, explain_snapshot
from qbeast.operations.metrics import metrics_of_snapshot
from qbeast.snapshot import STAGING_REVISION_ID, QbeastSnapshot
from qbeast.spark.read.planner import load_snapshot


@dataclass(frozen=True)
class CubePicture:
    """One cube: rows are its blocks' element counts; bytes are estimated from its files (each
    file's size shared among its blocks by rows); ``max_weight`` is its threshold as a fraction
    (1.0 for a leaf)."""

    id: str  # the cube's string id ("" is the root)
    depth: int
    parent: str | None
    rows: int
    bytes: int
    max_weight: float
    blocks: int
    files: tuple[int, ...]  # indices into the revision's files
    subtree_rows: int  # rows of the cube and every cube below it
    #: False for an inner cube without blocks on the way to deeper cubes (drawn as a gap)
    present: bool = True


@dataclass(frozen=True)
class FilePicture:
    """One data file and the weight band its blocks cover (fractions of the weight range)."""

    path: str  # as the Delta log names it
    size: int
    rows: int | None
    blocks: int
    min_weight: float
    max_weight: float


@dataclass(frozen=True)
class DepthPicture:
    """The totals of one tree level."""

    depth: int
    cubes: int
    blocks: int
    files: int
    rows: int


@dataclass(frozen=True)
class RevisionPicture:
    """A live revision (one with files): its space, its tree and its files."""

    revision_id: int
    #: True for files without a usable index (staging files, a plain Delta table): no tree
    staging: bool
    columns: tuple[str, ...]
    space: tuple[str, ...]  # one line per indexed column: its transformation's range
    cube_size: int
    rows: int
    bytes: int
    #: pre-order (every parent before its children), the empty inner cubes included
    cubes: tuple[CubePicture, ...]
    files: tuple[FilePicture, ...]
    depths: tuple[DepthPicture, ...]


@dataclass(frozen=True)
class IndexPicture:
    """Everything the page shows: the table's revisions and, optionally, a read's selection."""

    path: str
    version: int
    rows: int | None
    bytes: int
    files: int
    revisions: tuple[RevisionPicture, ...]
    selection: ReadExplanation | None = None

    @property
    def cube_count(self) -> int:
        """Cubes with blocks, over every revision (what the snapshot's index status holds)."""
        return sum(1 for r in self.revisions for c in r.cubes if c.present)


def table_picture(path: str, sample: float | None = None,
                  filter: str | ex.Expression | None = None,  # noqa: A002
                  version: int | None = None) -> IndexPicture:
    """The picture of the table at ``path`` (at ``version``, latest by default); with ``sample``
    (a fraction) and/or ``filter`` it carries what that read opens."""
    check_path(path)
    check_optional_int(version, "version", 0)
    snapshot = load_snapshot(path, version)
    selection = None
    if sample is not None or filter is not None:
        selection = explain_snapshot(snapshot, sample, filter)
    return picture_of_snapshot(snapshot, selection)


def picture_of_snapshot(snapshot: QbeastSnapshot,
                        selection: ReadExplanation | None = None) -> IndexPicture:
    """The picture of ``snapshot``; ``selection`` (of the same snapshot) marks what a read opens."""
    delta = snapshot.delta
    revisions = []
    if snapshot.is_qbeast:
        for rid, files in sorted(snapshot.files_by_revision().items()):
            if rid == STAGING_REVISION_ID:
                revisions.append(_unindexed_picture(snapshot, rid, files))
            elif rid in snapshot.revisions and files:
                revisions.append(_revision_picture(snapshot, rid))
            elif files:  # files of a revision the metadata lacks: shown, not drawn as a tree
                revisions.append(_unindexed_picture(snapshot, rid, files))
    elif delta.num_files:  # a plain Delta table: its files, no index
        revisions.append(_unindexed_picture(snapshot, STAGING_REVISION_ID, list(snapshot.files())))
    return IndexPicture(snapshot.table_path, snapshot.version, delta.num_records, delta.size_bytes,
                        delta.num_files, tuple(revisions), selection)


def _unindexed_picture(snapshot: QbeastSnapshot, revision_id: int, adds: list[Any]) -> RevisionPicture:
    """Files without a usable index (staging, or plain Delta): listed, no tree."""
    revision = snapshot.revisions.get(revision_id) if snapshot.is_qbeast else None
    files = tuple(FilePicture(add.path, add.size, add.num_records, 0, 0.0, 1.0) for add in adds)
    return RevisionPicture(
        revision_id=revision_id, staging=True, columns=(), space=(),
        cube_size=revision.desired_cube_size if revision is not None else 0,
        rows=sum(add.num_records or 0 for add in adds), bytes=sum(add.size for add in adds),
        cubes=(), files=files, depths=(),
    )


def _revision_picture(snapshot: QbeastSnapshot, revision_id: int) -> RevisionPicture:
    revision = snapshot.revision(revision_id)
    adds = snapshot.revision_files(revision_id)
    metrics = metrics_of_snapshot(snapshot, revision_id)
    index = {add.path: i for i, add in enumerate(adds)}
    files = []
    bytes_per_row: dict[str, float] = {}
    for add in adds:
        blocks = snapshot.blocks(add)
        block_rows = sum(b.element_count for b in blocks)
        bytes_per_row[add.path] = add.size / block_rows if block_rows else 0.0
        files.append(FilePicture(
            add.path, add.size, add.num_records, len(blocks),
            fraction(min((b.min_weight for b in blocks), default=MAX_WEIGHT)) if blocks else 0.0,
            fraction(max((b.max_weight for b in blocks), default=MAX_WEIGHT)),
        ))
    cubes: list[CubePicture] = []
    status = snapshot.index_status(revision_id)
    for cube, subtree in sorted(status.tree_sizes().items()):
        parent = cube.parent
        found = status.get(cube)
        if found is None:  # an inner cube with no block of its own
            cubes.append(CubePicture(cube.string, cube.depth, _string(parent), 0, 0, 0.0, 0, (),
                                     round(subtree), present=False))
            continue
        cubes.append(CubePicture(
            id=cube.string, depth=cube.depth, parent=_string(parent),
            rows=found.element_count,
            bytes=round(sum(fb.block.element_count * bytes_per_row[fb.path]
                            for fb in found.blocks)),
            max_weight=fraction(found.max_weight), blocks=len(found.blocks),
            files=tuple(index[p] for p in found.files), subtree_rows=round(subtree),
        ))
    return RevisionPicture(
        revision_id=revision_id, staging=False, columns=tuple(revision.columns),
        space=_space(revision), cube_size=revision.desired_cube_size,
        rows=metrics.element_count, bytes=metrics.bytes, cubes=tuple(cubes), files=tuple(files),
        depths=tuple(DepthPicture(d.depth, d.cube_count, d.block_count, d.file_count,
                                  d.element_count) for d in metrics.depths),
    )


def _string(cube: Any) -> str | None:
    return None if cube is None else cube.string


def _space(revision: Any) -> tuple[str, ...]:
    """Per indexed column, the range its transformation maps onto the unit interval."""
    lines = []
    for i, transformer in enumerate(revision.column_transformers):
        t = revision.transformations[i] if i < len(revision.transformations) else None
        low, high = getattr(t, "min_number", None), getattr(t, "max_number", None)
        kind = transformer.type_name
        lines.append(f"{transformer.column_name} ({kind}): [{low}, {high}]" if low is not None
                     else f"{transformer.column_name} ({kind})")
    return tuple(lines)
