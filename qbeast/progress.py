"""Progress logging of long operations: one line when a phase starts, one when it ends, and
while a long phase runs, what is done of how much.

Writes, optimize, convert and upgrade all report their phases the same way, ``<operation> <path>:
<phase> started`` and ``<operation> <path>: <phase> done k=v ... elapsed=1.23s``, so that a log
of any of them reads alike and tools can follow it. Each caller passes its own logger, so that
users can turn one operation's progress up or down by logger name. A phase that made requests to
an object store logs them by kind at debug level (``<operation> <path>: <phase> requests
list=1 get=3 ...``), what an operation costs on S3 beyond its time.

A phase given a ``monitor`` (a callable returning ``(done, total)``, e.g. the Spark tasks of its
jobs: :func:`qbeast.spark.progress.task_monitor`) also logs ``<operation> <path>: <phase> 12 of
40 tasks (30%) elapsed=20.0s`` every :data:`PROGRESS_INTERVAL` seconds while the counts move, so
a person following a long write, optimize or merge in dbt's log sees it advance; phases shorter
than the interval log nothing more.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from qbeast.storage import request_counts


#: Seconds between the progress lines of a running phase.
PROGRESS_INTERVAL = 10.0

#: Polls without running work after which a phase's watcher stops (a phase that failed never
#: calls :meth:`Phase.done`; its watcher must not poll forever).
IDLE_POLLS = 6

#: ``() -> (done, total)``, or None while nothing runs.
Monitor = Callable[[], "tuple[int, int] | None"]


class Phase:
    """Logs the start and the end (with counts and elapsed time) of one phase of an operation,
    and with a ``monitor`` its progress in between (see the module docstring)."""

    def __init__(self, logger: logging.Logger, operation: str, path: str, name: str,
                 monitor: Monitor | None = None, unit: str = "tasks") -> None:
        self.logger, self.operation, self.path, self.name = logger, operation, path, name
        self.started = time.perf_counter()
        self.requests = request_counts()
        self._finished = threading.Event()
        logger.info("%s %s: %s started", operation, path, name)
        if monitor is not None:
            threading.Thread(target=self._watch, args=(monitor, unit, PROGRESS_INTERVAL),
                             name=f"qbeast-progress-{operation}", daemon=True).start()

    def _watch(self, monitor: Monitor, unit: str, interval: float) -> None:
        last: tuple[int, int] | None = None
        idle = 0
        while not self._finished.wait(interval):
            try:
                counts = monitor()
            except Exception:  # noqa: BLE001 - a broken monitor ends the reporting, not the phase
                self.logger.debug("%s %s: %s progress monitor failed", self.operation, self.path,
                                  self.name, exc_info=True)
                return
            idle = idle + 1 if counts is None else 0
            if idle >= IDLE_POLLS:
                return
            if counts is not None and counts != last and not self._finished.is_set():
                self.progress(counts[0], counts[1], unit)
                last = counts

    def progress(self, done: int, total: int, unit: str) -> None:
        """Log ``done`` of ``total`` ``unit`` (files, rows, tasks) of this phase so far."""
        share = f" ({100.0 * done / total:.0f}%)" if total else ""
        self.logger.info("%s %s: %s %d of %d %s%s elapsed=%.1fs", self.operation, self.path,
                         self.name, done, total, unit, share, self.elapsed)

    @property
    def elapsed(self) -> float:
        """Seconds since the phase started."""
        return time.perf_counter() - self.started

    def done(self, **counts: Any) -> None:
        """Log the end of the phase with ``counts`` (rows, files, ...) in the given order."""
        self._finished.set()
        details = " ".join(f"{k}={v}" for k, v in counts.items())
        self.logger.info("%s %s: %s done %s elapsed=%.2fs", self.operation, self.path, self.name,
                         details, self.elapsed)
        made = self.requests_made()
        if made:
            self.logger.debug("%s %s: %s requests %s", self.operation, self.path, self.name,
                              " ".join(f"{k}={v}" for k, v in sorted(made.items())))

    def requests_made(self) -> dict[str, int]:
        """Object-store requests of this process since the phase started, by kind (non-zero)."""
        now = request_counts()
        return {k: now[k] - self.requests.get(k, 0) for k in now if now[k] != self.requests.get(k, 0)}
