"""Whether an operation that failed on its store had committed anything: said in its error.

A user whose write dies on a refused key, a missing bucket or a throttling store wants to know
one thing before the fix: is the table as it was? Every commit goes through
:meth:`qbeast.delta.transaction.Transaction.commit`, which records its version here
(:func:`record_commit`) while an operation runs inside :func:`commit_outcome`; a store failure
that leaves the operation gets the answer appended to its one line: nothing was committed (the
table is as it was), or which version was committed before the failure.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from qbeast.storage import ObjectStoreError

_versions: ContextVar[list[int] | None] = ContextVar("qbeast_committed_versions", default=None)

F = TypeVar("F", bound=Callable[..., Any])


def record_commit(version: int) -> None:
    """Note a committed version for the operation running in this context (if one is)."""
    versions = _versions.get()
    if versions is not None:
        versions.append(version)


@contextmanager
def commit_outcome(table: str) -> Iterator[None]:
    """Run an operation on ``table``; a store failure leaving it says what was committed.

    An operation run inside another (a row change after the schema append of the same SQL
    write) shares the outer one's record: its note counts every commit of the whole operation."""
    outer = _versions.get()
    versions: list[int] = outer if outer is not None else []
    token = _versions.set(versions)
    try:
        yield
    except ObjectStoreError as exc:
        if not getattr(exc, "outcome", None):
            note = (f"version {versions[-1]} of {table} was committed before the failure"
                    if versions else f"nothing was committed: {table} is as it was")
            exc.outcome = note  # type: ignore[attr-defined]
            first, *rest = str(exc).split("\n", 1)
            exc.args = ("\n".join([f"{first}; {note}", *rest]),)
        raise
    finally:
        _versions.reset(token)


def reports_commit_outcome(table_of: Callable[..., str]) -> Callable[[F], F]:
    """Decorate an operation: ``table_of`` gets its arguments and names the table."""
    def decorate(operation: F) -> F:
        @functools.wraps(operation)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                table = str(table_of(*args, **kwargs))
            except Exception:  # noqa: BLE001 - the operation's own checks name bad arguments
                return operation(*args, **kwargs)
            with commit_outcome(table):
                return operation(*args, **kwargs)
        return run  # type: ignore[return-value]
    return decorate
