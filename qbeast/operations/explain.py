"""``explain_read``: what a sampled and/or filtered read will open, and why.

A user who chose ``columns_to_index`` and ``cube_size`` wants to know whether a query benefits:
which cubes the filter's boxes meet, which of them a sample's weight bands need, which files the
min/max statistics drop, which files are read only up to a prefix, and the totals against the
table. Every number comes from the read planner itself (:func:`qbeast.spark.read.planner.plan_read`
with a :class:`~qbeast.spark.read.planner.PlanTrace`), so the explanation is what a read does,
not a second opinion; the index picture (:mod:`qbeast.operations.index_picture`) draws the same
result. No data is read, only the Delta log (and, for prefix reads, parquet footers).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qbeast.core import expressions as ex
from qbeast.operations.common import OperationResult, check_optional_int, check_path
from qbeast.spark.read.planner import PlanTrace, RevisionTrace, load_snapshot, plan_read, rows_to_read
from qbeast.spark.read.predicates import user_predicate


@dataclass(frozen=True)
class FileRead:
    """One file the read opens: its Delta log path, size and rows, and what is read of it."""

    path: str
    revision_id: int
    size: int
    rows: int | None
    bytes_read: int
    rows_read: int | None


@dataclass(frozen=True)
class RevisionReasons:
    """The planner's decisions for one revision, counted (see :class:`RevisionTrace`)."""

    revision_id: int
    indexed: bool
    weighted: bool
    files: int
    cubes: int
    cubes_in_boxes: int
    cubes_selected: int
    blocks_selected: int
    files_by_index: int
    files_read: int
    cubes_read: int  # cubes with a needed block in a file the read opens
    files_skipped: int = 0  # of files_by_index, removed by the skipping indexes


@dataclass(frozen=True)
class ReadExplanation(OperationResult):
    """What a read of ``fraction`` and ``filter`` opens, per reason, with the totals."""

    path: str
    version: int
    fraction: float | None
    filter: str | None
    #: the part of the filter the planner prunes with (None: no filter, or nothing it can use)
    pruning: str | None
    files_read: int
    total_files: int
    bytes_read: int
    total_bytes: int
    rows_read: int | None
    total_rows: int | None
    prefix_files: int
    revisions: tuple[RevisionReasons, ...]
    files: tuple[FileRead, ...]
    #: ``(revision id, cube string id)`` of every cube the read needs a block of, in a file it
    #: opens
    cubes: tuple[tuple[int, str], ...]

    def summary_lines(self) -> list[str]:
        asked = [f"sample {self.fraction:g}" if self.fraction is not None else "no sample",
                 f"filter {self.filter}" if self.filter else "no filter"]
        lines = [f"read of {self.path} at version {self.version}: {', '.join(asked)}"]
        if self.filter is not None:
            lines.append(f"filter prunes: {self.pruning}" if self.pruning else
                         "filter prunes: nothing (no comparison the planner can use; the rows "
                         "are still filtered)")
        for r in self.revisions:
            lines += _revision_lines(r, self.filter is not None, self.fraction)
        if self.prefix_files:
            lines.append(f"row groups:    {self.prefix_files} of the files are read only up to the "
                         "weight bands the sample needs (a prefix of each file)")
        lines.append(f"total:         files {self.files_read} of {self.total_files}, "
                     f"rows {_count(self.rows_read)} of {_count(self.total_rows)}"
                     f"{_share(self.rows_read, self.total_rows)}, bytes {self.bytes_read} of "
                     f"{self.total_bytes}{_share(self.bytes_read, self.total_bytes)}")
        return lines


def _revision_lines(r: RevisionReasons, filtered: bool, fraction: float | None) -> list[str]:
    name = f"revision {r.revision_id}"
    if not r.indexed:
        why = "staging files, no index" if r.revision_id == 0 else "no usable index (upgrade it)"
        lines = [f"no index:      {name}: {r.files} files ({why}): all of them candidates"]
    else:
        if filtered:
            lines = [f"index boxes:   {name}: {r.cubes_in_boxes} of {r.cubes} cubes meet the "
                     "filter's boxes on the indexed columns"]
        else:
            lines = [f"index boxes:   {name}: no filter, all {r.cubes} cubes"]
        if r.weighted and fraction is not None:
            lines.append(f"weight bands:  {name}: sample {fraction:g} needs {r.cubes_selected} of "
                         f"those {r.cubes_in_boxes} cubes, {r.blocks_selected} blocks")
        elif fraction is not None:
            lines.append(f"weight bands:  {name}: indexed on other columns than the sample "
                         "hashes: its weights cannot prune")
        lines.append(f"index files:   {name}: {r.files_by_index} of {r.files} files hold a "
                     "needed block")
    if r.files_skipped:
        lines.append(f"skipping idx:  {name}: {r.files_skipped} of {r.files_by_index} files hold "
                     "none of the filter's values")
    candidates = r.files_by_index - r.files_skipped
    dropped = candidates - r.files_read
    kept = f", {r.cubes_read} cubes in them" if r.indexed else ""
    lines.append(f"min/max stats: {name}: {dropped} of {candidates} files dropped, "
                 f"{r.files_read} read{kept}")
    return lines


