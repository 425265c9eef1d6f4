"""Ctrl-C and SIGTERM during a dbt command: stop cleanly, record every node, let `dbt retry` resume.

dbt's own handling of an interrupt writes ``run_results.json`` at once with only the nodes that had
finished, then waits for the running ones: a write that was running still commits, is recorded
nowhere, and ``dbt retry`` finds nothing to retry. The adapter therefore takes the first interrupt
itself while a dbt command runs:

1. the running Spark jobs are cancelled, so the running models fail; a qbeast write checks the
   interrupt right before its commit (the engine's ``cancelled`` option) and abandons its files,
   so it either committed before the interrupt (and its model is recorded as a success) or not
   at all;
2. every statement dbt sends afterwards fails at once with a "cancelled" error, so the models that
   had not started are recorded as errors and their children as skipped, and dbt finishes within
   moments with a complete ``run_results.json`` (exit code 1); ``dbt retry`` runs what is left.

A second interrupt stops dbt immediately (dbt's own behaviour). Spark's Python worker processes
and the JVM ignore the terminal's SIGINT (PySpark starts them that way), so only this process
decides.
"""
from __future__ import annotations

import logging
import signal
import threading
from typing import Any, Callable, Dict, Optional

from dbt_common.exceptions import DbtRuntimeError

log = logging.getLogger("qbeast.dbt.interrupts")

CANCELLED_MESSAGE = (
    "cancelled: dbt was interrupted (Ctrl-C or SIGTERM) before this finished; nothing of it was "
    "committed. `dbt retry` runs it again"
)

_requested = threading.Event()
_previous: Dict[int, Any] = {}
_session_finder: Optional[Callable[[], Any]] = None


class Cancelled(DbtRuntimeError):
    """A node stopped because dbt was interrupted."""


def requested() -> bool:
    """Whether this dbt command was interrupted (what a qbeast write checks before its commit)."""
    return _requested.is_set()


def check(what: str = "") -> None:
    """Fail the current statement when the command was interrupted."""
    if _requested.is_set():
        raise Cancelled(f"{what + ': ' if what else ''}{CANCELLED_MESSAGE}")


def request() -> None:
    """Mark the command interrupted and cancel the Spark jobs that are running."""
    first = not _requested.is_set()
    _requested.set()
    session = _session_finder() if _session_finder is not None else None
    if session is None:
        return
    from qbeast import is_connect_session

    try:
        if is_connect_session(session):
            session.interruptAll()
        else:
            session.sparkContext.cancelAllJobs()
    except Exception as exc:  # noqa: BLE001 - the session may be stopping already
        log.debug("cancelling the Spark jobs failed: %s", exc)
    if first:
        log.info("interrupted: running Spark jobs cancelled")


def reset(session_finder: Callable[[], Any]) -> None:
    """A new dbt command starts: nothing is interrupted yet."""
    global _session_finder
    _session_finder = session_finder
    _requested.clear()


def _on_signal(signum: int, frame: Any) -> None:  # noqa: ARG001 - signal handler signature
    if _requested.is_set():  # the second interrupt: dbt's immediate stop
        raise KeyboardInterrupt(f"signal {signum}")
    request()
    try:
        from dbt_common.events.base_types import EventLevel
        from dbt_common.events.functions import fire_event
        from dbt_common.events.types import Note

        fire_event(Note(msg=(
            "Interrupted: cancelling the running models; models not run yet are reported as "
            "cancelled, then `dbt retry` resumes. Interrupt again to stop at once."
        )), level=EventLevel.WARN)
    except Exception:  # noqa: BLE001 - the message is a courtesy
        pass


def install() -> None:
    """Take SIGINT and SIGTERM while dbt runs (main thread only; others' handlers are kept).

    Called again once the Spark session exists: PySpark puts its own SIGINT handler in place when
    it starts a driver from the main thread.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            current = signal.getsignal(signum)
        except (ValueError, OSError):  # pragma: no cover - platforms without the signal
            continue
        if current is _on_signal:
            continue
        if signum == signal.SIGTERM and current not in (signal.SIG_DFL, None) and signum not in _previous:
            continue  # someone else handles SIGTERM in this process: leave it to them
        _previous.setdefault(signum, current)
        signal.signal(signum, _on_signal)


def uninstall() -> None:
    """Put the handlers back as they were before the dbt command."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, previous in list(_previous.items()):
        if signal.getsignal(signum) is _on_signal:
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        del _previous[signum]
