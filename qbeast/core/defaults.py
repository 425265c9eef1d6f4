"""Defaults the Qbeast format fixes as qbeast-spark does; no imports, so any layer reads them cheaply."""
from __future__ import annotations

#: Desired rows per cube when a table is created without a cube size (qbeast-spark's
#: ``DEFAULT_CUBE_SIZE``; the session setting ``spark.qbeast.index.defaultCubeSize`` defaults to it).
DEFAULT_CUBE_SIZE = 5_000_000

#: Headroom of a revision opened because the data grew past the previous one's range, in percent
#: of the new span, added on each side that grew (LinearTransformation.with_headroom). 300% makes
#: the range quadruple at each growth: the 30 daily appends of benchmarks/results/layout.md (a
#: growing timestamp and a growing user id) open 4 revisions instead of 30; 200% left 5, above
#: the goal of log2(30). 0 = exact ranges, as qbeast-spark.
REVISION_HEADROOM_PERCENT = 300

#: Bytes the default maintenance (dbt's ``optimize_after_run``) may rewrite per byte appended to a
#: revision since it was last laid out: ``optimize(max_rewrite_ratio=...)`` defers the layout
#: until the appends reach that share (tiering), so maintenance rewrites at most this many bytes
#: per byte appended (the goal of issue 20). Laying out after every append rewrote 3-7.
MAINTENANCE_REWRITE_RATIO = 2.0
