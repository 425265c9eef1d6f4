"""The Spark side of one row-level change: scans of the files it reads, and what it persisted.

A change reads its candidate files with two extra columns, the file each row comes from (as
Spark names it: a ``file:`` URI, percent-encoded) and the row's index in that file, so that the
files holding matching rows can be found and their rows rewritten. Every scan goes through
:func:`qbeast.spark.read.files.read_opened`, which escapes glob characters in the locations (a
table folder named ``we[ird]*x`` is read like any other).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from qbeast.core.sql import quote_identifier
from qbeast.delta.actions import AddFile
from qbeast.snapshot import QbeastSnapshot
from qbeast.spark.changes.rewrite import ORIGIN_COLUMN
from qbeast.spark.file_access import FileAccess
from qbeast.spark.read.files import read_opened
from qbeast.storage import local_path

#: Internal columns of the changes' Spark plans (user columns may not use them).
URI_COLUMN = "_qbeast_file_uri"
ROW_COLUMN = "_qbeast_row_index"


class ChangeScan:
    """Scans of one snapshot's files for one row-level change, and the frames it keeps.

    ``staging_origins`` lists the origins (see :meth:`scan_affected`) of staging files: their
    rows are rewritten as staging rows and never move to the index. ``access`` is how the
    change reaches the table's files, decided once when it started: every scan, rewrite and
    append of the change uses it.
    """

    def __init__(self, access: FileAccess, snapshot: QbeastSnapshot) -> None:
        from pyspark.sql.types import StructType

        access.check_native()  # before the first scan
        self.access = access
        self.spark = access.spark
        self.snapshot = snapshot
        self.schema = StructType.fromJson(snapshot.delta.schema)
        self.staging_origins: list[int] = []
        self._persisted: list[Any] = []
        self._by_path: dict[str, AddFile] | None = None
        self._opened: dict[str, AddFile] = {}  # the path Spark opened -> its file
        self._path_of: dict[str, str] = {}  # a file's path in the log -> the path Spark opens

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.schema.fields]

    @property
    def types(self) -> dict[str, Any]:
        """Spark data type of each column, by name."""
        return {f.name: f.dataType for f in self.schema.fields}

    def keep(self, df: Any) -> Any:
        """``df`` persisted (memory, then disk) until :meth:`release` (as it is, when a step
        before already kept it)."""
        from pyspark import StorageLevel

        if df.is_cached:
            return df

        kept = df.persist(StorageLevel.MEMORY_AND_DISK)
        self._persisted.append(kept)
        return kept

    def release(self) -> None:
        """Unpersist what :meth:`keep` persisted."""
        while self._persisted:
            self._persisted.pop().unpersist()

    def scan(self, files: Sequence[AddFile], row_index: bool = False) -> Any:
        """The rows of ``files`` with the file they come from (and their index in it)."""
        from pyspark.sql import functions as F

        if not files:
            extra = [F.lit(None).cast("string").alias(URI_COLUMN)]
            if row_index:
                extra.append(F.lit(None).cast("long").alias(ROW_COLUMN))
            return self.spark.createDataFrame([], self.schema).select("*", *extra)
        opened = self._open(files)
        self._opened.update((os.path.normpath(p), a) for p, a in zip(opened, files))
        df = read_opened(self.spark, self.schema, opened)  # opened once per change (_open)
        extra = [F.col("_metadata.file_path").alias(URI_COLUMN)]
        if row_index:
            extra.append(F.col("_metadata.row_index").alias(ROW_COLUMN))
        return df.select(*[F.col(quote_identifier(c)) for c in self.columns], *extra)

    def _open(self, files: Sequence[AddFile]) -> list[str]:
        """Where Spark opens each file: local paths as they are; an object-store file as its
        local copy, or by signed URL where tasks run elsewhere. A file keeps the path it was
        first opened by for the whole change: the affected files are found by the path a scan
        reports and joined with a later scan's rows by it, and a URL signed again differs (its
        time and signature), so a second signing would match none of the file's rows."""
        missing = [a for a in files if a.path not in self._path_of]
        if missing:
            locations = [self.snapshot.delta.file_path(a) for a in missing]
            sizes = [int(a.size) if a.size else None for a in missing]
            opened = self.access.spark_readable(locations, sizes)
            self._path_of.update((a.path, p) for a, p in zip(missing, opened))
        return [self._path_of[a.path] for a in files]

    def file_uris(self, matching: Any) -> list[str]:
        """The files (as the scan names them) holding at least one row of ``matching``."""
        return sorted(r[0] for r in matching.select(URI_COLUMN).distinct().collect())

    def add_of(self, uri: str) -> AddFile:
        """The active file the scan named ``uri`` (a URI, matched by its decoded local path)."""
        path = os.path.normpath(local_path(uri))
        if path in self._opened:
            return self._opened[path]
        if self._by_path is None:
            self._by_path = {os.path.normpath(self.snapshot.delta.file_path(a)): a
                             for a in self.snapshot.files()}
        return self._by_path[path]

    def scan_affected(self, uris: Sequence[str], row_index: bool = False) -> Any:
        """The rows of the affected files, each with its origin (index into ``uris``)."""
        from pyspark.sql import functions as F

        adds = [self.add_of(u) for u in uris]
        self.staging_origins = [i for i, a in enumerate(adds) if self.snapshot.revision_of(a) == 0]
        rows = self.scan(adds, row_index=True)
        origins = self.spark.createDataFrame(list(enumerate(uris)),
                                             f"{ORIGIN_COLUMN} int, {URI_COLUMN} string")
        rows = rows.join(F.broadcast(origins), URI_COLUMN)
        return rows if row_index else rows.drop(ROW_COLUMN)
