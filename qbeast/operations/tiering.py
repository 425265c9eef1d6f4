"""Tiered maintenance: what the default maintenance rewrites, decided from the log alone.

Two LSM-style rules keep a table's index effective as appends arrive, each with a bounded
write amplification:

* **layout budget** (one revision): a revision is laid out again only when the bytes the layout
  rewrites are at most ``ratio`` times the bytes appended to it since it was last laid out
  (:func:`appended_since_layout`: data changes only, whose blocks overlap the laid-out ones);
  every byte appended is counted by one layout only;
* **revision merge** (old revisions): the rows of older revisions whose space lies inside the
  latest one's (:func:`qbeast.core.revision.fits_within`) are re-indexed into the latest
  revision once their bytes are at most ``ratio`` times the latest revision's, so small old
  trees (whose shallow cubes hold rows of every weight) join the large one and the number of
  live revisions falls back to one. An old revision too large for that is *closed*: nothing is
  appended to it any more, so it is laid out once: the files it received since its last layout
  move into the latest revision (or, when more than appends changed it, it is laid out in place).

Both rules rewrite only what a layout would improve (:class:`Placement`): files that overlap
other files more than a laid-out tree's files would, or that hold less than half a cube. Appends
that follow a growing key (a date, an id) each occupy a range of their own and stay as they are:
re-indexed into one tree, a query on one append's range would read a file per tree level instead
of that append's file, and samples read a prefix of every file anyway (weight bands as row groups).

Nothing here reads data or knows Spark: :func:`plan_old_revisions` is pure, :class:`Placement`
reads the files' Delta statistics, and :func:`appended_since_layout` reads commit files of the
Delta log back to the last layout only.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from qbeast.core.blocks import REVISION_TAG
from qbeast.core.columns import column_types
from qbeast.core.file_boxes import FileBoxes, tree_levels
from qbeast.core.revision import STAGING_REVISION_ID, Revision, fits_within, revision_key
from qbeast.delta.log import commit_file_name
from qbeast.delta.snapshot import parse_commit
from qbeast.snapshot import QbeastSnapshot

#: The commitInfo operation of optimize (a layout, a revision merge or the staging step).
OPTIMIZE_OPERATION = "OPTIMIZE"
#: files a spot of an appended file may meet beyond a laid-out tree's levels and stay in place
_SPREAD = 0.5


def is_layout_of(operation: str | None, parameters: Mapping[str, object] | None,
                 revision_id: int) -> bool:
    """Whether a commit with this operation and these parameters laid out ``revision_id``
    in place (an OPTIMIZE of that revision; merges and the staging step record
    ``targetRevisionId`` and are appends into their target as far as the layout is concerned)."""
    if operation != OPTIMIZE_OPERATION or not parameters:
        return False
    if "targetRevisionId" in parameters:
        return False
    return str(parameters.get("revisionId")) == str(revision_id)


@dataclass(frozen=True)
class Received:
    """What a revision received since it was last laid out (its active files only)."""

    #: the files, as named in the Delta log
    paths: tuple[str, ...]
    bytes: int
    #: the bytes of those files that data changes added (appends, row-level inserts, the
    #: staging step), without the rows a revision merge or a closed revision moved in, and
    #: without the files the caller's ``counted`` left out (files already in place)
    appended_bytes: int
    #: True when every commit since the layout only added files to the revision (no file of it
    #: was removed or replaced): its other files are then exactly the laid-out tree
    only_appends: bool
    #: bytes of data changes that ``counted`` left out
    placed_bytes: int = 0


def received_since_layout(snapshot: QbeastSnapshot, revision_id: int,
                          enough: int | None = None,
                          counted: Callable[[Sequence[str]], Collection[str]] | None = None,
                          ) -> Received:
    """The revision's active files committed after it was last laid out.

    A revision was last laid out by its latest OPTIMIZE commit (:func:`is_layout_of`), or else
    by the commit that created it (a fresh revision is laid out). Files a revision merge or the
    staging step added to it count as received: their blocks overlap the laid-out ones.

    The commit files are read newest first and the walk stops at the layout point, so the cost
    grows with the commits since the last layout, not with the table's age. With ``enough``,
    it also stops once that many bytes are counted (the caller only needs to know whether a
    budget is reached). Commits older than the revision (by its creation timestamp) end the walk
    too; the oldest visited commit whose metadata holds the revision created it, and its files
    are not counted. ``counted`` (e.g. :meth:`Placement.misplaced`) picks, among a commit's added
    files, those whose bytes count as appended; the others add to ``placed_bytes``.
    """
    sizes = {f.path: int(f.size or 0) for f in snapshot.revision_files(revision_id)}
    if not sizes:
        return Received((), 0, 0, True)
    log = snapshot.delta.log
    key = revision_key(revision_id)
    tag = str(revision_id)
    born = snapshot.revision(revision_id).timestamp
    seen: list[str] = []
    appended_bytes = 0
    only_appends = True
    # the files of the commit that may have created the revision, and whether it removed any
    candidate: list[str] | None = None
    candidate_removes = False
    candidate_bytes = candidate_placed = 0
    placed_bytes = 0

    def split(paths: list[str]) -> tuple[int, int]:
        """(counted, placed) bytes of files a data change added."""
        total = sum(sizes[p] for p in paths)
        if counted is None or not paths:
            return total, 0
        kept = sum(sizes[p] for p in set(counted(paths)))
        return kept, total - kept

    def result(with_candidate: bool) -> Received:
        paths = seen + ((candidate or []) if with_candidate else [])
        clean = only_appends and not (with_candidate and candidate_removes)
        appended = appended_bytes + (candidate_bytes if with_candidate else 0)
        placed = placed_bytes + (candidate_placed if with_candidate else 0)
        return Received(tuple(paths), sum(sizes[p] for p in paths), appended, clean, placed)

    for version in range(snapshot.version, -1, -1):
        try:
            data = log.read_commit(version)
        except FileNotFoundError:
            return result(True)  # older commits were cleaned up: everything visited counts
        added: list[str] = []
        info: dict = {}
        holds_revision = False
        removes_own = False
        for action, body in parse_commit(data, f"{log.log_path}/{commit_file_name(version)}"):
            if action == "add":
                if body.get("path") in sizes:
                    added.append(body["path"])
            elif action == "remove":
                tags = body.get("tags") or {}
                removes_own = removes_own or tags.get(REVISION_TAG, tag) == tag
            elif action == "commitInfo":
                info = body
            elif action == "metaData":
                holds_revision = key in (body.get("configuration") or {})
        parameters = info.get("operationParameters") or {}
        if is_layout_of(info.get("operation"), parameters, revision_id):
            return result(True)  # the candidate came after the layout: it did not create it
        timestamp = info.get("timestamp")
        if isinstance(timestamp, int) and timestamp < born:
            return result(False)  # older than the revision: the candidate created it
        if holds_revision:
            # maybe the creating commit: settled when an older one also holds the revision
            seen.extend(candidate or [])
            appended_bytes += candidate_bytes
            placed_bytes += candidate_placed
            only_appends = only_appends and not candidate_removes
            candidate, candidate_removes = added, removes_own
            candidate_bytes, candidate_placed = (0, 0) if moved_in(parameters) else split(added)
            if version == 0:
                return result(False)  # the table's first commit created it
            continue
        seen.extend(added)
        if not moved_in(parameters):
            kept, placed = split(added)
            appended_bytes += kept
            placed_bytes += placed
        # a removed file of this revision (or one without tags): the rest is not the old tree
        only_appends = only_appends and not removes_own
        if enough is not None and appended_bytes >= enough:
            return result(False)
    return result(True)


def moved_in(parameters: Mapping[str, object]) -> bool:
    """Whether a commit with these parameters moved rows from other revisions in (a revision
    merge, or a closed revision's hand-over)."""
    return "mergedRevisionIds" in parameters or "movedRevisionIds" in parameters


def appended_since_layout(snapshot: QbeastSnapshot, revision_id: int,
                          enough: int | None = None,
                          counted: Callable[[Sequence[str]], Collection[str]] | None = None) -> int:
    """Bytes of the revision's active files that data changes committed after it was last laid
    out (:func:`received_since_layout`).

    Rows a revision merge or a closed revision moved in do not count: they were re-indexed into
    the revision's tree with its thresholds and their weight bands kept apart, so samples do not
    read them for nothing, and counting them made every merge pay for a second rewrite of the
    whole revision (the incremental benchmark: 2.2-3.5 bytes rewritten per byte appended where
    appends alone give 1.8). With ``enough``, the walk stops once that many bytes are counted;
    ``counted`` leaves out files already in place (:meth:`Placement.misplaced`).
    """
    return received_since_layout(snapshot, revision_id, enough, counted).appended_bytes


@dataclass
class Placement:
    """Which files of a table a layout would improve, judged by their Delta min/max on the latest
    revision's indexed columns (:mod:`qbeast.core.file_boxes`).

    A file is *misplaced* when a query at a random spot of it meets more than half a file more
    than a query anywhere meets in a laid-out tree of the table's rows (:func:`tree_levels`; the
    half file absorbs the partly filled levels of real trees and the few late rows an append along
    a growing key lays over its neighbours), or when it holds fewer than half a cube of rows
    (small files are compacted whatever their place). An append of overlapping rows meets the
    tree below it and its own levels: it is misplaced once the two together are deeper than one
    tree of all the rows (an append as large as the table over the same keys already is), and a
    second one over it adds its levels again. Appends along a growing key meet only themselves,
    or their neighbours where late rows overlap them, and stay.
    """

    boxes: FileBoxes
    #: files a query at one spot reads in a laid-out tree of the table's rows
    levels: int
    #: files with fewer rows are misplaced
    small_rows: int
    _index: dict[str, int] = field(default_factory=dict, repr=False)
    _verdicts: dict[str, bool] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, snapshot: QbeastSnapshot) -> Placement:
        """The placement of every active file of ``snapshot``, staging files included."""
        latest = snapshot.latest_revision
        files = list(snapshot.files())
        boxes = FileBoxes.from_stats([(f.path, f.parsed_stats) for f in files], latest.columns,
                                     column_types(snapshot.delta.schema or {}))
        rows = snapshot.delta.num_records
        if rows is None:
            rows = int(boxes.rows[boxes.rows > 0].sum())
        cube = latest.desired_cube_size
        return cls(boxes, tree_levels(rows, cube, latest.dimension_count), max(1, cube // 2),
                   {p: i for i, p in enumerate(boxes.paths)})

    def misplaced(self, paths: Iterable[str]) -> set[str]:
        """Those of ``paths`` that a layout would improve (unknown paths count as misplaced)."""
        paths = list(paths)
        todo = [p for p in paths if p not in self._verdicts and p in self._index]
        if todo:
            index = [self._index[p] for p in todo]
            coverage = self.boxes.coverage(index)
            rows = self.boxes.rows[index]
            for path, cover, count in zip(todo, coverage, rows):
                self._verdicts[path] = bool(cover > self.levels + _SPREAD
                                            or 0 <= count < self.small_rows)
        return {p for p in paths if self._verdicts.get(p, True)}


@dataclass(frozen=True)
class OldRevisionsPlan:
    """What the default maintenance does with the revisions older than the latest."""

    #: revisions whose rows are re-indexed into the latest one (one commit)
    merge: tuple[int, ...]
    #: closed revisions (too large to merge, or outside the latest space): laid out once
    close: tuple[int, ...]
    notes: tuple[str, ...]


def plan_old_revisions(revisions: Mapping[int, Revision], live_bytes: Mapping[int, int],
                       latest_id: int, ratio: float | None,
                       in_place: Collection[int] = ()) -> OldRevisionsPlan:
    """Which old revisions to merge into ``latest_id`` and which to close.

    ``live_bytes`` holds the bytes of every revision with active files. The revisions that fit
    the latest one's space are merged together when their bytes are at most ``ratio`` times the
    latest revision's (``ratio=None``: whenever they fit; the latest revision has received no
    merge since it opened, so each byte appended to it pays for at most ``ratio`` bytes merged).
    The others are closed. Revisions of ``in_place`` (every file of them in place:
    :class:`Placement`) are left as they are: merged, their rows would only spread over more files.
    """
    latest = revisions[latest_id]
    old = sorted(rid for rid, size in live_bytes.items()
                 if size > 0 and rid not in (latest_id, STAGING_REVISION_ID))
    kept = [rid for rid in old if rid in in_place]
    old = [rid for rid in old if rid not in in_place]
    fitting = [rid for rid in old if fits_within(revisions[rid], latest)]
    notes: list[str] = []
    if kept:
        notes.append(f"revision(s) {_ids(kept)} kept as they are: their files overlap no more "
                     "files than a layout would leave")
    merge: list[int] = []
    if fitting:
        old_bytes = sum(live_bytes[rid] for rid in fitting)
        latest_bytes = live_bytes.get(latest_id, 0)
        if ratio is None or old_bytes <= ratio * latest_bytes:
            merge = fitting
        else:
            notes.append(f"revision(s) {_ids(fitting)} fit revision {latest_id}; merge deferred: "
                         f"{old_bytes} bytes to merge, more than {ratio:g}x the {latest_bytes} "
                         f"bytes of revision {latest_id}")
    unfit = [rid for rid in old if rid not in fitting]
    if unfit:
        notes.append(f"revision(s) {_ids(unfit)} do not fit revision {latest_id}'s space "
                     "(other columns, transformers or a wider range): kept as they are")
    close = tuple(rid for rid in old if rid not in merge)
    return OldRevisionsPlan(tuple(merge), close, tuple(notes))


def _ids(ids: list[int]) -> str:
    return ", ".join(str(i) for i in ids)
