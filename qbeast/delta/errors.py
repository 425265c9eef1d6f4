"""Errors of the transaction log layer.

Every class derives from :class:`qbeast.errors.QbeastError`, so callers of the engine can catch one
type. The concurrency errors form their own small tree because callers react to them differently:
a :class:`ConcurrentModificationError` means "another writer won; re-plan and retry if you like",
while a :class:`CorruptLogError` means "do not touch this table".
"""
from __future__ import annotations

from qbeast.errors import FormatError, InvalidOptionError, QbeastError, WriteFailedError


class DeltaError(QbeastError):
    """Base class of the errors raised by :mod:`qbeast.delta`."""


class NotADeltaTableError(DeltaError):
    """The path holds no Delta transaction log (no ``_delta_log`` with at least one version)."""


class CorruptLogError(DeltaError, FormatError):
    """The transaction log cannot be replayed: bad JSON, missing versions, missing metadata..."""


class VersionNotFoundError(DeltaError, InvalidOptionError):
    """A time-travel version or timestamp lies outside the versions the log can reconstruct."""


class UnsupportedFeatureError(DeltaError):
    """The table uses a Delta protocol feature this engine does not implement for the operation."""


class AppendOnlyTableError(DeltaError):
    """A commit would remove data from a table whose ``delta.appendOnly`` property is true."""


class CommitFailedError(DeltaError, WriteFailedError):
    """The commit file could not be written (full disk, read-only folder...): nothing committed."""


class ConcurrentModificationError(DeltaError):
    """Another writer committed first and the commit could not be rebased on top of it."""


class ConcurrentDeleteReadError(ConcurrentModificationError):
    """A concurrent commit removed a file that this transaction read or is removing itself."""


class MetadataChangedError(ConcurrentModificationError):
    """A concurrent commit changed the table metadata (schema, properties, ...) or created it."""


class ProtocolChangedError(ConcurrentModificationError):
    """A concurrent commit changed the table protocol versions or features."""


class ConcurrentAppendError(ConcurrentModificationError):
    """A concurrent commit added files to a table this transaction read as a whole."""


class ConcurrentTransactionError(ConcurrentModificationError):
    """A concurrent commit recorded the same application transaction id (``txn`` action)."""


__all__ = [
    "AppendOnlyTableError",
    "CommitFailedError",
    "ConcurrentAppendError",
    "ConcurrentDeleteReadError",
    "ConcurrentModificationError",
    "ConcurrentTransactionError",
    "CorruptLogError",
    "DeltaError",
    "MetadataChangedError",
    "NotADeltaTableError",
    "ProtocolChangedError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
]
