"""``optimize_table``: rewrite the files of a revision so that every cube is one block (FORMAT §8).

Appends leave a cube spread over many blocks (one per write that reached it) and staging files
outside the index. Optimize fixes both without changing what a sample returns:

* **Indexed revisions** (id > 0). The chosen files are read, every row's weight is recomputed
  (Spark's ``hash()``), and rows are assigned with the revision's *existing* effective cube
  thresholds (the minimum ``maxWeight`` over each cube's blocks): a row goes to the first cube of
  its container path whose threshold is >= its weight. No threshold is re-estimated and no
  revision is created. A first job counts the rows per cube exactly, the rollup groups cubes into
  files with those counts, a second job writes the files, and one commit per revision removes the
  old files and adds the new ones, all with ``dataChange=false``. Because thresholds are kept,
  every row stays heavier than the thresholds of all its ancestors, the invariant samples rely on,
  so samples return the same rows; after optimizing all files of a revision every cube has
  exactly one block.
* **Staging** (``revision_id=0``). The staging files (oldest first, until ``fraction`` of their
  bytes) are indexed with the normal write algorithm into the latest revision — which creates
  revision 1 on a converted table — and replaced in one commit (``dataChange=false``).

Cubes that exist only as ancestors of other cubes (no block of their own) are not given rows:
readers walk through them, so rows must keep walking through them too.

The Spark passes reuse the writer's building blocks (plan, assignment UDF, file-writing tasks,
estimation), so optimized files are written exactly like appended ones.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qbeast.commit import CommitProperties, add_file, delete_new_files
from qbeast.commit import commit_properties as commit_properties_of
from qbeast.core.revision import STAGING_REVISION_ID, Revision, fits_within
from qbeast.core.weight import fraction as weight_fraction
from qbeast.delta.actions import AddFile
from qbeast.delta.transaction import Transaction
from qbeast.errors import InvalidOptionError
from qbeast.index.thresholds import files_to_lay_out, pass_through_thresholds
from qbeast.operations.common import OperationResult, check_bool, check_optional_int, check_path
from qbeast.operations.tiering import (
    OPTIMIZE_OPERATION,
    Placement,
    appended_since_layout,
    plan_old_revisions,
    received_since_layout,
)
from qbeast.progress import Phase
from qbeast.spark.file_access import FileAccess
from qbeast.spark.task_progress import task_monitor
from qbeast.rebase import PlannedCommit, commit_with_retries, metadata_for
from qbeast.snapshot import NotAQbeastTableError, QbeastSnapshot
from qbeast.spark.read.files import read_files
from qbeast.spark.write.relayout import exact_cube_sizes, rewrite_with_sizes
from qbeast.spark.write.steps import index_rows

logger = logging.getLogger("qbeast.operations.optimize")

__all__ = ["OPTIMIZE_OPERATION", "OptimizeResult", "RevisionOptimization", "appended_since_layout",
           "optimize_table"]


def _phase(path: str, name: str, spark: Any = None) -> Phase:
    """A phase of an optimize; with ``spark``, its Spark tasks' progress is logged as it runs."""
    return Phase(logger, "optimize", path, name, monitor=task_monitor(spark))


@dataclass(frozen=True)
class RevisionOptimization:
    """One commit of an optimize: the revision whose files were replaced and by what."""

    revision_id: int
    target_revision_id: int
    version: int
    files_removed: tuple[str, ...]
    files_added: tuple[str, ...]
    rows: int
    blocks_removed: int
    blocks_added: int
    #: for a revision merge: the old revisions whose rows were re-indexed into the target
    merged_revisions: tuple[int, ...] = ()


