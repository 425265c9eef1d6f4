"""Progress of a phase's Spark jobs: the tasks done of the tasks of the stages it started.

A :class:`qbeast.progress.Phase` with :func:`task_monitor` as its monitor logs how far its jobs
are while they run (a write's file writing, an optimize's rewrite, a merge's join), from Spark's
status tracker: the stages that became active after the monitor was made, each counted whole
once it is no longer active. On a shared session the stages of other work started meanwhile (a
second dbt thread) count too: the figure says how far the session is, which is what a person
waiting wants to know. Spark Connect sessions have no status tracker: no monitor.
"""
from __future__ import annotations

from typing import Any

from qbeast.progress import Monitor
from qbeast.spark.shipping import is_connect_session


def task_monitor(spark: Any) -> Monitor | None:
    """``() -> (tasks done, tasks)`` over the stages started since this call; None while no
    such stage runs; None instead of a monitor when the session has no status tracker."""
    if spark is None or is_connect_session(spark):
        return None
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getActiveStageIds())
    seen: dict[int, tuple[int, int]] = {}

    def poll() -> tuple[int, int] | None:
        active = set(tracker.getActiveStageIds()) - before
        for stage in active:
            info = tracker.getStageInfo(stage)
            if info is not None:
                seen[stage] = (int(info.numCompletedTasks), int(info.numTasks))
        for stage, (_, total) in list(seen.items()):
            if stage not in active:
                seen[stage] = (total, total)
        if not active:
            return None
        return sum(d for d, _ in seen.values()), sum(t for _, t in seen.values())

    return poll
