"""Progress logging of long operations: one line when a phase starts, one when it ends, and
while a long phase runs, what is done of how much.

Writes, optimize, convert and upgrade all report their phases the same way, ``<operation> <path>:
<phase> started`` and ``<operation> <path>: <phase> done k=v ... elapsed=1.23s``, so that a log
of any of them reads alike and tools can follow it. Each caller passes its own logger, so that
users can turn one operation's progress up or down by logger name. A phase that made requests to
an object store logs them by kind at debug level (``<operation> <path>: <phase> requests
list=1 get=3 ...``), what an operation costs on S3 beyond its time.

A phase given a ``monitor`` (a callable returning ``(done, total)``, e.g. the Spark tasks of its
jobs: :func:`qbeast.spark.task_progress.task_monitor`) also logs ``<operation> <path>: <phase> 12 of
40 tasks (30%) elapsed=20.0s`` every :data:`PROGRESS_INTERVAL` seconds while the counts move, so
a person following a long write, optimize or merge in dbt's log sees it advance; phases shorter
than the interval log nothing more.

On an interactive terminal every running phase is also a row of a progress bar on stderr
(``rich``): the operation, the table's folder name, the phase, ``done/total`` units where a monitor
counts them and the elapsed time; the row keeps its final counts when the phase ends.
``QBEAST_PROGRESS`` chooses: ``auto`` (the default: a bar when stderr is a terminal), ``bar``
(always) or ``log`` (lines only). The dbt adapter sets ``log``: dbt owns its console, and the
engine's lines go to dbt's own log there.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from qbeast.errors import InvalidOptionError
from qbeast.storage import request_counts


#: Seconds between the progress lines of a running phase.
PROGRESS_INTERVAL = 10.0

#: Polls without running work after which a phase's watcher stops (a phase that failed never
#: calls :meth:`Phase.done`; its watcher must not poll forever).
IDLE_POLLS = 6

#: ``() -> (done, total)``, or None while nothing runs.
Monitor = Callable[[], "tuple[int, int] | None"]

#: The environment variable choosing how phases show, and its values.
PROGRESS_ENV = "QBEAST_PROGRESS"
PROGRESS_MODES = ("auto", "bar", "log")

#: Seconds between two updates of a phase's bar row.
BAR_INTERVAL = 0.5


def bars_wanted() -> bool:
    """Whether phases show as progress bar rows on stderr (see the module docstring)."""
    mode = os.environ.get(PROGRESS_ENV, "auto").strip().lower() or "auto"
    if mode not in PROGRESS_MODES:
        raise InvalidOptionError(
            f"{PROGRESS_ENV} must be one of {', '.join(PROGRESS_MODES)}, got {mode!r}",
            option=PROGRESS_ENV, value=mode, allowed=PROGRESS_MODES)
    if mode == "auto":
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty is not None and isatty())
    return mode == "bar"


def _console() -> Any:
    """The console the bars draw on: this process's stderr as it is now."""
    from rich.console import Console

    return Console(file=sys.stderr)


class _Bars:
    """The one live progress display of this process (``rich`` draws one at a time), with a row
    per running phase: a write inside an optimize shows under it. Started with the first row,
    stopped when the last running phase ends; finished rows stay above the next ones."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._progress: Any = None
        self._running: set[int] = set()

    def add(self, description: str, unit: str) -> int:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn)

        with self._lock:
            if self._progress is None:
                self._progress = Progress(
                    TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[unit]}"), TimeElapsedColumn(),
                    console=_console(), refresh_per_second=4, redirect_stdout=False,
                    redirect_stderr=False)
                self._progress.start()
            row = int(self._progress.add_task(description, total=None, unit=unit))
            self._running.add(row)
            return row

    def update(self, row: int, done: int, total: int) -> None:
        with self._lock:
            if self._progress is not None and row in self._running:
                self._progress.update(row, completed=done, total=total or None)

    def finish(self, row: int, description: str) -> None:
        with self._lock:
            if self._progress is None or row not in self._running:
                return
            task = next(t for t in self._progress.tasks if t.id == row)
            total = task.total if task.total is not None else max(task.completed, 1)
            self._progress.update(row, description=description, completed=total, total=total)
            self._progress.stop_task(row)
            self._running.discard(row)
            if not self._running:
                self._progress.stop()
                self._progress = None


_BARS = _Bars()


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
        self._row: int | None = None
        if bars_wanted():
            folder = path.rstrip("/").rsplit("/", 1)[-1] or path
            self._label = f"{operation} {folder}: {name}"
            self._row = _BARS.add(self._label, unit)
        if monitor is not None:
            threading.Thread(target=self._watch, args=(monitor, unit, PROGRESS_INTERVAL),
                             name=f"qbeast-progress-{operation}", daemon=True).start()

    def _watch(self, monitor: Monitor, unit: str, interval: float) -> None:
        """Poll ``monitor``: a line every ``interval`` seconds while the counts move, the bar
        row every :data:`BAR_INTERVAL`; give up after ``IDLE_POLLS`` intervals of nothing
        running (a phase that failed never ends) or when the monitor fails."""
        poll = min(interval, BAR_INTERVAL) if self._row is not None else interval
        last: tuple[int, int] | None = None
        next_line = time.perf_counter() + interval
        idle, idle_limit = 0, IDLE_POLLS * max(1, round(interval / poll))
        while not self._finished.wait(poll):
            try:
                counts = monitor()
            except Exception:  # noqa: BLE001 - a broken monitor ends the reporting, not the phase
                self.logger.debug("%s %s: %s progress monitor failed", self.operation, self.path,
                                  self.name, exc_info=True)
                return
            idle = idle + 1 if counts is None else 0
            if idle >= idle_limit:
                return
            if counts is None:
                continue
            now = time.perf_counter()
            if self._row is not None:
                _BARS.update(self._row, counts[0], counts[1])
            if now >= next_line - poll / 2:
                next_line = now + interval
                if counts != last and not self._finished.is_set():
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
        if self._row is not None:
            _BARS.finish(self._row, f"{self._label} done {details}".rstrip())
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