@dataclass(frozen=True)
class OptimizeResult(OperationResult):
    """The commits an optimize made (none when there was nothing to rewrite)."""

    path: str
    commits: tuple[RevisionOptimization, ...]
    #: why revisions were left alone (e.g. already laid out: nothing to rewrite)
    notes: tuple[str, ...] = ()

    @property
    def versions(self) -> tuple[int, ...]:
        return tuple(c.version for c in self.commits)

    def summary_lines(self) -> list[str]:
        if not self.commits:
            return [f"optimize of {self.path}: nothing to rewrite"] + [f"  {n}" for n in self.notes]
        lines = [f"optimize of {self.path}: {len(self.commits)} commit(s)"]
        lines += [f"  {n}" for n in self.notes]
        for c in self.commits:
            into = (f" into revision {c.target_revision_id}"
                    if c.target_revision_id != c.revision_id else "")
            what = f"revision {c.revision_id}{into}"
            if c.merged_revisions:
                what = (f"revision(s) {', '.join(map(str, c.merged_revisions))} merged into "
                        f"revision {c.target_revision_id}")
            lines.append(
                f"  {what}: version {c.version}, "
                f"{len(c.files_removed)} file(s) / {c.blocks_removed} block(s) replaced by "
                f"{len(c.files_added)} file(s) / {c.blocks_added} block(s), {c.rows} rows"
            )
        return lines


def optimize_table(
    spark: Any,
    path: str,
    revision_id: int | None = None,
    fraction: float = 1.0,
    files: Sequence[str] | None = None,
    max_rewrite_ratio: float | None = None,
    merge_revisions: bool = False,
    commit_properties: CommitProperties | None = None,
) -> OptimizeResult:
    """Optimize the Qbeast table at ``path`` (see the module docstring).

    * default: all files of the latest revision;
    * ``revision_id``: that revision (``0`` = index the staging files into the latest revision);
    * ``fraction`` in (0, 1]: for an indexed revision, only the files holding a block whose
      ``minWeight`` is within the first ``fraction`` of the weight range (what a sample of that
      fraction reads); for staging, the oldest files up to that share of the staging bytes;
    * ``files``: these files (paths as in the Delta log), one commit per indexed revision they
      belong to; staging files in the list are ignored. Cannot be combined with the other two.
    * ``max_rewrite_ratio`` (e.g. 2.0; indexed revisions only): tiered maintenance. The revision
      is laid out only when the bytes it would rewrite are at most this many times the bytes
      appended to it since it was last laid out (:func:`appended_since_layout`); otherwise
      nothing is rewritten and the result says it was deferred. Every byte appended is counted
      by one layout only, so maintenance rewrites at most ``max_rewrite_ratio`` bytes per byte
      appended, whatever the appends reach (an LSM tree's tiering, applied to one revision).
      This is the default maintenance (dbt's ``optimize_after_run``), and it looks after the
      older revisions too (:mod:`qbeast.operations.tiering`): those inside the latest
      revision's space are merged into it (their rows re-indexed into it, one commit) once
      their bytes are at most ``max_rewrite_ratio`` times the latest revision's; the others
      receive no more appends and are closed once: what they received since their last layout
      moves into the latest revision (or, when more than appends changed them, they are laid
      out in place). Only files a layout would improve count and move
      (:class:`qbeast.operations.tiering.Placement`): appended files that overlap no more
      files than a laid-out tree's would, and hold at least half a cube, stay as they are
      (appends along a growing key, such as a daily model's, are never rewritten), and so do
      old revisions made only of such files.
    * ``merge_revisions=True``: first re-index the rows of every older revision that lies
      inside the latest revision's space into it, whatever their size (one commit; samples and
      rows unchanged), then lay the latest revision out.
    * ``commit_properties`` (:class:`qbeast.CommitProperties`): user metadata and an idempotent
      transaction recorded by every commit (an application version already committed makes the
      optimize a no-op), the re-plans allowed after a lost race, and a ``cancelled`` callback
      checked before the rewrite and right before each commit.
    """
    check_path(path)
    check_optional_int(revision_id, "revision_id", 0)
    if max_rewrite_ratio is not None and (
            isinstance(max_rewrite_ratio, bool) or not isinstance(max_rewrite_ratio, (int, float))
            or not max_rewrite_ratio > 0):
        raise InvalidOptionError(f"max_rewrite_ratio must be a number > 0 or None, got {max_rewrite_ratio!r}")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise InvalidOptionError(f"fraction must be a number in (0, 1], got {fraction!r}")
    check_bool(merge_revisions, "merge_revisions")
    props = commit_properties_of(commit_properties)
    maintenance = max_rewrite_ratio is not None or merge_revisions
    if maintenance and (files is not None or revision_id is not None or fraction != 1.0):
        raise InvalidOptionError(
            "max_rewrite_ratio and merge_revisions work on the whole table (the latest revision "
            "and the older ones); they cannot be combined with files, revision_id or fraction"
        )
    if files is not None:
        if revision_id is not None or fraction != 1.0:
            raise InvalidOptionError(
                "optimize takes either files=[...] or revision_id/fraction, not both"
            )
        if isinstance(files, str) or not all(isinstance(f, str) and f for f in files):
            raise InvalidOptionError(
                f"files must be a list of file paths as written in the Delta log, got {files!r}"
            )
    # how the optimize's jobs reach the table's files: decided once, before a store is built
    # (the session's store settings), and handed to every read and write of every commit
    access = FileAccess.decide(spark, path)
    snapshot = QbeastSnapshot.load(path)
    if not snapshot.is_qbeast:
        raise NotAQbeastTableError(
            f"optimize needs a Qbeast table, but {snapshot.table_path} has no Qbeast metadata; "
            "convert it with qbeast.convert_to_qbeast first"
        )
    snapshot.delta.check_writable()  # e.g. deletion vectors in use: the rows could not be read
    if snapshot.needs_upgrade:
        raise InvalidOptionError(
            f"{snapshot.table_path} still holds pre-0.6 Qbeast metadata; run "
            "qbeast.upgrade_format on it before optimizing"
        )
    started = time.perf_counter()
    notes: list[str] = []
    note = props.done_before(snapshot.delta)
    if note is not None:
        logger.info("optimize %s: %s", snapshot.table_path, note)
        return OptimizeResult(snapshot.table_path, (), (note,))
    props.check_cancelled(f"optimize of {snapshot.table_path}", "rewriting files")
    if files is not None:
        commits = _optimize_listed_files(access, snapshot, list(files), notes, props=props)
    elif maintenance:
        ratio = None if max_rewrite_ratio is None else float(max_rewrite_ratio)
        commits = _maintain(access, snapshot, ratio, merge_revisions, notes, props=props)
    else:
        rid = snapshot.latest_revision_id if revision_id is None else revision_id
        if rid == 0:
            chosen = _staging_selection(snapshot.staging_files(), fraction)
            commit = _index_staging(access, snapshot, chosen, props=props) if chosen else None
        else:
            revision = snapshot.revision(rid)  # unknown ids raise, listing the existing ones
            chosen = _still_to_lay_out(snapshot, rid, _indexed_selection(snapshot, rid, fraction), notes)
            commit = _rewrite_revision(access, snapshot, revision, chosen, props=props) if chosen else None
        commits = [commit] if commit is not None else []
    for note in notes:
        logger.info("optimize %s: %s", snapshot.table_path, note)
    result = OptimizeResult(snapshot.table_path, tuple(commits), tuple(notes))
    logger.info("optimize %s: finished commits=%d elapsed=%.2fs", snapshot.table_path,
                len(commits), time.perf_counter() - started)
    return result


