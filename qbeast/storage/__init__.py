"""Bytes at paths, on a local disk or an object store (S3, GCS, Azure); knows nothing of Delta.

Everything above it reads and writes files through one small interface, :class:`Storage`: the
conditional put (*put-if-absent*) commits rely on, listings, ranged reads, and task-side copies
of a storage for Spark jobs. This package holds that interface and its backends
(:class:`LocalStorage`, :class:`ObjectStorage` on ``obstore``), the choice of backend for a
location (:func:`storage_for`), what a store's failed request means (:class:`ObjectStoreError`),
the count of requests sent (:func:`request_counts`), where credentials come from, and local
copies of remote files for readers that cannot open them remotely.

It is a package of its own so that the layers above it share one storage and the Delta log
(``qbeast.delta``) only *uses* it: the log imports storage through this module's names alone,
never a backend's module or ``obstore`` (``tests/unit/test_layering.py`` checks both ways).

Importing it stays cheap: ``obstore`` is imported on an object store's first use. Three modules
are imported by name instead of through here: :mod:`qbeast.storage.parquet_footer` (needs
pyarrow), :mod:`qbeast.storage.mirror` (local copies) and :mod:`qbeast.storage.aws_config` (S3
settings from the shared AWS files and Hadoop's ``fs.s3a.*``); :mod:`qbeast.storage.errors` holds
the reading of a failed request and the retry limits.
"""
from qbeast.storage.base import FileStat, LocalStorage, RangedReader, Storage, file_uri, local_path
from qbeast.storage.object_store import (
    SCHEMES,
    ObjectStorage,
    ObjectStoreError,
    request_counts,
    scheme_of,
    set_session_settings,
)
from qbeast.storage.stores import storage_for

__all__ = [
    "SCHEMES",
    "FileStat",
    "LocalStorage",
    "ObjectStorage",
    "ObjectStoreError",
    "RangedReader",
    "Storage",
    "file_uri",
    "local_path",
    "request_counts",
    "scheme_of",
    "set_session_settings",
    "storage_for",
]
