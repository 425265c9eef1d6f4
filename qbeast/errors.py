"""Exception hierarchy shared by every layer of the engine.

Kept free of imports so that the format core, the transaction log, the Spark engine and the dbt
adapter can all raise and catch the same types without depending on each other.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


class QbeastError(Exception):
    """Base class of every error raised by dbt-qbeast's engine."""


class InvalidOptionError(QbeastError, ValueError):
    """A user-supplied option, argument or configuration value is not acceptable.

    The message always names the option and the allowed values.
    """


class FormatError(QbeastError, ValueError):
    """On-disk Qbeast metadata (revision JSON, block tags, cube strings) is malformed."""


class UnsupportedTypeError(QbeastError, TypeError):
    """A column's data type cannot be indexed."""


class WriteCancelled(QbeastError):
    """A write was abandoned before its commit because its caller asked to stop (e.g. Ctrl-C).

    Nothing was committed and the files it had written are deleted.
    """


def check_cancelled(cancelled: Callable[[], bool] | None, what: str, before: str) -> None:
    """Raise :class:`WriteCancelled` when the caller's ``cancelled`` callback says to stop.

    Every committing operation (writes, row-level changes) checks it between its phases and
    right before its commit, so a Ctrl-C leaves nothing committed.
    """
    if cancelled is not None and cancelled():
        raise WriteCancelled(f"{what} cancelled before {before}; nothing was committed")


class WriteFailedError(QbeastError):
    """Writing data files or the commit failed (full disk, read-only folder, a failed Spark job).

    Raised only when nothing was committed: the message says which version the table is still at.
    """


def root_cause(exc: BaseException) -> str:
    """The most specific description of an error: the innermost cause, JVM errors included.

    A Spark job that failed on a full disk reports ``Job aborted`` / ``TASK_WRITE_FAILED`` at
    the top and the task's ``java.io.IOException: No space left on device`` only as its cause.
    """
    java = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
    if java is not None:
        try:
            seen = 0
            while java.getCause() is not None and seen < 20:
                java, seen = java.getCause(), seen + 1
            return str(java.toString())
        except Exception:  # noqa: BLE001 - a JVM that is gone: fall back to the Python text
            pass
    while exc.__cause__ is not None:
        exc = exc.__cause__
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