# -- which files ----------------------------------------------------------------------------------


def _indexed_selection(snapshot: QbeastSnapshot, revision_id: int, fraction: float) -> list[AddFile]:
    """All files of the revision, or those with a block a sample of ``fraction`` would start in."""
    files = snapshot.revision_files(revision_id)
    if fraction >= 1.0:
        return files
    return [f for f in files
            if any(weight_fraction(b.min_weight) <= fraction for b in snapshot.blocks(f))]


def _staging_selection(staging: list[AddFile], fraction: float) -> list[AddFile]:
    """Oldest staging files until their bytes reach ``fraction`` of the total (crossing one kept)."""
    ordered = sorted(staging, key=lambda f: (f.modification_time, f.path))
    total = sum(f.size for f in ordered)
    chosen: list[AddFile] = []
    size = 0
    for add in ordered:
        if chosen and size >= fraction * total:
            break
        chosen.append(add)
        size += add.size
    return chosen


def _still_to_lay_out(snapshot: QbeastSnapshot, revision_id: int, chosen: list[AddFile],
                      notes: list[str]) -> list[AddFile]:
    """The files of ``chosen`` that hold a cube still to lay out (:func:`files_to_lay_out`):
    rewriting the others would change nothing but their names. ``notes`` says what was left."""
    if not chosen:
        return chosen
    needed = files_to_lay_out(snapshot.index_status(revision_id), {f.path for f in chosen})
    if not needed:
        notes.append(f"revision {revision_id}: already laid out (every cube of the {len(chosen)} "
                     "file(s) is one block at its threshold), nothing to rewrite")
        return []
    if len(needed) < len(chosen):
        notes.append(f"revision {revision_id}: {len(chosen) - len(needed)} of {len(chosen)} file(s) "
                     "already laid out, left as they are")
    return [f for f in chosen if f.path in needed]


