"""Progress logging of long operations: one line when a phase starts, one when it ends.

Writes, optimize, convert and upgrade all report their phases the same way, ``<operation> <path>:
<phase> started`` and ``<operation> <path>: <phase> done k=v ... elapsed=1.23s``, so that a log
of any of them reads alike and tools can follow it. Each caller passes its own logger, so that
users can turn one operation's progress up or down by logger name. A phase that made requests to
an object store logs them by kind at debug level (``<operation> <path>: <phase> requests
list=1 get=3 ...``), what an operation costs on S3 beyond its time.
"""
from __future__ import annotations

import logging
import time
from typing import Any

from qbeast.delta.object_storage import request_counts


class Phase:
    """Logs the start and the end (with counts and elapsed time) of one phase of an operation."""

    def __init__(self, logger: logging.Logger, operation: str, path: str, name: str) -> None:
        self.logger, self.operation, self.path, self.name = logger, operation, path, name
        self.started = time.perf_counter()
        self.requests = request_counts()
        logger.info("%s %s: %s started", operation, path, name)

    @property
    def elapsed(self) -> float:
        """Seconds since the phase started."""
        return time.perf_counter() - self.started

    def done(self, **counts: Any) -> None:
        """Log the end of the phase with ``counts`` (rows, files, ...) in the given order."""
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
