"""Exception hierarchy shared by every layer of the engine.

Kept free of imports so that the format core, the transaction log, the Spark engine and the dbt
adapter can all raise and catch the same types without depending on each other.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


class QbeastError(Exception):
    """Base class of every error raised by dbt-qbeast's engine."""


class InvalidOptionError(QbeastError, ValueError):
    """A user-supplied option, argument or configuration value is not acceptable.

    The message always names the option and the allowed values. Where the error is about one
    option, it also carries them as fields, so that an integration (the dbt adapter) words its
    own message from ``option``, ``value`` and ``allowed`` instead of rewriting this text:

    * ``option``: the engine's name of the option or argument (``"cube_size"``);
    * ``value``: the value given (``None`` when the problem is a missing value);
    * ``allowed``: what would have been accepted: a list of choices, or a phrase
      (``"a positive integer"``).
    """

    def __init__(self, message: str, *, option: str | None = None, value: Any = None,
                 allowed: Any = None) -> None:
        super().__init__(message)
        self.option = option
        self.value = value
        self.allowed = allowed

    def __reduce__(self) -> Any:  # keeps the fields across pickling (Spark tasks, processes)
        return (_rebuild_invalid_option, (type(self), str(self), self.option, self.value, self.allowed))


def _rebuild_invalid_option(cls: type, message: str, option: Any, value: Any, allowed: Any) -> Any:
    return cls(message, option=option, value=value, allowed=allowed)


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