def _within_budget(snapshot: QbeastSnapshot, revision_id: int, chosen: list[AddFile],
                   ratio: float, notes: list[str], placement: Placement) -> list[AddFile]:
    """``chosen`` when rewriting it costs at most ``ratio`` times the bytes appended since the
    last layout into files that are not in place (:class:`Placement`), else nothing (``notes``
    says how far the revision is from its next layout)."""
    rewrite = sum(int(f.size or 0) for f in chosen)
    received = received_since_layout(snapshot, revision_id, enough=math.ceil(rewrite / ratio),
                                     counted=placement.misplaced)
    appended = received.appended_bytes
    if rewrite <= ratio * appended:
        notes.append(f"revision {revision_id}: laying out {rewrite} bytes for {appended} bytes "
                     f"appended since the last layout (budget {ratio:g}x)")
        return chosen
    if received.placed_bytes and not appended:
        notes.append(f"revision {revision_id}: the {received.placed_bytes} bytes appended since "
                     "the last layout are in place (their files overlap no more files than a "
                     "laid-out tree's would): nothing to lay out")
        return []
    placed = (f" ({received.placed_bytes} more bytes appended are in place and do not count)"
              if received.placed_bytes else "")
    notes.append(f"revision {revision_id}: layout deferred: it would rewrite {rewrite} bytes for "
                 f"{appended} bytes appended since the last layout{placed} (budget {ratio:g}x); "
                 "it runs once the appends reach the budget")
    return []


# -- the default maintenance ----------------------------------------------------------------------


def _maintain(access: FileAccess, snapshot: QbeastSnapshot, ratio: float | None, merge_all: bool,
              notes: list[str], *, props: CommitProperties) -> list[RevisionOptimization]:
    """Old revisions first (merged into the latest, or laid out in place once closed), then the
    latest revision's layout, within the budget ``ratio`` when one is given."""
    commits: list[RevisionOptimization] = []
    latest_id = snapshot.latest_revision_id
    if latest_id == 0:
        notes.append("the table has no indexed revision yet (optimize revision_id=0 indexes "
                     "its staging files)")
        return commits
    placements: dict[int, Placement] = {}

    def placement_of(current: QbeastSnapshot) -> Placement:
        """The placement of ``current``: every file's stats are read once per table version."""
        if current.version not in placements:
            placements[current.version] = Placement.of(current)
        return placements[current.version]

    by_revision = snapshot.files_by_revision()
    live = {rid: sum(int(f.size or 0) for f in files) for rid, files in by_revision.items()}
    # the budgeted maintenance rewrites only what a layout would improve; merge_revisions=True
    # merges whatever fits
    in_place = [] if ratio is None or merge_all else [
        rid for rid, files in by_revision.items()
        if rid not in (latest_id, STAGING_REVISION_ID) and files
        and not placement_of(snapshot).misplaced(f.path for f in files)]
    plan = plan_old_revisions(snapshot.revisions, live, latest_id, None if merge_all else ratio,
                              in_place)
    notes.extend(plan.notes)
    if plan.merge:
        merged = _merge_revisions(access, snapshot, plan.merge, notes, props=props)
        if merged is not None:
            commits.append(merged)
            snapshot = QbeastSnapshot.load(snapshot.table_path)
    if ratio is not None:
        for rid in plan.close:
            commit = _close_revision(access, snapshot, rid, notes, placement_of(snapshot), props=props)
            if commit is not None:
                commits.append(commit)
                snapshot = QbeastSnapshot.load(snapshot.table_path)
    chosen = _still_to_lay_out(snapshot, latest_id, snapshot.revision_files(latest_id), notes)
    if chosen and ratio is not None:
        chosen = _within_budget(snapshot, latest_id, chosen, ratio, notes, placement_of(snapshot))
    if chosen:
        commits.append(_rewrite_revision(access, snapshot, snapshot.revision(latest_id), chosen, props=props))
    return commits


