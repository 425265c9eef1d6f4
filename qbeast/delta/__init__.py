"""A Delta Lake transaction log implementation; knows nothing about Qbeast (tags are opaque).

Entry point: :meth:`DeltaLog.for_path`. See ``docs/delta-log.md`` for the layer's contract. Files
are read and written through :mod:`qbeast.storage`.
"""
from qbeast.delta.actions import AddFile, CommitInfo, Metadata, Protocol, RemoveFile, SetTransaction
from qbeast.delta.log import DeltaLog
from qbeast.delta.snapshot import Snapshot
from qbeast.delta.transaction import Transaction

__all__ = [
    "AddFile",
    "CommitInfo",
    "DeltaLog",
    "Metadata",
    "Protocol",
    "RemoveFile",
    "SetTransaction",
    "Snapshot",
    "Transaction",
]
