"""A Delta Lake transaction log implementation; knows nothing about Qbeast (tags are opaque).

Entry point: :meth:`DeltaLog.for_path`. See ``docs/delta-log.md`` for the layer's contract.
"""
from qbeast.delta.actions import AddFile, CommitInfo, Metadata, Protocol, RemoveFile, SetTransaction
from qbeast.delta.log import DeltaLog
from qbeast.delta.snapshot import Snapshot
from qbeast.delta.object_storage import ObjectStorage
from qbeast.delta.storage import FileStat, LocalStorage, Storage
from qbeast.delta.stores import storage_for
from qbeast.delta.transaction import Transaction

__all__ = [
    "AddFile",
    "CommitInfo",
    "DeltaLog",
    "FileStat",
    "LocalStorage",
    "Metadata",
    "ObjectStorage",
    "Protocol",
    "RemoveFile",
    "SetTransaction",
    "Snapshot",
    "Storage",
    "Transaction",
    "storage_for",
]