def _close_revision(access: FileAccess, snapshot: QbeastSnapshot, revision_id: int,
                    notes: list[str], placement: Placement, *, props: CommitProperties) -> RevisionOptimization | None:
    """Lay out an old revision that no append reaches any more, once.

    When it fits the latest revision and received only appends since its last layout, the
    files it received that are not in place (:class:`Placement`) move into the latest revision
    (their rows re-indexed there with its thresholds and weight bands): what stays is the
    laid-out tree and the appends already in place, and only the moved bytes are rewritten.
    Otherwise its files still to lay out are laid out in place.
    """
    files = snapshot.revision_files(revision_id)
    needed = files_to_lay_out(snapshot.index_status(revision_id), {f.path for f in files})
    if not needed:
        return None  # laid out: nothing to do, and no log walk
    revision = snapshot.revision(revision_id)
    if fits_within(revision, snapshot.latest_revision):
        received = received_since_layout(snapshot, revision_id)
        if received.paths and received.only_appends:
            wanted = placement.misplaced(received.paths)
            if not wanted:
                notes.append(f"revision {revision_id}: closed (a newer revision receives the "
                             f"appends); the {len(received.paths)} file(s) it received since its "
                             "last layout are in place, kept as they are")
                return None
            notes.append(f"revision {revision_id}: closed (a newer revision receives the appends); "
                         f"{len(wanted)} of the {len(received.paths)} file(s) it received since "
                         f"its last layout move into revision {snapshot.latest_revision_id}")
            return _merge_revisions(access, snapshot, [revision_id], notes,
                                    files=[f for f in files if f.path in wanted],
                                    moved_appends=True, props=props)
    chosen = [f for f in files if f.path in needed]
    notes.append(f"revision {revision_id}: closed (a newer revision receives the appends), "
                 f"laying out its {len(chosen)} file(s) still to lay out in place")
    return _rewrite_revision(access, snapshot, revision, chosen, props=props)


def _merge_revisions(access: FileAccess, snapshot: QbeastSnapshot, sources: Sequence[int],
                     notes: list[str], files: list[AddFile] | None = None,
                     moved_appends: bool = False, *, props: CommitProperties) -> RevisionOptimization | None:
    """Re-index the rows of the ``sources`` revisions (all their files, or ``files``) into the
    latest revision, in one commit.

    ``moved_appends``: ``files`` are the rows a closed revision received since its last layout
    (the commit records ``movedRevisionIds``; a whole merge records ``mergedRevisionIds``).
    Neither counts for the latest revision's layout budget (only appends pay for a layout:
    :func:`qbeast.operations.tiering.appended_since_layout`).

    The rows are appended to the latest revision's tree as an indexed append would append them
    (its existing thresholds kept, new cubes estimated), so a concurrent append into that
    revision still commutes with this commit, and every row keeps its weight: a sample returns
    the same rows before and after. The sources' files are removed with ``dataChange=false``.
    """
    table = snapshot.table_path
    latest = snapshot.latest_revision
    chosen = files if files is not None else [f for rid in sources
                                              for f in snapshot.revision_files(rid)]
    phase = _phase(table, f"merge of revision(s) {', '.join(map(str, sources))}", access.spark)
    indexed = index_rows(access, _read_files(access, snapshot, chosen), snapshot, table,
                         rows_already_in_table=True)
    adds = [add_file(w, indexed.revision.revision_id, data_change=False) for w in indexed.written]
    if indexed.new_revision or indexed.revision.revision_id != latest.revision_id:
        delete_new_files(snapshot.delta.log, adds)  # cannot happen after fits_within
        notes.append(f"revision(s) {list(sources)} did not fit revision {latest.revision_id}: "
                     "not merged")
        return None
    phase.done(files=len(chosen), rows=indexed.rows, added=len(adds))
    result = _commit(snapshot, props=props, revision_id=min(sources), revision=latest, opens_revision=False,
                     removed=chosen, adds=adds,
                     parameters={("movedRevisionIds" if moved_appends else "mergedRevisionIds"):
                                 list(sources),
                                 "targetRevisionId": latest.revision_id,
                                 "numFilesRewritten": len(chosen)},
                     blocks_added=sum(len(w.blocks) for w in indexed.written))
    return dataclasses.replace(result, merged_revisions=tuple(sources))



