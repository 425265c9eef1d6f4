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

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qbeast.commit import add_file
from qbeast.core.cube_id import CubeId
from qbeast.core.revision import Revision
from qbeast.core.sql import quote_identifier
from qbeast.core.weight import fraction as weight_fraction
from qbeast.delta.actions import AddFile, Metadata
from qbeast.delta.transaction import Transaction
from qbeast.errors import InvalidOptionError
from qbeast.index.assignment import build_write_plan
from qbeast.index.thresholds import files_to_lay_out, pass_through_thresholds
from qbeast.operations.common import OperationResult, check_optional_int, check_path
from qbeast.progress import Phase
from qbeast.rebase import PlannedCommit, commit_with_retries, metadata_for
from qbeast.snapshot import NotAQbeastTableError, QbeastSnapshot
from qbeast.spark.write_options import ASSIGNMENT_COLUMN, WEIGHT_COLUMN, WriteOptions

logger = logging.getLogger("qbeast.operations.optimize")

OPTIMIZE_OPERATION = "OPTIMIZE"


def _phase(path: str, name: str) -> Phase:
    return Phase(logger, "optimize", path, name)


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
            lines.append(
                f"  revision {c.revision_id}{into}: version {c.version}, "
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
    """
    check_path(path)
    check_optional_int(revision_id, "revision_id", 0)
    if max_rewrite_ratio is not None and (
            isinstance(max_rewrite_ratio, bool) or not isinstance(max_rewrite_ratio, (int, float))
            or not max_rewrite_ratio > 0):
        raise InvalidOptionError(f"max_rewrite_ratio must be a number > 0 or None, got {max_rewrite_ratio!r}")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise InvalidOptionError(f"fraction must be a number in (0, 1], got {fraction!r}")
    if files is not None:
        if revision_id is not None or fraction != 1.0:
            raise InvalidOptionError(
                "optimize takes either files=[...] or revision_id/fraction, not both"
            )
        if isinstance(files, str) or not all(isinstance(f, str) and f for f in files):
            raise InvalidOptionError(
                f"files must be a list of file paths as written in the Delta log, got {files!r}"
            )
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
    if files is not None:
        commits = _optimize_listed_files(spark, snapshot, list(files), notes)
    else:
        rid = snapshot.latest_revision_id if revision_id is None else revision_id
        if rid == 0:
            chosen = _staging_selection(snapshot.staging_files(), fraction)
            commit = _index_staging(spark, snapshot, chosen) if chosen else None
        else:
            revision = snapshot.revision(rid)  # unknown ids raise, listing the existing ones
            chosen = _still_to_lay_out(snapshot, rid, _indexed_selection(snapshot, rid, fraction), notes)
            if chosen and max_rewrite_ratio is not None:
                chosen = _within_budget(snapshot, rid, chosen, float(max_rewrite_ratio), notes)
            commit = _rewrite_revision(spark, snapshot, revision, chosen) if chosen else None
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


def appended_since_layout(snapshot: QbeastSnapshot, revision_id: int) -> int:
    """Bytes of the revision's files written after it was last laid out.

    The revision was last laid out by its latest OPTIMIZE commit, or else by the write that
    created it (a fresh revision is laid out). A data file is written before the commit that
    adds it, so the files committed later are those modified after that commit's timestamp.
    Read from the log's commit infos; no data is read.
    """
    from qbeast.delta.log import DeltaLog

    files = snapshot.revision_files(revision_id)
    if not files:
        return 0
    history = DeltaLog.for_path(snapshot.table_path).history()  # newest first
    point = None
    for info in history:
        if info.operation == "OPTIMIZE" and str(info.operation_parameters.get("revisionId")) == str(revision_id):
            point = info.timestamp
            break
    oldest = min(f.modification_time for f in files)
    created = next((info.timestamp for info in reversed(history)
                    if info.timestamp is not None and info.timestamp >= oldest), None)
    candidates = [t for t in (point, created) if t is not None]
    layout_point = max(candidates) if candidates else oldest
    return sum(int(f.size or 0) for f in files if f.modification_time > layout_point)


def _within_budget(snapshot: QbeastSnapshot, revision_id: int, chosen: list[AddFile],
                   ratio: float, notes: list[str]) -> list[AddFile]:
    """``chosen`` when rewriting it costs at most ``ratio`` times the bytes appended since the
    last layout, else nothing (``notes`` says how far the revision is from its next layout)."""
    rewrite = sum(int(f.size or 0) for f in chosen)
    appended = appended_since_layout(snapshot, revision_id)
    if rewrite <= ratio * appended:
        notes.append(f"revision {revision_id}: laying out {rewrite} bytes for {appended} bytes "
                     f"appended since the last layout (budget {ratio:g}x)")
        return chosen
    notes.append(f"revision {revision_id}: layout deferred: it would rewrite {rewrite} bytes for "
                 f"{appended} bytes appended since the last layout (budget {ratio:g}x); it runs "
                 "once the appends reach the budget")
    return []


def _optimize_listed_files(spark: Any, snapshot: QbeastSnapshot,
                           paths: list[str], notes: list[str]) -> list[RevisionOptimization]:
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
            commits.append(_rewrite_revision(spark, current, current.revision(rid), chosen))
    return commits


# -- rewriting an indexed revision ----------------------------------------------------------------


def _rewrite_revision(spark: Any, snapshot: QbeastSnapshot, revision: Revision,
                      chosen: list[AddFile]) -> RevisionOptimization:
    from pyspark.sql import functions as F

    from qbeast.spark.assignment_udf import assignment_udf, weight_column
    from qbeast.spark.write_steps import weight_bands, write_files

    table = snapshot.table_path
    rid = revision.revision_id
    dims = revision.dimension_count
    thresholds = pass_through_thresholds(snapshot.index_status(rid))
    data = _read_files(spark, snapshot, chosen)
    columns = list(revision.columns)
    indexed = [F.col(quote_identifier(c)) for c in columns]

    phase = _phase(table, f"revision {rid}: exact cube sizes")
    counting = build_write_plan(dims, thresholds, {}, revision.desired_cube_size)
    weighted = data.select(*indexed, weight_column(columns).alias(WEIGHT_COLUMN))
    udf = assignment_udf(revision, counting)
    counted = (
        weighted.select(udf(*indexed, F.col(WEIGHT_COLUMN)).alias(ASSIGNMENT_COLUMN))
        .groupBy(F.col(f"{ASSIGNMENT_COLUMN}.cube").alias("cube"))
        .count()
        .collect()
    )
    sizes = {CubeId.from_string(dims, counting.cube_and_threshold(int(r["cube"]))[0]): int(r["count"])
             for r in counted}
    phase.done(files=len(chosen), rows=sum(sizes.values()), cubes=len(sizes))

    phase = _phase(table, f"revision {rid}: write")
    plan = build_write_plan(dims, thresholds, sizes, revision.desired_cube_size,
                            weight_bands=weight_bands(spark))
    written = write_files(data, revision, plan, table) if sizes else []
    adds = [add_file(w, rid, data_change=False) for w in written]
    phase.done(files=len(adds), rows=sum(w.num_records for w in written))
    return _commit(snapshot, revision_id=rid, revision=revision, opens_revision=False,
                   removed=chosen, adds=adds,
                   parameters={"revisionId": rid, "numFilesRewritten": len(chosen)},
                   blocks_added=sum(len(w.blocks) for w in written))


def _read_files(spark: Any, snapshot: QbeastSnapshot, files: list[AddFile]) -> Any:
    """The rows of ``files`` with the table's schema (columns a file lacks read as null)."""
    from pyspark.sql.types import StructType

    from qbeast.spark.reader import spark_path

    schema = StructType.fromJson(snapshot.delta.schema)
    return spark.read.schema(schema).parquet(*[spark_path(snapshot.delta.file_path(f)) for f in files])


# -- indexing the staging files -------------------------------------------------------------------


def _index_staging(spark: Any, snapshot: QbeastSnapshot,
                   chosen: list[AddFile]) -> RevisionOptimization:
    from qbeast.spark.revision_change import choose_revision, index_spec
    from qbeast.spark.write_steps import analyze, with_threshold_markers, write_files

    table = snapshot.table_path
    latest = snapshot.latest_revision
    data = _read_files(spark, snapshot, chosen)
    phase = _phase(table, "staging: stats")
    spec = index_spec(data.schema, None, latest)
    revision, is_new, count = choose_revision(
        data, spec, base=latest, cube_size=latest.desired_cube_size, column_stats=None,
        table_id=latest.table_id,
    )
    phase.done(files=len(chosen), rows=count, revision=revision.revision_id, new_revision=is_new)
    adds: list[AddFile] = []
    blocks_added = 0
    if count > 0:
        existing = None if is_new else snapshot.index_status(revision.revision_id)
        plan = analyze(spark, data, revision, desired_cube_size=revision.desired_cube_size,
                       count=count, existing=existing, options=WriteOptions(), path=table)
        phase = _phase(table, "staging: write")
        written = with_threshold_markers(write_files(data, revision, plan, table), plan, existing)
        adds = [add_file(w, revision.revision_id, data_change=False) for w in written]
        blocks_added = sum(len(w.blocks) for w in written)
        phase.done(files=len(adds), rows=count)
    return _commit(snapshot, revision_id=0, revision=revision, opens_revision=is_new and count > 0,
                   removed=chosen, adds=adds,
                   parameters={"revisionId": 0, "targetRevisionId": revision.revision_id,
                               "numFilesRewritten": len(chosen)},
                   blocks_added=blocks_added)


# -- commit ---------------------------------------------------------------------------------------


def _commit(snapshot: QbeastSnapshot, *, revision_id: int, revision: Revision,
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
        table, planned, snapshot, _transaction,
        what="optimize",
        operation=OPTIMIZE_OPERATION,
        parameters=parameters_for,
        metrics={"numRemovedFiles": len(removed), "numAddedFiles": len(adds),
                 "numOutputRows": rows, "numRemovedBytes": sum(f.size for f in removed),
                 "numAddedBytes": sum(a.size for a in adds)},
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
    metadata = metadata_for(planned, snapshot, _no_new_table)
    if metadata is not None:
        transaction.update_metadata(metadata)
    transaction.mark_files_read(f.path for f in planned.removes)
    transaction.add_actions([f.remove(data_change=False) for f in planned.removes])
    return transaction


def _no_new_table(schema: str, configuration: dict[str, str]) -> Metadata:
    raise AssertionError("optimize never creates a table")