def _count(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def _share(part: int | None, whole: int | None) -> str:
    if part is None or not whole:
        return ""
    return f" ({100.0 * part / whole:.1f}%)"


def filter_text(filter: str | ex.Expression | None) -> str | None:  # noqa: A002
    """How a filter is shown: its SQL text, or the expression's own text."""
    if filter is None:
        return None
    return filter if isinstance(filter, str) else ex.expression_text(filter)


def explain_read(path: str, fraction: float | None = None,
                 filter: str | ex.Expression | None = None,  # noqa: A002
                 version: int | None = None) -> ReadExplanation:
    """What a read of the table at ``path`` (at ``version``, latest by default) sampled to
    ``fraction`` and filtered by ``filter`` (SQL text or a core expression) opens, and why."""
    check_path(path)
    check_optional_int(version, "version", 0)
    return explain_snapshot(load_snapshot(path, version), fraction, filter)


def explain_snapshot(snapshot: Any, fraction: float | None = None,
                     filter: str | ex.Expression | None = None) -> ReadExplanation:  # noqa: A002
    """The explanation of a read of ``snapshot`` (a :class:`qbeast.snapshot.QbeastSnapshot`)."""
    predicate, _ = user_predicate(snapshot, filter)
    trace = PlanTrace()
    plan = plan_read(snapshot, fraction=fraction, predicate=predicate, trace=trace)
    delta = snapshot.delta
    adds = delta.files
    reads: list[FileRead] = []
    for planned in plan.files:
        add = adds[trace.kept[planned.path]]
        rows = add.num_records
        reads.append(FileRead(add.path, planned.revision_id, planned.size, rows,
                              planned.bytes_to_read, rows_to_read(planned, rows)))
    read_paths = {f.path for f in reads}
    revisions = tuple(_reasons(t, read_paths, trace.skipped) for t in trace.revisions)
    rows_read = [f.rows_read for f in reads]
    return ReadExplanation(
        path=plan.table_path, version=plan.version, fraction=fraction, filter=filter_text(filter),
        pruning=None if isinstance(predicate, ex.AlwaysTrue) else ex.expression_text(predicate),
        files_read=len(reads), total_files=plan.total_files, bytes_read=plan.selected_bytes,
        total_bytes=plan.total_bytes,
        rows_read=None if None in rows_read else sum(r for r in rows_read if r is not None),
        total_rows=delta.num_records,
        prefix_files=sum(1 for f in plan.files if f.read_size is not None),
        revisions=revisions, files=tuple(reads),
        cubes=tuple((t.revision_id, c) for t in trace.revisions for c in _cubes_read(t, read_paths)),
    )


def _cubes_read(trace: RevisionTrace, read_paths: set[str]) -> tuple[str, ...]:
    """Cubes of ``trace`` with a needed block in a file the read opens (the min/max statistics
    may drop every file holding a cube the index chose)."""
    return tuple(dict.fromkeys(cube for cube, path in trace.blocks_needed if path in read_paths))


def _reasons(trace: RevisionTrace, read_paths: set[str], skipped: set[str]) -> RevisionReasons:
    return RevisionReasons(
        revision_id=trace.revision_id, indexed=trace.indexed, weighted=trace.weighted,
        files=len(trace.files), cubes=trace.cube_count, cubes_in_boxes=trace.cubes_in_boxes,
        cubes_selected=len(trace.cubes_selected), blocks_selected=len(trace.blocks_needed),
        files_by_index=len(trace.files_selected),
        files_read=sum(1 for p in trace.files_selected if p in read_paths),
        cubes_read=len(_cubes_read(trace, read_paths)),
        files_skipped=sum(1 for p in trace.files_selected if p in skipped),
    )