def _optimize_listed_files(access: FileAccess, snapshot: QbeastSnapshot,
                           paths: list[str], notes: list[str], *, props: CommitProperties) -> list[RevisionOptimization]:
    active = snapshot.delta.files
    unknown = [p for p in paths if p not in active]
    if unknown:
        raise InvalidOptionError(
            f"files {unknown[:5]} are not active files of {snapshot.table_path}; give paths as "
            "written in the Delta log (e.g. the names listed by QbeastTable.snapshot().files())"
        )
    wanted = set(paths)
    commits: list[RevisionOptimization] = []
    for rid, files in sorted(snapshot.files_by_revision().items()):
        chosen = [f for f in files if f.path in wanted]
        if rid != 0:
            chosen = _still_to_lay_out(snapshot, rid, chosen, notes)
        if rid == 0:
            if chosen:
                logger.info("optimize %s: ignoring %d staging file(s) of the list (use "
                            "revision_id=0 to index staging files)", snapshot.table_path, len(chosen))
            continue
        if chosen:
            # each commit starts from the table as the previous one left it
            current = QbeastSnapshot.load(snapshot.table_path) if commits else snapshot
            commits.append(_rewrite_revision(access, current, current.revision(rid), chosen, props=props))
    return commits


# -- rewriting an indexed revision ----------------------------------------------------------------


def _rewrite_revision(access: FileAccess, snapshot: QbeastSnapshot, revision: Revision,
                      chosen: list[AddFile], *, props: CommitProperties) -> RevisionOptimization:
    """Lay ``chosen`` out again in ``revision`` with its existing thresholds: count the rows of
    every cube exactly, write the files with those sizes, commit (the jobs are the write
    wing's, :mod:`qbeast.spark.write.relayout`)."""
    table = snapshot.table_path
    rid = revision.revision_id
    thresholds = pass_through_thresholds(snapshot.index_status(rid))
    data = _read_files(access, snapshot, chosen)

    phase = _phase(table, f"revision {rid}: exact cube sizes", access.spark)
    sizes = exact_cube_sizes(data, revision, thresholds)
    phase.done(files=len(chosen), rows=sum(sizes.values()), cubes=len(sizes))

    phase = _phase(table, f"revision {rid}: write", access.spark)
    # the light bands' sharing is judged on the whole table's rows, not only the rewritten ones
    written = rewrite_with_sizes(data, revision, thresholds, sizes, table, access,
                                 table_rows=snapshot.delta.num_records)
    adds = [add_file(w, rid, data_change=False) for w in written]
    phase.done(files=len(adds), rows=sum(w.num_records for w in written))
    return _commit(snapshot, props=props, revision_id=rid, revision=revision, opens_revision=False,
                   removed=chosen, adds=adds,
                   parameters={"revisionId": rid, "numFilesRewritten": len(chosen)},
                   blocks_added=sum(len(w.blocks) for w in written))


def _read_files(access: FileAccess, snapshot: QbeastSnapshot, files: list[AddFile]) -> Any:
    """The rows of ``files`` with the table's schema (columns a file lacks read as null),
    refused before anything is read where Spark's parquet reader cannot open them
    (:meth:`FileAccess.check_native`)."""
    access.check_native()
    return read_files(access, snapshot.delta.schema, [snapshot.delta.file_path(f) for f in files],
                      [int(f.size) if f.size else None for f in files])


# -- indexing the staging files -------------------------------------------------------------------


def _index_staging(access: FileAccess, snapshot: QbeastSnapshot,
                   chosen: list[AddFile], *, props: CommitProperties) -> RevisionOptimization:
    """Index the rows of staging files into the latest revision (opening one when they grow
    its space, or revision 1 on a converted table), as an indexed append would."""
    table = snapshot.table_path
    phase = _phase(table, "staging", access.spark)
    indexed = index_rows(access, _read_files(access, snapshot, chosen), snapshot, table,
                         rows_already_in_table=True)
    revision = indexed.revision
    adds = [add_file(w, revision.revision_id, data_change=False) for w in indexed.written]
    phase.done(files=len(chosen), rows=indexed.rows, revision=revision.revision_id,
               new_revision=indexed.new_revision)
    return _commit(snapshot, props=props, revision_id=0, revision=revision,
                   opens_revision=indexed.new_revision and indexed.rows > 0,
                   removed=chosen, adds=adds,
                   parameters={"revisionId": 0, "targetRevisionId": revision.revision_id,
                               "numFilesRewritten": len(chosen)},
                   blocks_added=sum(len(w.blocks) for w in indexed.written))


# -- commit ---------------------------------------------------------------------------------------


def _commit(snapshot: QbeastSnapshot, *, props: CommitProperties, revision_id: int, revision: Revision,
            opens_revision: bool, removed: list[AddFile], adds: list[AddFile],
            parameters: dict, blocks_added: int) -> RevisionOptimization:
    """One transaction: the old files out, the new ones in, all with ``dataChange=false``.

    A concurrent commit that changed the metadata (an append opening a revision) does not undo
    the rewrite: it is re-planned on the new snapshot and committed again
    (:func:`qbeast.rebase.commit_with_retries`); if a file it rewrites was removed meanwhile,
    it fails with ``ConcurrentDeleteReadError``. A failed commit deletes the new files: nothing
    references them.
    """
    table = snapshot.table_path
    phase = _phase(table, f"revision {revision_id}: commit")
    planned = PlannedCommit(revision, opens_revision, adds, removes=removed,
                            read_version=snapshot.version)
    rows = sum(a.num_records or 0 for a in adds)

    def parameters_for(plan: PlannedCommit) -> dict:
        if "targetRevisionId" in parameters and plan.revision is not None:
            return {**parameters, "targetRevisionId": plan.revision.revision_id}  # re-tagged
        return parameters

    version, planned = commit_with_retries(
        table, planned, snapshot, lambda plan, fresh: props.stamp(_transaction(plan, fresh)),
        what="optimize",
        operation=OPTIMIZE_OPERATION,
        parameters=parameters_for,
        metrics={"numRemovedFiles": len(removed), "numAddedFiles": len(adds),
                 "numOutputRows": rows, "numRemovedBytes": sum(f.size for f in removed),
                 "numAddedBytes": sum(a.size for a in adds)},
        info=props.info(),
        max_retries=props.max_retries,
        before_commit=lambda: props.check_cancelled(f"optimize of {table}", "the commit"),
    )
    adds = planned.adds
    target_revision_id = planned.revision.revision_id if planned.revision else revision_id
    blocks_removed = sum(len(snapshot.blocks(f)) for f in removed) if revision_id else 0
    phase.done(version=version, removed=len(removed), added=len(adds), rows=rows)
    return RevisionOptimization(revision_id, target_revision_id, version,
                                tuple(f.path for f in removed), tuple(a.path for a in adds),
                                rows, blocks_removed, blocks_added)


def _transaction(planned: PlannedCommit, snapshot: QbeastSnapshot | None) -> Transaction:
    """The transaction of an optimize plan on top of ``snapshot``, its new files aside."""
    if snapshot is None:
        raise NotAQbeastTableError("the table disappeared while it was being optimized")
    transaction = snapshot.delta.log.start_transaction(snapshot.delta)
    metadata = metadata_for(planned, snapshot)
    if metadata is not None:
        transaction.update_metadata(metadata)
    transaction.mark_files_read(f.path for f in planned.removes)
    transaction.add_actions([f.remove(data_change=False) for f in planned.removes])
    return transaction
